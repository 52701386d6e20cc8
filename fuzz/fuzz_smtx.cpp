// Fuzz target: the DLMC .smtx reader (runtime/smtx.h). Any bytes must give a pattern that
// satisfies every invariant parse_smtx promises, or an error message with no raw control
// bytes; never a crash, a hang or an unbounded allocation.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/smtx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto p = magicube::parse_smtx(text, "fuzz.smtx");
  if (!p) {
    std::string msg = llvm::toString(p.takeError());
    for (char c : msg)
      if ((unsigned char)c < 0x20 || c == 0x7f) std::abort();  // file bytes must be quoted
    return 0;
  }
  // The promised invariants.
  if (p->rows < 0 || p->cols < 0 || int64_t(p->row_ptr.size()) != p->rows + 1 || p->row_ptr[0] != 0 ||
      p->row_ptr[p->rows] != p->nnz())
    std::abort();
  for (int64_t r = 0; r < p->rows; ++r) {
    if (p->row_ptr[r + 1] < p->row_ptr[r]) std::abort();
    for (int64_t j = p->row_ptr[r]; j < p->row_ptr[r + 1]; ++j)
      if (p->col_idx[j] < 0 || p->col_idx[j] >= p->cols || (j > p->row_ptr[r] && p->col_idx[j] <= p->col_idx[j - 1]))
        std::abort();
  }
  // Dilation keeps them (bounded: nnz and rows are at most the input's size).
  if (p->rows <= int64_t(1) << 20 && p->cols <= INT32_MAX) {
    int64_t next = 0;
    magicube::VectorSparse a = magicube::dilate(*p, 2, [&] { return ++next; });
    if (llvm::Error e = magicube::check_vector_sparse(a, "fuzz")) {
      llvm::consumeError(std::move(e));
      std::abort();
    }
  }
  return 0;
}
