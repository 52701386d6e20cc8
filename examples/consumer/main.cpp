// Plans and packs through the C++17 header of an installed libmagicube.so.
#include <magicube/magicube.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

int main(int argc, char **argv) {
  const std::string spec = argc > 1 ? argv[1] : "spmm.s8xs8.v8.i32.sm_90";
  try {
    std::cout << "magicube " << magicube::version() << " (C++17)\n" << magicube::plan_describe(spec);
    // A 16 x 64 int8 weight with two nonzero 8 x 1 vectors, planned for N = 32 and packed.
    std::vector<int8_t> w(16 * 64, 0);
    w[3] = 5, w[8 * 64 + 10] = -7;
    const magicube_matrix a = magicube::dense_matrix(w.data(), 16, 64);
    magicube::Op op(spec, a, 32);
    magicube::Packed packed = op.pack(a);
    std::cout << op.chosen_by() << "\npacked " << packed.header().num_vectors << " vectors into " << packed.bytes()
              << " bytes\n";
  } catch (const magicube::Error &e) {
    std::cerr << "magicube: " << magicube::Error::kind_name(e.kind()) << ": " << e.what() << "\n";
    return 1;
  }
  try {
    magicube::plan_describe("spmm.s17xs8.v8.i32.sm_90");
    std::cerr << "a bad spec was accepted\n";
    return 1;
  } catch (const magicube::Error &e) {
    if (e.kind() != magicube::Error::Kind::Invalid) return 1;
    std::cout << "bad spec: " << magicube::Error::kind_name(e.kind()) << ": " << e.what() << "\n";
  }
  return 0;
}
