// ---------------------------------------------------------------------------------------
// SDDMM kernel skeleton (templates/sddmm.cu). Out = (A[M x K] x B[K x N]) sampled at the
// mask's V x 1 vectors. A is row-major, B column-major, both K-contiguous with pitch ldk
// (zero padded past K). One thread block computes one row-block (V rows of A) x BSN of the
// row-block's sampled vectors; each warp owns 16 vectors. Per k-step (KS = the mma's k):
//   1. A's V rows -> the lhs stack fragments (prefetched one k-step ahead when the LHS
//      prefetch is on), straight from global memory;
//   2. each vector's B column -> the rhs fragments, straight from global memory (B is
//      column-major: the fragment's k-run is contiguous);
//   3. one mma per (stack group, rhs chunk).
// int8 m16n8k32 plans take the fast path instead: up to 4 warps of BSN / 16 / warps tiles
// of 16 vectors; per 64-k block each lane loads 16 consecutive k of its A row and of each of
// its vectors' B columns (one 16-byte load, 8 bytes for 4-bit planes) and runs two k-steps
// on them, the next block's loads in flight meanwhile (k order inside a block is permuted
// the same way for A and B, which a dot product does not see).
// The epilogue shifts, sums and exchanges like SpMM's and writes each vector's V values in
// SR-BCRS (stride out_stride) or BCRS (bcrs_ptr) order.
// ---------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__({{THREADS}})
{{KERNEL_NAME}}({{PARAMS}}) {
  constexpr int KS = {{KS}};    // k per mma step
  constexpr int V = {{V}};      // rows per block vector
  constexpr int BSN = {{BSN}};  // sampled vectors per thread block
  const int blk = blockIdx.y;                 // row-block
  const int n_base = blockIdx.x * BSN;        // first vector of this block in the row-block's list
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gid = lane >> 2, tig = lane & 3;  // mma fragment coordinates
  const int nw = warp * {{WN}};               // this warp's first vector within the tile
  const int begin = row_ptr[2 * blk], qend = row_ptr[2 * blk + 1];
  if (begin + n_base >= qend) return;         // no vectors for this block
  (void)M; (void)V;

{{BODY}}
}
