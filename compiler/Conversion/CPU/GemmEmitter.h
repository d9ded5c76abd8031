//===- GemmEmitter.h - the CPU GEMM kernel's emitter ------------*- C++ -*-===//
//
// The builder of the GEMM kernel (GemmKernel.cpp: the packed panels and the
// dot products; GemmSwapped.cpp: the operand-swapped kernel for 8 to 48
// rows), shared by the files that define its parts. Internal to
// AttnCPUConversion.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_CPU_GEMMEMITTER_H
#define ATTN_COMPILER_CONVERSION_CPU_GEMMEMITTER_H

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/LoopBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::attn::gemm {

/// Rows of A per register block: 6 with AVX-512 (6 × 4 vectors: 24
/// accumulators, 4 loads of B and 6 broadcasts of A per 24 FMAs), 4 with
/// AVX2/SSE (4 × 2 of 16 registers).
constexpr int64_t rowsFor(int64_t lanes) { return lanes >= 16 ? 6 : 4; }
/// K per packed block: a [512, NC] scratch per panel (128 KiB with AVX-512,
/// read from L2). Blocks of 128 (32 KiB, in L1) loaded and stored C four
/// times as often: on a Zen 4 core 0.83-0.88x OpenBLAS at 4096 rows, 512:
/// 0.94-0.99x with kGroup (docs/benchmarks.md, "The GEMM kernel shape by
/// shape").
constexpr int64_t kDepth = 512;
/// Panels per parallel item of the packed path: each block of R rows of A
/// (R × kDepth floats) is read once into L1 and serves kGroup panels.
constexpr int64_t kGroup = 3;
/// Below this many rows, B [N, K] is read by dot products (no pack).
constexpr int64_t kDotRows = 8;
/// How many blocks of R rows ahead the panels prefetch A's rows.
constexpr int64_t kRowsAhead = 2;
/// How far ahead (64-byte lines) the pack prefetches each row of B.
constexpr int64_t kPrefetchLines = 8;
/// Columns per step of the dot-product path.
constexpr int64_t kDotCols = 4;
/// From kDotRows up to this many rows (16 lanes), B [N, K] is read in place
/// by the operand-swapped kernel (swappedRows).
constexpr int64_t kSwapRows = 48;
/// How far ahead (floats) the operand-swapped kernel prefetches B's rows.
constexpr int64_t kSwapAhead = 256;
/// Columns of C per parallel iteration of the operand-swapped kernel
/// (rounded up to whole tiles and cache lines; fewer when there are more
/// threads than chunks), each packing Aᵀ itself: at K = 2048 and 40 rows
/// its pack is ~5% of its products.
constexpr int64_t kSwapCols = 256;

struct GemmEmitter {
  OpBuilder &b;
  Location loc;
  Value A, B, C;
  bool bTransposed; ///< B is [N, K]
  bool amx = false; ///< B [N, K], kAmxGemmRows rows or more: AMX tiles
  int64_t W, NV, R;
  VectorType vt, vmask;
  Value M, N, K;

  /// An emitter without operands: the operand-swapped kernel's helpers
  /// (sharedFunction) set the ones they use.
  GemmEmitter(OpBuilder &b, Location loc, int64_t lanes)
      : b(b), loc(loc), bTransposed(true), W(lanes), NV(lanes >= 16 ? 4 : 2),
        R(rowsFor(lanes)), vt(VectorType::get({lanes}, b.getF32Type())),
        vmask(VectorType::get({lanes}, b.getI1Type())) {}
  GemmEmitter(OpBuilder &b, linalg::MatmulOp op, int64_t lanes)
      : GemmEmitter(b, op.getLoc(), lanes) {
    A = op.getDpsInputs()[0];
    B = op.getDpsInputs()[1];
    C = op.getDpsInits()[0];
    bTransposed = isa<linalg::MatmulTransposeBOp>(op.getOperation());
  }

  int64_t panel() const { return NV * W; }
  Value idx(int64_t c) { return arith::ConstantIndexOp::create(b, loc, c); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value dim(Value m, int64_t i) { return memref::DimOp::create(b, loc, m, i); }
  /// x rounded down to a multiple of the constant `step`.
  Value floorTo(Value x, int64_t step) {
    Value s = idx(step);
    Value q = arith::DivUIOp::create(b, loc, x, s);
    return mul(q, s);
  }
  Value zeros() {
    return arith::ConstantOp::create(
        b, loc, vt, DenseElementsAttr::get(vt, b.getF32FloatAttr(0.0)));
  }
  /// Lanes [0, n) of a vector (n clamped to [0, W]).
  Value maskOf(Value n) {
    return vector::CreateMaskOp::create(b, loc, vmask, ValueRange{n});
  }
  Value maskedLoad(Value mem, ValueRange ix, Value mask) {
    Value pass = zeros();
    return vector::MaskedLoadOp::create(b, loc, vt, mem, ix, mask, pass);
  }
  Value broadcastAt(Value mem, ValueRange ix) {
    Value s = memref::LoadOp::create(b, loc, mem, ix);
    return vector::BroadcastOp::create(b, loc, vt, s);
  }
  /// mem[row, col .. col + n) as a 1-D memref.
  Value rowView(Value mem, Value row, Value col, Value n) {
    SmallVector<OpFoldResult> offsets = {row, col};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), n};
    SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
    auto srcTy = cast<MemRefType>(mem.getType());
    auto viewTy = memref::SubViewOp::inferRankReducedResultType(
        {ShapedType::kDynamic}, srcTy, offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(viewTy), mem,
                                     offsets, sizes, strides);
  }
  SmallVector<Value>
  loop(Value lb, Value ub, Value step, ValueRange init,
       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    scf::ForOp f = buildForLoop(b, loc, lb, ub, step, init, body);
    return SmallVector<Value>(f.getResults());
  }
  void loop(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    buildForLoop(b, loc, lb, ub, step, body);
  }
  /// scf.parallel over [0, n) whose body `body(iv)` builds.
  void parallel(Value n, function_ref<void(Value)> body) {
    Value zero = idx(0), one = idx(1);
    auto par = scf::ParallelOp::create(b, loc, ValueRange{zero}, ValueRange{n},
                                       ValueRange{one});
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(par.getBody());
    body(par.getInductionVars()[0]);
  }
  /// An scf.if on `cond` whose branches `then` and `otherwise` build.
  void ifElse(Value cond, function_ref<void()> then,
              function_ref<void()> otherwise) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    then();
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    otherwise();
  }
  /// The packed panels, or with B [N, K] and fewer than 8 rows the dot
  /// products; with `generic` (the function of those for every K), the
  /// operand-swapped kernel from 8 to 48 rows, else a call of `generic`.
  void emit(func::FuncOp generic);

  //===--------------------------------------------------------------------===//
  // Operand-swapped: B [N, K] with few rows of A (a mixture of experts gives
  // each expert ~40): C[m, n] as (B·Aᵀ)[n, m], the rows of A in the lanes.
  //===--------------------------------------------------------------------===//
  /// One variant per mvs = ceil(M / W) vectors of rows, from `mvs` up.
  void swappedRows(int64_t mvs);
  /// Per chunk of kSwapCols columns of C (the parallel loop): Aᵀ packed
  /// into the chunk's own [K, mvs·W] buffer (rows past M zero), then per
  /// tile of nr rows of B (read in place, each weight once: nr sequential
  /// streams along K) nr × mvs accumulators: per k, mvs loads of Aᵀ, nr
  /// broadcasts of B, nr·mvs FMAs. No pack of B, whose panel in the packed
  /// kernel served only M / 4 blocks of rows.
  void swapped(int64_t mvs);
  /// memref<?x?xf32, strided<[?, 1], offset: ?>>: A and C as the shared
  /// helpers take them.
  MemRefType dynamicMatrix();
  /// The module's private no-inline function `name` of `type`, built once
  /// by `build` on its arguments and called by every GEMM function that
  /// needs it: the operand-swapped kernel's pack and epilogue are the same
  /// code whatever K (only its product loop gains from K being static), and
  /// their W×W transposes were most of each per-depth function.
  func::FuncOp
  sharedFunction(StringRef name, FunctionType type,
                 function_ref<void(GemmEmitter &, ValueRange)> build);
  /// (A, at): packAt for mvs vectors of rows.
  func::FuncOp packFunction(int64_t mvs);
  /// (acc, C, n0, nr): C[0 .. M, n0 .. n0+nr) += the transpose of acc's
  /// rows [0, nr) (row r: column n0 + r of C, its rows in the lanes).
  func::FuncOp addTileFunction(int64_t mvs);
  /// omp_get_max_threads() as an index (declared in the module when it is
  /// not): the threads the parallel loops here run on; 1 if the module
  /// already has another function of that name.
  Value maxThreads();
  /// at[k, m] = A[m, k] for m < M, 0 for M <= m < mvs·W: whole W×W blocks
  /// by vector transposes, the last K % W columns element by element.
  void packAt(Value at, int64_t mvs);
  /// C[0 .. M, n0 .. n0+nr) += (B[n0 .., :] · Aᵀ)ᵀ, the accumulators
  /// through `accBuf` into `addTile`.
  void swappedTile(int64_t nr, int64_t mvs, Value at, Value n0, Value accBuf,
                   Value dynC, func::FuncOp addTile);
  /// The epilogue of a tile: acc's rows transposed (W×W blocks) into a
  /// stack tile whose row m is C[m, n0 .. n0+nr), then added into C one
  /// masked vector per row (rows of C: C's first dimension).
  void addTile(int64_t mvs, Value accBuf, Value c, Value n0, Value nr);

  //===--------------------------------------------------------------------===//
  // Panels: the packed, register-tiled product.
  //===--------------------------------------------------------------------===//
  void panels();
  /// While block m0 of rows runs, one row of the panel's next K block of
  /// B (row (m0 / R) mod NC, clamped into B) is prefetched into L2: the
  /// next pack then reads from cache, not memory (it waited on memory line
  /// by line: a fifth of the GEMM's time).
  void prefetchNextBlock(Value m0, Value n0, Value k0);
  /// The K block's lines of the rows kRowsAhead blocks of R after m0
  /// (clamped into A): A's rows lie K floats apart, a stride the hardware
  /// prefetchers do not follow, and with few panels A comes from memory.
  void prefetchRowsAhead(Value m0, Value k0, Value kc);
  /// packed[k, c] = B[n0 + c, k0 + k] for k < kc, c < cols; zero columns
  /// past `cols` (the last panel), whose lanes are never stored.
  void pack(Value packed, Value n0, Value cols, Value k0, Value kc);
  /// C[m0 .. m0+rows, n0 .. n0+NC) += A[m0 .., k0 .. k0+kc) · B block, in
  /// rows × NV accumulators.
  void rowBlock(int64_t rows, Value m0, Value n0, Value k0, Value kc,
                ArrayRef<Value> masks, Value packed);

  //===--------------------------------------------------------------------===//
  // Dot products: B [N, K] with few rows (decode).
  //===--------------------------------------------------------------------===//
  void dotColumns();
  /// C[m, n .. n+cols) += A[m, :] · B[n .. n+cols, :]ᵀ: a vector of partial
  /// sums per column along K, folded at the end.
  void dotBlock(int64_t cols, Value m, Value n);
};

} // namespace mlir::attn::gemm

#endif // ATTN_COMPILER_CONVERSION_CPU_GEMMEMITTER_H
