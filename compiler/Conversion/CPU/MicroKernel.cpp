//===- MicroKernel.cpp - register-tiled CPU code for attn tiles -----------===//
//
// This file implements the code of the CPU micro-kernel: the buffer form of
// `attn.online_attention` (after bufferization) as vector code, emitted by
// attn-cpu-micro-kernel (MicroKernelPass.cpp) into each tile function.
// The keys go by chunks of C = 4·W (W f32 lanes). Prefill (and any tile
// whose W does not divide d) has the query rows in the lanes:
//
//   0. Q pack, once per parallel iteration (its tiles share the query rows;
//      a tag in scratch records what is packed): the tile's rows (the heads
//      of the GQA group flattened) transposed into Qᵀ [d, rows] by W×W
//      vector transposes, times the softmax scale, with a table of each
//      row's indices and position.
//   1. Per chunk: an f32 K is read in place, a bf16/f16 (or paged) one
//      widened into an f32 scratch [C, d]; the V rows are copied (widened)
//      into [C, dv].
//   2. Per block of RB = 2·W rows: S = Q·Kᵀ by register tiles of 2 vectors
//      of rows × KB keys (per d step 2 loads of Qᵀ, KB broadcasts of K,
//      2·KB FMAs; no transpose of K), masked (lane compares of the rows'
//      positions against the key's) into a key-major scratch [C, RB] with
//      the running max; then elementwise over the block's rows: the new
//      max, alpha, e^(s - max) (expNonPositive: a polynomial for
//      arguments ≤ 0) and the row sums: no horizontal reduction and no
//      scalar code per row;
//   3. acc = acc·alpha + P·V per R rows in R×4 vector accumulators over dv,
//      per key 4 loads of V, R broadcasts of p, 4R FMAs.
//
// At most 16 rows in the tile (decode: one row per head of the group) take
// dot products along d instead: a block of R rows × W/R keys holds W
// accumulators, so each K vector loaded serves every row and K is read
// once, in address order; a shuffle tree (sumLanes) folds them into one
// vector of scores, and a loop over the rows does each row's softmax. While
// P·V runs over key n of the chunk, the K and V rows of key n of the next
// chunk are prefetched into L2 (decode reads K and V from memory once;
// without the prefetch the loads wait on DRAM); a paged tile also touches
// (a volatile byte load) the first row of each page of the next chunk at
// the start of each chunk, ahead of those prefetches.
// A paged tile (attn.online_attention with pages(...)) spans pages: per
// chunk, a table of the element offsets of its K and V rows in the page
// pools (this chunk's and the next chunk's, one division per chunk) stands
// in for the contiguous row index; the loops are otherwise the same.
//
// The scratch buffers are allocated once per iteration of the enclosing
// parallel loop (one query block, many tiles), so each thread has its own
// and no tile allocates.
// The query's leading dims (the heads of one GQA group) are rows like the
// others: they all use the same K and V rows of the chunk.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/LoopBuilder.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
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
  /// Scratch of decode's path: [R, C] probabilities, [R] alphas.
  Value P = {}, A = {};
  /// Scratch of the lanes path (prefill, or d % W != 0): the chunk's K and
  /// V rows as f32 [C, d] and [C, dv] (copied, widened from bf16/f16, once
  /// per chunk); the query rows transposed and scaled, Qt [dPad, Tcap];
  /// key-major probabilities Pt [C, RB]; per block row alpha, new max and
  /// new sum St [3, RB]; per packed row its indices in q/acc/max/sum
  /// (rowTab [Tcap, lead + 1]) and its position m (rowPos [Tcap], i32);
  /// and `tag` [2]: the query buffer (address) and row count Qt holds.
  Value Kw = {}, Vw = {}, Qt = {}, Pt = {}, St = {}, rowTab = {}, rowPos = {},
        tag = {};
  /// Rows per block of the lanes path (RV vectors of W rows), keys per
  /// register tile of its scores (RV·KB accumulators), rows Qt holds.
  int64_t RV = 2, KB = 8, Tcap = 0;
  int64_t RB() const { return RV * W; }
  /// Set while the lanes path's P·V runs: P·V reads Pt[n, pRow0 + r].
  Value pRow0 = {};
  /// p of block row r and key n for P·V: P[r, n] (decode) or Pt.
  Value pAt(int64_t r, Value n) {
    if (pRow0)
      return memref::LoadOp::create(b, loc, Pt,
                                    ValueRange{n, add(pRow0, idx(r))});
    return memref::LoadOp::create(b, loc, P, ValueRange{idx(r), n});
  }
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
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value minI(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  /// x rounded up to a multiple of m. (One op per statement here and
  /// below: the order of ops created in one argument list would depend on
  /// the C++ compiler; tools/dev.sh gcc-check.)
  Value roundUp(Value x, int64_t m) {
    Value step = idx(m);
    Value n = arith::CeilDivSIOp::create(b, loc, x, step);
    return arith::MulIOp::create(b, loc, n, step);
  }
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

  /// Copies the chunk's K (`key`) or V rows [n0, n0 + nc) into rows
  /// [0, nc) of the f32 scratch `dst` ([C, width]), widening bf16/f16,
  /// once per chunk: every block of query rows (and every head of the
  /// group) then reads f32 from the same hot 64-byte aligned scratch, at a
  /// static row stride. A bf16 V converted at each use cost prefill 13%
  /// (P1); an f32 V read in place rather than from the copy, 5-12% (P1 55%
  /// -> 63%, P4 59% -> 63% of the FMA peak on a Zen 5).
  void copyRows(bool key, Value dst, int64_t width, Value n0, Value nc) {
    Value zero = idx(0), one = idx(1);
    loop(zero, nc, one, [&](Value j) {
      RowRef row = kvRow(key, n0, j);
      for (int64_t c = 0; c < width; c += W) {
        Value mask = width - c >= W
                         ? Value()
                         : vector::ConstantMaskOp::create(
                               b, loc, vmask, ArrayRef<int64_t>{width - c});
        Value x = loadF32(row.mem, colOf(row, idx(c)), mask);
        if (mask)
          vector::MaskedStoreOp::create(b, loc, dst, ValueRange{j, idx(c)},
                                        mask, x);
        else
          vector::StoreOp::create(b, loc, x, dst, ValueRange{j, idx(c)});
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
    if (Value seen = maskKeeps(kPos, splat(qPos, vi32)))
      ok = arith::AndIOp::create(b, loc, ok, seen);
    return ok;
  }

  /// The op's mask on lanes of key positions `kPos` against query positions
  /// `qPos` (i32 vectors alike): a key at or before the query's position
  /// (causal), and within the window (sliding_window); null without a mask.
  /// The one definition for both paths (decode's lanes are keys, prefill's
  /// rows).
  Value maskKeeps(Value kPos, Value qPos) {
    if (op.getMask() == MaskKind::none)
      return {};
    Value ok =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, kPos, qPos);
    if (op.getMask() == MaskKind::sliding_window) {
      Value w = arith::ConstantOp::create(b, loc, b.getI32Type(),
                                          b.getI32IntegerAttr(*op.getWindow()));
      Value lowest = arith::SubIOp::create(b, loc, qPos, splat(w, vi32));
      Value inWindow = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                             kPos, lowest);
      ok = arith::AndIOp::create(b, loc, ok, inWindow);
    }
    if (op.getMask() == MaskKind::chunked) {
      // In the query's chunk: k >= q - (q mod chunk), the mod non-negative.
      Value c = splat(arith::ConstantOp::create(
                          b, loc, b.getI32Type(),
                          b.getI32IntegerAttr(*op.getWindow())),
                      vi32);
      Value zero = splat(arith::ConstantOp::create(b, loc, b.getI32Type(),
                                                   b.getI32IntegerAttr(0)),
                         vi32);
      // With range_start, the chunks are multiples in the sequence's
      // positions: (q + range_start) mod chunk.
      Value abs = qPos;
      if (Value origin = op.getRangeStart())
        abs = arith::AddIOp::create(b, loc, qPos, splat(toI32(origin), vi32));
      Value rem = arith::RemSIOp::create(b, loc, abs, c);
      Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                        rem, zero);
      Value fixed = arith::AddIOp::create(b, loc, rem, c);
      rem = arith::SelectOp::create(b, loc, neg, fixed, rem);
      Value start = arith::SubIOp::create(b, loc, qPos, rem);
      Value inChunk = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                            kPos, start);
      ok = arith::AndIOp::create(b, loc, ok, inChunk);
    }
    return ok;
  }

  /// Decode's online-softmax update of the block of `rows` query rows
  /// from flattened row `t0` (rows of one block may belong to different
  /// heads of the group: in decode every head has a single row) against the
  /// chunk: the block's scores into the P scratch (dotScores), then each
  /// row's softmax in a loop (one copy of its code whatever R is), alpha
  /// through scratch, then P · V for the block.
  void rowBlock(Value t0, int64_t rows, Value M, ArrayRef<Value> leadUbs,
                Value n0, Value nc) {
    SmallVector<SmallVector<Value>> rowAt;
    for (int64_t r = 0; r < rows; ++r)
      rowAt.push_back(delinearize(add(t0, idx(r)), M, leadUbs));
    dotScores(rowAt, n0, nc);
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
    Value chunkEnd = roundUp(nc, KR);
    loop(zero, chunkEnd, idx(KR), [&](Value j0) {
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
        Value pb = splat(pAt(r, n), vt);
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
    Value mem, offset, pageStride, rowStride, base;
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
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, flat);
    return {flat, md.getOffset(), md.getStrides()[0], md.getStrides()[1], base};
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

  /// A demand load of the byte at element `off` of the flat pool `p`
  /// (volatile: nothing uses the value). See fillRowTables.
  void touch(const FlatPool &p, Value off) {
    int64_t bytes =
        cast<MemRefType>(p.mem.getType()).getElementTypeBitWidth() / 8;
    Value scaled = arith::MulIOp::create(b, loc, off, idx(bytes));
    Value addr = add(p.base, scaled);
    Value a64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), addr);
    Value ptr = LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), a64);
    LLVM::LoadOp::create(b, loc, b.getI8Type(), ptr, /*alignment=*/1,
                         /*isVolatile=*/true);
  }
  /// Touches the next chunk's rows C, C + P, C + 2P, ... (table `rows`)
  /// of the pool `p`: one row in each page of the next chunk whenever its
  /// pages start at multiples of P from the chunk's start (kv_pos a
  /// multiple of P, and P dividing C or a multiple of it: a sequence's
  /// pages of 16 or 256 tokens); other pages are only prefetched. (Finding
  /// each page's first row instead, a division per chunk, measured slower:
  /// D1 f32 pages of 16, 3.6-4.0 ms against 3.3-3.4.)
  void touchNextChunk(const FlatPool &p, Value rows) {
    Value c = idx(chunk()), end = idx(2 * chunk());
    loop(c, end, pageSize, [&](Value j) {
      touch(p, memref::LoadOp::create(b, loc, rows, ValueRange{j}));
    });
  }

  /// kRows/vRows[j] = the element offset of key row n0 + j (j < 2C: this
  /// chunk and the next) in kFlat/vFlat: key n is row (kv_pos + n) % P of
  /// page pages[(kv_pos + n) / P - kv_pos / P]; rows past the pages listed
  /// (only ever prefetched or masked) read the last page's. One iteration
  /// per page touched, its rows an arithmetic sequence (a division per
  /// chunk, not per row).
  /// With `touchNext` (decode), it then loads a byte of the first row of
  /// each of the next chunk's pages (touchNextChunk). Decode prefetches
  /// the next chunk's rows while it computes this one's, but pages of 16
  /// tokens put each head's K and V rows on a new, random memory page every
  /// 16 rows, and on the machine this was measured on (an AMD EPYC Zen 5
  /// VM) the software prefetches alone left the kernel waiting on them; a
  /// demand load per page at the chunk's start (before its prefetches)
  /// took D1 with bf16 pages of 16 from 1.97 to 1.47 ms (contiguous: 1.25).
  /// More touches (one per 4 KiB of rows, or the last row of each page as
  /// well) measured slower for f32 pages.
  void fillRowTables(Value n0, bool touchNext = false) {
    auto mul = [&](Value x, Value y) {
      return arith::MulIOp::create(b, loc, x, y).getResult();
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
    if (touchNext) {
      touchNextChunk(kPool, kRows);
      touchNextChunk(vPool, vRows);
    }
  }

  /// The indices in q/acc/max/sum of packed row `t` (rowTab).
  SmallVector<Value> tabRow(Value t) {
    SmallVector<Value> row;
    for (int64_t c = 0; c <= lead; ++c)
      row.push_back(
          memref::LoadOp::create(b, loc, rowTab, ValueRange{t, idx(c)}));
    return row;
  }

  /// Packs rows [s0, s0 + ns) of the tile's T flattened query rows into Qt
  /// (column t: row s0 + t, times the softmax scale) and their indices into
  /// rowTab/rowPos, up to a multiple of RB rows (rows past T repeat row
  /// T - 1: their lanes compute a copy of its scores and are never stored).
  /// A prefill tile is one chunk of keys, and the tiles of one parallel
  /// iteration share their query rows: `tag` records the buffer and row
  /// count Qt holds, so that the pack runs once per iteration, not once per
  /// tile (when every row fits: T ≤ Tcap).
  void packQueries(Value s0, Value ns, Value T, Value M,
                   ArrayRef<Value> leadUbs) {
    Value zero = idx(0), one = idx(1);
    Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, q);
    auto md = memref::ExtractStridedMetadataOp::create(b, loc, q);
    Value key = add(ptr, arith::MulIOp::create(b, loc, md.getOffset(), idx(4)));
    auto eq = [&](Value x, Value y) {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y)
          .getResult();
    };
    auto andI = [&](Value x, Value y) {
      return arith::AndIOp::create(b, loc, x, y).getResult();
    };
    Value tag0 = memref::LoadOp::create(b, loc, tag, ValueRange{zero});
    Value tag1 = memref::LoadOp::create(b, loc, tag, ValueRange{one});
    Value oneSlab =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, T, idx(Tcap));
    Value sameBuffer = eq(tag0, key);
    Value sameRows = eq(tag1, T);
    Value fresh = andI(andI(sameBuffer, sameRows), oneSlab);
    Value stale = arith::XOrIOp::create(
        b, loc, fresh,
        arith::ConstantOp::create(b, loc, b.getI1Type(), b.getBoolAttr(true)));
    auto ifOp = scf::IfOp::create(b, loc, stale, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value last = sub(T, one);
    Value scale = splatF(op.getScale().convertToDouble());
    auto square = VectorType::get({W, W}, b.getF32Type());
    Value packEnd = roundUp(ns, RB());
    loop(zero, packEnd, idx(W), [&](Value tb) {
      SmallVector<SmallVector<Value>> rows;
      for (int64_t i = 0; i < W; ++i) {
        Value t = add(tb, idx(i));
        rows.push_back(delinearize(minI(add(s0, t), last), M, leadUbs));
        for (int64_t c = 0; c <= lead; ++c)
          memref::StoreOp::create(b, loc, rows[i][c], rowTab,
                                  ValueRange{t, idx(c)});
        memref::StoreOp::create(b, loc, toI32(rows[i][lead]), rowPos,
                                ValueRange{t});
      }
      Value dEnd = idx(d);
      loop(zero, dEnd, idx(W), [&](Value k0) {
        Value mask;
        if (d % W != 0)
          mask = vector::CreateMaskOp::create(b, loc, vmask,
                                              ValueRange{sub(idx(d), k0)});
        storeTransposedBlock(
            b, loc, square,
            [&](int64_t i) {
              Value x = loadF32(q, at(rows[i], {k0}), mask);
              return arith::MulFOp::create(b, loc, x, scale).getResult();
            },
            Qt, k0, tb);
      });
    });
    memref::StoreOp::create(b, loc, key, tag, ValueRange{zero});
    memref::StoreOp::create(b, loc, T, tag, ValueRange{one});
  }

  /// The scores' mask for lanes of query positions `qPos` (i32) against the
  /// chunk's key at position kPos (scalar), which exists when `inRange`
  /// (a key past the chunk's end takes position INT32_MAX, after every
  /// query): null when the mask keeps every lane of an existing key.
  Value laneMask(Value qPos, Value kPos, Value inRange) {
    if (op.getMask() == MaskKind::none)
      return {};
    Value big = arith::ConstantOp::create(b, loc, b.getI32Type(),
                                          b.getI32IntegerAttr(INT32_MAX));
    Value kEff = arith::SelectOp::create(b, loc, inRange, kPos, big);
    return maskKeeps(splat(kEff, vi32), qPos);
  }

  /// The online-softmax update of packed rows [t0, t0 + rvs·W) (of a slab
  /// of ns) against the chunk, with the rows in the lanes: S = Q·Kᵀ by
  /// register tiles of rvs vectors of rows × KB keys (per d step rvs loads
  /// of Qt, KB broadcasts of K, rvs·KB FMAs; no transpose of K), then the
  /// softmax elementwise over the block's rows: per key a vector of RB
  /// scores (mask, running max), the new max, alpha and the exps and sums
  /// with no horizontal reduction and no scalar code per row; then P · V
  /// per R rows.
  void laneBlock(Value t0, Value ns, Value n0, Value nc, int64_t rvs) {
    Value zero = idx(0), one = idx(1);
    Value ninf = splat(negInf(), vt);
    Value qPos0 = splat(toI32(op.getQPos()), vi32);
    Value kvBase = toI32(add(op.getKvPos(), n0));
    SmallVector<Value> qPos, mOld, lOld;
    for (int64_t rv = 0; rv < rvs; ++rv) {
      Value col = add(t0, idx(rv * W));
      Value m = vector::LoadOp::create(b, loc, vi32, rowPos, ValueRange{col});
      qPos.push_back(arith::AddIOp::create(b, loc, m, qPos0));
      SmallVector<Value> ms, ls;
      for (int64_t i = 0; i < W; ++i) {
        SmallVector<Value> row = tabRow(add(col, idx(i)));
        ms.push_back(memref::LoadOp::create(b, loc, max, row));
        ls.push_back(memref::LoadOp::create(b, loc, sum, row));
      }
      mOld.push_back(vector::FromElementsOp::create(b, loc, vt, ms));
      lOld.push_back(vector::FromElementsOp::create(b, loc, vt, ls));
    }
    // Scores, masked, into Pt (key-major) and the running max.
    SmallVector<Value> runMax(rvs, ninf);
    Value groupsEnd = roundUp(nc, KB);
    runMax =
        loop(zero, groupsEnd, idx(KB), runMax, [&](Value g, ValueRange curMax) {
          SmallVector<Value> init(rvs * KB, splatF(0.0));
          SmallVector<Value> s =
              loop(zero, idx(d), one, init, [&](Value kk, ValueRange a) {
                SmallVector<Value> qv, next(a.begin(), a.end());
                for (int64_t rv = 0; rv < rvs; ++rv)
                  qv.push_back(vector::LoadOp::create(
                      b, loc, vt, Qt, ValueRange{kk, add(t0, idx(rv * W))}));
                for (int64_t j = 0; j < KB; ++j) {
                  Value kx = memref::LoadOp::create(
                      b, loc, kSrc, ValueRange{add(g, idx(j)), kk});
                  Value kb = splat(kx, vt);
                  for (int64_t rv = 0; rv < rvs; ++rv)
                    next[j * rvs + rv] = vector::FMAOp::create(
                        b, loc, qv[rv], kb, a[j * rvs + rv]);
                }
                return next;
              });
          SmallVector<Value> mx(curMax.begin(), curMax.end());
          for (int64_t j = 0; j < KB; ++j) {
            Value key = add(g, idx(j));
            Value inRange = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::slt, key, nc);
            Value kPos = arith::AddIOp::create(b, loc, kvBase, toI32(key));
            for (int64_t rv = 0; rv < rvs; ++rv) {
              Value x = s[j * rvs + rv];
              if (std::optional<APFloat> cap = op.getSoftcap()) {
                Value c = splatF(cap->convertToDouble());
                Value t = math::TanhOp::create(
                    b, loc, arith::DivFOp::create(b, loc, x, c));
                x = arith::MulFOp::create(b, loc, t, c);
              }
              Value seen = laneMask(qPos[rv], kPos, inRange);
              x = seen ? arith::SelectOp::create(b, loc, seen, x, ninf)
                       : arith::SelectOp::create(b, loc, inRange, x, ninf);
              mx[rv] = maxNoNaN(mx[rv], x);
              vector::StoreOp::create(b, loc, x, Pt,
                                      ValueRange{key, idx(rv * W)});
            }
          }
          return mx;
        });
    // The new max, alpha, the exps and their sums (U keys per iteration,
    // U sums: the adds are not one chain).
    constexpr int64_t U = 4;
    SmallVector<Value> shift, alpha, mNew;
    for (int64_t rv = 0; rv < rvs; ++rv) {
      mNew.push_back(maxNoNaN(mOld[rv], runMax[rv]));
      // A row with no visible key so far shifts by 0: exp(-inf) = 0.
      Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                         mNew[rv], ninf);
      shift.push_back(
          arith::SelectOp::create(b, loc, none, splatF(0.0), mNew[rv]));
      alpha.push_back(
          expNonPositive(arith::SubFOp::create(b, loc, mOld[rv], shift[rv])));
    }
    SmallVector<Value> sums(U * rvs, splatF(0.0));
    Value keysEnd = roundUp(nc, U);
    sums = loop(zero, keysEnd, idx(U), sums, [&](Value n, ValueRange cur) {
      SmallVector<Value> next(cur.begin(), cur.end());
      for (int64_t u = 0; u < U; ++u)
        for (int64_t rv = 0; rv < rvs; ++rv) {
          SmallVector<Value, 2> ix{add(n, idx(u)), idx(rv * W)};
          Value x = vector::LoadOp::create(b, loc, vt, Pt, ix);
          Value p = expNonPositive(arith::SubFOp::create(b, loc, x, shift[rv]));
          vector::StoreOp::create(b, loc, p, Pt, ix);
          next[u * rvs + rv] =
              arith::AddFOp::create(b, loc, cur[u * rvs + rv], p);
        }
      return next;
    });
    for (int64_t rv = 0; rv < rvs; ++rv) {
      Value l = sums[rv];
      for (int64_t u = 1; u < U; ++u)
        l = arith::AddFOp::create(b, loc, l, sums[u * rvs + rv]);
      Value lNew = vector::FMAOp::create(b, loc, lOld[rv], alpha[rv], l);
      Value col = idx(rv * W);
      vector::StoreOp::create(b, loc, alpha[rv], St, ValueRange{zero, col});
      vector::StoreOp::create(b, loc, mNew[rv], St, ValueRange{one, col});
      vector::StoreOp::create(b, loc, lNew, St, ValueRange{idx(2), col});
    }
    Value left = sub(ns, t0);
    Value blockRows = idx(rvs * W);
    Value valid = minI(blockRows, left);
    loop(zero, valid, one, [&](Value i) {
      SmallVector<Value> row = tabRow(add(t0, i));
      Value m = memref::LoadOp::create(b, loc, St, ValueRange{one, i});
      Value l = memref::LoadOp::create(b, loc, St, ValueRange{idx(2), i});
      memref::StoreOp::create(b, loc, m, max, row);
      memref::StoreOp::create(b, loc, l, sum, row);
    });
    // acc = acc·alpha + P·V, R rows at a time.
    Value fullEnd = sub(valid, arith::RemSIOp::create(b, loc, valid, idx(R)));
    auto pv = [&](Value i0, int64_t rows) {
      SmallVector<SmallVector<Value>> rowAt;
      SmallVector<Value> alphas;
      for (int64_t r = 0; r < rows; ++r) {
        Value i = add(i0, idx(r));
        rowAt.push_back(tabRow(add(t0, i)));
        alphas.push_back(
            memref::LoadOp::create(b, loc, St, ValueRange{zero, i}));
      }
      pRow0 = i0;
      pvBlock(rowAt, alphas, n0, nc);
      pRow0 = Value();
    };
    loop(zero, fullEnd, idx(R), [&](Value i0) { pv(i0, R); });
    loop(fullEnd, valid, one, [&](Value i) { pv(i, 1); });
  }

  /// Where the lanes path's scores read the chunk's keys (kSrc, rows from
  /// 0): an f32 K whose rows are d apart is read in place (the scores
  /// broadcast single elements: alignment does not matter, and a copy cost
  /// 2.5% of P2's time), except for a partial chunk, whose missing rows the
  /// register tile would read past K's end; otherwise (bf16/f16, paged,
  /// other strides) the rows copied to Kw.
  Value kSrc = {};
  void chunkKeys(Value n0, Value nc) {
    auto kt = cast<MemRefType>(k.getType());
    int64_t off;
    SmallVector<int64_t> strides;
    bool inPlace = !paged && kt.getElementType().isF32() &&
                   succeeded(kt.getStridesAndOffset(strides, off)) &&
                   strides[0] == d;
    if (!inPlace) {
      copyRows(/*key=*/true, Kw, d, n0, nc);
      kSrc = Kw;
      return;
    }
    Value full = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, nc,
                                       idx(chunk()));
    auto ifOp = scf::IfOp::create(b, loc, full, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      copyRows(/*key=*/true, Kw, d, n0, nc);
    }
    auto rowsTy = MemRefType::get(
        {ShapedType::kDynamic, d}, b.getF32Type(),
        StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {d, 1}));
    Value rows = memref::SubViewOp::create(
        b, loc, rowsTy, k, ArrayRef<OpFoldResult>{n0, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{nc, b.getIndexAttr(d)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    Value copy = memref::CastOp::create(b, loc, rowsTy, Kw);
    kSrc = arith::SelectOp::create(b, loc, full, rows, copy);
  }

  /// Prefill (and any tile when W does not divide d): the rows in slabs of
  /// at most Tcap, each packed (packQueries), then per chunk of keys its K
  /// and V rows copied to f32 scratch and laneBlock per RB rows.
  void lanesPath(Value T, Value M, ArrayRef<Value> leadUbs, Value N) {
    Value zero = idx(0), C = idx(chunk());
    loop(zero, T, idx(Tcap), [&](Value s0) {
      Value left = sub(T, s0);
      Value ns = minI(idx(Tcap), left);
      packQueries(s0, ns, T, M, leadUbs);
      loop(zero, N, C, [&](Value n0) {
        Value nc = minI(sub(N, n0), C);
        if (paged)
          fillRowTables(n0);
        chunkKeys(n0, nc);
        copyRows(/*key=*/false, Vw, dv, n0, nc);
        vWidened = true;
        // Blocks of RV vectors of rows, but a last block of at most W rows
        // (MQA decode: 71 rows are 2 blocks of 32 and one of 16, not 3 of
        // 32) takes one vector: its scores and softmax then cost half.
        Value rb = idx(RB());
        Value rem = arith::RemUIOp::create(b, loc, ns, rb);
        Value w = idx(W);
        Value shortTail =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, rem, w);
        Value tailStart = sub(ns, rem);
        Value wideEnd =
            RV > 1 ? arith::SelectOp::create(b, loc, shortTail, tailStart, ns)
                   : ns;
        loop(zero, wideEnd, rb,
             [&](Value t0) { laneBlock(t0, ns, n0, nc, RV); });
        if (RV > 1)
          loop(wideEnd, ns, rb,
               [&](Value t0) { laneBlock(t0, ns, n0, nc, 1); });
        vWidened = false;
      });
    });
  }

  /// The tile's code, at the builder's insertion point, scratch set.
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
    // The group's heads and rows flattened: a register block of rows may
    // span heads (decode has one row per head).
    Value T = M;
    for (Value ub : leadUbs)
      T = arith::MulIOp::create(b, loc, T, ub);
    if (d % W != 0) {
      lanesPath(T, M, leadUbs, N);
      return;
    }
    // Few rows (decode): dot products along d (dotScores), K streamed.
    Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, T,
                                      idx(kDotRows));
    auto ifOp = scf::IfOp::create(b, loc, few, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value tFull = sub(T, arith::RemSIOp::create(b, loc, T, idx(R)));
    Value C = idx(chunk());
    loop(zero, N, C, [&](Value n0) {
      Value nc = minI(sub(N, n0), C);
      if (paged)
        fillRowTables(n0, /*touchNext=*/true);
      prefetchBase = add(n0, C);
      prefetchLast = sub(N, one);
      auto block = [&](Value t0, int64_t rows) {
        rowBlock(t0, rows, M, leadUbs, n0, nc);
      };
      loop(zero, tFull, idx(R), [&](Value t0) { block(t0, R); });
      loop(tFull, T, one, [&](Value t) { block(t, 1); });
      prefetchBase = prefetchLast = Value();
    });
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    lanesPath(T, M, leadUbs, N);
  }

  /// Rows the query pack holds: the tile's, when static; else the
  /// tiler's q-block (attn.q_block on the enclosing loop) times the static
  /// lead dims; else 256; a multiple of the block rows, at most 4096 (more
  /// rows are packed in slabs).
  static int64_t packRows(OnlineAttentionOp tile, int64_t w) {
    auto qt = cast<ShapedType>(tile.getQuery().getType());
    int64_t lead = 1, rows = 256;
    bool leadStatic = true;
    for (int64_t i = 0; i + 2 < qt.getRank(); ++i) {
      leadStatic &= !ShapedType::isDynamic(qt.getDimSize(i));
      if (leadStatic)
        lead *= qt.getDimSize(i);
    }
    int64_t m = qt.getDimSize(qt.getRank() - 2);
    if (leadStatic && !ShapedType::isDynamic(m)) {
      rows = lead * m;
    } else {
      for (Operation *p = tile->getParentOp(); p; p = p->getParentOp())
        if (auto qb = p->getAttrOfType<IntegerAttr>("attn.q_block")) {
          if (leadStatic)
            rows = lead * qb.getInt();
          break;
        }
    }
    int64_t rb = microKernelScoreVectors(w) * w;
    rows = std::min<int64_t>(std::max<int64_t>(rows, 1), 4096);
    return (rows + rb - 1) / rb * rb;
  }
};

} // namespace

SmallVector<Value>
mlir::attn::allocateMicroKernelScratch(OpBuilder &b, Location loc,
                                       OnlineAttentionOp tile, int64_t lanes) {
  IntegerAttr align = b.getI64IntegerAttr(64);
  Type f32 = b.getF32Type(), index = b.getIndexType();
  int64_t d = cast<ShapedType>(tile.getQuery().getType()).getShape().back();
  int64_t dv = cast<ShapedType>(tile.getValue().getType()).getShape().back();
  int64_t lead = cast<ShapedType>(tile.getQuery().getType()).getRank() - 2;
  int64_t chunk = Emitter::kChunkVectors * lanes, rows = microKernelRows(lanes);
  int64_t dPad = (d + lanes - 1) / lanes * lanes;
  int64_t tcap = Emitter::packRows(tile, lanes);
  int64_t rb = microKernelScoreVectors(lanes) * lanes;
  auto alloc = [&](ArrayRef<int64_t> shape, Type elt) -> Value {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, elt), align);
  };
  SmallVector<Value> scratch = {alloc({rows, chunk}, f32),      // P
                                alloc({rows}, f32),             // A
                                alloc({chunk, d}, f32),         // Kw
                                alloc({chunk, dv}, f32),        // Vw
                                alloc({dPad, tcap}, f32),       // Qt
                                alloc({chunk, rb}, f32),        // Pt
                                alloc({3, rb}, f32),            // St
                                alloc({tcap, lead + 1}, index), // rowTab
                                alloc({tcap}, b.getI32Type()),  // rowPos
                                alloc({2}, index)};             // tag
  // No query rows packed yet (no buffer is at address -1).
  Value none = arith::ConstantIndexOp::create(b, loc, -1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  memref::StoreOp::create(b, loc, none, scratch.back(), ValueRange{zero});
  // A paged tile's row tables (this chunk's and the next chunk's rows).
  if (tile.isPaged())
    for (int i = 0; i < 2; ++i)
      scratch.push_back(alloc({2 * chunk}, index));
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
  e.RV = microKernelScoreVectors(lanes);
  e.KB = microKernelScoreKeys(lanes);
  e.Tcap = cast<MemRefType>(scratch[4].getType()).getDimSize(1);
  e.P = scratch[0];
  e.A = scratch[1];
  e.Kw = scratch[2];
  e.Vw = scratch[3];
  e.Qt = scratch[4];
  e.Pt = scratch[5];
  e.St = scratch[6];
  e.rowTab = scratch[7];
  e.rowPos = scratch[8];
  e.tag = scratch[9];
  if (tile.isPaged()) {
    e.paged = true;
    e.kRows = scratch[10];
    e.vRows = scratch[11];
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

/// The transpose of the W×W block whose rows are `rows` (W = 4, 8 or 16)
/// as 1-D shuffles in the unpack / 128-bit-lane pattern of x86: pairs of
/// rows interleaved by 32 then 64 bits within each 128-bit lane (2W
/// shuffles), then, for W > 4, the lanes of 4 rows gathered (W / 2 · log2
/// (W / 4) · 2 more): 64 shuffles for 16×16, each one unpck or vshuff
/// instruction. (A vector.transpose of the inserted rows is not kept as
/// such: the canonicalizer folds insert / transpose / extract into
/// per-element from_elements, which LLVM lowered to ~400 instructions
/// per 16×16 block.)
static SmallVector<Value> transposeRows(OpBuilder &b, Location loc,
                                        ArrayRef<Value> rows) {
  int64_t w = rows.size();
  auto shuffle = [&](Value x, Value y, ArrayRef<int64_t> mask) {
    return vector::ShuffleOp::create(b, loc, x, y, mask).getResult();
  };
  // Per 128-bit lane l, from x (0..w) and y (w..2w): `pick(l)`.
  auto laneMask = [&](function_ref<SmallVector<int64_t>(int64_t)> pick) {
    SmallVector<int64_t> mask;
    for (int64_t l = 0; l < w / 4; ++l)
      llvm::append_range(mask, pick(l));
    return mask;
  };
  SmallVector<int64_t> lo32 = laneMask([&](int64_t l) {
    return SmallVector<int64_t>{4 * l, w + 4 * l, 4 * l + 1, w + 4 * l + 1};
  });
  SmallVector<int64_t> hi32 = laneMask([&](int64_t l) {
    return SmallVector<int64_t>{4 * l + 2, w + 4 * l + 2, 4 * l + 3,
                                w + 4 * l + 3};
  });
  SmallVector<int64_t> lo64 = laneMask([&](int64_t l) {
    return SmallVector<int64_t>{4 * l, 4 * l + 1, w + 4 * l, w + 4 * l + 1};
  });
  SmallVector<int64_t> hi64 = laneMask([&](int64_t l) {
    return SmallVector<int64_t>{4 * l + 2, 4 * l + 3, w + 4 * l + 2,
                                w + 4 * l + 3};
  });
  // t[2i], t[2i+1]: rows 2i and 2i+1 interleaved (low, high halves).
  SmallVector<Value> t(w);
  for (int64_t i = 0; i < w; i += 2) {
    t[i] = shuffle(rows[i], rows[i + 1], lo32);
    t[i + 1] = shuffle(rows[i], rows[i + 1], hi32);
  }
  // u[4g + j], lane l: column 4l + j of rows 4g .. 4g+3.
  SmallVector<Value> u(w);
  for (int64_t i = 0; i < w; i += 4) {
    u[i] = shuffle(t[i], t[i + 2], lo64);
    u[i + 1] = shuffle(t[i], t[i + 2], hi64);
    u[i + 2] = shuffle(t[i + 1], t[i + 3], lo64);
    u[i + 3] = shuffle(t[i + 1], t[i + 3], hi64);
  }
  if (w == 4)
    return u;
  // Whole 128-bit lanes: even / odd lanes of x then of y.
  SmallVector<int64_t> evenLanes, oddLanes;
  for (int64_t half = 0; half < 2; ++half)
    for (int64_t l = 0; l < w / 4; l += 2)
      for (int64_t e = 0; e < 4; ++e) {
        evenLanes.push_back(half * w + 4 * l + e);
        oddLanes.push_back(half * w + 4 * (l + 1) + e);
      }
  SmallVector<Value> cols(w);
  if (w == 8) {
    // Column 4l + j: lane l of u[j] then of u[4 + j].
    for (int64_t j = 0; j < 4; ++j) {
      cols[j] = shuffle(u[j], u[4 + j], evenLanes);
      cols[4 + j] = shuffle(u[j], u[4 + j], oddLanes);
    }
    return cols;
  }
  // w == 16: column 4l + j is lane l of u[j], u[4+j], u[8+j], u[12+j].
  for (int64_t j = 0; j < 4; ++j) {
    Value v0 = shuffle(u[j], u[4 + j], evenLanes); // lanes 0, 2
    Value v1 = shuffle(u[j], u[4 + j], oddLanes);  // lanes 1, 3
    Value w0 = shuffle(u[8 + j], u[12 + j], evenLanes);
    Value w1 = shuffle(u[8 + j], u[12 + j], oddLanes);
    cols[j] = shuffle(v0, w0, evenLanes);
    cols[8 + j] = shuffle(v0, w0, oddLanes);
    cols[4 + j] = shuffle(v1, w1, evenLanes);
    cols[12 + j] = shuffle(v1, w1, oddLanes);
  }
  return cols;
}

void mlir::attn::storeTransposedBlock(OpBuilder &b, Location loc,
                                      VectorType square,
                                      function_ref<Value(int64_t)> loadRow,
                                      Value dst, Value row0, Value col0) {
  int64_t w = square.getDimSize(0);
  SmallVector<Value> rows;
  for (int64_t i = 0; i < w; ++i)
    rows.push_back(loadRow(i));
  // The micro-kernel pass accepts 4, 8 or 16 lanes only.
  assert((w == 4 || w == 8 || w == 16) && "square of 4, 8 or 16 lanes");
  SmallVector<Value> cols = transposeRows(b, loc, rows);
  for (int64_t i = 0; i < w; ++i) {
    Value at = arith::ConstantIndexOp::create(b, loc, i);
    Value row = arith::AddIOp::create(b, loc, row0, at);
    vector::StoreOp::create(b, loc, cols[i], dst, ValueRange{row, col0});
  }
}
