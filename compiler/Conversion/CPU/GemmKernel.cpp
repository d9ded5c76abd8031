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
//   scf.parallel over groups of G = 3 panels of NC = NV·W columns of C (W
//   f32 lanes, NV = 4 vectors with AVX-512, 2 with AVX2/SSE):
//     for each K block of KC = 512:
//       [B [N, K]] pack each panel's block of B transposed into a [KC, NC]
//         scratch (W×W vector transposes for full blocks; 128 KiB with
//         AVX-512, read from L2), so that the inner loop loads NC
//         consecutive floats per k;
//       for each block of R = 6 rows of A (4 with AVX2/SSE), for each panel
//         of the group: R × NV accumulators loaded from C, per k NV loads
//         of B, R broadcasts of A (each row a 1-D view: addressed by k
//         alone; read from memory by the first panel, from L1 by the
//         others), R·NV FMAs, stored back (masked in the last panel);
//         leftover rows one by one. While block j runs, row j mod NC of
//         each panel's next K block of B is prefetched for the next pack.
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
// layers". With `amx`, B [N, K] GEMMs of 128 rows and 320 columns or more
// run on AMX tiles (GemmAmx.cpp).
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/GemmEmitter.h"

#include "mlir/Dialect/Func/Utils/Utils.h"

#include <numeric>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gemm;

namespace {

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

} // namespace

void GemmEmitter::emit(func::FuncOp generic) {
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
          for (auto [v, t] : llvm::zip_equal(args, generic.getArgumentTypes()))
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
// Panels: the packed, register-tiled product.
//===--------------------------------------------------------------------===//
void GemmEmitter::panels() {
  Value nc = idx(panel());
  Value one = idx(1);
  Value last = sub(N, one);
  Value count = arith::DivUIOp::create(b, loc, add(last, nc), nc);
  // Panels in groups of G per parallel item: each block of R rows of A
  // (R × kc floats, read from wherever A lies) is loaded into L1 once
  // and serves the G panels' products from there.
  Value groupSize = idx(kGroup);
  Value groupCount = arith::DivUIOp::create(
      b, loc, add(count, sub(groupSize, one)), groupSize);
  // With fewer than two groups per thread (N up to a few hundred), the
  // rows are split too, into `groups` ranges of whole blocks of R rows
  // (each packs its panels of B itself: B is small there); a GEMM of 64
  // columns ran on one thread.
  Value threads = maxThreads();
  Value want = add(threads, threads);
  Value wantUp = add(want, sub(groupCount, one));
  Value someCount = arith::MaxUIOp::create(b, loc, groupCount, one);
  Value byPanels = arith::DivUIOp::create(b, loc, wantUp, someCount);
  Value byRows = arith::DivUIOp::create(b, loc, M, idx(8 * R));
  Value most = arith::MaxUIOp::create(b, loc, byRows, one);
  Value groups = arith::MinUIOp::create(b, loc, byPanels, most);
  Value groupsUp = add(M, sub(groups, one));
  Value perGroup = arith::DivUIOp::create(b, loc, groupsUp, groups);
  Value rowsUp = add(perGroup, idx(R - 1));
  Value rowsPer = floorTo(rowsUp, R);
  Value items = mul(groupCount, groups);
  // With that few groups A's rows come from memory, once or twice each.
  Value fewGroups = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                          groupCount, want);
  parallel(items, [&](Value item) {
    Value pg = arith::DivUIOp::create(b, loc, item, groups);
    Value g = arith::RemUIOp::create(b, loc, item, groups);
    Value rowStart = min(mul(g, rowsPer), M);
    Value rowEnd = min(add(rowStart, rowsPer), M);
    Value p0 = mul(pg, groupSize);
    Value inGroup = min(sub(count, p0), groupSize);
    Value zero = idx(0), depth = idx(kDepth);
    Value packed;
    if (bTransposed) {
      auto t = MemRefType::get({kGroup * kDepth, panel()}, b.getF32Type());
      // On the stack, popped per item by attn-scope-loop-allocas (before
      // it, the scratch stayed per panel and 512 panels overflowed a
      // thread's 8 MiB; the heap block that replaced it was an allocation
      // per panel).
      packed = memref::AllocaOp::create(b, loc, t, b.getI64IntegerAttr(64));
    }
    // Panel j of the group: its first column, its columns' masks and its
    // block of the scratch.
    auto eachPanel = [&](function_ref<void(Value, Value, Value)> body) {
      loop(zero, inGroup, one, [&](Value j) {
        Value n0 = mul(add(p0, j), nc);
        Value view;
        if (bTransposed) {
          Value row = mul(j, depth);
          SmallVector<OpFoldResult> offsets = {row, b.getIndexAttr(0)};
          SmallVector<OpFoldResult> sizes = {b.getIndexAttr(kDepth),
                                             b.getIndexAttr(panel())};
          SmallVector<OpFoldResult> strides = {b.getIndexAttr(1),
                                               b.getIndexAttr(1)};
          view = memref::SubViewOp::create(b, loc, packed, offsets, sizes,
                                           strides);
        }
        body(n0, min(sub(N, n0), nc), view);
      });
    };
    auto masksOf = [&](Value cols) {
      SmallVector<Value> masks;
      for (int64_t v = 0; v < NV; ++v)
        masks.push_back(maskOf(sub(cols, idx(v * W))));
      return masks;
    };
    loop(zero, K, depth, [&](Value k0) {
      Value kRest = sub(K, k0);
      Value kc = min(kRest, depth);
      if (bTransposed)
        eachPanel([&](Value n0, Value cols, Value view) {
          pack(view, n0, cols, k0, kc);
        });
      Value span = sub(rowEnd, rowStart);
      Value fullRows = add(rowStart, floorTo(span, R));
      Value rowStep = idx(R);
      loop(rowStart, fullRows, rowStep, [&](Value m0) {
        auto ahead = scf::IfOp::create(b, loc, fewGroups, false);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&ahead.getThenRegion().front());
          prefetchRowsAhead(m0, k0, kc);
        }
        eachPanel([&](Value n0, Value cols, Value view) {
          if (bTransposed)
            prefetchNextBlock(m0, n0, k0);
          rowBlock(R, m0, n0, k0, kc, masksOf(cols), view);
        });
      });
      loop(fullRows, rowEnd, one, [&](Value m) {
        eachPanel([&](Value n0, Value cols, Value view) {
          rowBlock(1, m, n0, k0, kc, masksOf(cols), view);
        });
      });
    });
  });
}

void GemmEmitter::prefetchNextBlock(Value m0, Value n0, Value k0) {
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

void GemmEmitter::prefetchRowsAhead(Value m0, Value k0, Value kc) {
  Value lastRow = sub(M, idx(1));
  Value kEnd = add(k0, kc);
  for (int64_t r = 0; r < R; ++r) {
    Value ahead = add(m0, idx(kRowsAhead * R + r));
    Value row = min(ahead, lastRow);
    loop(k0, kEnd, idx(16), [&](Value k) {
      memref::PrefetchOp::create(b, loc, A, ValueRange{row, k},
                                 /*isWrite=*/false, /*localityHint=*/3,
                                 /*isDataCache=*/true);
    });
  }
}

void GemmEmitter::pack(Value packed, Value n0, Value cols, Value k0, Value kc) {
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
                  memref::PrefetchOp::create(b, loc, B, ValueRange{row, pfCol},
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

void GemmEmitter::rowBlock(int64_t rows, Value m0, Value n0, Value k0, Value kc,
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
  SmallVector<Value> out = loop(zero, kc, one, acc, [&](Value k, ValueRange a) {
    SmallVector<Value> bv;
    Value kk = add(k0, k);
    for (int64_t v = 0; v < NV; ++v)
      bv.push_back(bTransposed
                       ? vector::LoadOp::create(b, loc, vt, packed,
                                                ValueRange{k, idx(v * W)})
                             .getResult()
                       : maskedLoad(B, ValueRange{kk, colIx[v]}, masks[v]));
    SmallVector<Value> next;
    for (int64_t r = 0; r < rows; ++r) {
      Value x = broadcastAt(aRows[r], ValueRange{k});
      for (int64_t v = 0; v < NV; ++v)
        next.push_back(vector::FMAOp::create(b, loc, x, bv[v], a[r * NV + v]));
    }
    return next;
  });
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < NV; ++v)
      vector::MaskedStoreOp::create(b, loc, C, ValueRange{rowIx[r], colIx[v]},
                                    masks[v], out[r * NV + v]);
}

//===--------------------------------------------------------------------===//
// Dot products: B [N, K] with few rows (decode).
//===--------------------------------------------------------------------===//
void GemmEmitter::dotColumns() {
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

void GemmEmitter::dotBlock(int64_t cols, Value m, Value n) {
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
      Value y =
          mask ? maskedLoad(bRows[c], ValueRange{k}, mask)
               : vector::LoadOp::create(b, loc, vt, bRows[c], ValueRange{k})
                     .getResult();
      next.push_back(vector::FMAOp::create(b, loc, x, y, acc[c]));
    }
    return next;
  };
  SmallVector<Value> acc =
      loop(zero, fullK, w, init,
           [&](Value k, ValueRange a) { return step(k, a, Value()); });
  // The K tail (0 or 1 step), masked.
  acc = loop(fullK, K, w, acc, [&](Value k, ValueRange a) {
    Value left = sub(K, k);
    Value mask = maskOf(left);
    return step(k, a, mask);
  });
  for (int64_t c = 0; c < cols; ++c) {
    Value sum =
        vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, acc[c]);
    Value old = memref::LoadOp::create(b, loc, C, ValueRange{m, rows[c]});
    Value total = arith::AddFOp::create(b, loc, old, sum);
    memref::StoreOp::create(b, loc, total, C, ValueRange{m, rows[c]});
  }
}

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
