//===- GemmSwapped.cpp - the GEMM kernel for 8 to 48 rows -----------------===//
//
// The operand-swapped kernel of GemmKernel.cpp (B [N, K], 8 to 48 rows of
// A, 16 lanes): C[m, n] as (B·Aᵀ)[n, m] with the rows of A in the lanes,
// B read in place; its pack and epilogue module-wide functions per vectors
// of rows. GemmKernel.cpp's header describes it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/GemmEmitter.h"

#include "mlir/Dialect/Func/Utils/Utils.h"

#include <numeric>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gemm;

//===--------------------------------------------------------------------===//
// Operand-swapped: B [N, K] with few rows of A (a mixture of experts gives
// each expert ~40): C[m, n] as (B·Aᵀ)[n, m], the rows of A in the lanes.
//===--------------------------------------------------------------------===//
void GemmEmitter::swappedRows(int64_t mvs) {
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

void GemmEmitter::swapped(int64_t mvs) {
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
    loop(n0, fullEnd, idx(nr),
         [&](Value n) { swappedTile(nr, mvs, at, n, accBuf, dynC, addTile); });
    loop(fullEnd, end, one,
         [&](Value n) { swappedTile(1, mvs, at, n, accBuf, dynC, addTile); });
  });
}

MemRefType GemmEmitter::dynamicMatrix() {
  int64_t dyn = ShapedType::kDynamic;
  auto layout = StridedLayoutAttr::get(b.getContext(), dyn, {dyn, 1});
  return MemRefType::get({dyn, dyn}, b.getF32Type(), layout);
}

func::FuncOp GemmEmitter::sharedFunction(
    StringRef name, FunctionType type,
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

func::FuncOp GemmEmitter::packFunction(int64_t mvs) {
  int64_t mp = mvs * W;
  auto atTy = MemRefType::get({ShapedType::kDynamic, mp}, b.getF32Type());
  auto type = b.getFunctionType({dynamicMatrix(), atTy}, {});
  return sharedFunction(("attn_gemm_swap_pack_" + llvm::Twine(mp)).str(), type,
                        [&](GemmEmitter &e, ValueRange args) {
                          e.A = args[0];
                          e.M = e.dim(e.A, 0);
                          e.K = e.dim(e.A, 1);
                          e.packAt(args[1], mvs);
                        });
}

func::FuncOp GemmEmitter::addTileFunction(int64_t mvs) {
  int64_t mp = mvs * W;
  auto accTy = MemRefType::get({W, mp}, b.getF32Type());
  Type index = b.getIndexType();
  auto type = b.getFunctionType({accTy, dynamicMatrix(), index, index}, {});
  return sharedFunction(("attn_gemm_swap_add_" + llvm::Twine(mp)).str(), type,
                        [&](GemmEmitter &e, ValueRange args) {
                          e.addTile(mvs, args[0], args[1], args[2], args[3]);
                        });
}

Value GemmEmitter::maxThreads() {
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  StringRef name = "omp_get_max_threads";
  // Checked here: lookupOrCreateFnDecl reports a mismatch as an error.
  if (Operation *sym = module.lookupSymbol(name)) {
    auto f = dyn_cast<func::FuncOp>(sym);
    if (!f ||
        f.getFunctionType() != b.getFunctionType(TypeRange{}, {b.getI32Type()}))
      return idx(1);
  }
  FailureOr<func::FuncOp> fn = func::lookupOrCreateFnDecl(
      b, module, name, TypeRange{}, nullptr, b.getI32Type());
  if (failed(fn))
    return idx(1);
  Value n = func::CallOp::create(b, loc, *fn, ValueRange{}).getResult(0);
  return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), n);
}

void GemmEmitter::packAt(Value at, int64_t mvs) {
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
            Value inA =
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, m, M);
            Value row = min(m, mLast);
            Value x = vector::LoadOp::create(b, loc, vt, A, ValueRange{row, k});
            return arith::SelectOp::create(b, loc, inA, x, zeros()).getResult();
          },
          at, k, idx(mb * W));
  });
  Value zf =
      arith::ConstantOp::create(b, loc, b.getF32Type(), b.getF32FloatAttr(0.0));
  loop(zero, idx(mp), one, [&](Value m) {
    Value inA = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, m, M);
    Value row = min(m, mLast);
    loop(kFull, K, one, [&](Value k) {
      Value x = memref::LoadOp::create(b, loc, A, ValueRange{row, k});
      Value y = arith::SelectOp::create(b, loc, inA, x, zf);
      memref::StoreOp::create(b, loc, y, at, ValueRange{k, m});
    });
  });
}

void GemmEmitter::swappedTile(int64_t nr, int64_t mvs, Value at, Value n0,
                              Value accBuf, Value dynC, func::FuncOp addTile) {
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
      av.push_back(vector::LoadOp::create(b, loc, vt, at, ValueRange{k, col}));
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
  func::CallOp::create(b, loc, addTile, ValueRange{accBuf, dynC, n0, idx(nr)});
}

void GemmEmitter::addTile(int64_t mvs, Value accBuf, Value c, Value n0,
                          Value nr) {
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
