// ---------------------------------------------------------------------------------------
// SpMM kernel skeleton (templates/spmm.cu). C[M x N] = A (SR-BCRS) x B[K x N].
// One thread block computes one row-block (V rows) x BSN dense columns; each warp owns 16
// dense columns. Per SR-BCRS stride (KS vectors = the mma's k):
//   1. gather the KS rows of B named by the stride's column indices into shared memory
//      (16-byte loads, rows padded by 16 bytes), with the next stride's rows prefetched
//      into registers when the prefetch pipeline is on;
//   2. build the mma fragments: A's stride straight from global memory (it is stored
//      row-major, as the fragment wants it), B's gathered rows transposed to k-contiguous
//      registers;
//   3. one mma per (stack group, rhs chunk) into int32 accumulators.
// The int8 m16n8k32 kernel (codegen's fast path) moves every input of a stride through one
// cp.async ring instead, and with split 2 runs two warp groups of WPG warps over alternate
// strides (each group its own ring), summing their accumulators in shared memory at the end.
// The epilogue shifts each accumulator element by its chunk term's shift, sums the terms,
// exchanges stacked slots between lanes, and writes the V rows.
// ---------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__({{THREADS}})
{{KERNEL_NAME}}({{PARAMS}}) {
  constexpr int KS = {{KS}};    // SR-BCRS stride = mma k
  constexpr int V = {{V}};      // rows per block vector
  constexpr int BSN = {{BSN}};  // dense columns per thread block
  constexpr int THREADS = {{THREADS}};
  const int blk = blockIdx.y;                 // row-block
  const int n_base = blockIdx.x * BSN;        // first dense column of this block
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gid = lane >> 2, tig = lane & 3;  // mma fragment coordinates
  const int nw = (warp % {{WPG}}) * {{WN}};  // this warp's first column within the tile (warp groups share columns)
  const int begin = row_ptr[2 * blk];
  const int end = begin + (row_ptr[2 * blk + 1] - begin + KS - 1) / KS * KS;
  (void)M; (void)N; (void)nw; (void)gid; (void)tig; (void)V;

{{BODY}}
}
