// The index math of the device repack kernels: which chunk of a value a plane holds, and
// where a logical element (r, t) of a dense operand lands in a plane. The same text is
// compiled twice: into the library (capi/repack.cpp's CPU reference, MC_HD empty) and into
// the NVRTC source of the repack kernels (MC_HD = __device__), so the CPU tests check the
// very arithmetic the GPU runs. It mirrors runtime/packing.cpp (pack_plane, pack_rhs,
// pack_k_rows) and compiler/launch.h (resident_swizzle); tests/capi/test_repack.cpp pins the
// equality for every layout.
#ifndef MC_HD
#define MC_HD inline
#endif

// Chunk value of x: bits [lo, lo + bits) of x, sign-extended when the chunk is signed
// (compiler/plan_interpreter.cpp chunk_value, for values of up to 16 bits).
MC_HD int mc_chunk(int x, int lo, int bits, int is_signed) {
  int u = (x >> lo) & ((1 << bits) - 1);
  if (is_signed && ((u >> (bits - 1)) & 1)) u -= 1 << bits;
  return u;
}

// compiler/launch.h resident_swizzle.
MC_HD int mc_resident_swizzle(long long k, int units) {
  switch (units) {
    case 1: case 3: return 0;
    case 2: return (int)((k >> 2) & 1);
    case 4: return (int)((k >> 1) & 3);
    default: return (int)(k & 7);
  }
}

// Element index in a plane of logical element (r, t): row-major rows of `pitch` elements
// (bsn == 0), or a resident-B plane: slices of bsn columns, each `rows` rows of bsn, the
// 16-byte units (per_unit elements) of row r swizzled.
MC_HD long long mc_plane_index(long long r, long long t, long long rows, long long pitch, int bsn, int per_unit) {
  if (bsn == 0) return r * pitch + t;
  const long long sl = t / bsn;
  const int x = (int)(t % bsn), u = x / per_unit, units = bsn / per_unit;
  return (sl * rows + r) * bsn + (long long)((u ^ mc_resident_swizzle(r, units)) * per_unit) + x % per_unit;
}
