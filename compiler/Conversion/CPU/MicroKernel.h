//===- MicroKernel.h - register-tiled CPU code for attn tiles ---*- C++ -*-===//
//
// The CPU lowering of `attn.online_attention`: attn-cpu-micro-kernel
// (MicroKernelPass.cpp, Passes.td) turns the op's buffer form into calls of
// tile functions whose vector code with register micro-tiles MicroKernel.cpp
// generates. The ops it cannot take (not f32, dynamic head
// dims, a relative bias table) are lowered to linalg by
// convert-attn-to-linalg before bufferization.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_CPU_MICROKERNEL_H
#define ATTN_COMPILER_CONVERSION_CPU_MICROKERNEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
class Operation;
namespace attn {
class OnlineAttentionOp;
class GatedDeltaChunkOp;

/// True when the micro-kernel handles `op` (an attn.online_attention, on
/// tensors or buffers).
bool microKernelHandles(Operation *op);

/// Query rows per register block of P · V (and of decode's scores): 32
/// vector registers (AVX-512, 16 lanes) hold a 4×4 tile of vectors plus
/// operands; 16 (AVX2, SSE) a 2×4 tile.
inline int64_t microKernelRows(int64_t lanes) { return lanes >= 16 ? 4 : 2; }
/// Decode's rows per block (its scores' dot products and its P · V) for
/// `tile`: 8 with AVX-512 when the tile's group of query heads per KV head
/// (its static leading dims) holds at least 8 rows, else microKernelRows.
/// A block of 8 rows × 2 keys of scores widens 2 K vectors per d step for
/// 16 FMAs, and P · V's 8 rows × 3 vectors widen 3 V vectors for 24
/// FMAs, where 4 × 4 widened 4 for 16: on an Intel core the widening of a
/// 16-bit cache (a zero-extend and a shift, or vcvtph2ps) takes the FMA
/// ports. The seed's 64/4 decode (16 rows) over a bf16 cache: 1.19×.
int64_t microKernelDecodeRows(OnlineAttentionOp tile, int64_t lanes);
/// The prefill scores' register tile, query rows in the lanes: 2 vectors
/// of rows × 8 keys (AVX-512: 16 accumulators, per d step 2 loads of the
/// packed Qᵀ and 8 broadcasts of K for 16 FMAs), × 4 keys with 16
/// registers; a block of the softmax is the tile's 2·lanes rows. (1 × 16
/// with AVX-512, each FMA broadcasting K from memory, is 17 loads per 16
/// FMAs: Q·Kᵀ took 43% of P2's time against P·V's 35%; 2 × 8 put them
/// level.)
inline int64_t microKernelScoreVectors(int64_t) { return 2; }
inline int64_t microKernelScoreKeys(int64_t lanes) {
  return lanes >= 16 ? 8 : 4;
}
/// Vectors of keys per chunk (the register block's columns): a chunk is
/// kMicroKernelChunkVectors·lanes keys.
inline constexpr int64_t kMicroKernelChunkVectors = 4;

/// The micro-kernel's scratch for `tile` (head dim d) and `lanes` f32
/// lanes, allocated at the builder's insertion point (once per parallel
/// iteration): decode's probabilities and alphas, the chunk's K and V rows
/// as f32, the packed query rows (Qᵀ, scaled) with their row tables and
/// the tag of what they hold (set to "nothing" here), the prefill path's
/// key-major probabilities and row state, and for a paged tile the K and V
/// row tables [8·lanes] (index).
SmallVector<Value> allocateMicroKernelScratch(OpBuilder &b, Location loc,
                                              OnlineAttentionOp tile,
                                              int64_t lanes, bool amx = false,
                                              bool amxF32 = false);

/// True when `tile`'s decode can run on AMX tiles (MicroKernelAmx.cpp):
/// `amx` (the target has amx-tile and amx-bf16), 16 lanes, a bf16 K and V
/// with d and dv multiples of 32, and a static group of at least 8 query
/// heads per KV head (microKernelDecodeRows is 8). It then does for 9 to 16
/// rows where the OS grants the tile state.
bool amxDecodeApplies(OnlineAttentionOp tile, int64_t lanes, bool amx);
/// The AMX path's scratch (kAmxDecodeScratch i8 buffers, 64-byte aligned),
/// appended to the micro-kernel's by allocateMicroKernelScratch.
inline constexpr size_t kAmxDecodeScratch = 10;
SmallVector<Value> allocateAmxScratch(OpBuilder &b, Location loc,
                                      OnlineAttentionOp tile);
/// True when `tile`'s prefill (more than 16 query rows) can run on AMX
/// tiles (MicroKernelAmxPrefill.cpp): `amx`, 16 lanes, d and dv multiples
/// of 32 (d at most 256), a bf16 K and V, or with `amxF32` f32 or f16 ones.
/// It then does where the OS grants the tile state.
bool amxPrefillApplies(OnlineAttentionOp tile, int64_t lanes, bool amx,
                       bool amxF32);
/// The AMX prefill's scratch for `tcap` packed rows (i8 buffers, 64-byte
/// aligned, then the pack's tag), appended after the AMX decode's.
SmallVector<Value> allocateAmxPrefillScratch(OpBuilder &b, Location loc,
                                             OnlineAttentionOp tile,
                                             int64_t tcap);

/// Emits the micro-kernel of `tile` (buffer form, operands f32 with a
/// contiguous innermost dim: microKernelHandles) at the builder's insertion
/// point, with the buffers of allocateMicroKernelScratch. `tile` is
/// left for the caller to erase.
void emitMicroKernel(OpBuilder &b, OnlineAttentionOp tile, ValueRange scratch,
                     int64_t lanes, bool amx = false, bool amxF32 = false);

/// True when the gated-delta kernel (GatedDeltaKernel.cpp) handles `op`
/// (an attn.gated_delta_chunk with f32 operands; any d_k, d_v).
bool gatedDeltaKernelHandles(Operation *op);

/// The gated-delta kernel's scratch for `d_k`, `d_v` and `lanes`: chunk
/// buffers of 64 tokens and a padded state, allocated at the builder's
/// insertion point (once per parallel iteration); the recurrent form's is
/// the padded state alone, and nothing when d_k and d_v are multiples of
/// `lanes`; without the delta correction (`noDelta`) the chunked form's
/// lacks the buffers of the solve and of W; with a per-channel gate
/// (`channel`, KDA) it has per-channel prefix sums and band buffers.
SmallVector<Value> allocateGatedDeltaScratch(OpBuilder &b, Location loc,
                                             int64_t dk, int64_t dv,
                                             int64_t lanes, bool recurrent,
                                             bool noDelta, bool channel);

/// Emits the kernel of `tile` (buffer form, gatedDeltaKernelHandles) at the
/// builder's insertion point with the buffers of allocateGatedDeltaScratch;
/// `tile` is left for the caller to erase.
void emitGatedDeltaKernel(OpBuilder &b, GatedDeltaChunkOp tile,
                          ValueRange scratch, int64_t lanes);

/// True when the GEMM kernel (GemmKernel.cpp) handles `op`: a buffer-form
/// f32 linalg.matmul with the default or the transpose-B maps and operands
/// whose innermost dim is contiguous.
bool gemmKernelHandles(Operation *op);

/// Emits the GEMM kernel of `matmul` (gemmKernelHandles; its operands the
/// ones the code reads and writes) at the builder's insertion point: a
/// parallel loop over panels of columns, or dot products for fewer than 8
/// rows of a B [N, K]; with `generic`, a function holding that code for
/// operands of any sizes and strides, the operand-swapped kernel (B [N, K],
/// 8 to 48 rows, 16 lanes) instead, else a call of `generic`. `matmul` is
/// left for the caller to erase.
///
/// With `amx` (16 lanes; the target has amx-tile and amx-bf16) the generic
/// function runs B [N, K] GEMMs of at least kAmxGemmRows rows and
/// kAmxGemmCols columns on AMX tiles (GemmAmx.cpp) where the OS grants the
/// tile state.
void emitGemmKernel(OpBuilder &b, Operation *matmul, int64_t lanes,
                    func::FuncOp generic = {}, bool amx = false);

/// Rows of A (and columns of C) from which a B [N, K] GEMM runs on AMX
/// tiles: B's pack (split into bf16 parts, interleaved by pairs) serves all
/// the rows, A's all the columns; with fewer the AVX-512 kernel was faster
/// (tools/gemm-bench.py: 512 × 256 × 2048 0.86× OpenBLAS on tiles, 0.99×
/// on AVX-512; 512 × 384 × 2048 1.04× against 0.85×; 80 × 512 × 2048 0.69×
/// against 1.16×, 160 × 2048 × 2048 1.15× against 0.98×).
constexpr int64_t kAmxGemmRows = 128;
constexpr int64_t kAmxGemmCols = 320;

/// The module's function attn_gemm_amx(A, B, C, threads): C[M, N] +=
/// A[M, K] · B[N, K]ᵀ, f32, on AMX tiles with each operand split into three
/// bf16 parts (f32 accuracy), all sizes and row strides dynamic
/// (memref<?x?xf32, strided<[?, 1], offset: ?>>); created on first use.
func::FuncOp getOrCreateAmxGemm(OpBuilder &b, Location loc, ModuleOp module);

/// From kAmxGemmRows rows and kAmxGemmCols columns of C where the tile
/// state is granted, a call of
/// attn_gemm_amx(A, B, C, threads); else what `otherwise` builds.
void emitAmxGemmOr(OpBuilder &b, Location loc, Value A, Value B, Value C,
                   Value threads, function_ref<void()> otherwise);

/// True once Linux has granted this process the AMX tile state: asks it
/// (arch_prctl, an inline syscall) on the first call, remembered in the
/// module's global attn_amx_state.
Value emitAmxReady(OpBuilder &b, Location loc, ModuleOp module);

/// The bf16 parts the AMX kernels split each f32 operand into (x = x0 + x1
/// + x2 to within 2^-27·|x|): their products keep f32 accuracy.
constexpr int64_t kBF16Parts = 3;

/// x (f32 lanes) as `parts` bf16 vectors whose sum is x (three parts: to
/// within 2^-27·|x|), each rounded to nearest from what the others left.
SmallVector<Value> splitToBF16(OpBuilder &b, Location loc, Value x,
                               int64_t parts);

/// 2 × 2 blocked tile products over bf16 parts (the AMX GEMM's steps, the
/// prefill's scores and P · V): c[2i + j] += X(x, i) · Y(y, j) for each
/// pair (x, y) of `parts` in order (x a part of the A operand, y of B),
/// the Y tiles then the X tiles loaded (loadY / loadX) only when the pair
/// changes their part, so that consecutive pairs sharing a part reuse its
/// two tiles: four products per operand pair loaded.
void emitAmxPairProducts(OpBuilder &b, Location loc,
                         ArrayRef<std::pair<int64_t, int64_t>> parts,
                         MutableArrayRef<Value> c,
                         function_ref<Value(int64_t, int64_t)> loadX,
                         function_ref<Value(int64_t, int64_t)> loadY);
/// True when emitGemmKernel gives `matmul`'s rows an operand-swapped kernel
/// at `lanes` (B [N, K], 16 lanes).
bool gemmKernelSwaps(Operation *matmul, int64_t lanes);

/// Stores the transpose of a `square` W×W f32 block whose row i is
/// `loadRow(i)` at dst[row0 + i, col0 .. col0 + W) (column i of the block):
/// the packs of the micro-kernel (Qᵀ) and the GEMM kernel (B [N, K]).
void storeTransposedBlock(OpBuilder &b, Location loc, VectorType square,
                          function_ref<Value(int64_t)> loadRow, Value dst,
                          Value row0, Value col0);

/// A unit attribute on a func.func: its LLVM function gets `noinline` (set
/// by the CPU target before translation; FuncToLLVM keeps it discardable).
/// The micro-kernel's tile functions carry it.
constexpr llvm::StringLiteral kNoInlineAttr = "attn.no_inline";

/// A private function `name` of `type` at the end of `symbols`' module
/// (renamed there if the name is taken), internal to its LLVM module and
/// marked kNoInlineAttr, with its entry block: the micro-kernel's tile
/// functions and the GEMM kernel's shared helpers.
func::FuncOp createKernelFunction(SymbolTable &symbols, Location loc,
                                  StringRef name, FunctionType type);

/// An integer attribute on a func.call inside a parallel loop: the loop's
/// iterations are alike and stream memory, so attn-dynamic-schedule hands
/// them out in runs of this many (contiguous data per thread) rather than
/// one at a time. The gated-delta tile calls carry it.
constexpr llvm::StringLiteral kScheduleChunkAttr = "attn.schedule_chunk";

/// A unit attribute on a func.call of a tile function that may write with
/// non-temporal stores (the gated-delta recurrent kernel's decode step):
/// attn-fence-streaming-stores puts an sfence after the parallel loop
/// holding the call, in each thread (after the call when it runs alone).
constexpr llvm::StringLiteral kStreamingStoresAttr = "attn.streaming_stores";

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_CPU_MICROKERNEL_H
