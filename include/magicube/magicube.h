/* Magicube JIT: the C ABI of libmagicube.so (C99 and C++; no CUDA or LLVM header needed).
 *
 * Quantized sparse tensor-core kernels, planned, generated and compiled at run time:
 *   SpMM:  C (M x N) = A (M x K, V x 1 vector-sparse, the "weight") x B (K x N, dense)
 *   SDDMM: out = (A (M x K) x B (K x N)) at the V x 1 vectors of a sparse mask (M x N)
 * An op is named by a spec string, e.g. "spmm.s8xs8.v8.bf16+rc.sm_90" (op.LxR.vV[.nBSn[k2|r]]
 * [.pf|pf2|pf3|pf4|nopf].out[+t|+rc][+rowbias|+colbias].arch; a missing tile or prefetch field
 * leaves those knobs to the library's dispatch).
 *
 *   char text[4096];
 *   size_t needed;
 *   if (magicube_plan_describe("spmm.s8xs8.v8.i32.sm_90", text, sizeof text, &needed) != MAGICUBE_SUCCESS)
 *     fprintf(stderr, "%s\n", magicube_last_error());
 *
 * The device path (all device memory is the caller's; nothing is allocated by run):
 *
 *   magicube_op *op;                        // plan once, for this weight matrix
 *   magicube_op_create("spmm.s8xs8.v8.bf16+rc.sm_90", &weight, n, NULL, &op);
 *   magicube_packed *pw;                    // the weight packed on the host
 *   magicube_pack(op, &weight, &pw);        // copy magicube_packed_data(pw) to the device
 *   magicube_spmm_workspace_bytes(op, magicube_packed_get_header(pw), &b, n, &c, &ws_bytes);
 *   magicube_spmm_run(op, magicube_packed_get_header(pw), packed_dev, &b, n, &c, &epilogue,
 *                     workspace, ws_bytes, stream);   // asynchronous on `stream`
 *
 * Errors: every function that can fail returns a magicube_status; MAGICUBE_SUCCESS is 0. On
 * failure, magicube_last_error() returns a message naming the bad input (thread-local: the
 * last failure on the calling thread; it stays valid until the next failing call on that
 * thread). No function throws across this ABI, and none aborts on bad input.
 *
 * Ownership: handles (magicube_op, magicube_packed) are created by the library and freed by
 * the matching _destroy function (NULL is accepted there). Pointers into a handle
 * (magicube_packed_data, magicube_packed_header) stay valid until it is destroyed. Host
 * arrays passed in are only read during the call. Device pointers are the caller's: the
 * library never frees them, and they must stay valid until the work queued on the stream
 * completes.
 *
 * Threads: all functions may be called from any thread. A magicube_op is immutable after
 * creation and may be used by several threads at once (runs on different streams included);
 * a magicube_packed likewise. Device calls use the primary context of the op's device (the
 * context the CUDA runtime uses), retained on first use and made current on the calling
 * thread.
 *
 * Device work: run calls are asynchronous on the caller's stream (a CUstream or
 * cudaStream_t; NULL = the legacy default stream), never synchronize and never allocate: any
 * repacking of B (chunk planes, padding to the kernel's pitch, transposes) and of the output
 * happens on that stream in the caller's workspace. A run can be captured in a CUDA graph
 * once its kernels are loaded: run it once with the same operand layouts and dtypes before
 * capturing (magicube_op_load loads the op's main kernel only, not the repack kernels).
 * The first run of an op compiles its kernels (NVRTC, through the memory and disk caches).
 *
 * The dense route (opt-in, SpMM only): an SpMM of any operand types (any output) may run
 * as dense int8 GEMMs (cuBLASLt, dlopen'ed at first use: libcublasLt.so.13) where that is
 * faster than the sparse kernel for the matrix (pruned LLM weights at 50-70 % sparsity and
 * prefill-sized N usually are). Operands that do not fit int8 (u8, wider types) are split into
 * int8 chunks, one GEMM per chunk pair. An output other than int32 (int64; f32, f16, bf16 with
 * the op's scales and bias), or of chunked operands, is written from the GEMMs' exact int32
 * results by an epilogue kernel, bit for bit as the sparse kernels write it. Its packed weight
 * holds a dense int8 copy of A (M x K bytes a chunk) instead of the sparse arrays, so the
 * caller must allow it:
 *
 *   magicube_op_options_ex o = {sizeof o, -1, 0, MAGICUBE_DENSE_ALLOWED};
 *   magicube_op_create_ex("spmm.s8xs8.v8.i32.sm_90", &weight, n, &o, &op);
 *   magicube_op_query(op, MAGICUBE_QUERY_ROUTE, &route);   // 0 sparse, 1 dense
 *   magicube_op_text(op, MAGICUBE_TEXT_ROUTE_WHY, ...);    // "faster here (sparse ~.. us, dense ~.. us)"
 *   magicube_op_load(op);                                  // dense: cuBLASLt's algorithm, timed once
 *
 * and the rest as above (pack, workspace, run). A dense op's load (magicube_op_load, else its
 * first run) picks cuBLASLt's algorithm for the matrix's shape by timing the heuristic's best
 * few once: it allocates scratch memory and synchronizes the device, once, like kernel
 * loading. The first run with another N (or of an op planned without a matrix) times them
 * the same way once on its own buffers (an L2-flush buffer allocated, one synchronization),
 * unless its stream is being captured into a CUDA graph (then the heuristic's first
 * algorithm, chosen on the host). Runs afterwards only enqueue (no allocation, no
 * synchronization) and can be captured in a CUDA graph.
 */
#ifndef MAGICUBE_MAGICUBE_H
#define MAGICUBE_MAGICUBE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define MAGICUBE_API
#else
#define MAGICUBE_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MAGICUBE_VERSION_MAJOR 0
#define MAGICUBE_VERSION_MINOR 1
#define MAGICUBE_VERSION_PATCH 0
#define MAGICUBE_VERSION_STRING "0.1.0"

/* ---- status and errors ------------------------------------------------------------------ */

typedef enum magicube_status {
  MAGICUBE_SUCCESS = 0,
  MAGICUBE_ERROR_INVALID = 1,          /* a bad spec, value, shape, pointer or option */
  MAGICUBE_ERROR_COMPILE = 2,          /* code generation or NVRTC failed (the message has the log) */
  MAGICUBE_ERROR_CUDA = 3,             /* a CUDA driver call failed */
  MAGICUBE_ERROR_NO_GPU = 4,           /* no usable GPU (the message says why) */
  MAGICUBE_ERROR_BUFFER_TOO_SMALL = 5, /* a text buffer is too small (*needed says how large) */
  MAGICUBE_ERROR_INTERNAL = 6          /* anything else (a bug: please report the message) */
} magicube_status;

/* The message of the calling thread's last failure ("" when none). */
MAGICUBE_API const char *magicube_last_error(void);
/* "invalid", "compile", "cuda", "no-gpu", "buffer-too-small", "internal" or "success". */
MAGICUBE_API const char *magicube_status_name(int status);
/* The library's version, "MAJOR.MINOR.PATCH". */
MAGICUBE_API const char *magicube_version(void);

/* ---- planning without a matrix ------------------------------------------------------------ */

/* The text `magicube plan` prints for `spec`: the dispatch's plan with no matrix, on the
 * reference device of the spec's arch (no GPU is touched). Writes it, NUL-terminated, into
 * buf (cap bytes) and its size including the NUL into *needed (when needed is not NULL).
 * buf == NULL with cap == 0 only asks the size (MAGICUBE_SUCCESS). A buffer too small gets
 * the text truncated (NUL-terminated when cap > 0) and MAGICUBE_ERROR_BUFFER_TOO_SMALL.
 * A bad spec: MAGICUBE_ERROR_INVALID, naming the field. */
MAGICUBE_API int magicube_plan_describe(const char *spec, char *buf, size_t cap, size_t *needed);

/* ---- host matrices (input of planning and packing) ----------------------------------------- */

typedef enum magicube_dtype {
  MAGICUBE_INT8 = 1,
  MAGICUBE_UINT8 = 2,
  MAGICUBE_INT16 = 3,
  MAGICUBE_UINT16 = 4,
  MAGICUBE_INT32 = 5,
  MAGICUBE_INT64 = 6,
  MAGICUBE_FLOAT32 = 7, /* outputs, scales and magicube_quantize_rows's input only */
  MAGICUBE_FLOAT16 = 8, /* outputs and magicube_quantize_rows's input only */
  MAGICUBE_BFLOAT16 = 9 /* outputs and magicube_quantize_rows's input only */
} magicube_dtype;

/* A sparse matrix on the host, rows x cols, in one of two forms:
 *   dense:  block_ptr == NULL; values holds rows * cols elements, row-major. A V x 1 vector
 *           (rows r*V .. r*V+V-1 of one column) exists where any of its values is nonzero.
 *   BCRS:   block_ptr != NULL: ceil(rows / v) + 1 offsets (row-block b owns vectors
 *           block_ptr[b] .. block_ptr[b+1]-1), col: one column per vector, increasing within
 *           a row-block, values: v values per vector (row r of vector i at i * v + r; values
 *           may be NULL where only the pattern is needed: planning, SDDMM masks).
 * Integer values (dtype INT8 .. INT64) must lie in the spec's type (checked by magicube_pack). */
typedef struct magicube_matrix {
  int64_t rows, cols;
  magicube_dtype dtype;
  const void *values;
  const int64_t *block_ptr;
  const int32_t *col;
  int v; /* BCRS only: the vector length (the spec's V) */
} magicube_matrix;

/* ---- op handles --------------------------------------------------------------------------- */

typedef struct magicube_op magicube_op;

typedef struct magicube_op_options {
  int candidate; /* -1: the dispatch's choice; i >= 0: plan i of the candidates (0 = the cost model's best) */
  int device;    /* CUDA device ordinal for the device calls */
} magicube_op_options;

/* Whether an SpMM may run as a dense int8 GEMM (the dense route, see the top of this file). */
typedef enum magicube_dense_route {
  MAGICUBE_DENSE_NEVER = 0,   /* the sparse kernel (the default) */
  MAGICUBE_DENSE_ALLOWED = 1, /* the dispatch compares the routes for the matrix given to op_create_ex
                                 (sparse without a matrix, or with a knob pinned in the spec or a candidate) */
  MAGICUBE_DENSE_FORCED = 2   /* dense, or MAGICUBE_ERROR_INVALID naming why not (an operand wider
                                 than int8, K not a multiple of 4, an SDDMM, libcublasLt unavailable) */
} magicube_dense_route;

/* The options of magicube_op_create_ex: magicube_op_options and what came after it. `size`
 * is sizeof(magicube_op_options_ex) as the caller compiled it: fields the caller's header
 * did not have yet take their defaults, so callers built against an older header keep
 * working (a size larger than this library knows is refused). */
typedef struct magicube_op_options_ex {
  size_t size;   /* sizeof(magicube_op_options_ex) */
  int candidate; /* as in magicube_op_options */
  int device;
  int dense;     /* a magicube_dense_route (default MAGICUBE_DENSE_NEVER) */
} magicube_op_options_ex;

/* Plans an op (spmm or sddmm) through the dispatch. With `matrix` (SpMM: the sparse A and
 * `n_or_k` = N, the columns of B; SDDMM: the mask and `n_or_k` = K, the reduction length):
 * a stored tuning record for it, else the library's policy for this matrix; with matrix ==
 * NULL the policy's defaults (n_or_k is ignored). Knobs the spec pins are kept. options ==
 * NULL: {-1, 0}. Uses the GPU's facts when a GPU is usable, else the arch's reference
 * device (planning needs no GPU). On success *out owns the op (free: magicube_op_destroy). */
MAGICUBE_API int magicube_op_create(const char *spec, const magicube_matrix *matrix, int64_t n_or_k,
                                    const magicube_op_options *options, magicube_op **out);
/* The same with extended options (options == NULL: the defaults): the dense route. */
MAGICUBE_API int magicube_op_create_ex(const char *spec, const magicube_matrix *matrix, int64_t n_or_k,
                                       const magicube_op_options_ex *options, magicube_op **out);
MAGICUBE_API void magicube_op_destroy(magicube_op *op);

typedef enum magicube_op_text_kind {
  MAGICUBE_TEXT_PLAN = 0,      /* Plan::str(): what `magicube plan` prints */
  MAGICUBE_TEXT_SPEC = 1,      /* the chosen plan's canonical spec, every knob pinned */
  MAGICUBE_TEXT_KERNEL = 2,    /* the kernel's name */
  MAGICUBE_TEXT_CHOSEN_BY = 3, /* "chosen by: flags" | "chosen by: tuned record <path>" | "chosen by: policy (...)" */
  MAGICUBE_TEXT_ROUTE_WHY = 4  /* why the op's route: "" (dense never asked), "asked for" (forced), "faster
                                  here (sparse ~120.3 us, dense ~40.1 us)", "no matrix given", "kernel knobs
                                  pinned", "dense route not offered: <why>" */
} magicube_op_text_kind;
/* One text about the op, written as magicube_plan_describe writes its text. */
MAGICUBE_API int magicube_op_text(const magicube_op *op, int kind, char *buf, size_t cap, size_t *needed);

typedef enum magicube_op_query_kind {
  MAGICUBE_QUERY_OP = 0,                   /* 0 spmm, 1 sddmm */
  MAGICUBE_QUERY_V = 1,                    /* the vector length */
  MAGICUBE_QUERY_LHS_BITS = 2,             /* bits of A's type; negative when signed (-8 = s8) */
  MAGICUBE_QUERY_RHS_BITS = 3,             /* bits of B's type; negative when signed */
  MAGICUBE_QUERY_OUTPUT_DTYPE = 4,         /* a magicube_dtype: INT32, INT64, FLOAT32, FLOAT16, BFLOAT16 */
  MAGICUBE_QUERY_OUTPUT_ELEMENT_BYTES = 5, /* 4, 8 or 2 */
  MAGICUBE_QUERY_MAX_REDUCTION = 6,        /* the longest row-block (SpMM) / K (SDDMM) the output stays exact for */
  MAGICUBE_QUERY_CANDIDATE = 7,            /* which plan candidate the op runs (for magicube_op_options) */
  MAGICUBE_QUERY_DEVICE = 8,               /* the device ordinal */
  MAGICUBE_QUERY_SCALE = 9,                /* 0 none, 1 tensor (+t), 2 rowcol (+rc) */
  MAGICUBE_QUERY_BIAS = 10,                /* 0 none, 1 row, 2 col */
  MAGICUBE_QUERY_ROUTE = 11                /* 0 sparse (the kernel), 1 dense (a cuBLASLt int8 GEMM) */
} magicube_op_query_kind;
MAGICUBE_API int magicube_op_query(const magicube_op *op, int kind, int64_t *value);

/* Generates, compiles (through the memory and disk caches) and loads the op's kernel on its
 * device now (run otherwise does it on first use). Needs a GPU. A dense op: creates the
 * cuBLASLt plans for the op's matrix and N (C in both layouts), each algorithm chosen by
 * timing the heuristic's best few once (allocates scratch memory and synchronizes). */
MAGICUBE_API int magicube_op_load(const magicube_op *op);

/* Compiles the kernels of `count` ops at once, in parallel (`threads` 0: the host's cores, at
 * most 16), through the kernel caches (memory, AOT bundle, disk, then NVRTC), each for its
 * spec's arch: no GPU needed. A later magicube_op_load or run of these ops in this process, or
 * (through the disk cache) in another, finds the cubins without compiling, so a framework can
 * warm every variant it will use at start-up in about one compile's time per core. Dense-route
 * ops have no kernel and are skipped. *kernels (optional) gets the number of kernels compiled
 * or found. On failure every op was still tried; the message names the first that failed. */
MAGICUBE_API int magicube_ops_compile(const magicube_op *const *ops, size_t count, int threads, size_t *kernels);

/* ---- packing the sparse operand (host) ---------------------------------------------------- */

/* The packed sparse operand: one byte blob (copy it to the device as it is, at an address
 * aligned to 256 bytes) that starts with this header; run takes a host copy of the header
 * and the blob's device address. Every field is an int64_t (the header is 32 of them,
 * MAGICUBE_PACKED_HEADER_BYTES), so a binding may treat it as an array.
 * Format 2 added the dense route (route, dense_offset, dense_bytes); blobs of format 1 are
 * refused (pack the matrix again). A dense op's blob holds the dense copy of A only: the
 * sparse arrays' offsets and num_planes are 0 (their counts still describe A's layout).
 * Format 3: a decode plan's A gives every row-block one stride at least and keeps its
 * strides' schedule in the second half of col_idx (num_slots counts the packed slots);
 * blobs of format 2 are refused. Format 4: a decode plan's 16-bit column indices carry the
 * schedule word in their bit 15 and pads name rows 0..7 (no 0xffff); blobs of format 3 are
 * refused. */
#define MAGICUBE_PACKED_HEADER_BYTES 256
#define MAGICUBE_PACKED_MAGIC 0x4b5043414d /* "MACPK" */
#define MAGICUBE_PACKED_FORMAT_VERSION 4
typedef struct magicube_packed_header {
  int64_t magic;            /* MAGICUBE_PACKED_MAGIC */
  int64_t format_version;   /* MAGICUBE_PACKED_FORMAT_VERSION */
  int64_t op;               /* 0: SpMM's A; 1: SDDMM's mask */
  int64_t plan_fingerprint; /* the plan it was packed for: run refuses another */
  int64_t rows, cols, v;    /* M x K (A) or M x N (mask) */
  int64_t num_blocks, max_block_length, num_slots, num_vectors, stride;
  int64_t total_bytes;      /* of the blob, header included */
  int64_t row_ptr_offset, col_idx_offset, bcrs_ptr_offset; /* byte offsets in the blob (bcrs: masks only) */
  int64_t num_planes;       /* A's chunk planes (0 for a mask) */
  int64_t plane_offset[4];
  int64_t plane_bytes[4];
  int64_t route;            /* 0: the sparse arrays above; 1: the dense route's copy of A (SpMM only) */
  int64_t dense_offset;     /* route 1: byte offset of A as M x K int8, row-major (256-byte aligned), */
                            /* a plane per int8 chunk of its type, then their row sums where B's */
                            /* chunks have offsets (runtime/dense_route.h) */
  int64_t dense_bytes;      /* route 1: M * K for types that fit int8 or u8 against them */
  int64_t reserved[4];
} magicube_packed_header;

typedef struct magicube_packed magicube_packed;

/* Packs `matrix` for `op`: SpMM: A (values required; refused: a V other than the spec's,
 * values outside the lhs type, rows longer than the output allows); SDDMM: the mask (values
 * ignored). A dense op (MAGICUBE_QUERY_ROUTE 1): A's dense int8 copy (route 1). On success
 * *out owns the blob (free: magicube_packed_destroy). */
MAGICUBE_API int magicube_pack(const magicube_op *op, const magicube_matrix *matrix, magicube_packed **out);
MAGICUBE_API void magicube_packed_destroy(magicube_packed *packed);
MAGICUBE_API const void *magicube_packed_data(const magicube_packed *packed);
MAGICUBE_API size_t magicube_packed_bytes(const magicube_packed *packed);
MAGICUBE_API const magicube_packed_header *magicube_packed_get_header(const magicube_packed *packed);
/* Reads and checks the header at the start of a blob held on the host (e.g. one loaded
 * from a file): magic, format version, sizes. */
MAGICUBE_API int magicube_packed_read_header(const void *blob, size_t bytes, magicube_packed_header *out);
/* Checks a whole blob held on the host for `op` before it goes to the device: the header as
 * magicube_packed_read_header does, that this op packed it (plan, route), and the body: row
 * pointers in order, every column index within A's K (a mask's N), a decode plan's schedule,
 * every value within the op's lhs type (pads and rows past M zero), no row-block longer than
 * the header's max_block_length (which the op's exactness bound admits). A blob that passes is
 * one the kernels read within bounds. Check a blob that comes from a file or another process
 * once, before copying it to the device: magicube_spmm_run and magicube_sddmm_run read the
 * device copy and check only its header (magicube_spmm_host and magicube_sddmm_host check the
 * whole blob). `out` (may be NULL) receives the header. */
MAGICUBE_API int magicube_packed_check(const magicube_op *op, const void *blob, size_t bytes, magicube_packed_header *out);

/* ---- device operands ----------------------------------------------------------------------- */

typedef enum magicube_layout {
  /* A dense operand or output of logical shape R x C: */
  MAGICUBE_ROW_MAJOR = 0, /* R x C row-major (element (r, c) at r * C + c) */
  MAGICUBE_COL_MAJOR = 1  /* C x R row-major, i.e. the transpose (element (r, c) at c * R + r) */
} magicube_layout;

/* A contiguous dense operand on the device. For SpMM's B (K x N): ROW_MAJOR is K x N,
 * COL_MAJOR is N x K row-major (a linear layer's input X). For SpMM's C (M x N): ROW_MAJOR
 * is M x N, COL_MAJOR is N x M row-major (Y = X W^T of a linear layer). Integer operands:
 * INT8/UINT8 for types of up to 8 bits, INT16/UINT16 (or INT32) for up to 16 bits, one
 * element each, values in the spec's type (not checked on the device). Outputs: the op's
 * output dtype (MAGICUBE_QUERY_OUTPUT_DTYPE). The address must be aligned to its element
 * size (16 bytes where B is read in place: see magicube_spmm_workspace_bytes). */
typedef struct magicube_dense {
  void *data;
  magicube_dtype dtype;
  magicube_layout layout;
} magicube_dense;

/* A float output's dequantization (the spec's scale and bias say which are read):
 *   x = acc (* alpha | * row_scale[r] * col_scale[c]) (+ bias[r] | + bias[c])
 * in double, rounded to nearest even; r, c index C (M x N) or the mask. Vectors are float32
 * on the device: row_scale M values, col_scale N values, bias M (rowbias) or N (colbias). */
typedef struct magicube_epilogue {
  float alpha;
  const float *row_scale;
  const float *col_scale;
  const float *bias;
} magicube_epilogue;

/* SpMM: C = A x B. `header`: the host copy of the packed A's header; `a_packed`: the blob on
 * the device. B: K x N (K = A's cols) in b->layout; C: M x N in c->layout. n >= 1, any size.
 * The sparse kernel writes C in its spec's order: row-major, or column-major with the out
 * option +ccol ("spmm.s8xs8.v8.bf16+rc+ccol.sm_90": a linear layer's y = x W^T, tokens x M).
 * The workspace (device, 256-byte aligned) holds B's chunk planes padded to the kernel's
 * pitch and, for a C in the other order, the kernel's result before its transpose; its size is
 * magicube_spmm_workspace_bytes (0 when B is read in place: one 8-bit chunk, ROW_MAJOR, N a
 * multiple of 256, 16-byte aligned; and C in the spec's order). epilogue: NULL for integer
 * outputs.
 * A dense op (its blob 256-byte aligned): the workspace holds cuBLASLt's (32 MiB) and, unless
 * B is read in place (COL_MAJOR, a 1-byte dtype, 256-byte aligned: exactly the GEMM's
 * operand), B transposed to N x K int8 (a repack kernel), and for an output other than int32
 * the GEMM's int32 result (M x N x 4 bytes), from which the epilogue kernel writes C in either
 * layout (aligned to its element). An int32 C is written directly in either
 * layout (COL_MAJOR: cuBLASLt computes C^T with the operands swapped) when it is 256-byte
 * aligned, else through the workspace (M x N int32 more) and a transpose kernel.
 * On sm_90 the decode kernel (small N) is a programmatic dependent launch: it may start while
 * the stream's previous kernel finishes and waits for it (griddepcontrol.wait) before touching
 * memory, so stream order holds as usual; it lets the stream's next kernel launch early, which
 * matters only to a kernel launched with programmatic stream serialization (that kernel must
 * wait, as PDL requires). */
MAGICUBE_API int magicube_spmm_workspace_bytes(const magicube_op *op, const magicube_packed_header *header,
                                               const magicube_dense *b, int64_t n, const magicube_dense *c,
                                               size_t *bytes);
MAGICUBE_API int magicube_spmm_run(const magicube_op *op, const magicube_packed_header *header,
                                   const void *a_packed, const magicube_dense *b, int64_t n, const magicube_dense *c,
                                   const magicube_epilogue *epilogue, void *workspace, size_t workspace_bytes,
                                   void *stream);

typedef enum magicube_sparse_layout {
  MAGICUBE_BCRS = 0,   /* the mask's vectors in order, V values each (vector i, row r at i * V + r) */
  MAGICUBE_SRBCRS = 1  /* the mask's SR-BCRS value layout (num_slots * V values) */
} magicube_sparse_layout;

/* SDDMM: out = (A x B) at the packed mask's vectors. A: M x K in a->layout, B: K x N in
 * b->layout (COL_MAJOR: N x K row-major, e.g. attention's keys). out: the op's output dtype,
 * magicube_output_elements(header, out_layout) elements. Rows past M and SR-BCRS padding are
 * not written. The workspace holds A's and B's chunk planes padded to the kernel's pitch. */
MAGICUBE_API int magicube_sddmm_workspace_bytes(const magicube_op *op, const magicube_packed_header *header,
                                                const magicube_dense *a, const magicube_dense *b, int64_t k,
                                                size_t *bytes);
MAGICUBE_API int magicube_sddmm_run(const magicube_op *op, const magicube_packed_header *header,
                                    const void *mask_packed, const magicube_dense *a, const magicube_dense *b,
                                    int64_t k, void *out, int out_layout, const magicube_epilogue *epilogue,
                                    void *workspace, size_t workspace_bytes, void *stream);

/* Elements of an output: SpMM (header of A): M * n (n_or_layout = N); SDDMM (header of a
 * mask): num_vectors * V for MAGICUBE_BCRS, num_slots * V for MAGICUBE_SRBCRS
 * (n_or_layout = the layout). Multiply by MAGICUBE_QUERY_OUTPUT_ELEMENT_BYTES for bytes. */
MAGICUBE_API int magicube_output_elements(const magicube_packed_header *header, int64_t n_or_layout,
                                          int64_t *elements);
/* The same in bytes of the op's output type (the size of the caller's output buffer). */
MAGICUBE_API int magicube_output_bytes(const magicube_op *op, const magicube_packed_header *header,
                                       int64_t n_or_layout, size_t *bytes);

/* ---- activations ---------------------------------------------------------------------------- */

/* Per-row symmetric int8 quantization on the device, one kernel on `stream` (a linear layer's
 * activations: rows = tokens; q is then SpMM's B as N x K, MAGICUBE_COL_MAJOR, and scale its
 * col_scale). x: rows x cols, MAGICUBE_ROW_MAJOR, dtype MAGICUBE_FLOAT32, _FLOAT16 or
 * _BFLOAT16 (aligned to its element); q: rows x cols int8, row-major; scale: rows float32.
 * Device pointers on `device`. In float32 (x widened exactly):
 *   scale[r] = max(max_j |x[r][j]|, 1e-12) / 127
 *   q[r][j]  = clamp(rint(x[r][j] / scale[r]), -127, 127)
 * with IEEE divisions and rint rounding ties to even. A row holding a NaN gets a NaN scale;
 * an element whose quotient is NaN gets q = 0. rows, cols >= 0. Like the decode SpMM, on sm_90
 * it is a programmatic dependent launch: it reads x only after the stream's previous kernel is
 * done, and lets the next one launch at once. */
MAGICUBE_API int magicube_quantize_rows(int device, const magicube_dense *x, int64_t rows, int64_t cols, void *q,
                                        float *scale, void *stream);

/* ---- host in, host out (tests, small problems) ------------------------------------------- */

/* The same runs with every operand on the host (the packed blob, b, c, a, out and the
 * epilogue's vectors are host pointers): allocate device memory, upload, run on the legacy
 * default stream, wait, download. Synchronous. SDDMM's out is zero where the kernel writes
 * nothing. */
MAGICUBE_API int magicube_spmm_host(const magicube_op *op, const magicube_packed_header *header, const void *a_packed,
                                    const magicube_dense *b, int64_t n, const magicube_dense *c,
                                    const magicube_epilogue *epilogue);
MAGICUBE_API int magicube_sddmm_host(const magicube_op *op, const magicube_packed_header *header,
                                     const void *mask_packed, const magicube_dense *a, const magicube_dense *b,
                                     int64_t k, void *out, int out_layout, const magicube_epilogue *epilogue);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MAGICUBE_MAGICUBE_H */
