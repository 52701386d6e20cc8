//@ Device helpers of generated kernels, one snippet each: a snippet runs from its
//@ "//@snippet NAME [needs NAME...]" line to the next, and codegen emits only the snippets
//@ a kernel calls, after what they need (compiler/snippets.h). "//@" lines are never emitted.
// ---- device helpers (templates/fragments.cuh) ----
// Chunk planes hold one native-width chunk of an operand per element: 8-bit storage is one
// byte per element, 4-bit storage two elements per byte (the even element in the low nibble).
//@snippet u32
typedef unsigned int u32;
//@snippet u16
typedef unsigned short u16;

//@snippet mc_ld_stream16
// Loads that do not allocate in L1 (the decode kernel's A stream, read once: Launch::a_skip_l1).
__device__ __forceinline__ unsigned short mc_ld_stream16(const unsigned short *p) {
  unsigned short v;
  asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

//@snippet mc_ld_stream32 needs u32
__device__ __forceinline__ u32 mc_ld_stream32(const void *p) {
  u32 v;
  asm("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

//@snippet mc_ld_stream64
__device__ __forceinline__ uint2 mc_ld_stream64(const void *p) {
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

//@snippet mc_cluster_rank
// This block's rank in its cluster, and the cluster's blocks (sm_90; 0 and 1 when launched
// without clusters): Launch::panel_cluster.
__device__ __forceinline__ unsigned mc_cluster_rank() {
  unsigned r;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

//@snippet mc_cluster_size
__device__ __forceinline__ unsigned mc_cluster_size() {
  unsigned n;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}

//@snippet mc_cluster_arrive
// The cluster barrier in two halves (sm_90): arrive (release: this thread's writes before it are
// seen by every thread of the cluster once they wait), wait (acquire). A release waits for every
// access the thread has in flight, loads too (bench/NOTES.md, Session 30).
__device__ __forceinline__ void mc_cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }

//@snippet mc_cluster_arrive_relaxed
// Arrive without ordering this thread's memory accesses (those whose results it has used are done).
__device__ __forceinline__ void mc_cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory"); }

//@snippet mc_cluster_wait
__device__ __forceinline__ void mc_cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }

//@snippet mc_peer_shared
// The shared-window address `a` of this block as the same place in cluster block `rank`'s shared
// memory (distributed shared memory, sm_90), and a 32-bit load from there.
__device__ __forceinline__ unsigned mc_peer_shared(unsigned a, unsigned rank) {
  unsigned r;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}

//@snippet mc_ld_peer
__device__ __forceinline__ int mc_ld_peer(unsigned a) {
  int v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
  return v;
}

//@snippet mc_elem8
// One element of a packed 8-bit plane, sign-extended when the chunk is signed.
__device__ __forceinline__ int mc_elem8(const unsigned char *p, int i, bool sgn) {
  int x = p[i];
  return sgn ? (int)(signed char)x : x;
}

//@snippet mc_elem4
// One element of a packed 4-bit plane, sign-extended when the chunk is signed.
__device__ __forceinline__ int mc_elem4(const unsigned char *p, int i, bool sgn) {
  int x = (p[i >> 1] >> ((i & 1) * 4)) & 15;
  return sgn ? ((x ^ 8) - 8) : x;
}

//@snippet mc_widen4to8 needs u32
// Four 4-bit elements (16 bits, element 0 lowest) widened to four bytes.
__device__ __forceinline__ u32 mc_widen4to8(u32 x, bool sgn) {
  u32 r = (x & 0xfu) | ((x & 0xf0u) << 4) | ((x & 0xf00u) << 8) | ((x & 0xf000u) << 12);
  if (sgn) r |= (r & 0x08080808u) * 0x1eu;  // sign bit 3 of each byte -> bits 4..7
  return r;
}

//@snippet mc_nib_col needs u32
// One dense column's k-register from two ldmatrix.trans.b16 results over packed 4-bit B
// rows: x holds k rows {2t, 2t+1} and y rows {8+2t, 9+2t}, 4 columns (nibbles) per row.
// Column c's bytes come out in k order {2t, 2t+1, 8+2t, 9+2t}, widened to bytes.
__device__ __forceinline__ u32 mc_nib_col(u32 x, u32 y, int c, bool sgn) {
  const u32 lo = (x >> (4 * c)) & 0x000f000fu, hi = (y >> (4 * c)) & 0x000f000fu;
  u32 r = __byte_perm(lo, hi, 0x6420);
  if (sgn) r |= (r & 0x08080808u) * 0x1eu;
  return r;
}

//@snippet mc_widen4to8_hi needs u32
// mc_widen4to8 as value << 4 (the plan's nibble_prescale): each nibble lands in its byte's
// high half, so a signed nibble is already a signed byte (16 x its value) and no sign
// extension is needed; the accumulators are shifted back in the epilogue.
__device__ __forceinline__ u32 mc_widen4to8_hi(u32 x) {
  return __byte_perm(x << 4, x, 0x5140) & 0xf0f0f0f0u;
}

//@snippet mc_nib_col_hi needs u32
// mc_nib_col as value << 4 (the plan's nibble_prescale), without sign extension.
__device__ __forceinline__ u32 mc_nib_col_hi(u32 x, u32 y, int c) {
  const u32 lo = (c == 0 ? x << 4 : x >> (4 * c - 4)) & 0x00f000f0u;
  const u32 hi = (c == 0 ? y << 4 : y >> (4 * c - 4)) & 0x00f000f0u;
  return __byte_perm(lo, hi, 0x6420);
}

//@snippet mc_pack8 needs u32
// Four values packed into an int8 mma operand register (4 bytes).
__device__ __forceinline__ u32 mc_pack8(int v0, int v1, int v2, int v3) {
  return (u32)(v0 & 255) | ((u32)(v1 & 255) << 8) | ((u32)(v2 & 255) << 16) | ((u32)(v3 & 255) << 24);
}

//@snippet mc_pack4 needs u32
// Eight values packed into an int4 mma operand register (8 nibbles).
__device__ __forceinline__ u32 mc_pack4(int v0, int v1, int v2, int v3, int v4, int v5, int v6, int v7) {
  return (u32)(v0 & 15) | ((u32)(v1 & 15) << 4) | ((u32)(v2 & 15) << 8) | ((u32)(v3 & 15) << 12) |
         ((u32)(v4 & 15) << 16) | ((u32)(v5 & 15) << 20) | ((u32)(v6 & 15) << 24) | ((u32)(v7 & 15) << 28);
}
