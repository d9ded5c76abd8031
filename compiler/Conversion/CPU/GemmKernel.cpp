//===- GemmKernel.cpp - register-tiled CPU code for linalg.matmul ---------===//
//
// This file implements the CPU code of the projections and feed-forward
// GEMMs: a buffer-form f32 `linalg.matmul` C[M, N] += A[M, K] · B, with B
// either [K, N] (the default maps: GPT-2's Conv1D weights) or [N, K]
// (transpose-B maps: nn.Linear weights as checkpoints store them), as
// attn.linear, attn.gated_mlp, attn.mlp and attn.moe lower. The function
// attn-cpu-micro-kernel makes of each form (B [K, N] or [N, K]), every
// size, stride and offset read from the operands, holds:
//
//   scf.parallel over panels of NC = NV·W columns of C (W f32 lanes, NV = 4
//   vectors with AVX-512, 2 with AVX2/SSE):
//     for each K block of KC = 128:
//       [B [N, K]] pack the panel's block of B transposed into a [KC, NC]
//         scratch (W×W vector transposes for full blocks; 32 KiB with
//         AVX-512, so it stays in L1 while every row block reads it), so
//         that the inner loop loads NC consecutive floats per k;
//       for each block of R = 6 rows of A (4 with AVX2/SSE): R × NV
//         accumulators loaded from C, per k NV loads of B, R broadcasts of
//         A (each row a 1-D view: addressed by k alone), R·NV FMAs, stored
//         back (masked in the last panel); leftover rows one by one. While
//         block j runs, row j mod NC of the next K block of B is
//         prefetched for the next pack.
//
// With B [N, K] and fewer than 8 rows (decode), packing B would read and
// write every weight once more than the product does: dot products along K
// instead, 4 columns × 1 row per step, B streamed from memory once per row.
// From 8 to 48 rows with 16 lanes (a mixture of experts gives each expert
// ~40 tokens), a packed panel would serve only M / 4 blocks of rows: the
// operands swap roles instead (in a function per depth K, which calls the
// generic one for other row counts), C[m, n] = (B·Aᵀ)[n, m] with the rows of A
// in the lanes (≤ 3 vectors), tiles of 12/12/8 rows of B read in place along K
// (broadcast element by element, one line of each row prefetched per 16
// k), each tile's accumulators transposed (W×W shuffles) and added into C
// a masked row at a time. The parallel loop runs over chunks of ~256
// columns of C, each packing Aᵀ into its own buffer: an Aᵀ shared by the
// threads was rewritten every call in lines the other core held. The pack
// and the epilogue (transposes, masked adds) do not depend on K: they are
// module-wide functions per vectors of rows (attn_gemm_swap_pack_<16|32|48>,
// attn_gemm_swap_add_<..>) that every depth's function calls, the
// accumulators passed through a [W, 16·vectors] buffer per chunk. Measured
// against the panels (64 experts' [1024, 2048] weights, alternated, before
// the chunks): 16 rows 1.4× faster, 40 rows ~1.1×, 64 rows 5% slower
// (hence the bound of 48). Measured: docs/benchmarks.md, "Whole transformer
// layers". With `amx`, 64 rows or more of a B [N, K] GEMM run on AMX tiles
// (GemmAmx.cpp).
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/LoopBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <numeric>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Rows of A per register block: 6 with AVX-512 (6 × 4 vectors: 24
/// accumulators, 4 loads of B and 6 broadcasts of A per 24 FMAs), 4 with
/// AVX2/SSE (4 × 2 of 16 registers).
constexpr int64_t rowsFor(int64_t lanes) { return lanes >= 16 ? 6 : 4; }
/// K per packed block: a [128, NC] scratch (32 KiB with AVX-512) stays in L1.
constexpr int64_t kDepth = 128;
/// Below this many rows, B [N, K] is read by dot products (no pack).
constexpr int64_t kDotRows = 8;
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

bool isF32Buffer(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && t.getRank() == 2 && t.getElementType().isF32();
}

bool innermostContiguous(Value v) {
  int64_t offset;
  SmallVector<int64_t> strides;
  return succeeded(cast<MemRefType>(v.getType())
                       .getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

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
    auto par = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                       ValueRange{n}, ValueRange{one});
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
  void emit(func::FuncOp generic) {
    M = dim(C, 0);
    N = dim(C, 1);
    K = dim(A, 1);
    if (generic) {
      Value many = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, M,
                                         idx(kDotRows));
      Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, M,
                                        idx(kSwapRows));
      ifElse(
          arith::AndIOp::create(b, loc, many, few), [&] { swappedRows(1); },
          [&] {
            SmallVector<Value> args = {A, B, C};
            for (auto [v, t] :
                 llvm::zip_equal(args, generic.getArgumentTypes()))
              v = memref::CastOp::create(b, loc, t, v);
            func::CallOp::create(b, loc, generic, args);
          });
      return;
    }
    if (!bTransposed) {
      panels();
      return;
    }
    auto avx = [&] {
      Value small = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, M,
                                          idx(kDotRows));
      ifElse(
          small, [&] { dotColumns(); }, [&] { panels(); });
    };
    if (amx)
      emitAmxGemmOr(b, loc, A, B, C, maxThreads(), avx);
    else
      avx();
  }

  //===--------------------------------------------------------------------===//
  // Operand-swapped: B [N, K] with few rows of A (a mixture of experts gives
  // each expert ~40): C[m, n] as (B·Aᵀ)[n, m], the rows of A in the lanes.
  //===--------------------------------------------------------------------===//

  /// One variant per mvs = ceil(M / W) vectors of rows, from `mvs` up.
  void swappedRows(int64_t mvs) {
    if (mvs == kSwapRows / W) {
      swapped(mvs);
      return;
    }
    Value bound = idx(mvs * W);
    Value fits =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, M, bound);
    ifElse(
        fits, [&] { swapped(mvs); }, [&] { swappedRows(mvs + 1); });
  }

  /// Per chunk of kSwapCols columns of C (the parallel loop): Aᵀ packed
  /// into the chunk's own [K, mvs·W] buffer (rows past M zero), then per
  /// tile of nr rows of B (read in place, each weight once: nr sequential
  /// streams along K) nr × mvs accumulators: per k, mvs loads of Aᵀ, nr
  /// broadcasts of B, nr·mvs FMAs. No pack of B, whose panel in the packed
  /// kernel served only M / 4 blocks of rows.
  void swapped(int64_t mvs) {
    int64_t mp = mvs * W;
    int64_t nr = mvs == 1 ? 12 : 24 / mvs;
    // Chunks span whole 64-byte lines of C's rows (a multiple of 16
    // columns and of nr). Each packs Aᵀ itself: one Aᵀ shared by the
    // threads was rewritten every call in lines the other cores held, and
    // read back from theirs (on 2 cores the pack took 11% of the time, and
    // two threads ran 1.58× one); a private copy stays in its core's cache.
    // ~kSwapCols columns per chunk (2 to 8 chunks for an expert's
    // matrices), but at least as many chunks as OpenMP has threads.
    int64_t groupCols = std::lcm(nr, int64_t(16));
    Value one = idx(1), group = idx(groupCols);
    // Counts rounded up as add-then-divide, like the panels': no
    // underflow at N = 0.
    Value nWork = add(N, idx(kSwapCols - 1));
    Value byWork = arith::DivUIOp::create(b, loc, nWork, idx(kSwapCols));
    Value threads = maxThreads();
    Value most = arith::MaxUIOp::create(b, loc, byWork, threads);
    Value want = arith::MaxUIOp::create(b, loc, most, one);
    Value nPer = add(N, sub(want, one));
    Value per = arith::DivUIOp::create(b, loc, nPer, want);
    Value perUp = add(per, idx(groupCols - 1));
    Value perLines = floorTo(perUp, groupCols);
    Value span = arith::MaxUIOp::create(b, loc, perLines, group);
    Value nSpan = add(N, sub(span, one));
    Value chunks = arith::DivUIOp::create(b, loc, nSpan, span);
    auto atTy = MemRefType::get({ShapedType::kDynamic, mp}, b.getF32Type());
    auto accTy = MemRefType::get({W, mp}, b.getF32Type());
    Value dynA = memref::CastOp::create(b, loc, dynamicMatrix(), A);
    Value dynC = memref::CastOp::create(b, loc, dynamicMatrix(), C);
    func::FuncOp pack = packFunction(mvs);
    func::FuncOp addTile = addTileFunction(mvs);
    parallel(chunks, [&](Value c) {
      Value at = memref::AllocOp::create(b, loc, atTy, ValueRange{K},
                                         b.getI64IntegerAttr(64));
      func::CallOp::create(b, loc, pack, ValueRange{dynA, at});
      // The tiles' accumulators, rows past a tile's nr zero (never
      // written: the 1-row tiles rewrite row 0 only, whose columns past 1
      // the masked add leaves out).
      Value accBuf =
          memref::AllocOp::create(b, loc, accTy, b.getI64IntegerAttr(64));
      Value zero = idx(0);
      Value rowsW = idx(W);
      loop(zero, rowsW, one, [&](Value r) {
        for (int64_t v = 0; v < mvs; ++v) {
          Value z = zeros();
          vector::StoreOp::create(b, loc, z, accBuf, ValueRange{r, idx(v * W)});
        }
      });
      Value n0 = mul(c, span);
      Value top = add(n0, span);
      Value end = min(top, N);
      Value fullEnd = add(n0, floorTo(sub(end, n0), nr));
      loop(n0, fullEnd, idx(nr), [&](Value n) {
        swappedTile(nr, mvs, at, n, accBuf, dynC, addTile);
      });
      loop(fullEnd, end, one,
           [&](Value n) { swappedTile(1, mvs, at, n, accBuf, dynC, addTile); });
    });
  }

  /// memref<?x?xf32, strided<[?, 1], offset: ?>>: A and C as the shared
  /// helpers take them.
  MemRefType dynamicMatrix() {
    int64_t dyn = ShapedType::kDynamic;
    auto layout = StridedLayoutAttr::get(b.getContext(), dyn, {dyn, 1});
    return MemRefType::get({dyn, dyn}, b.getF32Type(), layout);
  }

  /// The module's private no-inline function `name` of `type`, built once
  /// by `build` on its arguments and called by every GEMM function that
  /// needs it: the operand-swapped kernel's pack and epilogue are the same
  /// code whatever K (only its product loop gains from K being static), and
  /// their W×W transposes were most of each per-depth function.
  func::FuncOp
  sharedFunction(StringRef name, FunctionType type,
                 function_ref<void(GemmEmitter &, ValueRange)> build) {
    auto module =
        b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
    if (auto fn = module.lookupSymbol<func::FuncOp>(name);
        fn && fn.getFunctionType() == type)
      return fn;
    SymbolTable symbols(module);
    func::FuncOp fn = createKernelFunction(symbols, loc, name, type);
    Block *body = &fn.getBody().front();
    OpBuilder fb = OpBuilder::atBlockBegin(body);
    GemmEmitter e(fb, loc, W);
    build(e, body->getArguments());
    func::ReturnOp::create(fb, loc);
    return fn;
  }

  /// (A, at): packAt for mvs vectors of rows.
  func::FuncOp packFunction(int64_t mvs) {
    int64_t mp = mvs * W;
    auto atTy = MemRefType::get({ShapedType::kDynamic, mp}, b.getF32Type());
    auto type = b.getFunctionType({dynamicMatrix(), atTy}, {});
    return sharedFunction(("attn_gemm_swap_pack_" + llvm::Twine(mp)).str(),
                          type, [&](GemmEmitter &e, ValueRange args) {
                            e.A = args[0];
                            e.M = e.dim(e.A, 0);
                            e.K = e.dim(e.A, 1);
                            e.packAt(args[1], mvs);
                          });
  }

  /// (acc, C, n0, nr): C[0 .. M, n0 .. n0+nr) += the transpose of acc's
  /// rows [0, nr) (row r: column n0 + r of C, its rows in the lanes).
  func::FuncOp addTileFunction(int64_t mvs) {
    int64_t mp = mvs * W;
    auto accTy = MemRefType::get({W, mp}, b.getF32Type());
    Type index = b.getIndexType();
    auto type = b.getFunctionType({accTy, dynamicMatrix(), index, index}, {});
    return sharedFunction(("attn_gemm_swap_add_" + llvm::Twine(mp)).str(), type,
                          [&](GemmEmitter &e, ValueRange args) {
                            e.addTile(mvs, args[0], args[1], args[2], args[3]);
                          });
  }

  /// omp_get_max_threads() as an index (declared in the module when it is
  /// not): the threads the parallel loops here run on; 1 if the module
  /// already has another function of that name.
  Value maxThreads() {
    auto module =
        b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
    StringRef name = "omp_get_max_threads";
    // Checked here: lookupOrCreateFnDecl reports a mismatch as an error.
    if (Operation *sym = module.lookupSymbol(name)) {
      auto f = dyn_cast<func::FuncOp>(sym);
      if (!f || f.getFunctionType() !=
                    b.getFunctionType(TypeRange{}, {b.getI32Type()}))
        return idx(1);
    }
    FailureOr<func::FuncOp> fn = func::lookupOrCreateFnDecl(
        b, module, name, TypeRange{}, nullptr, b.getI32Type());
    if (failed(fn))
      return idx(1);
    Value n = func::CallOp::create(b, loc, *fn, ValueRange{}).getResult(0);
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), n);
  }

  /// at[k, m] = A[m, k] for m < M, 0 for M <= m < mvs·W: whole W×W blocks
  /// by vector transposes, the last K % W columns element by element.
  void packAt(Value at, int64_t mvs) {
    int64_t mp = mvs * W;
    Value zero = idx(0), one = idx(1);
    Value mLast = sub(M, one);
    Value kFull = floorTo(K, W);
    auto square = VectorType::get({W, W}, b.getF32Type());
    loop(zero, kFull, idx(W), [&](Value k) {
      for (int64_t mb = 0; mb < mvs; ++mb)
        storeTransposedBlock(
            b, loc, square,
            [&](int64_t i) {
              Value m = idx(mb * W + i);
              Value inA = arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::ult, m, M);
              Value row = min(m, mLast);
              Value x =
                  vector::LoadOp::create(b, loc, vt, A, ValueRange{row, k});
              return arith::SelectOp::create(b, loc, inA, x, zeros())
                  .getResult();
            },
            at, k, idx(mb * W));
    });
    Value zf = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                         b.getF32FloatAttr(0.0));
    loop(zero, idx(mp), one, [&](Value m) {
      Value inA =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, m, M);
      Value row = min(m, mLast);
      loop(kFull, K, one, [&](Value k) {
        Value x = memref::LoadOp::create(b, loc, A, ValueRange{row, k});
        Value y = arith::SelectOp::create(b, loc, inA, x, zf);
        memref::StoreOp::create(b, loc, y, at, ValueRange{k, m});
      });
    });
  }

  /// C[0 .. M, n0 .. n0+nr) += (B[n0 .., :] · Aᵀ)ᵀ, the accumulators
  /// through `accBuf` into `addTile`.
  void swappedTile(int64_t nr, int64_t mvs, Value at, Value n0, Value accBuf,
                   Value dynC, func::FuncOp addTile) {
    Value zero = idx(0), one = idx(1);
    SmallVector<Value> bRows;
    for (int64_t r = 0; r < nr; ++r) {
      Value n = add(n0, idx(r));
      bRows.push_back(rowView(B, n, zero, K));
    }
    auto step = [&](Value k, ValueRange a) {
      SmallVector<Value> av, next(a.begin(), a.end());
      for (int64_t v = 0; v < mvs; ++v) {
        Value col = idx(v * W);
        av.push_back(
            vector::LoadOp::create(b, loc, vt, at, ValueRange{k, col}));
      }
      for (int64_t r = 0; r < nr; ++r) {
        Value x = broadcastAt(bRows[r], ValueRange{k});
        for (int64_t v = 0; v < mvs; ++v)
          next[r * mvs + v] =
              vector::FMAOp::create(b, loc, x, av[v], a[r * mvs + v]);
      }
      return next;
    };
    // Per line of B (16 floats of each row), one line of each row
    // prefetched: the hardware prefetchers alone left the loop waiting on
    // the nr streams when the weights come from memory, as an expert's do
    // (~10% on 40 rows of [512, 2048] and [2048, 512] weights).
    Value line = idx(16);
    Value kLines = floorTo(K, 16);
    Value lastCol = sub(K, one);
    Value lastRow = sub(N, one);
    SmallVector<Value> init(nr * mvs, zeros());
    SmallVector<Value> acc =
        loop(zero, kLines, line, init, [&](Value k0, ValueRange a) {
          // Each row's line kSwapAhead floats ahead; past the row's end,
          // the same row of the next tile (the stream this thread reads
          // next), clamped into B.
          Value kk = add(k0, idx(kSwapAhead));
          Value over =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, kk, K);
          Value kWrap = sub(kk, K);
          Value wrapped = min(kWrap, lastCol);
          Value col = arith::SelectOp::create(b, loc, over, wrapped, kk);
          Value nextTile = add(n0, idx(nr));
          Value base = arith::SelectOp::create(b, loc, over, nextTile, n0);
          for (int64_t r = 0; r < nr; ++r) {
            Value n = add(base, idx(r));
            Value row = min(n, lastRow);
            memref::PrefetchOp::create(b, loc, B, ValueRange{row, col},
                                       /*isWrite=*/false, /*localityHint=*/3,
                                       /*isDataCache=*/true);
          }
          Value kTop = add(k0, line);
          return loop(k0, kTop, one, a, step);
        });
    acc = loop(kLines, K, one, acc, step);
    for (int64_t r = 0; r < nr; ++r)
      for (int64_t v = 0; v < mvs; ++v)
        vector::StoreOp::create(b, loc, acc[r * mvs + v], accBuf,
                                ValueRange{idx(r), idx(v * W)});
    func::CallOp::create(b, loc, addTile,
                         ValueRange{accBuf, dynC, n0, idx(nr)});
  }

  /// The epilogue of a tile: acc's rows transposed (W×W blocks) into a
  /// stack tile whose row m is C[m, n0 .. n0+nr), then added into C one
  /// masked vector per row (rows of C: C's first dimension).
  void addTile(int64_t mvs, Value accBuf, Value c, Value n0, Value nr) {
    Value zero = idx(0), one = idx(1);
    auto tTy = MemRefType::get({mvs * W, W}, b.getF32Type());
    Value tile = memref::AllocaOp::create(b, loc, tTy, b.getI64IntegerAttr(64));
    auto square = VectorType::get({W, W}, b.getF32Type());
    for (int64_t v = 0; v < mvs; ++v)
      storeTransposedBlock(
          b, loc, square,
          [&](int64_t r) {
            return vector::LoadOp::create(b, loc, vt, accBuf,
                                          ValueRange{idx(r), idx(v * W)})
                .getResult();
          },
          tile, idx(v * W), zero);
    Value cols = maskOf(nr);
    Value rows = dim(c, 0);
    loop(zero, rows, one, [&](Value m) {
      Value old = maskedLoad(c, ValueRange{m, n0}, cols);
      Value x = vector::LoadOp::create(b, loc, vt, tile, ValueRange{m, zero});
      Value sum = arith::AddFOp::create(b, loc, old, x);
      vector::MaskedStoreOp::create(b, loc, c, ValueRange{m, n0}, cols, sum);
    });
  }

  //===--------------------------------------------------------------------===//
  // Panels: the packed, register-tiled product.
  //===--------------------------------------------------------------------===//

  void panels() {
    Value nc = idx(panel());
    Value last = sub(N, idx(1));
    Value count = arith::DivUIOp::create(b, loc, add(last, nc), nc);
    parallel(count, [&](Value p) {
      Value n0 = mul(p, nc);
      Value rest = sub(N, n0);
      Value cols = min(rest, nc);
      SmallVector<Value> masks;
      for (int64_t v = 0; v < NV; ++v) {
        Value lanes = sub(cols, idx(v * W));
        masks.push_back(maskOf(lanes));
      }
      Value packed;
      if (bTransposed) {
        auto t = MemRefType::get({kDepth, panel()}, b.getF32Type());
        // On the heap (the runtime's per-thread workspace), freed after
        // the panel: an alloca here was never popped (the scf.parallel
        // body, an allocation scope, becomes a loop of the outlined OpenMP
        // function), 32 KiB more stack per panel; 512 panels (N = 32768)
        // overflowed a thread's 8 MiB.
        packed = memref::AllocOp::create(b, loc, t, b.getI64IntegerAttr(64));
      }
      Value zero = idx(0), depth = idx(kDepth);
      loop(zero, K, depth, [&](Value k0) {
        Value kRest = sub(K, k0);
        Value kc = min(kRest, depth);
        if (bTransposed)
          pack(packed, n0, cols, k0, kc);
        Value fullRows = floorTo(M, R);
        Value rowStep = idx(R), one = idx(1);
        loop(zero, fullRows, rowStep, [&](Value m0) {
          if (bTransposed)
            prefetchNextBlock(m0, n0, k0);
          rowBlock(R, m0, n0, k0, kc, masks, packed);
        });
        loop(fullRows, M, one, [&](Value m) {
          rowBlock(1, m, n0, k0, kc, masks, packed);
        });
      });
    });
  }

  /// While block m0 of rows runs, one row of the panel's next K block of
  /// B (row (m0 / R) mod NC, clamped into B) is prefetched into L2: the
  /// next pack then reads from cache, not memory (it waited on memory line
  /// by line: a fifth of the GEMM's time).
  void prefetchNextBlock(Value m0, Value n0, Value k0) {
    Value blockIx = arith::DivUIOp::create(b, loc, m0, idx(R));
    Value r = arith::RemUIOp::create(b, loc, blockIx, idx(panel()));
    Value lastRow = sub(N, idx(1)), lastCol = sub(K, idx(1));
    Value row = min(add(n0, r), lastRow);
    Value next = add(k0, idx(kDepth));
    for (int64_t c = 0; c < kDepth; c += 16) {
      Value col = min(add(next, idx(c)), lastCol);
      memref::PrefetchOp::create(b, loc, B, ValueRange{row, col},
                                 /*isWrite=*/false, /*localityHint=*/2,
                                 /*isDataCache=*/true);
    }
  }

  /// packed[k, c] = B[n0 + c, k0 + k] for k < kc, c < cols; zero columns
  /// past `cols` (the last panel), whose lanes are never stored.
  void pack(Value packed, Value n0, Value cols, Value k0, Value kc) {
    Value zero = idx(0), one = idx(1), w = idx(W), nc = idx(panel());
    Value fullPanel =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, cols, nc);
    Value fullDepth = floorTo(kc, W);
    auto scalar = [&](Value from, Value colsEnd) {
      loop(zero, colsEnd, one, [&](Value c) {
        Value row = add(n0, c);
        loop(from, kc, one, [&](Value k) {
          Value col = add(k0, k);
          Value x = memref::LoadOp::create(b, loc, B, ValueRange{row, col});
          memref::StoreOp::create(b, loc, x, packed, ValueRange{k, c});
        });
      });
    };
    ifElse(
        fullPanel,
        [&] {
          auto square = VectorType::get({W, W}, b.getF32Type());
          for (int64_t c0 = 0; c0 < panel(); c0 += W) {
            loop(zero, fullDepth, w, [&](Value k) {
              Value col = add(k0, k);
              Value rowBase = add(n0, idx(c0));
              // Each row's line kPrefetchLines ahead (clamped to the row):
              // the pack's 16 interleaved row streams otherwise wait on
              // memory line by line.
              Value ahead = add(col, idx(kPrefetchLines * 16));
              Value lastCol = sub(K, idx(1));
              Value pfCol = min(ahead, lastCol);
              storeTransposedBlock(
                  b, loc, square,
                  [&](int64_t i) {
                    Value row = add(rowBase, idx(i));
                    memref::PrefetchOp::create(b, loc, B,
                                               ValueRange{row, pfCol},
                                               /*isWrite=*/false,
                                               /*localityHint=*/3,
                                               /*isDataCache=*/true);
                    return vector::LoadOp::create(b, loc, vt, B,
                                                  ValueRange{row, col})
                        .getResult();
                  },
                  packed, k, idx(c0));
            });
          }
          scalar(fullDepth, nc);
        },
        [&] {
          scalar(zero, cols);
          Value z = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                              b.getF32FloatAttr(0.0));
          loop(cols, nc, one, [&](Value c) {
            loop(zero, kc, one, [&](Value k) {
              memref::StoreOp::create(b, loc, z, packed, ValueRange{k, c});
            });
          });
        });
  }

  /// C[m0 .. m0+rows, n0 .. n0+NC) += A[m0 .., k0 .. k0+kc) · B block, in
  /// rows × NV accumulators.
  void rowBlock(int64_t rows, Value m0, Value n0, Value k0, Value kc,
                ArrayRef<Value> masks, Value packed) {
    SmallVector<Value> rowIx, colIx, acc;
    for (int64_t r = 0; r < rows; ++r)
      rowIx.push_back(add(m0, idx(r)));
    for (int64_t v = 0; v < NV; ++v)
      colIx.push_back(add(n0, idx(v * W)));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < NV; ++v)
        acc.push_back(maskedLoad(C, ValueRange{rowIx[r], colIx[v]}, masks[v]));
    // Each row of A's block as a 1-D view from k0: the loop addresses it
    // by k alone (a row index times the stride per load kept four
    // multiplications and their reloaded operands in the inner loop).
    SmallVector<Value> aRows;
    for (int64_t r = 0; r < rows; ++r)
      aRows.push_back(rowView(A, rowIx[r], k0, kc));
    Value zero = idx(0), one = idx(1);
    SmallVector<Value> out =
        loop(zero, kc, one, acc, [&](Value k, ValueRange a) {
          SmallVector<Value> bv;
          Value kk = add(k0, k);
          for (int64_t v = 0; v < NV; ++v)
            bv.push_back(bTransposed
                             ? vector::LoadOp::create(
                                   b, loc, vt, packed,
                                   ValueRange{k, idx(v * W)})
                                   .getResult()
                             : maskedLoad(B, ValueRange{kk, colIx[v]},
                                          masks[v]));
          SmallVector<Value> next;
          for (int64_t r = 0; r < rows; ++r) {
            Value x = broadcastAt(aRows[r], ValueRange{k});
            for (int64_t v = 0; v < NV; ++v)
              next.push_back(
                  vector::FMAOp::create(b, loc, x, bv[v], a[r * NV + v]));
          }
          return next;
        });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < NV; ++v)
        vector::MaskedStoreOp::create(b, loc, C,
                                      ValueRange{rowIx[r], colIx[v]}, masks[v],
                                      out[r * NV + v]);
  }

  //===--------------------------------------------------------------------===//
  // Dot products: B [N, K] with few rows (decode).
  //===--------------------------------------------------------------------===//

  void dotColumns() {
    Value nc = idx(panel());
    Value last = sub(N, idx(1));
    Value count = arith::DivUIOp::create(b, loc, add(last, nc), nc);
    parallel(count, [&](Value p) {
      Value n0 = mul(p, nc);
      Value rest = sub(N, n0);
      Value cols = min(rest, nc);
      Value end = add(n0, cols);
      Value fullCols = add(n0, floorTo(cols, kDotCols));
      Value zero = idx(0), one = idx(1), step = idx(kDotCols);
      loop(zero, M, one, [&](Value m) {
        loop(n0, fullCols, step, [&](Value n) { dotBlock(kDotCols, m, n); });
        loop(fullCols, end, one, [&](Value n) { dotBlock(1, m, n); });
      });
    });
  }

  /// C[m, n .. n+cols) += A[m, :] · B[n .. n+cols, :]ᵀ: a vector of partial
  /// sums per column along K, folded at the end.
  void dotBlock(int64_t cols, Value m, Value n) {
    // A's row and B's rows as 1-D views: addressed by k alone.
    SmallVector<Value> rows, bRows;
    Value zero = idx(0), w = idx(W);
    for (int64_t c = 0; c < cols; ++c) {
      rows.push_back(add(n, idx(c)));
      bRows.push_back(rowView(B, rows.back(), zero, K));
    }
    Value aRow = rowView(A, m, zero, K);
    SmallVector<Value> init(cols, zeros());
    Value fullK = floorTo(K, W);
    auto step = [&](Value k, ValueRange acc, Value mask) {
      Value x = mask ? maskedLoad(aRow, ValueRange{k}, mask)
                     : vector::LoadOp::create(b, loc, vt, aRow, ValueRange{k})
                           .getResult();
      SmallVector<Value> next;
      for (int64_t c = 0; c < cols; ++c) {
        Value y = mask ? maskedLoad(bRows[c], ValueRange{k}, mask)
                       : vector::LoadOp::create(b, loc, vt, bRows[c],
                                                ValueRange{k})
                             .getResult();
        next.push_back(vector::FMAOp::create(b, loc, x, y, acc[c]));
      }
      return next;
    };
    SmallVector<Value> acc =
        loop(zero, fullK, w, init, [&](Value k, ValueRange a) {
          return step(k, a, Value());
        });
    // The K tail (0 or 1 step), masked.
    acc = loop(fullK, K, w, acc, [&](Value k, ValueRange a) {
      Value left = sub(K, k);
      Value mask = maskOf(left);
      return step(k, a, mask);
    });
    for (int64_t c = 0; c < cols; ++c) {
      Value sum = vector::ReductionOp::create(b, loc,
                                              vector::CombiningKind::ADD,
                                              acc[c]);
      Value old = memref::LoadOp::create(b, loc, C, ValueRange{m, rows[c]});
      Value total = arith::AddFOp::create(b, loc, old, sum);
      memref::StoreOp::create(b, loc, total, C, ValueRange{m, rows[c]});
    }
  }
};

} // namespace

bool mlir::attn::gemmKernelHandles(Operation *op) {
  auto mm = dyn_cast<linalg::MatmulOp>(op);
  if (!mm || !mm.hasPureBufferSemantics())
    return false;
  if (!linalg::MatmulOp::isDefaultIndexingMaps(mm.getIndexingMaps()) &&
      !isa<linalg::MatmulTransposeBOp>(op))
    return false;
  if (mm.getCast() != linalg::TypeFn::cast_signed)
    return false;
  for (Value v : op->getOperands())
    if (!isF32Buffer(v) || !innermostContiguous(v))
      return false;
  return true;
}

bool mlir::attn::gemmKernelSwaps(Operation *matmul, int64_t lanes) {
  return isa<linalg::MatmulTransposeBOp>(matmul) && lanes == 16;
}

void mlir::attn::emitGemmKernel(OpBuilder &b, Operation *matmul, int64_t lanes,
                                func::FuncOp generic, bool amx) {
  GemmEmitter e(b, cast<linalg::MatmulOp>(matmul), lanes);
  e.amx = amx && lanes == 16;
  e.emit(generic);
}
