//===- MicroKernel.cpp - register-tiled CPU code for attn tiles -----------===//
//
// This file implements the code of the CPU micro-kernel: the buffer form of
// `attn.online_attention` (after bufferization) as vector code, emitted by
// attn-cpu-micro-kernel (MicroKernelPass.cpp) into each tile function.
// For each chunk of C = 4·W keys (W f32 lanes):
//
//   1. Kᵀ pack: the chunk's keys are transposed into a [d, C] scratch
//      (W×W vector transposes when the chunk is full and d % W == 0), so
//      that Q·Kᵀ needs no horizontal reduction; its V rows are copied
//      (widened from bf16/f16) into an f32 scratch [C, dv].
//   2. For each block of R query rows (R = 4 with 32 registers, 2 with 16;
//      leftover rows one at a time):
//      - S = Q·Kᵀ in R×4 vector accumulators: per d step, 4 loads of Kᵀ,
//        R broadcasts of q, 4R FMAs;
//      - the scores go to an [R, C] scratch, then a loop over the R rows
//        scales, softcaps and masks them, takes the row max, exp
//        (expNonPositive: a polynomial for arguments ≤ 0) and row sum;
//        the new max/sum are stored and P overwrites the scores (one
//        copy of the softmax code per tile, whatever R is: unrolled R
//        times it cost compile time, not speed);
//      - acc = acc·alpha + P·V in R×4 vector accumulators over dv, per key
//        4 loads of V, R broadcasts of p, 4R FMAs.
//
// At most 16 rows in the tile (decode: one row per head of the group) skip
// the pack: a block of R rows × W/R keys holds W accumulators of dot
// products along d, so each K vector loaded serves every row and K is read
// once, in address order; a shuffle tree (sumLanes) folds them into one
// vector of scores. While P·V runs over key n of the chunk, the K and V rows
// of key n of the next chunk are prefetched into L2 (decode reads K and V
// from memory once; without the prefetch the loads wait on DRAM).
// A paged tile (attn.online_attention with pages(...)) spans pages: per
// chunk, a table of the element offsets of its K and V rows in the page
// pools (this chunk's and the next chunk's, one division per chunk) stands
// in for the contiguous row index; the loops are otherwise the same.
//
// The scratch buffers are allocated once per iteration of the enclosing
// parallel loop (one query block, many tiles), so each thread has its own
// and no tile allocates.
// The query's leading dims (the heads of one GQA group) all use the same
// packed Kᵀ and the same V rows.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/LoopBuilder.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

bool hasF32Elements(Type t) {
  auto s = dyn_cast<ShapedType>(t);
  return s && s.getElementType().isF32();
}

/// Emits the micro-kernel for one op on its buffers.
struct Emitter {
  OpBuilder &b;
  Location loc;
  OnlineAttentionOp op;
  Value q = {}, k = {}, v = {}, acc = {}, max = {}, sum = {}; ///< memrefs
  /// Vectors of W keys per chunk of keys.
  static constexpr int64_t kChunkVectors = kMicroKernelChunkVectors;
  int64_t W = 16, R = 4, NV = kChunkVectors, CV = 4;
  int64_t d = 0, dv = 0, lead = 0;
  VectorType vt = {}, vi32 = {}, vmask = {};
  /// Scratch: [d, C] Kᵀ, [R, C] probabilities, [R] alphas, and [C, dv] f32
  /// for the chunk's V rows copied (widened from bf16/f16) once (prefill).
  Value Kt = {}, P = {}, A = {}, Vw = {};
  /// Where P · V reads the chunk's V rows: `v` itself (rows n0 + n), or
  /// the widened copy Vw (rows n) while the packed path runs.
  bool vWidened = false;
  /// Decode: the next chunk's first row and the tile's last row (where
  /// the prefetches stop), for prefetches of K and V rows.
  Value prefetchBase = {}, prefetchLast = {};
  /// A paged tile (`pages(...)`): K and V are one KV head's page pools,
  /// read as flat buffers at the element offsets of each key row that
  /// fillRowTables writes per chunk into kRows/vRows ([2C]: this chunk's
  /// rows, then the next chunk's, which the decode path prefetches).
  bool paged = false;
  Value kFlat = {}, vFlat = {}, kRows = {}, vRows = {};

  int64_t chunk() const { return NV * W; }
  /// Below this many rows per tile, Q·Kᵀ uses dot products, not the pack:
  /// up to 16, so that decode with a group of 16 query heads per KV head
  /// (the seed model's) streams K like the smaller groups (1.5x faster
  /// than the pack there: 38.4 -> 25.6 ms against 65,536 keys).
  static constexpr int64_t kDotRows = 17;
  Value idx(int64_t c) { return arith::ConstantIndexOp::create(b, loc, c); }
  Value f32(double c) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(c));
  }
  Value splatF(double c) {
    return arith::ConstantOp::create(
        b, loc, vt, DenseElementsAttr::get(vt, b.getF32FloatAttr(c)));
  }
  Value splat(Value scalar, VectorType t) {
    return vector::BroadcastOp::create(b, loc, t, scalar);
  }
  Value negInf() {
    return f32(-std::numeric_limits<double>::infinity());
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  /// The scores' max: no NaN to propagate (scores are finite or -inf for a
  /// masked key) and the sign of a zero max does not matter, so `nnan nsz`
  /// lets LLVM emit one vmaxps instead of IEEE maximum's NaN and ±0
  /// handling (six instructions per step: 17% of P1's time went there).
  arith::FastMathFlagsAttr noNaNs() {
    return arith::FastMathFlagsAttr::get(
        b.getContext(), arith::FastMathFlags::nnan | arith::FastMathFlags::nsz);
  }
  Value maxNoNaN(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y, noNaNs());
  }
  /// W f32 lanes of `mem` at `ix` (masked lanes 0): a bf16 or f16 buffer (a
  /// narrow K/V cache) is loaded as such and widened in registers (bf16: a
  /// shift; f16: vcvtph2ps), never copied to f32 memory.
  Value loadF32(Value mem, ValueRange ix, Value mask = {}) {
    Type elt = cast<MemRefType>(mem.getType()).getElementType();
    auto t = VectorType::get({W}, elt);
    Value x;
    if (mask) {
      Value pass = arith::ConstantOp::create(
          b, loc, t, DenseElementsAttr::get(t, b.getFloatAttr(elt, 0.0)));
      x = vector::MaskedLoadOp::create(b, loc, t, mem, ix, mask, pass);
    } else {
      x = vector::LoadOp::create(b, loc, t, mem, ix);
    }
    return elt.isF32() ? x : arith::ExtFOp::create(b, loc, vt, x);
  }
  Value toI32(Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
  }
  /// The tile's number of keys.
  Value numKeys() {
    return paged ? op.getNumKeys() : memref::DimOp::create(b, loc, k, 0);
  }
  /// Key row n0 + rel of K (`key`) or V: the buffer and what indexes it
  /// before the column (the row, or a paged tile's element offset).
  struct RowRef {
    Value mem, row;
    bool flat;
  };
  RowRef kvRow(bool key, Value n0, Value rel) {
    if (!paged)
      return {key ? k : v, add(n0, rel), false};
    Value off =
        memref::LoadOp::create(b, loc, key ? kRows : vRows, ValueRange{rel});
    return {key ? kFlat : vFlat, off, true};
  }
  SmallVector<Value> colOf(const RowRef &r, Value col) {
    if (r.flat)
      return {add(r.row, col)};
    return {r.row, col};
  }

  /// scf.for with loop-carried vectors; `body` returns the next values.
  SmallVector<Value>
  loop(Value lb, Value ub, Value step, ValueRange init,
       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    scf::ForOp f = buildForLoop(b, loc, lb, ub, step, init, body);
    return SmallVector<Value>(f.getResults());
  }
  void loop(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    buildForLoop(b, loc, lb, ub, step, body);
  }

  /// Transposes the chunk's keys k[n0 .. n0+nc) into Kt[d, C].
  void packKeys(Value n0, Value nc) {
    Value zero = idx(0), one = idx(1), C = idx(chunk());
    auto scalarPack = [&]() {
      loop(zero, nc, one, [&](Value j) {
        RowRef row = kvRow(/*key=*/true, n0, j);
        loop(zero, idx(d), one, [&](Value kk) {
          Value x = memref::LoadOp::create(b, loc, row.mem, colOf(row, kk));
          if (!x.getType().isF32())
            x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
          memref::StoreOp::create(b, loc, x, Kt, ValueRange{kk, j});
        });
      });
    };
    if (d % W != 0) {
      scalarPack();
      return;
    }
    Value full =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, nc, C);
    auto ifOp = scf::IfOp::create(b, loc, full, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      auto square = VectorType::get({W, W}, b.getF32Type());
      for (int64_t j0 = 0; j0 < chunk(); j0 += W) {
        Value dEnd = idx(d), wStep = idx(W);
        loop(zero, dEnd, wStep, [&](Value k0) {
          storeTransposedBlock(
              b, loc, square,
              [&](int64_t i) {
                RowRef row = kvRow(/*key=*/true, n0, idx(j0 + i));
                return loadF32(row.mem, colOf(row, k0));
              },
              Kt, k0, idx(j0));
        });
      }
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      scalarPack();
    }
  }
  FloatAttr f32Attr(double c) { return b.getF32FloatAttr(c); }

  /// Copies the chunk's V rows v[n0 .. n0+nc) into Vw[0 .. nc) (widening
  /// bf16/f16), once per chunk: every block of rows of the tile (R rows of
  /// each head of the group) then reads f32 from the same hot 64-byte
  /// aligned scratch. A bf16 V converted at each use cost prefill 13% (P1);
  /// an f32 V read in place rather than from the copy, 5-12% (P1 55% ->
  /// 63%, P4 59% -> 63% of the FMA peak on a Zen 5).
  void widenValues(Value n0, Value nc) {
    Value zero = idx(0), one = idx(1);
    loop(zero, nc, one, [&](Value j) {
      RowRef row = kvRow(/*key=*/false, n0, j);
      for (int64_t c = 0; c < dv; c += W) {
        Value mask = dv - c >= W ? Value()
                                 : vector::ConstantMaskOp::create(
                                       b, loc, vmask,
                                       ArrayRef<int64_t>{dv - c});
        Value x = loadF32(row.mem, colOf(row, idx(c)), mask);
        if (mask)
          vector::MaskedStoreOp::create(b, loc, Vw, ValueRange{j, idx(c)},
                                        mask, x);
        else
          vector::StoreOp::create(b, loc, x, Vw, ValueRange{j, idx(c)});
      }
    });
  }

  /// Index list [lead..., m, extra...] of a row into a buffer.
  static SmallVector<Value> at(ArrayRef<Value> row,
                               std::initializer_list<Value> extra = {}) {
    SmallVector<Value> r(row.begin(), row.end());
    r.append(extra.begin(), extra.end());
    return r;
  }

  /// Row `t` of the flattened [lead..., M] rows as [lead..., m].
  SmallVector<Value> delinearize(Value t, Value M, ArrayRef<Value> leadUbs) {
    SmallVector<Value> row(lead + 1);
    row[lead] = arith::RemSIOp::create(b, loc, t, M);
    Value rest = arith::DivSIOp::create(b, loc, t, M);
    for (int64_t i = lead - 1; i >= 0; --i) {
      row[i] = i == 0 ? rest : arith::RemSIOp::create(b, loc, rest, leadUbs[i]);
      if (i > 0)
        rest = arith::DivSIOp::create(b, loc, rest, leadUbs[i]);
    }
    return row;
  }

  /// The visible-key mask of row position `qPos` (key coordinates) for the
  /// key vector starting at chunk lane `j*W`; null when every lane is
  /// visible by construction (never: padding lanes are always checked).
  Value visible(Value qPos, Value kvBase, Value nc, int64_t j) {
    SmallVector<int32_t> lanes;
    for (int64_t i = 0; i < W; ++i)
      lanes.push_back(int32_t(j * W + i));
    Value laneJ = arith::ConstantOp::create(
        b, loc, vi32, DenseElementsAttr::get(vi32, ArrayRef<int32_t>(lanes)));
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, laneJ,
                                     splat(toI32(nc), vi32));
    Value kPos = arith::AddIOp::create(b, loc, laneJ, splat(kvBase, vi32));
    auto both = [&](Value c) { ok = arith::AndIOp::create(b, loc, ok, c); };
    if (op.getMask() != MaskKind::none)
      both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, kPos,
                                 splat(qPos, vi32)));
    if (op.getMask() == MaskKind::sliding_window) {
      Value lowest = arith::SubIOp::create(
          b, loc, qPos,
          arith::ConstantOp::create(b, loc, b.getI32Type(),
                                    b.getI32IntegerAttr(*op.getWindow())));
      both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, kPos,
                                 splat(lowest, vi32)));
    }
    return ok;
  }

  /// The online-softmax update of the block of `rows` query rows from
  /// flattened row `t0` (rows of one block may belong to different heads of
  /// the group: in decode every head has a single row) against the chunk:
  /// the block's scores into the P scratch (from the packed Kᵀ, or with
  /// `dot` from K itself: dotScores), then each row's softmax in a loop
  /// (one copy of its code whatever R is), alpha through scratch, then
  /// P · V for the block.
  void rowBlock(bool dot, Value t0, int64_t rows, Value M,
                ArrayRef<Value> leadUbs, Value n0, Value nc) {
    SmallVector<SmallVector<Value>> rowAt;
    for (int64_t r = 0; r < rows; ++r)
      rowAt.push_back(delinearize(add(t0, idx(r)), M, leadUbs));
    if (dot) {
      dotScores(rowAt, n0, nc);
    } else {
      SmallVector<Value> s = packedScores(rowAt);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < NV; ++j)
          vector::StoreOp::create(b, loc, s[r * NV + j], P,
                                  ValueRange{idx(r), idx(j * W)});
    }
    Value rowBegin = idx(0), rowEnd = idx(rows), rowStep = idx(1);
    // A chunk of at most W keys (a short key range, or a range's tail) has
    // one vector of scores per row: its softmax skips the other NV - 1
    // (whose lanes the mask would drop).
    Value oneVector = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                            nc, idx(W));
    loop(rowBegin, rowEnd, rowStep, [&](Value r) {
      SmallVector<Value> row = delinearize(add(t0, r), M, leadUbs);
      auto softmax = [&](int64_t vectors) {
        SmallVector<Value> scores;
        for (int64_t j = 0; j < vectors; ++j)
          scores.push_back(vector::LoadOp::create(b, loc, vt, P,
                                                  ValueRange{r, idx(j * W)}));
        Value alpha = softmaxRow(row, scores, r, n0, nc);
        scf::YieldOp::create(b, loc, alpha);
      };
      auto ifOp = scf::IfOp::create(b, loc, TypeRange{b.getF32Type()},
                                    oneVector, /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        softmax(1);
        b.setInsertionPointToStart(&ifOp.getElseRegion().front());
        softmax(NV);
      }
      memref::StoreOp::create(b, loc, ifOp.getResult(0), A, ValueRange{r});
    });
    SmallVector<Value> alphas;
    for (int64_t r = 0; r < rows; ++r)
      alphas.push_back(memref::LoadOp::create(b, loc, A, ValueRange{idx(r)}));
    pvBlock(rowAt, alphas, n0, nc);
  }

  /// S = Q · Kᵀ from the packed chunk in rows × NV registers: per d step NV
  /// loads of Kᵀ, one broadcast of q per row, rows × NV FMAs.
  SmallVector<Value> packedScores(ArrayRef<SmallVector<Value>> rowAt) {
    int64_t rows = rowAt.size();
    Value zero = idx(0), one = idx(1);
    SmallVector<Value> init(rows * NV, splatF(0.0));
    return loop(
        zero, idx(d), one, init, [&](Value kk, ValueRange a) {
          SmallVector<Value> kt, next(a.begin(), a.end());
          for (int64_t j = 0; j < NV; ++j)
            kt.push_back(vector::LoadOp::create(b, loc, vt, Kt,
                                                ValueRange{kk, idx(j * W)}));
          for (int64_t r = 0; r < rows; ++r) {
            Value x =
                memref::LoadOp::create(b, loc, q, at(rowAt[r], {kk}));
            Value xb = splat(x, vt);
            for (int64_t j = 0; j < NV; ++j)
              next[r * NV + j] =
                  vector::FMAOp::create(b, loc, xb, kt[j], a[r * NV + j]);
          }
          return next;
        });
  }

  /// Sums each of the W vectors `v` across its lanes: the result's lane i is
  /// the sum of v[i]. A shuffle tree (log2 W levels of two shuffles and an
  /// add per output) instead of W horizontal reductions.
  Value sumLanes(SmallVector<Value> v) {
    // labels[x][l]: which input lane l of vector x partially sums.
    SmallVector<SmallVector<int64_t>> labels;
    for (int64_t i = 0; i < W; ++i)
      labels.push_back(SmallVector<int64_t>(W, i));
    while (v.size() > 1) {
      SmallVector<Value> next;
      SmallVector<SmallVector<int64_t>> nextLabels;
      for (size_t x = 0; x + 1 < v.size(); x += 2) {
        // Lanes of each label in order of appearance, in A then in B.
        SmallVector<int64_t> lo, hi, lab;
        for (int side = 0; side < 2; ++side) {
          const SmallVector<int64_t> &L = labels[x + side];
          SmallVector<int64_t> seen;
          for (int64_t l = 0; l < W; ++l)
            if (!llvm::is_contained(seen, L[l]))
              seen.push_back(L[l]);
          for (int64_t label : seen) {
            SmallVector<int64_t> lanes;
            for (int64_t l = 0; l < W; ++l)
              if (L[l] == label)
                lanes.push_back(l + side * W);
            size_t half = lanes.size() / 2;
            for (size_t i = 0; i < half; ++i) {
              lo.push_back(lanes[i]);
              hi.push_back(lanes[half + i]);
              lab.push_back(label);
            }
          }
        }
        Value a = vector::ShuffleOp::create(b, loc, v[x], v[x + 1], lo);
        Value c = vector::ShuffleOp::create(b, loc, v[x], v[x + 1], hi);
        next.push_back(arith::AddFOp::create(b, loc, a, c));
        nextLabels.push_back(lab);
      }
      v = next;
      labels = nextLabels;
    }
    SmallVector<int64_t> order(W);
    for (int64_t l = 0; l < W; ++l)
      order[labels[0][l]] = l;
    return vector::ShuffleOp::create(b, loc, v[0], v[0], order);
  }

  /// S = Q · Kᵀ without the pack, for few rows (decode), into P's rows.
  /// A tile is the block's rows × KR = W / rows keys: W accumulators, each
  /// a dot product along d, so that every K vector loaded serves all the
  /// rows (the heads of the GQA group) and each key row is read once, in
  /// address order (the hardware prefetcher follows). sumLanes folds the
  /// W accumulators into one vector, lane r·KR + i the score of row r and
  /// key i. In a partial chunk, keys past its end read the last key
  /// instead and the padding mask drops them (one code for full and
  /// partial chunks: a copy without the clamp for full chunks was no faster
  /// and made the tile a third larger). The loop stops at the chunk's last
  /// block of keys: a short tile (a sequence's last few keys) does
  /// not compute the chunk's empty lanes, whose scores the padding mask
  /// drops whatever the scratch holds.
  void dotScores(ArrayRef<SmallVector<Value>> rowAt, Value n0, Value nc) {
    int64_t rows = rowAt.size(), KR = W / rows;
    Value zero = idx(0);
    Value keys = numKeys();
    Value last = arith::SubIOp::create(b, loc, keys, idx(1));
    // A loop, not unrolled: LLVM would interleave the tiles and spill.
    Value keyStep = idx(KR);
    Value chunkEnd = arith::MulIOp::create(
        b, loc, arith::CeilDivSIOp::create(b, loc, nc, keyStep), keyStep);
    loop(zero, chunkEnd, keyStep, [&](Value j0) {
      Value base = add(n0, j0);
      if (prefetchBase)
        for (int64_t i = 0; i < KR; ++i)
          prefetchRow(/*key=*/true, add(j0, idx(i)), idx(0), d);
      SmallVector<RowRef> keyRows;
      for (int64_t i = 0; i < KR; ++i) {
        Value r = arith::MinSIOp::create(b, loc, add(base, idx(i)), last);
        keyRows.push_back(
            kvRow(/*key=*/true, n0, arith::SubIOp::create(b, loc, r, n0)));
      }
      SmallVector<Value> init(W, splatF(0.0));
      Value dEnd = idx(d), wStep = idx(W);
      SmallVector<Value> part = loop(
          zero, dEnd, wStep, init, [&](Value kb, ValueRange a) {
            SmallVector<Value> kv, next(a.begin(), a.end());
            for (int64_t i = 0; i < KR; ++i)
              kv.push_back(loadF32(keyRows[i].mem, colOf(keyRows[i], kb)));
            for (int64_t r = 0; r < rows; ++r) {
              Value qv =
                  vector::LoadOp::create(b, loc, vt, q, at(rowAt[r], {kb}));
              for (int64_t i = 0; i < KR; ++i)
                next[r * KR + i] =
                    vector::FMAOp::create(b, loc, kv[i], qv, a[r * KR + i]);
            }
            return next;
          });
      Value sums = sumLanes(part);
      for (int64_t r = 0; r < rows; ++r) {
        Value piece = vector::ExtractStridedSliceOp::create(
            b, loc, sums, ArrayRef<int64_t>{r * KR}, ArrayRef<int64_t>{KR},
            ArrayRef<int64_t>{1});
        vector::StoreOp::create(b, loc, piece, P, ValueRange{idx(r), j0});
      }
    });
  }

  /// e^t for the softmax's arguments, t ≤ 0 or -inf (a score minus its
  /// row's max, an old max minus the new), vector or scalar f32: n =
  /// round(t·log2 e), r = t - n·ln 2 in [-ln2/2, ln2/2], e^r by its Taylor
  /// polynomial of degree 6 (relative error below 1.3e-7 there), times 2^n.
  /// With 16 lanes (AVX-512) 2^n is applied by vscalefps, t clamped at
  /// -150 first (scalef then underflows to exactly 0); otherwise 2^n is
  /// built in the exponent bits, t clamped at -88, where n = -127 gives
  /// the bits of +0.0 (values below e^-87.3, denormals, flush to 0: an
  /// absolute error under 1e-38 next to the row's largest term, e^0 = 1).
  /// Either way e^-inf is exactly 0 (a masked key, a row with no visible
  /// key so far). math.exp's polynomial approximation handles any t
  /// (over- and underflow clamps, a second range reduction): 21 vector
  /// instructions against 11 (AVX-512) or 14 here, per vector of keys of
  /// every row.
  Value expNonPositive(Value t) {
    Type ty = t.getType();
    auto vty = dyn_cast<VectorType>(ty);
    bool scalef = vty && vty.getNumElements() == 16;
    auto cst = [&](double c) -> Value {
      Value s = f32(c);
      return vty ? splat(s, vty) : s;
    };
    auto fma = [&](Value x, Value y, Value z) -> Value {
      return vty ? vector::FMAOp::create(b, loc, x, y, z).getResult()
                 : math::FmaOp::create(b, loc, x, y, z).getResult();
    };
    t = maxNoNaN(t, cst(scalef ? -150.0 : -88.0));
    Value n = math::RoundEvenOp::create(
        b, loc, arith::MulFOp::create(b, loc, t, cst(M_LOG2E)));
    Value r = fma(n, cst(-M_LN2), t);
    Value p = cst(1.0 / 720);
    for (double c : {1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0})
      p = fma(p, r, cst(c));
    if (scalef) {
      // p · 2^n, all lanes. LLVM 22 passes the op's operands to
      // llvm.x86.avx512.mask.scalef.ps.512(a, b, passthru, mask, rounding)
      // in their order (src, a, b, ...): src is the value scaled, a the
      // exponents, b the pass-through of masked-off lanes (none here).
      Value all = arith::ConstantOp::create(b, loc, b.getI16Type(),
                                            b.getI16IntegerAttr(-1));
      Value curDirection = arith::ConstantOp::create(
          b, loc, b.getI32Type(), b.getI32IntegerAttr(4));
      return x86vector::MaskScaleFOp::create(b, loc, vty, p, n, p, all,
                                             curDirection);
    }
    Type i32 = b.getI32Type();
    Type ity = vty ? Type(VectorType::get(vty.getShape(), i32)) : i32;
    auto icst = [&](int32_t c) -> Value {
      Value s = arith::ConstantOp::create(b, loc, i32,
                                          b.getI32IntegerAttr(c));
      return vty ? splat(s, cast<VectorType>(ity)) : s;
    };
    // One op per statement: argument order would depend on the compiler.
    Value ni = arith::FPToSIOp::create(b, loc, ity, n);
    Value bias = icst(127);
    Value biased = arith::AddIOp::create(b, loc, ni, bias);
    Value shift = icst(23);
    Value bits = arith::ShLIOp::create(b, loc, biased, shift);
    Value scale = arith::BitcastOp::create(b, loc, ty, bits);
    return arith::MulFOp::create(b, loc, p, scale);
  }

  /// One row's scores (its vectors: NV, or 1 for a short chunk): scale,
  /// softcap, mask; the new max and sum are stored, P goes to scratch row
  /// `pRow`; returns alpha, the rescaling of the row's old accumulator.
  Value softmaxRow(ArrayRef<Value> row, ArrayRef<Value> scores, Value pRow,
                   Value n0, Value nc) {
    SmallVector<Value> s(scores.begin(), scores.end());
    Value scale = splatF(op.getScale().convertToDouble());
    Value kvBase = toI32(add(op.getKvPos(), n0));
    {
      Value qPos = toI32(add(op.getQPos(), row.back()));
      Value rowMax;
      for (int64_t j = 0; j < int64_t(s.size()); ++j) {
        Value &x = s[j];
        x = arith::MulFOp::create(b, loc, x, scale);
        if (std::optional<APFloat> cap = op.getSoftcap()) {
          Value c = splatF(cap->convertToDouble());
          Value t = math::TanhOp::create(
              b, loc, arith::DivFOp::create(b, loc, x, c));
          x = arith::MulFOp::create(b, loc, t, c);
        }
        Value seen = visible(qPos, kvBase, nc, j);
        Value hidden = splat(negInf(), vt);
        x = arith::SelectOp::create(b, loc, seen, x, hidden);
        rowMax = rowMax ? maxNoNaN(rowMax, x) : x;
      }
      Value mx = vector::ReductionOp::create(
          b, loc, vector::CombiningKind::MAXIMUMF, rowMax, Value(),
          noNaNs().getValue());
      SmallVector<Value> ri = at(row);
      Value mOld = memref::LoadOp::create(b, loc, max, ri);
      Value mNew = maxNoNaN(mOld, mx);
      // A row with no visible key so far shifts by 0: exp(-inf) = 0.
      Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                         mNew, negInf());
      Value shift = arith::SelectOp::create(b, loc, none, f32(0.0), mNew);
      Value shiftV = splat(shift, vt);
      Value rowSum;
      for (int64_t j = 0; j < int64_t(s.size()); ++j) {
        Value p =
            expNonPositive(arith::SubFOp::create(b, loc, s[j], shiftV));
        vector::StoreOp::create(b, loc, p, P, ValueRange{pRow, idx(j * W)});
        rowSum = rowSum ? arith::AddFOp::create(b, loc, rowSum, p) : p;
      }
      Value rs = vector::ReductionOp::create(b, loc,
                                             vector::CombiningKind::ADD, rowSum);
      Value alpha =
          expNonPositive(arith::SubFOp::create(b, loc, mOld, shift));
      Value lOld = memref::LoadOp::create(b, loc, sum, ri);
      Value lNew = arith::AddFOp::create(
          b, loc, arith::MulFOp::create(b, loc, lOld, alpha), rs);
      memref::StoreOp::create(b, loc, lNew, sum, ri);
      memref::StoreOp::create(b, loc, mNew, max, ri);
      return alpha;
    }
  }

  /// acc = acc · alpha + P · V for the rows `rowAt` (P in scratch rows
  /// 0..rows), CV vectors of dv at a time in rows × CV registers: a loop
  /// over the groups of CV full vectors (one copy of the code whatever dv
  /// is), then the rest of dv (fewer vectors, the last one masked when W
  /// does not divide dv).
  void pvBlock(ArrayRef<SmallVector<Value>> rowAt, ArrayRef<Value> alphas,
               Value n0, Value nc) {
    int64_t groups = dv / (CV * W);
    if (groups == 1) {
      pvGroup(rowAt, alphas, n0, nc, idx(0), SmallVector<Value>(CV));
    } else if (groups > 1) {
      Value begin = idx(0), end = idx(groups * CV * W), step = idx(CV * W);
      loop(begin, end, step, [&](Value col) {
        pvGroup(rowAt, alphas, n0, nc, col, SmallVector<Value>(CV));
      });
    }
    SmallVector<Value> masks;
    for (int64_t c = groups * CV * W; c < dv; c += W)
      masks.push_back(dv - c >= W ? Value()
                                  : vector::ConstantMaskOp::create(
                                        b, loc, vmask,
                                        ArrayRef<int64_t>{dv - c}));
    if (!masks.empty())
      pvGroup(rowAt, alphas, n0, nc, idx(groups * CV * W), masks);
  }

  /// pvBlock on the masks.size() vectors of dv from column `col`; a null
  /// mask is a full vector. In decode, the same columns of the next chunk's
  /// V rows are prefetched while this chunk's run.
  void pvGroup(ArrayRef<SmallVector<Value>> rowAt, ArrayRef<Value> alphas,
               Value n0, Value nc, Value col, ArrayRef<Value> masks) {
    int64_t rows = rowAt.size(), cw = masks.size();
    Value zero = idx(0), one = idx(1);
    SmallVector<Value> cols;
    for (int64_t c = 0; c < cw; ++c)
      cols.push_back(add(col, idx(c * W)));
    auto load = [&](Value mem, ValueRange ix, int64_t c) -> Value {
      return loadF32(mem, ix, masks[c]);
    };
    SmallVector<Value> a;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cw; ++c) {
        Value x = load(acc, at(rowAt[r], {cols[c]}), c);
        a.push_back(arith::MulFOp::create(b, loc, x, splat(alphas[r], vt)));
      }
    // The group's columns of a V row, within dv.
    int64_t width = masks.back() ? (cw - 1) * W + (dv % W) : cw * W;
    a = loop(zero, nc, one, a, [&](Value n, ValueRange cur) {
      if (prefetchBase)
        prefetchRow(/*key=*/false, n, col, width);
      SmallVector<Value> vv, next(cur.begin(), cur.end());
      RowRef row = vWidened ? RowRef{Vw, n, false} : kvRow(false, n0, n);
      for (int64_t c = 0; c < cw; ++c)
        vv.push_back(load(row.mem, colOf(row, cols[c]), c));
      for (int64_t r = 0; r < rows; ++r) {
        Value p = memref::LoadOp::create(b, loc, P, ValueRange{idx(r), n});
        Value pb = splat(p, vt);
        for (int64_t c = 0; c < cw; ++c)
          next[r * cw + c] =
              vector::FMAOp::create(b, loc, pb, vv[c], cur[r * cw + c]);
      }
      return next;
    });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cw; ++c) {
        SmallVector<Value> ix = at(rowAt[r], {cols[c]});
        if (masks[c])
          vector::MaskedStoreOp::create(b, loc, acc, ix, masks[c],
                                        a[r * cw + c]);
        else
          vector::StoreOp::create(b, loc, a[r * cw + c], acc, ix);
      }
  }

  /// Decode streams K and V from memory once: while P · V runs over key n
  /// of this chunk, key n of the next chunk (the 64-byte lines of columns
  /// [col, col + width) of its K or V row) is prefetched to L2, so the
  /// loads overlap the arithmetic.
  /// A paged tile's next chunk is rows [C, 2C) of its row tables.
  void prefetchRow(bool key, Value n, Value col, int64_t width) {
    RowRef row =
        paged ? RowRef{key ? kFlat : vFlat,
                       memref::LoadOp::create(b, loc, key ? kRows : vRows,
                                              ValueRange{add(idx(chunk()), n)}),
                       true}
              : RowRef{key ? k : v,
                       arith::MinSIOp::create(b, loc, add(prefetchBase, n),
                                              prefetchLast),
                       false};
    int64_t perLine = 512 / cast<MemRefType>(row.mem.getType())
                                .getElementType()
                                .getIntOrFloatBitWidth(); // 64-byte lines
    for (int64_t c = 0; c < width; c += perLine)
      memref::PrefetchOp::create(b, loc, row.mem,
                                 colOf(row, add(col, idx(c))),
                                 /*isWrite=*/false, /*localityHint=*/2,
                                 /*isDataCache=*/true);
  }

  /// A pool [num_pages, P, d] (strided) as a flat buffer of its elements,
  /// with its offset and page and row strides in elements.
  struct FlatPool {
    Value mem, offset, pageStride, rowStride;
  };
  FlatPool flatten(Value pool) {
    auto md = memref::ExtractStridedMetadataOp::create(b, loc, pool);
    Type elt = cast<MemRefType>(pool.getType()).getElementType();
    Value extent = add(md.getOffset(),
                       arith::MulIOp::create(b, loc, md.getSizes()[0],
                                             md.getStrides()[0]));
    Value flat = memref::ReinterpretCastOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, elt),
        md.getBaseBuffer(), OpFoldResult(b.getIndexAttr(0)),
        ArrayRef<OpFoldResult>{extent}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    return {flat, md.getOffset(), md.getStrides()[0], md.getStrides()[1]};
  }
  FlatPool kPool = {}, vPool = {};
  Value pageSize = {};
  void flattenPools() {
    kPool = flatten(k);
    vPool = flatten(v);
    kFlat = kPool.mem;
    vFlat = vPool.mem;
    pageSize = memref::DimOp::create(b, loc, k, 1);
  }

  /// kRows/vRows[j] = the element offset of key row n0 + j (j < 2C: this
  /// chunk and the next) in kFlat/vFlat: key n is row (kv_pos + n) % P of
  /// page pages[(kv_pos + n) / P - kv_pos / P]; rows past the pages listed
  /// (only ever prefetched or masked) read the last page's. One iteration
  /// per page touched, its rows an arithmetic sequence (a division per
  /// chunk, not per row).
  void fillRowTables(Value n0) {
    auto mul = [&](Value x, Value y) {
      return arith::MulIOp::create(b, loc, x, y).getResult();
    };
    auto sub = [&](Value x, Value y) {
      return arith::SubIOp::create(b, loc, x, y).getResult();
    };
    auto minI = [&](Value x, Value y) {
      return arith::MinSIOp::create(b, loc, x, y).getResult();
    };
    Value pos = add(arith::RemSIOp::create(b, loc, op.getKvPos(), pageSize),
                    n0);
    Value slot0 = arith::DivSIOp::create(b, loc, pos, pageSize);
    Value row0 = arith::RemSIOp::create(b, loc, pos, pageSize);
    Value pages = op.getPages();
    Value numPages = memref::DimOp::create(b, loc, pages, 0);
    Value lastSlot = sub(numPages, idx(1));
    Value zero = idx(0), one = idx(1), end = idx(2 * chunk());
    // Table entry j of page s (from slot0) is row j - (s·P - row0) of it.
    Value spans = arith::CeilDivSIOp::create(b, loc, add(row0, end), pageSize);
    loop(zero, spans, one, [&](Value s) {
      Value first = sub(mul(s, pageSize), row0); // entry of the page's row 0
      Value jb = arith::MaxSIOp::create(b, loc, first, zero);
      Value je = minI(add(first, pageSize), end);
      Value page = memref::LoadOp::create(
          b, loc, pages, ValueRange{minI(add(slot0, s), lastSlot)});
      if (!page.getType().isIndex())
        page = arith::IndexCastOp::create(b, loc, b.getIndexType(), page);
      Value rowB = sub(jb, first);
      auto baseOf = [&](const FlatPool &p) {
        Value pageOff = mul(page, p.pageStride);
        Value rowOff = mul(rowB, p.rowStride);
        return add(p.offset, add(pageOff, rowOff));
      };
      Value kb = baseOf(kPool), vb = baseOf(vPool);
      loop(jb, je, one, [&](Value j) {
        Value i = sub(j, jb);
        memref::StoreOp::create(b, loc, add(kb, mul(i, kPool.rowStride)),
                                kRows, ValueRange{j});
        memref::StoreOp::create(b, loc, add(vb, mul(i, vPool.rowStride)),
                                vRows, ValueRange{j});
      });
    });
  }

  /// The tile's code, at the builder's insertion point; Kt, P and A set.
  void emit() {
    vt = VectorType::get({W}, b.getF32Type());
    vi32 = VectorType::get({W}, b.getI32Type());
    vmask = VectorType::get({W}, b.getI1Type());
    Value zero = idx(0), one = idx(1);
    if (paged)
      flattenPools();
    Value N = numKeys();
    Value M = memref::DimOp::create(b, loc, q, lead);
    SmallVector<Value> leadUbs;
    for (int64_t i = 0; i < lead; ++i)
      leadUbs.push_back(memref::DimOp::create(b, loc, q, i));
    // The group's heads and rows flattened: a register block of R rows may
    // span heads (decode has one row per head).
    Value T = M;
    for (Value ub : leadUbs)
      T = arith::MulIOp::create(b, loc, T, ub);
    Value tFull = arith::SubIOp::create(
        b, loc, T, arith::RemSIOp::create(b, loc, T, idx(R)));
    Value C = idx(chunk());
    loop(zero, N, C, [&](Value n0) {
      Value nc = arith::MinSIOp::create(
          b, loc, arith::SubIOp::create(b, loc, N, n0), C);
      if (paged)
        fillRowTables(n0);
      auto rowsOf = [&](bool dot) {
        auto block = [&](Value t0, int64_t rows) {
          rowBlock(dot, t0, rows, M, leadUbs, n0, nc);
        };
        loop(zero, tFull, idx(R), [&](Value t0) { block(t0, R); });
        loop(tFull, T, one, [&](Value t) { block(t, 1); });
      };
      auto packed = [&]() {
        packKeys(n0, nc);
        widenValues(n0, nc);
        vWidened = true;
        rowsOf(/*dot=*/false);
        vWidened = false;
      };
      if (d % W != 0) {
        packed();
        return;
      }
      // Few rows (decode): the pack costs more than it saves.
      Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, T,
                                        idx(kDotRows));
      auto ifOp = scf::IfOp::create(b, loc, few, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      prefetchBase = add(n0, C);
      prefetchLast = arith::SubIOp::create(b, loc, N, one);
      rowsOf(/*dot=*/true);
      prefetchBase = prefetchLast = Value();
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      packed();
    });
  }
};

} // namespace

SmallVector<Value>
mlir::attn::allocateMicroKernelScratch(OpBuilder &b, Location loc,
                                       OnlineAttentionOp tile, int64_t lanes) {
  IntegerAttr align = b.getI64IntegerAttr(64);
  Type f32 = b.getF32Type();
  int64_t d = cast<ShapedType>(tile.getQuery().getType()).getShape().back();
  auto vTy = cast<ShapedType>(tile.getValue().getType());
  int64_t chunk = Emitter::kChunkVectors * lanes, rows = microKernelRows(lanes);
  SmallVector<Value> scratch = {
      memref::AllocOp::create(b, loc, MemRefType::get({d, chunk}, f32), align),
      memref::AllocOp::create(b, loc, MemRefType::get({rows, chunk}, f32),
                              align),
      memref::AllocOp::create(b, loc, MemRefType::get({rows}, f32), align)};
  scratch.push_back(memref::AllocOp::create(
      b, loc, MemRefType::get({chunk, vTy.getShape().back()}, f32), align));
  // A paged tile's row tables (this chunk's and the next chunk's rows).
  if (tile.isPaged())
    for (int i = 0; i < 2; ++i)
      scratch.push_back(memref::AllocOp::create(
          b, loc, MemRefType::get({2 * chunk}, b.getIndexType()), align));
  return scratch;
}

void mlir::attn::emitMicroKernel(OpBuilder &b, OnlineAttentionOp tile,
                                 ValueRange scratch, int64_t lanes) {
  Emitter e{b, tile.getLoc(), tile};
  e.q = tile.getQuery();
  e.k = tile.getKey();
  e.v = tile.getValue();
  e.acc = tile.getAcc();
  e.max = tile.getMax();
  e.sum = tile.getSum();
  e.W = lanes;
  e.R = microKernelRows(lanes);
  auto qt = cast<ShapedType>(tile.getQuery().getType());
  e.lead = qt.getRank() - 2;
  e.d = qt.getShape().back();
  e.dv = cast<ShapedType>(tile.getValue().getType()).getShape().back();
  e.Kt = scratch[0];
  e.P = scratch[1];
  e.A = scratch[2];
  e.Vw = scratch[3];
  if (tile.isPaged()) {
    e.paged = true;
    e.kRows = scratch[4];
    e.vRows = scratch[5];
  }
  e.emit();
}

bool mlir::attn::microKernelHandles(Operation *op) {
  auto oa = dyn_cast<OnlineAttentionOp>(op);
  if (!oa || oa.getBiasTable() || oa.getRelativeBiasAttr())
    return false;
  for (Value v : {oa.getQuery(), oa.getAcc(), oa.getMax(), oa.getSum()})
    if (!hasF32Elements(v.getType()))
      return false;
  // K and V: f32, or a bf16/f16 cache widened in registers.
  for (Value v : {oa.getKey(), oa.getValue()}) {
    Type elt = cast<ShapedType>(v.getType()).getElementType();
    if (!elt.isF32() && !elt.isBF16() && !elt.isF16())
      return false;
  }
  auto q = cast<ShapedType>(oa.getQuery().getType());
  auto v = cast<ShapedType>(oa.getValue().getType());
  if (q.getRank() < 2 || ShapedType::isDynamic(q.getShape().back()) ||
      ShapedType::isDynamic(v.getShape().back()))
    return false;
  return true;
}

void mlir::attn::storeTransposedBlock(OpBuilder &b, Location loc,
                                      VectorType square,
                                      function_ref<Value(int64_t)> loadRow,
                                      Value dst, Value row0, Value col0) {
  int64_t w = square.getDimSize(0);
  Value block = arith::ConstantOp::create(
      b, loc, square, DenseElementsAttr::get(square, b.getF32FloatAttr(0)));
  for (int64_t i = 0; i < w; ++i) {
    Value row = loadRow(i);
    block = vector::InsertOp::create(b, loc, row, block, i);
  }
  Value t =
      vector::TransposeOp::create(b, loc, block, ArrayRef<int64_t>{1, 0});
  for (int64_t i = 0; i < w; ++i) {
    Value col = vector::ExtractOp::create(b, loc, t, i);
    Value at = arith::ConstantIndexOp::create(b, loc, i);
    Value row = arith::AddIOp::create(b, loc, row0, at);
    vector::StoreOp::create(b, loc, col, dst, ValueRange{row, col0});
  }
}
