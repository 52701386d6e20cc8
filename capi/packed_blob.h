// The C ABI's packed blob (magicube_packed_header, include/magicube/magicube.h): how
// magicube_pack lays one out (the header, then every array at a 256-byte aligned offset), and how
// a blob that comes back (from a file, another process) is checked: its header against its size
// (check_blob_header), then its body against the plan it was packed for (check_blob_body, the
// layout checks of runtime/packed_check.h). That the blob is this op's (plan fingerprint, route)
// is the C ABI's own check (c_api.cpp, check_header_for).
#pragma once

#include <cstdint>
#include <vector>

#include "magicube/magicube.h"
#include "runtime/magicube.h"

namespace magicube::capi {

constexpr int64_t kBlobAlign = 256;

// The blob of an SpMM's A (dense: its dense copy only, the sparse arrays' offsets 0) or of an
// SDDMM mask, header first (plan_fingerprint as given), its size a multiple of kBlobAlign.
std::vector<uint8_t> lhs_blob(const HostLhs &a, bool dense, int64_t plan_fingerprint);
std::vector<uint8_t> mask_blob(const HostMask &m, int64_t plan_fingerprint);

// Throws Error(Invalid) naming what is wrong: magic, format version, the size against
// `bytes_available` (0: not checked), the counts, and every array within the blob and 256-byte
// aligned (the kernels' vector loads need 16 bytes, cuBLASLt 256). Counts are bounded before
// they are multiplied.
void check_blob_header(const magicube_packed_header &h, size_t bytes_available);

// The body of a host blob whose header `h` passed check_blob_header, against the plan it was
// packed for (runtime/packed_check.h).
llvm::Error check_blob_body(const magicube_packed_header &h, const void *blob, const Plan &plan);

}  // namespace magicube::capi
