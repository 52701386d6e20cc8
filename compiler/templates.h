// The CUDA templates of templates/, embedded at build time (templates/CMakeLists.txt): the
// device helpers of generated kernels, as named snippets (compiler/snippets.h).
#pragma once

namespace magicube {
extern const char *const kTemplate_fragments_cuh;      // templates/fragments.cuh
extern const char *const kTemplate_epilogue_math_cuh;  // templates/epilogue_math.cuh
}  // namespace magicube
