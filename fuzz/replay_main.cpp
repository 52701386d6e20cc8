// A main() for the fuzz targets in ordinary (non-libFuzzer) builds: runs
// LLVMFuzzerTestOneInput on every file named on the command line or found in a named
// directory (the seed corpus and the inputs that once failed), so ctest replays them on
// every build. A crash or abort fails the test; `-v` prints each file.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include "llvm/Support/FileSystem.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  bool verbose = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-v") == 0) {
      verbose = true;
      continue;
    }
    if (llvm::sys::fs::is_directory(argv[i])) {
      std::error_code ec;
      for (llvm::sys::fs::recursive_directory_iterator it(argv[i], ec), end; it != end && !ec; it.increment(ec))
        if (llvm::sys::fs::is_regular_file(it->path())) files.push_back(it->path());
    } else {
      files.push_back(argv[i]);
    }
  }
  for (const std::string &f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (verbose) std::printf("%s (%zu bytes)\n", f.c_str(), data.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(data.data()), data.size());
  }
  std::printf("replayed %zu input(s)\n", files.size());
  return files.empty() ? 1 : 0;
}
