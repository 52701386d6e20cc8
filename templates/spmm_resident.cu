// ---------------------------------------------------------------------------------------
// SpMM kernel skeleton with B resident in shared memory (templates/spmm_resident.cu).
// C[M x N] = A (SR-BCRS, bank-balanced) x B[K x N] (packed as slices of BSN columns, each
// K x BSN contiguous with its 16-byte units swizzled: runtime/packing.h).
// Grid: x = slices of BSN dense columns, y = parts of the row-block list (equal counts).
// Each thread block copies its slice of B (K rows x BSN columns of every rhs plane) into
// dynamic shared memory once; its warps then take the part's row-blocks one at a time and,
// per SR-BCRS stride, gather the KS rows the stride names straight from the slice with
// ldmatrix (no global gather), while A's strides and column indices stream through a
// per-warp register ring. Dynamic shared memory: max(K, 8) x (slice row bytes).
// The epilogue shifts each accumulator element by its chunk term's shift, sums the terms,
// exchanges stacked slots between lanes, and writes the row-block's V rows.
// ---------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__({{THREADS}}, 1)
{{KERNEL_NAME}}({{PARAMS}}) {
  constexpr int KS = {{KS}};    // SR-BCRS stride = mma k
  constexpr int V = {{V}};      // rows per block vector
  constexpr int BSN = {{BSN}};  // dense columns per thread block (the slice)
  constexpr int THREADS = {{THREADS}};
  const int n_base = blockIdx.x * BSN;        // first dense column of this block's slice
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gid = lane >> 2, tig = lane & 3;  // mma fragment coordinates
  constexpr int nw = 0;                       // every warp covers the whole slice
  const int nblk = (M + V - 1) / V;
  const int rb_lo = (int)((long long)nblk * blockIdx.y / gridDim.y);        // this block's part of
  const int rb_hi = (int)((long long)nblk * (blockIdx.y + 1) / gridDim.y);  // the row-blocks
  (void)N; (void)ldb; (void)gid; (void)tig; (void)V;

{{BODY}}
}
