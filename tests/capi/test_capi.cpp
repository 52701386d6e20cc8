// The C ABI (include/magicube/magicube.h) and the C++17 header (magicube.hpp) through
// libmagicube.so itself (this binary links nothing else of the library and is built as
// C++17): version, plan text equal to `magicube plan`'s, the text-buffer protocol, errors by
// status and thread-local message, op handles and queries, packing and the blob header,
// workspace sizes, and refusals of bad device-run arguments before any device work. Where a
// GPU is present, the host-operand runs against a naive integer reference.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "magicube/magicube.h"
#include "magicube/magicube.hpp"

namespace {

std::string describe(const char *spec) {
  size_t needed = 0;
  EXPECT_EQ(magicube_plan_describe(spec, nullptr, 0, &needed), MAGICUBE_SUCCESS) << magicube_last_error();
  std::string s(needed, '\0');
  EXPECT_EQ(magicube_plan_describe(spec, &s[0], s.size(), &needed), MAGICUBE_SUCCESS) << magicube_last_error();
  s.resize(needed - 1);
  return s;
}

std::string run_cli(const std::string &args) {
  // No GPU for the child: `plan` then uses the arch's reference device, as the C ABI does.
  // The CLI of this build, or the one MAGICUBE_CLI_PATH names (binaries carried to another machine).
  const char *env = std::getenv("MAGICUBE_CLI_PATH");
  const std::string exe = env && *env ? env : MAGICUBE_CLI;
  std::string cmd = "CUDA_VISIBLE_DEVICES= " + exe + " plan " + args + " 2>&1";
  std::string out;
  FILE *p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  pclose(p);
  return out;
}

// A struct's enum field as a C caller may fill it: any int, stored without a C++ enum value
// (a cast of an out-of-range int to the enum would itself be undefined in C++).
template <class E>
void set_raw(E &field, int value) {
  static_assert(sizeof(E) == sizeof(int), "a C enum field");
  std::memcpy(&field, &value, sizeof value);
}

TEST(CApi, Version) {
  EXPECT_STREQ(magicube_version(), MAGICUBE_PROJECT_VERSION);
  EXPECT_STREQ(magicube_version(), MAGICUBE_VERSION_STRING);
  EXPECT_EQ(magicube::version(), MAGICUBE_PROJECT_VERSION);
}

TEST(CApi, PlanDescribeIsWhatTheCliPrints) {
  struct Case {
    const char *spec, *flags;
  };
  for (const Case &c : {Case{"spmm.s8xs8.v8.i32.sm_90", "--op=spmm --lhs=s8 --rhs=s8 --v=8 --arch=sm_90"},
                        Case{"spmm.s12xu4.v4.i32.sm_80", "--op=spmm --lhs=s12 --rhs=u4 --v=4 --arch=sm_80"},
                        Case{"sddmm.u3xs7.v2.i32.sm_90", "--op=sddmm --lhs=u3 --rhs=s7 --v=2 --arch=sm_90"},
                        Case{"spmm.s8xs8.v8.n128.nopf.f16+rc+colbias.sm_90",
                             "--lhs=s8 --rhs=s8 --v=8 --bsn=128 --no-prefetch --out=f16 --scale=rowcol --bias=col "
                             "--arch=sm_90"}}) {
    const std::string text = describe(c.spec);
    const std::string cli = run_cli(c.flags);
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.rfind("plan ", 0), 0u) << text;
    // The CLI prints the plan, then "chosen by: ..." lines.
    EXPECT_EQ(cli.substr(0, text.size()), text) << c.spec << "\nCLI:\n" << cli;
    EXPECT_EQ(cli.compare(text.size(), 10, "chosen by:"), 0) << cli;
    EXPECT_EQ(magicube::plan_describe(c.spec), text);
  }
}

TEST(CApi, TextBufferProtocol) {
  const std::string full = describe("spmm.s8xs8.v8.i32.sm_90");
  char small[16];
  std::memset(small, 'x', sizeof small);
  size_t needed = 0;
  EXPECT_EQ(magicube_plan_describe("spmm.s8xs8.v8.i32.sm_90", small, sizeof small, &needed),
            MAGICUBE_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(needed, full.size() + 1);
  EXPECT_EQ(std::string(small), full.substr(0, 15));  // truncated, NUL-terminated
  EXPECT_NE(std::string(magicube_last_error()).find("too small"), std::string::npos);
  EXPECT_EQ(magicube_plan_describe("spmm.s8xs8.v8.i32.sm_90", nullptr, 5, &needed), MAGICUBE_ERROR_INVALID);
  EXPECT_EQ(magicube_plan_describe("spmm.s8xs8.v8.i32.sm_90", nullptr, 0, nullptr), MAGICUBE_SUCCESS);
  EXPECT_STREQ(magicube_status_name(MAGICUBE_ERROR_BUFFER_TOO_SMALL), "buffer-too-small");
}

TEST(CApi, BadSpecIsRefusedByNameAndTheMessageIsThreadLocal) {
  size_t needed = 0;
  char buf[64];
  EXPECT_EQ(magicube_plan_describe("spmm.s17xs8.v8.i32.sm_90", buf, sizeof buf, &needed), MAGICUBE_ERROR_INVALID);
  const std::string mine = magicube_last_error();
  EXPECT_NE(mine.find("s17"), std::string::npos) << mine;
  std::string theirs;
  std::thread t([&] {
    EXPECT_STREQ(magicube_last_error(), "");  // nothing failed on this thread yet
    EXPECT_EQ(magicube_plan_describe("spmm.s8xs8.v3.i32.sm_90", buf, sizeof buf, &needed), MAGICUBE_ERROR_INVALID);
    theirs = magicube_last_error();
  });
  t.join();
  EXPECT_NE(theirs.find("3"), std::string::npos) << theirs;
  EXPECT_EQ(magicube_last_error(), mine);
  EXPECT_EQ(magicube_plan_describe(nullptr, buf, sizeof buf, &needed), MAGICUBE_ERROR_INVALID);
  EXPECT_EQ(magicube_plan_describe("sddmm.s8xs8.v8.i32.sm_75", buf, sizeof buf, &needed), MAGICUBE_ERROR_INVALID);
  try {
    magicube::plan_describe("spmm.s17xs8.v8.i32.sm_90");
    ADD_FAILURE() << "no exception";
  } catch (const magicube::Error &e) {
    EXPECT_EQ(e.kind(), magicube::Error::Kind::Invalid);
    EXPECT_NE(std::string(e.what()).find("s17"), std::string::npos);
  }
}

TEST(CApi, NullArgumentsAreRefusedNotDereferenced) {
  magicube_op *op = nullptr;
  EXPECT_EQ(magicube_op_create("spmm.s8xs8.v8.i32.sm_90", nullptr, 0, nullptr, nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_EQ(magicube_op_create(nullptr, nullptr, 0, nullptr, &op), MAGICUBE_ERROR_INVALID);
  EXPECT_EQ(op, nullptr);
  int64_t v = 0;
  EXPECT_EQ(magicube_op_query(nullptr, MAGICUBE_QUERY_V, &v), MAGICUBE_ERROR_INVALID);
  EXPECT_EQ(magicube_pack(nullptr, nullptr, nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_EQ(magicube_spmm_run(nullptr, nullptr, nullptr, nullptr, 1, nullptr, nullptr, nullptr, 0, nullptr),
            MAGICUBE_ERROR_INVALID);
  EXPECT_EQ(magicube_sddmm_run(nullptr, nullptr, nullptr, nullptr, nullptr, 1, nullptr, 0, nullptr, nullptr, 0, nullptr),
            MAGICUBE_ERROR_INVALID);
  magicube_op_destroy(nullptr);
  magicube_packed_destroy(nullptr);
  EXPECT_EQ(magicube_packed_bytes(nullptr), 0u);
}

// A 24 x 40 s8 weight with a few V=8 vectors (one row-block empty).
std::vector<int8_t> small_weight() {
  std::vector<int8_t> w(24 * 40, 0);
  w[0 * 40 + 3] = 5, w[7 * 40 + 3] = -128, w[2 * 40 + 39] = 127, w[17 * 40 + 0] = -1, w[23 * 40 + 20] = 9;
  return w;
}

TEST(CApi, OpHandlesTextsAndQueries) {
  magicube_op *op = nullptr;
  ASSERT_EQ(magicube_op_create("spmm.s8xs8.v8.i32.sm_90", nullptr, 0, nullptr, &op), MAGICUBE_SUCCESS)
      << magicube_last_error();
  int64_t v = 0;
  ASSERT_EQ(magicube_op_query(op, MAGICUBE_QUERY_V, &v), MAGICUBE_SUCCESS);
  EXPECT_EQ(v, 8);
  ASSERT_EQ(magicube_op_query(op, MAGICUBE_QUERY_OUTPUT_DTYPE, &v), MAGICUBE_SUCCESS);
  EXPECT_EQ(v, MAGICUBE_INT32);
  ASSERT_EQ(magicube_op_query(op, MAGICUBE_QUERY_LHS_BITS, &v), MAGICUBE_SUCCESS);
  EXPECT_EQ(v, -8);
  ASSERT_EQ(magicube_op_query(op, MAGICUBE_QUERY_CANDIDATE, &v), MAGICUBE_SUCCESS);
  EXPECT_GE(v, 0);
  EXPECT_EQ(magicube_op_query(op, 99, &v), MAGICUBE_ERROR_INVALID);
  char buf[4096];
  size_t needed = 0;
  ASSERT_EQ(magicube_op_text(op, MAGICUBE_TEXT_SPEC, buf, sizeof buf, &needed), MAGICUBE_SUCCESS);
  EXPECT_EQ(std::string(buf).rfind("spmm.s8xs8.v8.n", 0), 0u) << buf;  // every knob pinned
  ASSERT_EQ(magicube_op_text(op, MAGICUBE_TEXT_PLAN, buf, sizeof buf, &needed), MAGICUBE_SUCCESS);
  EXPECT_EQ(std::string(buf), describe("spmm.s8xs8.v8.i32.sm_90"));
  ASSERT_EQ(magicube_op_text(op, MAGICUBE_TEXT_CHOSEN_BY, buf, sizeof buf, &needed), MAGICUBE_SUCCESS);
  EXPECT_EQ(std::string(buf).rfind("chosen by: ", 0), 0u) << buf;
  ASSERT_EQ(magicube_op_text(op, MAGICUBE_TEXT_KERNEL, buf, sizeof buf, &needed), MAGICUBE_SUCCESS);
  EXPECT_EQ(std::string(buf).rfind("magicube_spmm_", 0), 0u) << buf;
  magicube_op_destroy(op);

  // Pinned spec + candidate reproduce the plan in another op.
  magicube::Op a("spmm.s12xu4.v4.i32.sm_80");
  magicube::Op b(a.spec(), magicube::OpOptions{int(a.query(MAGICUBE_QUERY_CANDIDATE)), 0});
  EXPECT_EQ(a.plan(), b.plan());
  EXPECT_EQ(b.chosen_by(), "chosen by: flags");
  EXPECT_EQ(a.output_element_bytes(), 4u);
  EXPECT_GT(a.max_reduction_length(), 0);

  // With a matrix: planned for it. An SDDMM op.
  const auto w = small_weight();
  magicube::Op m("spmm.s8xs8.v8.i32.sm_90", magicube::dense_matrix(w.data(), 24, 40), 64);
  EXPECT_EQ(m.chosen_by().rfind("chosen by: ", 0), 0u);
  magicube::Op s("sddmm.s8xs8.v8.f16+rc.sm_90");
  EXPECT_TRUE(s.is_sddmm());
  EXPECT_EQ(s.output_dtype(), MAGICUBE_FLOAT16);
  EXPECT_EQ(s.query(MAGICUBE_QUERY_SCALE), 2);
  try {
    magicube::Op bad("spmm.s8xs8.v8.i32.sm_90", magicube::OpOptions{1000, 0});
    ADD_FAILURE() << "candidate 1000 accepted";
  } catch (const magicube::Error &e) {
    EXPECT_EQ(e.kind(), magicube::Error::Kind::Invalid);
  }
}

TEST(CApi, PackWritesASelfDescribingBlob) {
  const auto w = small_weight();
  magicube::Op op("spmm.s8xs8.v8.i32.sm_90");
  magicube::Packed p = op.pack(magicube::dense_matrix(w.data(), 24, 40));
  const magicube_packed_header &h = p.header();
  EXPECT_EQ(h.magic, MAGICUBE_PACKED_MAGIC);
  EXPECT_EQ(h.format_version, MAGICUBE_PACKED_FORMAT_VERSION);
  EXPECT_EQ(h.op, 0);
  EXPECT_EQ(h.rows, 24);
  EXPECT_EQ(h.cols, 40);
  EXPECT_EQ(h.v, 8);
  EXPECT_EQ(h.num_blocks, 3);
  EXPECT_EQ(h.num_vectors, 4);  // (0..7, 3), (0..7, 39), (16..23, 0), (16..23, 20)
  EXPECT_EQ(h.max_block_length, 2);
  EXPECT_EQ(size_t(h.total_bytes), p.bytes());
  EXPECT_EQ(p.bytes() % 256, 0u);
  EXPECT_GE(h.num_planes, 1);
  for (int64_t off : {h.row_ptr_offset, h.col_idx_offset, h.plane_offset[0]}) EXPECT_EQ(off % 256, 0);
  static_assert(sizeof(magicube_packed_header) == MAGICUBE_PACKED_HEADER_BYTES, "32 int64s");
  EXPECT_EQ(std::memcmp(p.data(), &h, sizeof h), 0);  // the blob starts with its header

  magicube_packed_header read{};
  EXPECT_EQ(magicube_packed_read_header(p.data(), p.bytes(), &read), MAGICUBE_SUCCESS);
  EXPECT_EQ(std::memcmp(&read, &h, sizeof h), 0);
  EXPECT_EQ(magicube_packed_read_header(p.data(), 100, &read), MAGICUBE_ERROR_INVALID);
  EXPECT_EQ(magicube_packed_read_header(p.data(), p.bytes() - 256, &read), MAGICUBE_ERROR_INVALID);
  std::vector<uint8_t> bad(static_cast<const uint8_t *>(p.data()), static_cast<const uint8_t *>(p.data()) + p.bytes());
  bad[0] ^= 1;
  EXPECT_EQ(magicube_packed_read_header(bad.data(), bad.size(), &read), MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("magic"), std::string::npos);

  // The same matrix as BCRS vectors packs to the same bytes.
  const std::vector<int64_t> block_ptr{0, 2, 2, 4};
  const std::vector<int32_t> col{3, 39, 0, 20};
  std::vector<int16_t> vals(4 * 8, 0);
  for (int i = 0; i < 4; ++i)
    for (int r = 0; r < 8; ++r) {
      const int row = (i < 2 ? 0 : 16) + r;
      vals[size_t(i * 8 + r)] = w[size_t(row * 40 + col[size_t(i)])];
    }
  magicube::Packed q = op.pack(magicube::bcrs_matrix(24, 40, 8, block_ptr.data(), col.data(), vals.data()));
  ASSERT_EQ(q.bytes(), p.bytes());
  EXPECT_EQ(std::memcmp(q.data(), p.data(), p.bytes()), 0);

  // Values outside the lhs type, a wrong V, bad BCRS: refused by name.
  magicube::Op s4("spmm.s4xs8.v8.i32.sm_90");
  try {
    s4.pack(magicube::dense_matrix(w.data(), 24, 40));
    ADD_FAILURE() << "s4 accepted 127";
  } catch (const magicube::Error &e) {
    EXPECT_EQ(e.kind(), magicube::Error::Kind::Invalid);
    EXPECT_NE(std::string(e.what()).find("lhs A"), std::string::npos) << e.what();
  }
  const std::vector<int32_t> unsorted{39, 3, 0, 20};
  magicube_matrix m = magicube::bcrs_matrix(24, 40, 8, block_ptr.data(), unsorted.data(), vals.data());
  magicube_packed *out = nullptr;
  EXPECT_EQ(magicube_pack(op.get(), &m, &out), MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("increasing"), std::string::npos);
  m = magicube::bcrs_matrix(24, 40, 4, block_ptr.data(), col.data(), vals.data());
  EXPECT_EQ(magicube_pack(op.get(), &m, &out), MAGICUBE_ERROR_INVALID);
  std::vector<float> f(24 * 40, 0.0f);
  m = magicube_matrix{24, 40, MAGICUBE_FLOAT32, f.data(), nullptr, nullptr, 0};
  EXPECT_EQ(magicube_pack(op.get(), &m, &out), MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("float32"), std::string::npos);
  set_raw(m.dtype, 77);  // no magicube_dtype: refused, read as an int
  EXPECT_EQ(magicube_pack(op.get(), &m, &out), MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("dtype unknown (77)"), std::string::npos) << magicube_last_error();

  // An SDDMM mask: pointers, columns and BCRS offsets, no planes.
  magicube::Op sd("sddmm.s8xs8.v8.i32.sm_90");
  magicube::Packed mask = sd.pack(magicube::dense_matrix(w.data(), 24, 40));
  EXPECT_EQ(mask.header().op, 1);
  EXPECT_EQ(mask.header().num_planes, 0);
  EXPECT_EQ(mask.header().num_vectors, 4);
  int64_t elems = 0;
  EXPECT_EQ(magicube_output_elements(&mask.header(), MAGICUBE_BCRS, &elems), MAGICUBE_SUCCESS);
  EXPECT_EQ(elems, 32);
  EXPECT_EQ(magicube_output_elements(&mask.header(), MAGICUBE_SRBCRS, &elems), MAGICUBE_SUCCESS);
  EXPECT_EQ(elems, mask.header().num_slots * 8);
  EXPECT_EQ(magicube_output_elements(&p.header(), 7, &elems), MAGICUBE_SUCCESS);
  EXPECT_EQ(elems, 24 * 7);
  EXPECT_EQ(op.output_bytes(p.header(), 7), 24u * 7 * 4);
  magicube::Op f16("sddmm.s8xs8.v8.f16+rc.sm_90");
  EXPECT_EQ(f16.output_bytes(f16.pack(magicube::dense_matrix(w.data(), 24, 40)).header(), MAGICUBE_BCRS), 32u * 2);
  size_t bytes = 0;
  EXPECT_EQ(magicube_output_bytes(op.get(), &mask.header(), MAGICUBE_BCRS, &bytes), MAGICUBE_ERROR_INVALID);
}

TEST(CApi, WorkspaceSizes) {
  // K = 4096 rows of B; M = 64.
  std::vector<int8_t> w(64 * 4096, 0);
  for (int i = 0; i < 64 * 4096; i += 97) w[size_t(i)] = int8_t(i % 7 - 3);
  void *aligned = reinterpret_cast<void *>(uintptr_t(0x10000));
  auto ws = [&](const char *spec, magicube_dtype bt, magicube_layout bl, int64_t n, magicube_layout cl) {
    magicube::Op op(spec);
    magicube::Packed p = op.pack(magicube::dense_matrix(w.data(), 64, 4096));
    magicube_dense b{aligned, bt, bl}, c{aligned, op.output_dtype(), cl};
    return op.spmm_workspace_bytes(p.header(), b, n, c);
  };
  const char *s8 = "spmm.s8xs8.v8.n64.pf.i32.sm_90";
  EXPECT_EQ(ws(s8, MAGICUBE_INT8, MAGICUBE_ROW_MAJOR, 512, MAGICUBE_ROW_MAJOR), 0u);  // B read in place
  EXPECT_EQ(ws(s8, MAGICUBE_INT8, MAGICUBE_ROW_MAJOR, 300, MAGICUBE_ROW_MAJOR), 4096u * 512);
  EXPECT_EQ(ws(s8, MAGICUBE_INT8, MAGICUBE_COL_MAJOR, 1, MAGICUBE_COL_MAJOR), 4096u * 256);  // n = 1: no transpose
  EXPECT_EQ(ws(s8, MAGICUBE_INT8, MAGICUBE_COL_MAJOR, 16, MAGICUBE_COL_MAJOR), 4096u * 256 + 64 * 16 * 4);
  EXPECT_EQ(ws(s8, MAGICUBE_INT16, MAGICUBE_ROW_MAJOR, 512, MAGICUBE_ROW_MAJOR), 4096u * 512);  // not bytes: repacked
  EXPECT_EQ(ws("spmm.s8xu4.v8.n64.pf.i32.sm_90", MAGICUBE_UINT8, MAGICUBE_ROW_MAJOR, 256, MAGICUBE_ROW_MAJOR),
            4096u * 256 / 2);
  EXPECT_EQ(ws("spmm.s8xs8.v8.n64.pf.bf16+rc.sm_90", MAGICUBE_INT8, MAGICUBE_COL_MAJOR, 8, MAGICUBE_COL_MAJOR),
            4096u * 256 + 64 * 8 * 2);

  magicube::Op sd("sddmm.s8xs8.v8.n64.pf.i32.sm_90");
  magicube::Packed mask = sd.pack(magicube::dense_matrix(w.data(), 64, 4096));  // M = 64, N = 4096
  magicube_dense a{aligned, MAGICUBE_INT8, MAGICUBE_ROW_MAJOR}, b{aligned, MAGICUBE_INT8, MAGICUBE_COL_MAJOR};
  EXPECT_EQ(sd.sddmm_workspace_bytes(mask.header(), a, b, 128), 0u);  // both in place
  EXPECT_EQ(sd.sddmm_workspace_bytes(mask.header(), a, b, 100), 64u * 256 + 4096 * 256);
  b.layout = MAGICUBE_ROW_MAJOR;
  EXPECT_EQ(sd.sddmm_workspace_bytes(mask.header(), a, b, 128), 4096u * 256);
}

TEST(CApi, QuantizeRowsRefusesBadArgumentsBeforeAnyDeviceWork) {
  void *dev = reinterpret_cast<void *>(uintptr_t(0x10000));
  float *scale = reinterpret_cast<float *>(uintptr_t(0x20000));
  auto expect_invalid = [&](int status, const char *needle) {
    EXPECT_EQ(status, MAGICUBE_ERROR_INVALID) << magicube_last_error();
    EXPECT_NE(std::string(magicube_last_error()).find(needle), std::string::npos) << magicube_last_error();
  };
  const magicube_dense x{dev, MAGICUBE_FLOAT32, MAGICUBE_ROW_MAJOR};
  expect_invalid(magicube_quantize_rows(0, nullptr, 4, 8, dev, scale, nullptr), "x: NULL");
  expect_invalid(magicube_quantize_rows(0, &x, -1, 8, dev, scale, nullptr), "-1 x 8");
  expect_invalid(magicube_quantize_rows(0, &x, 4, -8, dev, scale, nullptr), "4 x -8");
  const magicube_dense xi{dev, MAGICUBE_INT8, MAGICUBE_ROW_MAJOR};
  expect_invalid(magicube_quantize_rows(0, &xi, 4, 8, dev, scale, nullptr), "x: dtype int8");
  const magicube_dense xc{dev, MAGICUBE_FLOAT32, MAGICUBE_COL_MAJOR};
  expect_invalid(magicube_quantize_rows(0, &xc, 4, 8, dev, scale, nullptr), "MAGICUBE_ROW_MAJOR");
  magicube_dense xr = x;
  set_raw(xr.layout, 5);
  expect_invalid(magicube_quantize_rows(0, &xr, 4, 8, dev, scale, nullptr), "MAGICUBE_ROW_MAJOR");
  xr = x;
  set_raw(xr.dtype, -3);
  expect_invalid(magicube_quantize_rows(0, &xr, 4, 8, dev, scale, nullptr), "x: dtype unknown");
  expect_invalid(magicube_quantize_rows(0, &x, 4, 8, dev, nullptr, nullptr), "scale: NULL");
  expect_invalid(magicube_quantize_rows(0, &x, 4, 8, nullptr, scale, nullptr), "q: NULL");
  expect_invalid(magicube_quantize_rows(0, &x, 4, 8, dev, reinterpret_cast<float *>(uintptr_t(0x20002)), nullptr),
                 "scale: the address is not aligned to 4");
  const magicube_dense xo{reinterpret_cast<void *>(uintptr_t(0x10002)), MAGICUBE_FLOAT32, MAGICUBE_ROW_MAJOR};
  expect_invalid(magicube_quantize_rows(0, &xo, 4, 8, dev, scale, nullptr), "x.data: the address is not aligned to 4");
  const magicube_dense xh{reinterpret_cast<void *>(uintptr_t(0x10001)), MAGICUBE_BFLOAT16, MAGICUBE_ROW_MAJOR};
  expect_invalid(magicube_quantize_rows(0, &xh, 4, 8, dev, scale, nullptr), "x.data: the address is not aligned to 2");
  // No rows: nothing to read or write, no device touched.
  const magicube_dense x0{nullptr, MAGICUBE_FLOAT16, MAGICUBE_ROW_MAJOR};
  EXPECT_EQ(magicube_quantize_rows(0, &x0, 0, 8, nullptr, nullptr, nullptr), MAGICUBE_SUCCESS) << magicube_last_error();
  // The C++17 wrapper throws the same message.
  try {
    magicube::quantize_rows(0, dev, MAGICUBE_INT16, 4, 8, dev, scale);
    ADD_FAILURE() << "no error for an int16 x";
  } catch (const magicube::Error &e) {
    EXPECT_NE(std::string(e.what()).find("x: dtype int16"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(magicube::quantize_rows(0, nullptr, MAGICUBE_BFLOAT16, 0, 4, nullptr, nullptr));
}

TEST(CApi, RunRefusesBadArgumentsBeforeAnyDeviceWork) {
  const auto w = small_weight();
  magicube::Op op("spmm.s8xu8.v8.n64.pf.i32.sm_90");
  magicube::Packed p = op.pack(magicube::dense_matrix(w.data(), 24, 40));
  void *dev = reinterpret_cast<void *>(uintptr_t(0x10000));
  static char ws_buf[1];
  (void)ws_buf;
  auto run = [&](const magicube_packed_header &h, magicube_dense b, int64_t n, magicube_dense c, size_t ws_bytes) {
    return magicube_spmm_run(op.get(), &h, dev, &b, n, &c, nullptr, dev, ws_bytes, nullptr);
  };
  const magicube_dense b{dev, MAGICUBE_UINT8, MAGICUBE_ROW_MAJOR}, c{dev, MAGICUBE_INT32, MAGICUBE_ROW_MAJOR};
  auto expect_invalid = [&](int status, const char *needle) {
    EXPECT_EQ(status, MAGICUBE_ERROR_INVALID) << magicube_last_error();
    EXPECT_NE(std::string(magicube_last_error()).find(needle), std::string::npos) << magicube_last_error();
  };
  expect_invalid(run(p.header(), b, 0, c, 1 << 20), "n: 0");
  expect_invalid(run(p.header(), magicube_dense{dev, MAGICUBE_INT8, MAGICUBE_ROW_MAJOR}, 8, c, 1 << 20),
                 "cannot hold");
  expect_invalid(run(p.header(), b, 8, magicube_dense{dev, MAGICUBE_FLOAT16, MAGICUBE_ROW_MAJOR}, 1 << 20), "c: dtype");
  // Enum fields holding values no enumerator has (what a C caller can store): refused by name,
  // read as ints (UBSan's build checks that no such value is loaded as the enum).
  magicube_dense bad_b = b, bad_c = c;
  set_raw(bad_b.layout, 7);
  expect_invalid(run(p.header(), bad_b, 8, c, 1 << 20), "b: layout 7");
  bad_b = b;
  set_raw(bad_b.dtype, 42);
  expect_invalid(run(p.header(), bad_b, 8, c, 1 << 20), "b: dtype unknown");
  set_raw(bad_c.layout, -1);
  expect_invalid(run(p.header(), b, 8, bad_c, 1 << 20), "c: layout -1");
  bad_c = c;
  set_raw(bad_c.dtype, 1000);
  expect_invalid(run(p.header(), b, 8, bad_c, 1 << 20), "c: dtype unknown");
  expect_invalid(run(p.header(), b, 8, c, 10), "workspace");
  magicube::Op other("spmm.s8xu8.v8.n128.pf.i32.sm_90");
  magicube::Packed po = other.pack(magicube::dense_matrix(w.data(), 24, 40));
  expect_invalid(run(po.header(), b, 8, c, 1 << 20), "another plan");
  magicube_packed_header bad = p.header();
  bad.magic = 0;
  expect_invalid(run(bad, b, 8, c, 1 << 20), "magic");
  magicube::Op sd("sddmm.s8xs8.v8.i32.sm_90");
  magicube::Packed mask = sd.pack(magicube::dense_matrix(w.data(), 24, 40));
  expect_invalid(run(mask.header(), b, 8, c, 1 << 20), "SDDMM mask");
  // A float output whose spec needs scales gets none.
  magicube::Op f("spmm.s8xu8.v8.n64.pf.bf16+rc.sm_90");
  magicube::Packed pf = f.pack(magicube::dense_matrix(w.data(), 24, 40));
  const magicube_dense cf{dev, MAGICUBE_BFLOAT16, MAGICUBE_ROW_MAJOR};
  EXPECT_EQ(magicube_spmm_run(f.get(), &pf.header(), dev, &b, 8, &cf, nullptr, dev, 1 << 20, nullptr),
            MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("row_scale"), std::string::npos) << magicube_last_error();
  // An integer output given scales.
  const float *fake = reinterpret_cast<const float *>(dev);
  magicube_epilogue e{1.0f, fake, fake, nullptr};
  EXPECT_EQ(magicube_spmm_run(op.get(), &p.header(), dev, &b, 8, &c, &e, dev, 1 << 20, nullptr), MAGICUBE_ERROR_INVALID);
  // SDDMM: K longer than an int32 output allows.
  magicube::Op s16("sddmm.s16xs16.v8.i32.sm_90");
  magicube::Packed m16 = s16.pack(magicube::dense_matrix(w.data(), 24, 40));
  const magicube_dense a16{dev, MAGICUBE_INT16, MAGICUBE_ROW_MAJOR}, b16{dev, MAGICUBE_INT16, MAGICUBE_COL_MAJOR};
  EXPECT_EQ(magicube_sddmm_run(s16.get(), &m16.header(), dev, &a16, &b16, 1 << 20, dev, MAGICUBE_BCRS, nullptr, dev,
                               1 << 30, nullptr),
            MAGICUBE_ERROR_INVALID);
  magicube_dense bad_a16 = a16, bad_b16 = b16;
  set_raw(bad_a16.layout, 2);
  expect_invalid(magicube_sddmm_run(s16.get(), &m16.header(), dev, &bad_a16, &b16, 1, dev, MAGICUBE_BCRS, nullptr, dev,
                                    1 << 30, nullptr),
                 "a: layout 2");
  set_raw(bad_b16.dtype, 99);
  expect_invalid(magicube_sddmm_run(s16.get(), &m16.header(), dev, &a16, &bad_b16, 1, dev, MAGICUBE_BCRS, nullptr, dev,
                                    1 << 30, nullptr),
                 "b: dtype unknown");
}

// ---- GPU: host operands through the whole device path -----------------------------------------

// C (M x N) = A (M x K) x B (K x N), int64.
std::vector<int64_t> naive_spmm(const std::vector<int8_t> &a, const std::vector<int8_t> &b, int64_t m, int64_t k,
                                int64_t n) {
  std::vector<int64_t> c(size_t(m * n), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t t = 0; t < k; ++t)
      if (a[size_t(i * k + t)])
        for (int64_t j = 0; j < n; ++j) c[size_t(i * n + j)] += int64_t(a[size_t(i * k + t)]) * b[size_t(t * n + j)];
  return c;
}

bool have_gpu(const magicube::Op &op, std::string *why) {
  const int s = magicube_op_load(op.get());
  if (s == MAGICUBE_ERROR_NO_GPU) {
    *why = magicube_last_error();
    return false;
  }
  EXPECT_EQ(s, MAGICUBE_SUCCESS) << magicube_last_error();
  return true;
}

TEST(CApiGpu, SpmmHostOperandsMatchTheReferenceInEveryLayout) {
  magicube::Op probe("spmm.s8xs8.v8.n64.pf.i32.sm_80");
  std::string why;
  if (!have_gpu(probe, &why)) GTEST_SKIP() << why;
  std::mt19937_64 rng(3);
  const int64_t m = 50, k = 300;
  std::vector<int8_t> a(size_t(m * k), 0);
  for (int64_t blk = 0; blk * 8 < m; ++blk)
    for (int64_t t = 0; t < k; ++t)
      if (rng() % 4 == 0)
        for (int r = 0; r < 8 && blk * 8 + r < m; ++r) a[size_t((blk * 8 + r) * k + t)] = int8_t(int(rng() % 256) - 128);
  for (int64_t n : {1, 7, 256, 300}) {
    std::vector<int8_t> b(size_t(k * n));
    for (auto &x : b) x = int8_t(int(rng() % 256) - 128);
    const auto want = naive_spmm(a, b, m, k, n);
    magicube::Op op("spmm.s8xs8.v8.i32.sm_80", magicube::dense_matrix(a.data(), m, k), n);
    magicube::Packed pa = op.pack(magicube::dense_matrix(a.data(), m, k));
    for (auto bl : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR})
      for (auto cl : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR}) {
        std::vector<int8_t> bsrc = b;
        if (bl == MAGICUBE_COL_MAJOR)
          for (int64_t t = 0; t < k; ++t)
            for (int64_t j = 0; j < n; ++j) bsrc[size_t(j * k + t)] = b[size_t(t * n + j)];
        std::vector<int32_t> c(size_t(m * n), -1);
        op.spmm_host(pa, magicube_dense{bsrc.data(), MAGICUBE_INT8, bl}, n, magicube_dense{c.data(), MAGICUBE_INT32, cl});
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            const int64_t got = cl == MAGICUBE_ROW_MAJOR ? c[size_t(i * n + j)] : c[size_t(j * m + i)];
            ASSERT_EQ(got, want[size_t(i * n + j)]) << "n=" << n << " b " << bl << " c " << cl << " at " << i << "," << j;
          }
      }
  }
}

// ---- the dense route ---------------------------------------------------------------------

std::string op_text(const magicube_op *op, int kind) {
  size_t needed = 0;
  EXPECT_EQ(magicube_op_text(op, kind, nullptr, 0, &needed), MAGICUBE_SUCCESS) << magicube_last_error();
  std::string s(needed, '\0');
  EXPECT_EQ(magicube_op_text(op, kind, &s[0], s.size(), &needed), MAGICUBE_SUCCESS) << magicube_last_error();
  s.resize(needed - 1);
  return s;
}

// A forced dense op for `w` (rows x cols) and N = n; null, with *why, where the library
// refuses the dense route on this machine (libcublasLt not loadable).
magicube_op *forced_dense(const char *spec, const std::vector<int8_t> &w, int64_t rows, int64_t cols, int64_t n,
                          std::string *why) {
  const magicube_matrix m = magicube::dense_matrix(w.data(), rows, cols);
  const magicube_op_options_ex o{sizeof(magicube_op_options_ex), -1, 0, MAGICUBE_DENSE_FORCED};
  magicube_op *op = nullptr;
  if (magicube_op_create_ex(spec, &m, n, &o, &op) != MAGICUBE_SUCCESS) *why = magicube_last_error();
  return op;
}

TEST(CApi, DenseOptionsAreSizedAndChecked) {
  const auto w = small_weight();
  const magicube_matrix m = magicube::dense_matrix(w.data(), 24, 40);
  magicube_op *op = nullptr;
  auto expect_invalid = [&](int status, const std::string &needle) {
    EXPECT_EQ(status, MAGICUBE_ERROR_INVALID) << magicube_last_error();
    EXPECT_NE(std::string(magicube_last_error()).find(needle), std::string::npos) << magicube_last_error();
  };
  // NULL options and the plain create: the sparse route, no reason asked.
  ASSERT_EQ(magicube_op_create_ex("spmm.s8xs8.v8.i32.sm_90", &m, 64, nullptr, &op), MAGICUBE_SUCCESS);
  int64_t route = -1;
  ASSERT_EQ(magicube_op_query(op, MAGICUBE_QUERY_ROUTE, &route), MAGICUBE_SUCCESS);
  EXPECT_EQ(route, 0);
  EXPECT_EQ(op_text(op, MAGICUBE_TEXT_ROUTE_WHY), "");
  magicube_op_destroy(op);
  // A caller whose header ended before `dense`: its size covers candidate and device only.
  magicube_op_options_ex o{offsetof(magicube_op_options_ex, dense), -1, 0, MAGICUBE_DENSE_FORCED};
  ASSERT_EQ(magicube_op_create_ex("spmm.u8xs8.v8.i32.sm_90", &m, 64, &o, &op), MAGICUBE_SUCCESS)
      << magicube_last_error();  // `dense` past the size: Never, so u8 is fine
  ASSERT_EQ(magicube_op_query(op, MAGICUBE_QUERY_ROUTE, &route), MAGICUBE_SUCCESS);
  EXPECT_EQ(route, 0);
  magicube_op_destroy(op);
  o.size = 4;
  expect_invalid(magicube_op_create_ex("spmm.s8xs8.v8.i32.sm_90", &m, 64, &o, &op), "options.size: 4 (allowed: ");
  o.size = sizeof(magicube_op_options_ex) + 8;
  expect_invalid(magicube_op_create_ex("spmm.s8xs8.v8.i32.sm_90", &m, 64, &o, &op), "options.size");
  o.size = sizeof o;
  o.dense = 3;
  expect_invalid(magicube_op_create_ex("spmm.s8xs8.v8.i32.sm_90", &m, 64, &o, &op),
                 "options.dense: 3 (allowed: 0 never, 1 allowed, 2 forced)");
  o.dense = MAGICUBE_DENSE_NEVER;
  o.candidate = -5;
  expect_invalid(magicube_op_create_ex("spmm.s8xs8.v8.i32.sm_90", &m, 64, &o, &op), "options.candidate: -5");
  o.candidate = -1;
  // Allowed: without a matrix nothing to compare; with one, the dispatch's reason.
  o.dense = MAGICUBE_DENSE_ALLOWED;
  ASSERT_EQ(magicube_op_create_ex("spmm.s8xs8.v8.i32.sm_90", nullptr, 0, &o, &op), MAGICUBE_SUCCESS);
  EXPECT_EQ(op_text(op, MAGICUBE_TEXT_ROUTE_WHY), "no matrix given");
  magicube_op_destroy(op);
  ASSERT_EQ(magicube_op_create_ex("spmm.s8xs8.v8.i32.sm_90", &m, 64, &o, &op), MAGICUBE_SUCCESS);
  EXPECT_FALSE(op_text(op, MAGICUBE_TEXT_ROUTE_WHY).empty());
  magicube_op_destroy(op);
  ASSERT_EQ(magicube_op_create_ex("sddmm.s8xs8.v8.i32.sm_90", &m, 64, &o, &op), MAGICUBE_SUCCESS);  // ignored
  ASSERT_EQ(magicube_op_query(op, MAGICUBE_QUERY_ROUTE, &route), MAGICUBE_SUCCESS);
  EXPECT_EQ(route, 0);
  magicube_op_destroy(op);
  // Forced: every SpMM, u8 too (in int8 chunks), where cuBLASLt loads; an SDDMM is refused.
  o.dense = MAGICUBE_DENSE_FORCED;
  if (magicube_op_create_ex("spmm.u8xs8.v8.i32.sm_90", &m, 64, &o, &op) == MAGICUBE_SUCCESS) {
    ASSERT_EQ(magicube_op_query(op, MAGICUBE_QUERY_ROUTE, &route), MAGICUBE_SUCCESS);
    EXPECT_EQ(route, 1);
    magicube_op_destroy(op);
  } else {
    EXPECT_NE(std::string(magicube_last_error()).find("route: dense route unavailable"), std::string::npos)
        << magicube_last_error();
  }
  expect_invalid(magicube_op_create_ex("sddmm.s8xs8.v8.i32.sm_90", &m, 64, &o, &op),
                 "dense: the dense route runs SpMM only");
  // The C++ header passes the option through.
  magicube::OpOptions hpp;
  hpp.dense = MAGICUBE_DENSE_ALLOWED;
  magicube::Op allowed("spmm.s8xs8.v8.i32.sm_90", hpp);
  EXPECT_FALSE(allowed.dense());
  EXPECT_EQ(allowed.route_why(), "no matrix given");
}

// A u8 x u8 dense op packs its weight as one int8 plane (values minus 128) and the plane's row
// sums; a header whose dense copy has another op's size is refused before any GPU work.
TEST(CApi, DenseChunkedBlobSizeIsCheckedAgainstTheOp) {
  std::vector<int64_t> w(24 * 40, 0);
  w[0 * 40 + 3] = 5, w[7 * 40 + 3] = 255, w[2 * 40 + 39] = 128, w[23 * 40 + 20] = 9;
  const magicube_matrix m{24, 40, MAGICUBE_INT64, w.data(), nullptr, nullptr, 0};
  const magicube_op_options_ex o{sizeof(magicube_op_options_ex), -1, 0, MAGICUBE_DENSE_FORCED};
  magicube_op *raw = nullptr;
  if (magicube_op_create_ex("spmm.u8xu8.v8.i32.sm_90", &m, 16, &o, &raw) != MAGICUBE_SUCCESS) {
    EXPECT_NE(std::string(magicube_last_error()).find("route: dense route unavailable"), std::string::npos)
        << magicube_last_error();
    GTEST_SKIP() << magicube_last_error();
  }
  std::unique_ptr<magicube_op, void (*)(magicube_op *)> op(raw, magicube_op_destroy);
  magicube_packed *pp = nullptr;
  ASSERT_EQ(magicube_pack(op.get(), &m, &pp), MAGICUBE_SUCCESS) << magicube_last_error();
  std::unique_ptr<magicube_packed, void (*)(magicube_packed *)> p(pp, magicube_packed_destroy);
  const magicube_packed_header h = *magicube_packed_get_header(p.get());
  EXPECT_EQ(h.dense_bytes, 1024 + 24 * 4);  // 960 bytes of plane rounded up to 256, then 24 row sums
  const auto *blob = static_cast<const uint8_t *>(magicube_packed_data(p.get()));
  const auto *plane = reinterpret_cast<const int8_t *>(blob + h.dense_offset);
  int32_t sum0 = 0;
  std::memcpy(&sum0, blob + h.dense_offset + 1024, 4);
  EXPECT_EQ(plane[3], 5 - 128);
  EXPECT_EQ(plane[0], -128);  // an absent entry: zero minus the offset
  EXPECT_EQ(sum0, 40 * -128 + 5);
  void *dev = reinterpret_cast<void *>(uintptr_t(0x10000));
  const magicube_dense b{dev, MAGICUBE_UINT8, MAGICUBE_COL_MAJOR}, c{dev, MAGICUBE_INT32, MAGICUBE_ROW_MAJOR};
  size_t bytes = 0;
  ASSERT_EQ(magicube_spmm_workspace_bytes(op.get(), &h, &b, 16, &c, &bytes), MAGICUBE_SUCCESS) << magicube_last_error();
  magicube_packed_header other = h;
  other.dense_bytes = 24 * 40;  // an s8 x s8 op's copy: plausible for some op, not this one
  EXPECT_EQ(magicube_spmm_workspace_bytes(op.get(), &other, &b, 16, &c, &bytes), MAGICUBE_ERROR_INVALID);
  const std::string e = magicube_last_error();
  EXPECT_EQ(e.rfind("packed: the dense copy has 960 bytes, but this op (spmm.u8xu8.v8.", 0), 0u) << e;
  EXPECT_NE(e.find(") packs 1120 for A of 24 x 40: pack it with this op"), std::string::npos) << e;
  other.dense_bytes = 1000;  // no op's
  EXPECT_EQ(magicube_spmm_workspace_bytes(op.get(), &other, &b, 16, &c, &bytes), MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("the dense copy has 1000 bytes for A of 24 x 40 (allowed: one or"),
            std::string::npos)
      << magicube_last_error();
}

TEST(CApi, DensePackedBlobRoundTrips) {
  // M = 24 (3 row-blocks of V = 8), K = 40.
  const auto w = small_weight();
  std::string why;
  magicube_op *raw = forced_dense("spmm.s8xs8.v8.i32.sm_90", w, 24, 40, 16, &why);
  if (!raw) {
    EXPECT_NE(why.find("route: dense route unavailable"), std::string::npos) << why;
    GTEST_SKIP() << why;
  }
  std::unique_ptr<magicube_op, void (*)(magicube_op *)> op(raw, magicube_op_destroy);
  int64_t route = -1;
  ASSERT_EQ(magicube_op_query(op.get(), MAGICUBE_QUERY_ROUTE, &route), MAGICUBE_SUCCESS);
  EXPECT_EQ(route, 1);
  EXPECT_EQ(op_text(op.get(), MAGICUBE_TEXT_ROUTE_WHY), "asked for");
  const magicube_matrix m = magicube::dense_matrix(w.data(), 24, 40);
  magicube_packed *pp = nullptr;
  ASSERT_EQ(magicube_pack(op.get(), &m, &pp), MAGICUBE_SUCCESS) << magicube_last_error();
  std::unique_ptr<magicube_packed, void (*)(magicube_packed *)> p(pp, magicube_packed_destroy);
  const magicube_packed_header &h = *magicube_packed_get_header(p.get());
  EXPECT_EQ(h.format_version, MAGICUBE_PACKED_FORMAT_VERSION);
  EXPECT_EQ(h.route, 1);
  EXPECT_EQ(h.op, 0);
  EXPECT_EQ(h.rows, 24);
  EXPECT_EQ(h.cols, 40);
  EXPECT_EQ(h.num_planes, 0);
  EXPECT_EQ(h.row_ptr_offset, 0);
  EXPECT_EQ(h.num_vectors, 4);  // A's layout is still described
  EXPECT_EQ(h.dense_offset % 256, 0);
  EXPECT_EQ(h.dense_bytes, 24 * 40);
  EXPECT_EQ(size_t(h.total_bytes), magicube_packed_bytes(p.get()));
  const auto *blob = static_cast<const uint8_t *>(magicube_packed_data(p.get()));
  EXPECT_EQ(std::memcmp(blob + h.dense_offset, w.data(), w.size()), 0);  // A, row-major int8
  EXPECT_EQ(std::memcmp(blob, &h, sizeof h), 0);
  magicube_packed_header read{};
  ASSERT_EQ(magicube_packed_read_header(blob, size_t(h.total_bytes), &read), MAGICUBE_SUCCESS) << magicube_last_error();
  EXPECT_EQ(std::memcmp(&read, &h, sizeof h), 0);

  // Foreign, old or inconsistent headers are refused by name.
  std::vector<uint8_t> copy(blob, blob + h.total_bytes);
  auto refused = [&](auto edit, const std::string &needle) {
    std::vector<uint8_t> c = copy;
    magicube_packed_header x;
    std::memcpy(&x, c.data(), sizeof x);
    edit(x);
    std::memcpy(c.data(), &x, sizeof x);
    EXPECT_EQ(magicube_packed_read_header(c.data(), c.size(), &read), MAGICUBE_ERROR_INVALID);
    EXPECT_NE(std::string(magicube_last_error()).find(needle), std::string::npos) << magicube_last_error();
  };
  refused([](magicube_packed_header &x) { x.format_version = 1; },
          "packed: format version 1, written before the dense route (this library reads version 4): pack the matrix "
          "again");
  refused([](magicube_packed_header &x) { x.format_version = 2; },
          "packed: format version 2, written before the decode kernel's schedule (this library reads version 4)");
  refused([](magicube_packed_header &x) { x.format_version = 3; },
          "packed: format version 3, written before the decode kernel's indices carried its schedule");
  refused([](magicube_packed_header &x) { x.format_version = 5; }, "format version 5 (this library reads version 4)");
  refused([](magicube_packed_header &x) { x.route = 2; }, "packed: route 2 (allowed: 0 sparse, 1 dense)");
  refused([](magicube_packed_header &x) { x.dense_bytes -= 1; }, "the dense copy has 959 bytes for A of 24 x 40");
  refused([](magicube_packed_header &x) { x.dense_offset += 16; }, "not 256-byte aligned");
  refused([](magicube_packed_header &x) { x.dense_offset = x.total_bytes; }, "the dense copy lies outside the blob");
  refused([](magicube_packed_header &x) { x.op = 1; }, "a dense copy in an SDDMM mask");
  refused([](magicube_packed_header &x) { x.route = 0; }, "a sparse blob (route 0) names a dense copy");

  // A blob of the other route is refused by the workspace query and the run.
  magicube::Op sparse("spmm.s8xs8.v8.i32.sm_90", magicube::dense_matrix(w.data(), 24, 40), 16);
  magicube::Packed ps = sparse.pack(magicube::dense_matrix(w.data(), 24, 40));
  EXPECT_EQ(ps.header().route, 0);
  EXPECT_EQ(ps.header().dense_bytes, 0);
  void *dev = reinterpret_cast<void *>(uintptr_t(0x10000));
  const magicube_dense b{dev, MAGICUBE_INT8, MAGICUBE_COL_MAJOR}, c{dev, MAGICUBE_INT32, MAGICUBE_COL_MAJOR};
  size_t bytes = 0;
  if (ps.header().plan_fingerprint == h.plan_fingerprint) {  // the same plan: only the route differs
    EXPECT_EQ(magicube_spmm_workspace_bytes(op.get(), &ps.header(), &b, 16, &c, &bytes), MAGICUBE_ERROR_INVALID);
    EXPECT_NE(std::string(magicube_last_error()).find("packed: packed for the sparse route, but this op"),
              std::string::npos)
        << magicube_last_error();
    EXPECT_EQ(magicube_spmm_workspace_bytes(sparse.get(), &h, &b, 16, &c, &bytes), MAGICUBE_ERROR_INVALID);
    EXPECT_NE(std::string(magicube_last_error()).find("runs the sparse route: pack it with this op"),
              std::string::npos)
        << magicube_last_error();
  }
  // A misaligned blob is refused before any device work.
  void *odd = reinterpret_cast<void *>(uintptr_t(0x10010));
  EXPECT_EQ(magicube_spmm_run(op.get(), &h, odd, &b, 16, &c, nullptr, dev, size_t(64) << 20, nullptr),
            MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("a_packed: the address is not aligned to 256 bytes"),
            std::string::npos)
      << magicube_last_error();
}

TEST(CApi, DenseWorkspaceSizes) {
  // M = 64, K = 4096.
  std::vector<int8_t> w(64 * 4096, 0);
  for (int i = 0; i < 64 * 4096; i += 97) w[size_t(i)] = int8_t(i % 7 - 3);
  std::string why;
  magicube_op *raw = forced_dense("spmm.s8xs8.v8.i32.sm_90", w, 64, 4096, 512, &why);
  if (!raw) GTEST_SKIP() << why;
  std::unique_ptr<magicube_op, void (*)(magicube_op *)> op(raw, magicube_op_destroy);
  const magicube_matrix m = magicube::dense_matrix(w.data(), 64, 4096);
  magicube_packed *pp = nullptr;
  ASSERT_EQ(magicube_pack(op.get(), &m, &pp), MAGICUBE_SUCCESS) << magicube_last_error();
  std::unique_ptr<magicube_packed, void (*)(magicube_packed *)> p(pp, magicube_packed_destroy);
  const magicube_packed_header *h = magicube_packed_get_header(p.get());
  void *aligned = reinterpret_cast<void *>(uintptr_t(0x10000)), *off16 = reinterpret_cast<void *>(uintptr_t(0x10010));
  auto ws = [&](void *bp, magicube_dtype bt, magicube_layout bl, int64_t n, void *cp, magicube_layout cl) {
    const magicube_dense b{bp, bt, bl}, c{cp, MAGICUBE_INT32, cl};
    size_t bytes = 0;
    EXPECT_EQ(magicube_spmm_workspace_bytes(op.get(), h, &b, n, &c, &bytes), MAGICUBE_SUCCESS) << magicube_last_error();
    return bytes;
  };
  const size_t lt = size_t(32) << 20;  // cuBLASLt's workspace
  // X (N x K int8, 256-byte aligned) is the GEMM's Bt: read in place; C in either layout written directly.
  EXPECT_EQ(ws(aligned, MAGICUBE_INT8, MAGICUBE_COL_MAJOR, 512, aligned, MAGICUBE_ROW_MAJOR), lt);
  EXPECT_EQ(ws(aligned, MAGICUBE_INT8, MAGICUBE_COL_MAJOR, 7, aligned, MAGICUBE_COL_MAJOR), lt);
  // B as K x N, in a wider dtype or misaligned: transposed into N x K int8 in the workspace.
  EXPECT_EQ(ws(aligned, MAGICUBE_INT8, MAGICUBE_ROW_MAJOR, 512, aligned, MAGICUBE_ROW_MAJOR), lt + 512 * 4096);
  EXPECT_EQ(ws(aligned, MAGICUBE_INT8, MAGICUBE_ROW_MAJOR, 7, aligned, MAGICUBE_ROW_MAJOR), lt + 7 * 4096);
  EXPECT_EQ(ws(aligned, MAGICUBE_INT16, MAGICUBE_COL_MAJOR, 7, aligned, MAGICUBE_ROW_MAJOR), lt + 7 * 4096);
  EXPECT_EQ(ws(off16, MAGICUBE_INT8, MAGICUBE_COL_MAJOR, 7, aligned, MAGICUBE_ROW_MAJOR), lt + 7 * 4096);
  // C not 256-byte aligned: the GEMM writes the other layout into the workspace, a transpose moves it.
  EXPECT_EQ(ws(aligned, MAGICUBE_INT8, MAGICUBE_COL_MAJOR, 5, off16, MAGICUBE_COL_MAJOR), lt + 1280);  // 64*5*4
  EXPECT_EQ(ws(off16, MAGICUBE_INT8, MAGICUBE_ROW_MAJOR, 5, off16, MAGICUBE_ROW_MAJOR), lt + 5 * 4096 + 1280);
  // The output is int32 only; B's dtype must hold the rhs type.
  const magicube_dense b{aligned, MAGICUBE_INT8, MAGICUBE_COL_MAJOR}, c{aligned, MAGICUBE_FLOAT32, MAGICUBE_ROW_MAJOR};
  size_t bytes = 0;
  EXPECT_EQ(magicube_spmm_workspace_bytes(op.get(), h, &b, 8, &c, &bytes), MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("c: dtype float32 but the op's output is int32"), std::string::npos)
      << magicube_last_error();
  // The workspace is checked by the run before any device work.
  const magicube_dense ci{aligned, MAGICUBE_INT32, MAGICUBE_ROW_MAJOR};
  EXPECT_EQ(magicube_spmm_run(op.get(), h, aligned, &b, 8, &ci, nullptr, aligned, lt - 1, nullptr),
            MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("workspace: 33554431 bytes given, 33554432 needed"),
            std::string::npos)
      << magicube_last_error();
}

}  // namespace

TEST(CApi, OpsCompileInOneBatchWithoutAGpu) {
  // Two sparse ops (their kernels compile for sm_90 and sm_80 here, with no GPU) and a dense
  // one (no kernel): two kernels compiled or found.
  magicube::Op a("spmm.s8xs8.v8.n64.pf.i32.sm_90");
  magicube::Op b("sddmm.s4xs4.v8.i32.sm_80");
  std::vector<const magicube::Op *> ops{&a, &b};
  const auto w = small_weight();
  std::string why;
  magicube_op *dense = forced_dense("spmm.s8xs8.v8.i32.sm_90", w, 24, 40, 64, &why);
  std::vector<const magicube_op *> handles{a.get(), b.get()};
  if (dense) handles.push_back(dense);
  size_t kernels = 99;
  ASSERT_EQ(magicube_ops_compile(handles.data(), handles.size(), 2, &kernels), MAGICUBE_SUCCESS) << magicube_last_error();
  EXPECT_EQ(kernels, 2u);
  EXPECT_EQ(magicube::compile(ops), 2u) << "again: both from the caches";
  ASSERT_EQ(magicube_ops_compile(nullptr, 0, 0, &kernels), MAGICUBE_SUCCESS);
  EXPECT_EQ(kernels, 0u);
  // Refusals name the argument.
  const magicube_op *with_null[] = {a.get(), nullptr};
  EXPECT_EQ(magicube_ops_compile(with_null, 2, 0, nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_STREQ(magicube_last_error(), "ops[1]: a null op");
  EXPECT_EQ(magicube_ops_compile(handles.data(), handles.size(), -1, nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_STREQ(magicube_last_error(), "threads: -1 is not allowed (allowed: 0 for the host's cores, or >= 1)");
  EXPECT_EQ(magicube_ops_compile(nullptr, 1, 0, nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_STREQ(magicube_last_error(), "ops: NULL");
  magicube_op_destroy(dense);
}
