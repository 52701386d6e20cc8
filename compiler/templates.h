// The CUDA templates of templates/, embedded at build time (templates/CMakeLists.txt).
#pragma once

namespace magicube {
extern const char *const kTemplate_fragments_cuh;  // templates/fragments.cuh
extern const char *const kTemplate_spmm_cu;        // templates/spmm.cu
extern const char *const kTemplate_spmm_resident_cu;  // templates/spmm_resident.cu
extern const char *const kTemplate_sddmm_cu;       // templates/sddmm.cu
extern const char *const kTemplate_epilogue_math_cuh;  // templates/epilogue_math.cuh
}  // namespace magicube
