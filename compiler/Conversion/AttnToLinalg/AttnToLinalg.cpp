//===- AttnToLinalg.cpp - attn tile/score ops -> linalg.generic -----------===//
//
// This file implements convert-attn-to-linalg. Every op becomes a few
// linalg.generic ops on tensors whose bodies compute in f32 (or f64): the
// online-softmax step of the tiled form, its finalization, and the
// score-level ops of the unfused reference path.
//
// Masked scores are -inf. A row whose keys are all masked keeps max = -inf;
// its exponent shift uses 0 instead (exp(-inf - 0) = 0), so its sum stays 0
// and it finalizes to 0 rather than NaN.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/CPU/MicroKernel.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <limits>

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CONVERTATTNTOLINALGPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;
using utils::IteratorType;

namespace {

constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;

/// Builds linalg.generic ops and the index/float arithmetic in their bodies.
struct Builder {
  OpBuilder &b;
  Location loc;
  Type acc; ///< the compute type (f32 or f64)

  RankedTensorType tensor(ArrayRef<OpFoldResult> sizes, Type elt) {
    SmallVector<int64_t> shape;
    for (OpFoldResult s : sizes) {
      std::optional<int64_t> c = getConstantIntValue(s);
      shape.push_back(c ? *c : ShapedType::kDynamic);
    }
    return RankedTensorType::get(shape, elt);
  }
  Value empty(ArrayRef<OpFoldResult> sizes, Type elt) {
    return tensor::EmptyOp::create(b, loc, sizes, elt);
  }
  Value fill(ArrayRef<OpFoldResult> sizes, double v) {
    Value c = arith::ConstantOp::create(b, loc, acc, b.getFloatAttr(acc, v));
    return linalg::FillOp::create(b, loc, c, empty(sizes, acc)).getResult(0);
  }
  OpFoldResult dim(Value t, int64_t i) {
    auto ty = cast<RankedTensorType>(t.getType());
    if (!ty.isDynamicDim(i))
      return b.getIndexAttr(ty.getDimSize(i));
    return tensor::DimOp::create(b, loc, t, i).getResult();
  }
  /// One linalg.generic with a single result.
  Value generic(ValueRange ins, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iters,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    auto op = linalg::GenericOp::create(
        b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps, iters,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          linalg::YieldOp::create(nb, nl, body(nb, nl, args));
        });
    return op.getResult(0);
  }
  /// Map from `n` loop dims to the listed dims (-1: the constant 0).
  AffineMap map(unsigned n, ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(n, 0, exprs, b.getContext());
  }
  AffineExpr d(unsigned i) { return b.getAffineDimExpr(i); }
};

/// Extends `v` to the compute type.
Value toAcc(OpBuilder &b, Location loc, Value v, Type acc) {
  if (v.getType() == acc)
    return v;
  return arith::ExtFOp::create(b, loc, acc, v);
}

/// Reductions (dot products, row sums) may be reassociated and a * b + c
/// contracted into an FMA, so that LLVM vectorizes them.
constexpr arith::FastMathFlags kReduceFlags =
    arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;

Value fma(OpBuilder &b, Location loc, Value x, Value y, Value acc) {
  Value prod = arith::MulFOp::create(b, loc, x, y, kReduceFlags);
  return arith::AddFOp::create(b, loc, acc, prod, kReduceFlags);
}

Value negInf(OpBuilder &b, Location loc, Type t) {
  return arith::ConstantOp::create(
      b, loc, t,
      b.getFloatAttr(t, -std::numeric_limits<double>::infinity()));
}

Value fconst(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, v));
}

Value iconst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// T5's _relative_position_bucket(key - query) as index arithmetic.
Value t5Bucket(OpBuilder &b, Location loc, Value rel, RelativeBiasAttr attr) {
  int64_t buckets = attr.getNumBuckets();
  Value zero = iconst(b, loc, 0);
  Value base = zero;
  Value pos;
  if (attr.getBidirectional()) {
    buckets /= 2;
    Value positive = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                           rel, zero);
    base = arith::SelectOp::create(b, loc, positive, iconst(b, loc, buckets),
                                   zero);
    Value neg = arith::SubIOp::create(b, loc, zero, rel);
    pos = arith::MaxSIOp::create(b, loc, rel, neg);
  } else {
    Value neg = arith::SubIOp::create(b, loc, zero, rel);
    pos = arith::MaxSIOp::create(b, loc, neg, zero);
  }
  int64_t maxExact = buckets / 2;
  Value small = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, pos,
                                      iconst(b, loc, maxExact));
  // max_exact + log(pos / max_exact) / log(max_distance / max_exact)
  //             * (buckets - max_exact), truncated, capped at buckets - 1.
  Type f32 = b.getF32Type();
  Value posI = arith::IndexCastOp::create(b, loc, b.getI64Type(), pos);
  Value posF = arith::SIToFPOp::create(b, loc, f32, posI);
  Value ratio = arith::DivFOp::create(b, loc, posF,
                                      fconst(b, loc, f32, double(maxExact)));
  Value logv = math::LogOp::create(b, loc, ratio);
  double scale = double(buckets - maxExact) /
                 std::log(double(attr.getMaxDistance()) / double(maxExact));
  Value scaled =
      arith::MulFOp::create(b, loc, logv, fconst(b, loc, f32, scale));
  Value large = arith::FPToSIOp::create(b, loc, b.getI64Type(), scaled);
  Value largeIdx = arith::IndexCastOp::create(b, loc, b.getIndexType(), large);
  largeIdx = arith::AddIOp::create(b, loc, largeIdx, iconst(b, loc, maxExact));
  largeIdx = arith::MinSIOp::create(b, loc, largeIdx,
                                    iconst(b, loc, buckets - 1));
  Value bucket = arith::SelectOp::create(b, loc, small, pos, largeIdx);
  return arith::AddIOp::create(b, loc, base, bucket);
}

/// The score transform shared by both paths: scale, softcap, relative bias,
/// then the position mask; `qPos`/`kPos` are positions in key coordinates,
/// `head` indexes the bias table.
struct ScoreMath {
  double scale = 1.0;
  std::optional<double> softcap;
  RelativeBiasAttr rel;
  Value table;
  MaskKind mask = MaskKind::none;
  std::optional<int64_t> window;

  Value apply(OpBuilder &b, Location loc, Value s, Value qPos, Value kPos,
              Value head, Value kvLimit) const {
    Type t = s.getType();
    if (scale != 1.0)
      s = arith::MulFOp::create(b, loc, s, fconst(b, loc, t, scale));
    if (softcap) {
      Value cap = fconst(b, loc, t, *softcap);
      Value x = arith::DivFOp::create(b, loc, s, cap);
      s = arith::MulFOp::create(b, loc, math::TanhOp::create(b, loc, x), cap);
    }
    if (rel) {
      Value relPos = arith::SubIOp::create(b, loc, kPos, qPos);
      Value bucket = t5Bucket(b, loc, relPos, rel);
      Value bias = tensor::ExtractOp::create(b, loc, table,
                                             ValueRange{bucket, head});
      s = arith::AddFOp::create(b, loc, s, toAcc(b, loc, bias, t));
    }
    Value visible;
    auto both = [&](Value c) {
      visible = visible ? arith::AndIOp::create(b, loc, visible, c) : c;
    };
    if (mask != MaskKind::none)
      both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, kPos,
                                 qPos));
    if (mask == MaskKind::sliding_window) {
      Value lowest = arith::SubIOp::create(b, loc, qPos,
                                           iconst(b, loc, *window));
      both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, kPos,
                                 lowest));
    }
    if (kvLimit)
      both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, kPos,
                                 kvLimit));
    if (visible)
      s = arith::SelectOp::create(b, loc, visible, s, negInf(b, loc, t));
    return s;
  }
};

/// exp(x - m) with m = 0 when m is -inf (a row with no visible key so far).
Value safeMax(OpBuilder &b, Location loc, Value m) {
  Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                      negInf(b, loc, m.getType()));
  return arith::SelectOp::create(b, loc, isInf,
                                 fconst(b, loc, m.getType(), 0.0), m);
}

//===----------------------------------------------------------------------===//
// Tiled form
//===----------------------------------------------------------------------===//

void lowerOnlineAttention(OnlineAttentionOp op, OpBuilder &ob) {
  ob.setInsertionPoint(op);
  Type acc = op.getAcc().getType().getElementType();
  Builder g{ob, op.getLoc(), acc};
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  int64_t r = op.getQuery().getType().getRank(), lead = r - 2;

  SmallVector<OpFoldResult> rows; // [lead..., M]
  for (int64_t i = 0; i < r - 1; ++i)
    rows.push_back(g.dim(q, i));
  OpFoldResult n = g.dim(k, 0);
  SmallVector<OpFoldResult> sSizes(rows);
  sSizes.push_back(n);

  // Loop dims: lead..., m, n, d (reduction on d / on n).
  unsigned mDim = lead, nDim = lead + 1, dDim = lead + 2;
  SmallVector<AffineExpr> rowE, sE;
  for (unsigned i = 0; i <= mDim; ++i)
    rowE.push_back(g.d(i));
  sE = rowE;
  sE.push_back(g.d(nDim));

  // S = Q · Kᵀ.
  SmallVector<AffineExpr> qE(rowE);
  qE.push_back(g.d(dDim));
  SmallVector<IteratorType> it(lead + 2, kPar);
  it.push_back(kRed);
  Value s = g.generic(
      {q, k}, g.fill(sSizes, 0.0),
      {g.map(dDim + 1, qE), g.map(dDim + 1, {g.d(nDim), g.d(dDim)}),
       g.map(dDim + 1, sE)},
      it, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        return fma(b, l, toAcc(b, l, a[0], acc), toAcc(b, l, a[1], acc), a[2]);
      });

  // Scale, softcap, bias, mask by position.
  ScoreMath math;
  math.scale = op.getScale().convertToDouble();
  if (std::optional<APFloat> c = op.getSoftcap())
    math.softcap = c->convertToDouble();
  math.rel = op.getRelativeBiasAttr();
  math.table = op.getBiasTable();
  math.mask = op.getMask();
  math.window = op.getWindow();
  Value qPos = op.getQPos(), kPos = op.getKvPos(),
        headOff = op.getHeadOffset();
  unsigned nS = lead + 2;
  SmallVector<IteratorType> par(nS, kPar);
  s = g.generic({s}, g.empty(sSizes, acc),
                {g.map(nS, sE), g.map(nS, sE)}, par,
                [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                  Value m = linalg::IndexOp::create(b, l, mDim);
                  Value nn = linalg::IndexOp::create(b, l, nDim);
                  Value qp = arith::AddIOp::create(b, l, qPos, m);
                  Value kp = arith::AddIOp::create(b, l, kPos, nn);
                  Value head;
                  if (math.rel) {
                    Value h = linalg::IndexOp::create(b, l, 0);
                    head = arith::AddIOp::create(b, l, headOff, h);
                  }
                  return math.apply(b, l, a[0], qp, kp, head, Value());
                });

  // New row max.
  SmallVector<IteratorType> redN(lead + 1, kPar);
  redN.push_back(kRed);
  AffineMap sMap = g.map(nS, sE), rowMap = g.map(nS, rowE);
  Value newMax = g.generic({s}, op.getMax(), {sMap, rowMap}, redN,
                           [&](OpBuilder &b, Location l, ValueRange a) {
                             return arith::MaximumFOp::create(b, l, a[0], a[1])
                                 .getResult();
                           });
  // p = exp(s - max'), with max' = 0 for rows that saw nothing.
  Value p = g.generic({s, newMax}, g.empty(sSizes, acc), {sMap, rowMap, sMap},
                      par, [&](OpBuilder &b, Location l, ValueRange a) {
                        Value diff = arith::SubFOp::create(
                            b, l, a[0], safeMax(b, l, a[1]));
                        return math::ExpOp::create(b, l, diff).getResult();
                      });
  // alpha = exp(max - max').
  unsigned nR = lead + 1;
  AffineMap rowId = AffineMap::getMultiDimIdentityMap(nR, ob.getContext());
  SmallVector<IteratorType> parR(nR, kPar);
  Value alpha = g.generic(
      {op.getMax(), newMax}, g.empty(rows, acc), {rowId, rowId, rowId}, parR,
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value diff = arith::SubFOp::create(b, l, a[0], safeMax(b, l, a[1]));
        return math::ExpOp::create(b, l, diff).getResult();
      });
  // sum' = sum · alpha + rowsum(p).
  Value sumScaled = g.generic(
      {op.getSum(), alpha}, g.empty(rows, acc), {rowId, rowId, rowId}, parR,
      [&](OpBuilder &b, Location l, ValueRange a) {
        return arith::MulFOp::create(b, l, a[0], a[1]).getResult();
      });
  Value newSum = g.generic({p}, sumScaled, {sMap, rowMap}, redN,
                           [&](OpBuilder &b, Location l, ValueRange a) {
                             return arith::AddFOp::create(b, l, a[0], a[1],
                                                          kReduceFlags)
                                 .getResult();
                           });
  // acc' = acc · alpha + P · V: loop dims lead..., m, e, n.
  SmallVector<OpFoldResult> accSizes(rows);
  accSizes.push_back(g.dim(op.getAcc(), r - 1));
  AffineMap accId = AffineMap::getMultiDimIdentityMap(r, ob.getContext());
  SmallVector<IteratorType> parA(r, kPar);
  Value accScaled = g.generic(
      {op.getAcc(), alpha}, g.empty(accSizes, acc),
      {accId, g.map(r, rowE), accId}, parA,
      [&](OpBuilder &b, Location l, ValueRange a) {
        return arith::MulFOp::create(b, l, a[0], a[1]).getResult();
      });
  // Loops (lead..., m, j, e): e innermost, so that acc[.., m, :] +=
  // p[.., m, j] * v[j, :] runs along contiguous rows of V and acc.
  unsigned jDim = nDim, eDim = nDim + 1;
  SmallVector<AffineExpr> pE(rowE), oE(rowE);
  pE.push_back(g.d(jDim));
  oE.push_back(g.d(eDim));
  SmallVector<IteratorType> itPV(lead + 1, kPar);
  itPV.push_back(kRed);
  itPV.push_back(kPar);
  Value newAcc = g.generic(
      {p, v}, accScaled,
      {g.map(eDim + 1, pE), g.map(eDim + 1, {g.d(jDim), g.d(eDim)}),
       g.map(eDim + 1, oE)},
      itPV, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        return fma(b, l, a[0], toAcc(b, l, a[1], acc), a[2]);
      });
  op.getNewAcc().replaceAllUsesWith(newAcc);
  op.getNewMax().replaceAllUsesWith(newMax);
  op.getNewSum().replaceAllUsesWith(newSum);
  op.erase();
}

void lowerOnlineFinalize(OnlineFinalizeOp op, OpBuilder &ob) {
  ob.setInsertionPoint(op);
  Type acc = op.getAcc().getType().getElementType();
  Builder g{ob, op.getLoc(), acc};
  RankedTensorType outTy = op.getType();
  int64_t r = outTy.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < r; ++i)
    sizes.push_back(g.dim(op.getAcc(), i));
  AffineMap id = AffineMap::getMultiDimIdentityMap(r, ob.getContext());
  SmallVector<AffineExpr> rowE;
  for (int64_t i = 0; i < r - 1; ++i)
    rowE.push_back(g.d(i));
  Type outElt = outTy.getElementType();
  Value out = g.generic(
      {op.getAcc(), op.getSum()}, g.empty(sizes, outElt),
      {id, g.map(r, rowE), id}, SmallVector<IteratorType>(r, kPar),
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value zero = fconst(b, l, acc, 0.0);
        Value isZero =
            arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, a[1], zero);
        Value div = arith::DivFOp::create(b, l, a[0], a[1]);
        Value res = arith::SelectOp::create(b, l, isZero, zero, div);
        if (outElt != acc)
          res = arith::TruncFOp::create(b, l, outElt, res);
        return res;
      });
  op.getResult().replaceAllUsesWith(out);
  op.erase();
}

//===----------------------------------------------------------------------===//
// Reference path: [batch, heads, q_len, kv_len] scores
//===----------------------------------------------------------------------===//

/// QKᵀ or P·V with grouped heads: out[b,h,i,x] += a[b,h,i,r] * c[b,h/G,.,.]
/// (qk: r = d, c = k[j=x, d]; pv: r = j, c = v[j, x]). The innermost loop
/// walks contiguous memory: d for QKᵀ, x (the value dim) for P·V.
Value groupedContraction(Builder &g, Value lhs, Value rhs, Value init,
                         bool qk, int64_t group) {
  // Loops: b, h, i, then (x, red) for qk and (red, x) for pv.
  AffineExpr b0 = g.d(0), h = g.d(1), i = g.d(2);
  AffineExpr x = qk ? g.d(3) : g.d(4), red = qk ? g.d(4) : g.d(3);
  AffineExpr hk = h.floorDiv(group);
  AffineMap lhsMap = g.map(5, {b0, h, i, red});
  AffineMap rhsMap = qk ? g.map(5, {b0, hk, x, red}) : g.map(5, {b0, hk, red, x});
  AffineMap outMap = g.map(5, {b0, h, i, x});
  Type acc = g.acc;
  SmallVector<IteratorType> iters = {kPar, kPar, kPar, qk ? kPar : kRed,
                                     qk ? kRed : kPar};
  return g.generic({lhs, rhs}, init, {lhsMap, rhsMap, outMap}, iters,
                   [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                     return fma(b, l, toAcc(b, l, a[0], acc),
                                toAcc(b, l, a[1], acc), a[2]);
                   });
}

/// Applies `fn` elementwise over a [B, H, Sq, Skv] tensor, with the loop
/// indices available.
Value scoresMap(Builder &g, Value s,
                function_ref<Value(OpBuilder &, Location, Value, ValueRange)>
                    fn) {
  auto ty = cast<RankedTensorType>(s.getType());
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < 4; ++i)
    sizes.push_back(g.dim(s, i));
  AffineMap id = AffineMap::getMultiDimIdentityMap(4, g.b.getContext());
  return g.generic({s}, g.empty(sizes, ty.getElementType()), {id, id},
                   SmallVector<IteratorType>(4, kPar),
                   [&](OpBuilder &b, Location l, ValueRange a) {
                     SmallVector<Value> idx;
                     for (int64_t i = 0; i < 4; ++i)
                       idx.push_back(linalg::IndexOp::create(b, l, i));
                     return fn(b, l, a[0], idx);
                   });
}

/// `fn` applied elementwise to same-shaped `ins` (identity maps).
Value elementwise(Builder &g, ValueRange ins, Type elt,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
  auto ty = cast<RankedTensorType>(ins[0].getType());
  int64_t r = ty.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < r; ++i)
    sizes.push_back(g.dim(ins[0], i));
  AffineMap id = AffineMap::getMultiDimIdentityMap(r, g.b.getContext());
  SmallVector<AffineMap> maps(ins.size() + 1, id);
  return g.generic(ins, g.empty(sizes, elt), maps,
                   SmallVector<IteratorType>(r, kPar),
                   [&](OpBuilder &b, Location l, ValueRange a) {
                     return fn(b, l, a.drop_back());
                   });
}

/// Row statistics over the last dim: sum of f(x) into [lead...].
Value rowSum(Builder &g, Value x,
             function_ref<Value(OpBuilder &, Location, Value)> f) {
  auto ty = cast<RankedTensorType>(x.getType());
  int64_t r = ty.getRank();
  SmallVector<OpFoldResult> rows;
  SmallVector<AffineExpr> rowE;
  for (int64_t i = 0; i < r - 1; ++i) {
    rows.push_back(g.dim(x, i));
    rowE.push_back(g.d(i));
  }
  SmallVector<IteratorType> it(r - 1, kPar);
  it.push_back(kRed);
  AffineMap id = AffineMap::getMultiDimIdentityMap(r, g.b.getContext());
  return g.generic({x}, g.fill(rows, 0.0), {id, g.map(r, rowE)}, it,
                   [&](OpBuilder &b, Location l, ValueRange a) {
                     return arith::AddFOp::create(b, l, a[1], f(b, l, a[0]),
                                                  kReduceFlags)
                         .getResult();
                   });
}

/// Graph-level ops of a transformer block (projections, norms, RoPE, head
/// layout, residual). Returns failure only for a real error.
LogicalResult lowerGraphOp(Operation *op, OpBuilder &ob, bool &handled) {
  handled = true;
  ob.setInsertionPoint(op);
  Location loc = op->getLoc();
  auto resTy = cast<RankedTensorType>(op->getResult(0).getType());
  Type elt = resTy.getElementType();
  Builder g{ob, loc, elt};
  int64_t r = resTy.getRank();
  Value result;
  if (auto lin = dyn_cast<LinearOp>(op)) {
    // y[lead, o] = sum_i x[lead, i] * W[o, i] (+ b[o]); loops (lead, o, i).
    Value x = lin.getInput();
    SmallVector<OpFoldResult> sizes;
    SmallVector<AffineExpr> lead;
    for (int64_t i = 0; i < r - 1; ++i) {
      sizes.push_back(g.dim(x, i));
      lead.push_back(g.d(i));
    }
    sizes.push_back(ob.getIndexAttr(resTy.getDimSize(r - 1)));
    AffineExpr o = g.d(r - 1), in = g.d(r);
    Value init = g.fill(sizes, 0.0);
    if (Value bias = lin.getBias()) {
      AffineMap id = AffineMap::getMultiDimIdentityMap(r, ob.getContext());
      init = g.generic({bias}, init, {g.map(r, {g.d(r - 1)}), id},
                       SmallVector<IteratorType>(r, kPar),
                       [&](OpBuilder &, Location, ValueRange a) {
                         return a[0];
                       });
    }
    SmallVector<AffineExpr> xE(lead), yE(lead);
    xE.push_back(in);
    yE.push_back(o);
    AffineMap wMap = lin.getTransposeWeight() ? g.map(r + 1, {in, o})
                                              : g.map(r + 1, {o, in});
    SmallVector<IteratorType> it(r, kPar);
    it.push_back(kRed);
    result = g.generic({x, lin.getWeight()}, init,
                       {g.map(r + 1, xE), wMap, g.map(r + 1, yE)}, it,
                       [&](OpBuilder &b, Location l, ValueRange a) {
                         return fma(b, l, a[0], a[1], a[2]);
                       });
  } else if (auto rms = dyn_cast<RMSNormOp>(op)) {
    Value x = rms.getInput();
    int64_t n = resTy.getDimSize(r - 1);
    Value ss = rowSum(g, x, [](OpBuilder &b, Location l, Value v) {
      return arith::MulFOp::create(b, l, v, v).getResult();
    });
    double eps = rms.getEpsilon().convertToDouble();
    bool offset = rms.getUnitOffset();
    SmallVector<AffineExpr> rowE;
    for (int64_t i = 0; i < r - 1; ++i)
      rowE.push_back(g.d(i));
    AffineMap id = AffineMap::getMultiDimIdentityMap(r, ob.getContext());
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < r; ++i)
      sizes.push_back(g.dim(x, i));
    result = g.generic(
        {x, ss, rms.getWeight()}, g.empty(sizes, elt),
        {id, g.map(r, rowE), g.map(r, {g.d(r - 1)}), id},
        SmallVector<IteratorType>(r, kPar),
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value mean = arith::DivFOp::create(b, l, a[1],
                                             fconst(b, l, elt, double(n)));
          Value inv = math::RsqrtOp::create(
              b, l, arith::AddFOp::create(b, l, mean, fconst(b, l, elt, eps)));
          Value w = a[2];
          if (offset)
            w = arith::AddFOp::create(b, l, w, fconst(b, l, elt, 1.0));
          return arith::MulFOp::create(
              b, l, arith::MulFOp::create(b, l, a[0], inv), w);
        });
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    Value x = ln.getInput();
    int64_t n = resTy.getDimSize(r - 1);
    Value sum = rowSum(g, x, [](OpBuilder &, Location, Value v) { return v; });
    Value sq = rowSum(g, x, [](OpBuilder &b, Location l, Value v) {
      return arith::MulFOp::create(b, l, v, v).getResult();
    });
    double eps = ln.getEpsilon().convertToDouble();
    SmallVector<AffineExpr> rowE;
    for (int64_t i = 0; i < r - 1; ++i)
      rowE.push_back(g.d(i));
    AffineMap id = AffineMap::getMultiDimIdentityMap(r, ob.getContext());
    AffineMap lastMap = g.map(r, {g.d(r - 1)});
    SmallVector<Value> ins = {x, sum, sq, ln.getWeight()};
    SmallVector<AffineMap> maps = {id, g.map(r, rowE), g.map(r, rowE),
                                   lastMap};
    if (ln.getBias()) {
      ins.push_back(ln.getBias());
      maps.push_back(lastMap);
    }
    maps.push_back(id);
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < r; ++i)
      sizes.push_back(g.dim(x, i));
    bool hasBias = ln.getBias() != nullptr;
    result = g.generic(
        ins, g.empty(sizes, elt), maps, SmallVector<IteratorType>(r, kPar),
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value nn = fconst(b, l, elt, double(n));
          Value mean = arith::DivFOp::create(b, l, a[1], nn);
          Value ex2 = arith::DivFOp::create(b, l, a[2], nn);
          Value var = arith::SubFOp::create(
              b, l, ex2, arith::MulFOp::create(b, l, mean, mean));
          Value inv = math::RsqrtOp::create(
              b, l, arith::AddFOp::create(b, l, var, fconst(b, l, elt, eps)));
          Value y = arith::MulFOp::create(
              b, l, arith::SubFOp::create(b, l, a[0], mean), inv);
          y = arith::MulFOp::create(b, l, y, a[3]);
          if (hasBias)
            y = arith::AddFOp::create(b, l, y, a[4]);
          return y;
        });
  } else if (auto split = dyn_cast<SplitHeadsOp>(op)) {
    // out[b, h, s, d] = x[b, s, h * D + d].
    Value x = split.getInput();
    int64_t d = resTy.getDimSize(3);
    SmallVector<OpFoldResult> sizes = {g.dim(x, 0),
                                       ob.getIndexAttr(resTy.getDimSize(1)),
                                       g.dim(x, 1), ob.getIndexAttr(d)};
    AffineMap id = AffineMap::getMultiDimIdentityMap(4, ob.getContext());
    result = g.generic({x}, g.empty(sizes, elt),
                       {g.map(4, {g.d(0), g.d(2), g.d(1) * d + g.d(3)}), id},
                       SmallVector<IteratorType>(4, kPar),
                       [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  } else if (auto merge = dyn_cast<MergeHeadsOp>(op)) {
    // out[b, s, c] = x[b, c / D, s, c % D].
    Value x = merge.getInput();
    int64_t d = cast<RankedTensorType>(x.getType()).getDimSize(3);
    SmallVector<OpFoldResult> sizes = {g.dim(x, 0), g.dim(x, 2),
                                       ob.getIndexAttr(resTy.getDimSize(2))};
    AffineMap id = AffineMap::getMultiDimIdentityMap(3, ob.getContext());
    result = g.generic(
        {x}, g.empty(sizes, elt),
        {g.map(3, {g.d(0), g.d(2).floorDiv(d), g.d(1), g.d(2) % d}), id},
        SmallVector<IteratorType>(3, kPar),
        [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  } else if (auto rope = dyn_cast<RopeOp>(op)) {
    // Angles in f64 (positions up to 1e6 keep their precision), cos/sin
    // times attention_factor, rotate the pairs, pass features >= rotary_dim.
    Value x = rope.getInput(), pos = rope.getPositions();
    int64_t rd = rope.getRotaryDim(), half = rd / 2;
    std::vector<double> freqs;
    if (std::optional<ArrayRef<double>> f = rope.getInvFreq())
      freqs.assign(f->begin(), f->end());
    else
      for (int64_t i = 0; i < half; ++i)
        freqs.push_back(1.0 / std::pow(rope.getTheta().convertToDouble(),
                                       double(2 * i) / double(rd)));
    Type f64 = ob.getF64Type();
    auto tableTy = RankedTensorType::get({half}, f64);
    Value table = arith::ConstantOp::create(
        ob, loc, tableTy, DenseElementsAttr::get(tableTy, ArrayRef(freqs)));
    double factor = rope.getAttentionFactor().convertToDouble();
    bool interleaved = rope.getInterleaved();
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < 4; ++i)
      sizes.push_back(g.dim(x, i));
    AffineMap id = AffineMap::getMultiDimIdentityMap(4, ob.getContext());
    result = g.generic(
        {x, pos}, g.empty(sizes, elt), {id, g.map(4, {g.d(0), g.d(2)}), id},
        SmallVector<IteratorType>(4, kPar),
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value bi = linalg::IndexOp::create(b, l, 0);
          Value hi = linalg::IndexOp::create(b, l, 1);
          Value si = linalg::IndexOp::create(b, l, 2);
          Value di = linalg::IndexOp::create(b, l, 3);
          Value rdv = iconst(b, l, rd);
          Value rotated = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::slt, di, rdv);
          // Pair index i, partner feature, and whether this is the first
          // (x * cos - partner * sin) or second (x * cos + partner * sin).
          Value i, partner, first;
          if (interleaved) {
            i = arith::DivUIOp::create(b, l, di, iconst(b, l, 2));
            Value rem = arith::RemUIOp::create(b, l, di, iconst(b, l, 2));
            first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, rem,
                                          iconst(b, l, 0));
            partner = arith::SelectOp::create(
                b, l, first, arith::AddIOp::create(b, l, di, iconst(b, l, 1)),
                arith::SubIOp::create(b, l, di, iconst(b, l, 1)));
          } else {
            Value hv = iconst(b, l, half);
            first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, di,
                                          hv);
            i = arith::SelectOp::create(b, l, first, di,
                                        arith::SubIOp::create(b, l, di, hv));
            partner = arith::SelectOp::create(
                b, l, first, arith::AddIOp::create(b, l, di, hv), i);
          }
          // Clamp for the pass-through lanes (the value is not used there).
          i = arith::MinSIOp::create(b, l, i, iconst(b, l, half - 1));
          partner = arith::MinSIOp::create(b, l, partner, iconst(b, l, rd - 1));
          Value freq = tensor::ExtractOp::create(b, l, table, ValueRange{i});
          Value p64 = arith::SIToFPOp::create(b, l, f64, a[1]);
          Value angle = arith::MulFOp::create(b, l, p64, freq);
          Value fac = fconst(b, l, f64, factor);
          Value c = arith::MulFOp::create(b, l, math::CosOp::create(b, l, angle),
                                          fac);
          Value sn = arith::MulFOp::create(
              b, l, math::SinOp::create(b, l, angle), fac);
          c = arith::TruncFOp::create(b, l, elt, c);
          sn = arith::TruncFOp::create(b, l, elt, sn);
          Value other = tensor::ExtractOp::create(b, l, x,
                                                  ValueRange{bi, hi, si,
                                                             partner});
          Value xc = arith::MulFOp::create(b, l, a[0], c);
          Value os = arith::MulFOp::create(b, l, other, sn);
          Value rot = arith::SelectOp::create(
              b, l, first, arith::SubFOp::create(b, l, xc, os),
              arith::AddFOp::create(b, l, xc, os));
          return arith::SelectOp::create(b, l, rotated, rot, a[0]);
        });
  } else if (auto add = dyn_cast<AddOp>(op)) {
    result = elementwise(g, {add.getLhs(), add.getRhs()}, elt,
                         [](OpBuilder &b, Location l, ValueRange a) {
                           return arith::AddFOp::create(b, l, a[0], a[1])
                               .getResult();
                         });
  } else if (auto gate = dyn_cast<SigmoidGateOp>(op)) {
    result = elementwise(
        g, {gate.getInput(), gate.getGate()}, elt,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value one = fconst(b, l, elt, 1.0);
          Value e = math::ExpOp::create(
              b, l, arith::NegFOp::create(b, l, a[1]));
          Value sig = arith::DivFOp::create(
              b, l, one, arith::AddFOp::create(b, l, one, e));
          return arith::MulFOp::create(b, l, a[0], sig);
        });
  } else {
    handled = false;
    return success();
  }
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
  return success();
}

LogicalResult lowerReferenceOp(Operation *op, OpBuilder &ob) {
  ob.setInsertionPoint(op);
  Location loc = op->getLoc();
  auto resTy = cast<RankedTensorType>(op->getResult(0).getType());
  Type elt = resTy.getElementType();
  Builder g{ob, loc, elt};
  Value result;
  if (auto qk = dyn_cast<QKOp>(op)) {
    int64_t group = qk.getQuery().getType().getDimSize(1) /
                    qk.getKey().getType().getDimSize(1);
    SmallVector<OpFoldResult> sizes = {g.dim(qk.getQuery(), 0),
                                       g.dim(qk.getQuery(), 1),
                                       g.dim(qk.getQuery(), 2),
                                       g.dim(qk.getKey(), 2)};
    result = groupedContraction(g, qk.getQuery(), qk.getKey(),
                                g.fill(sizes, 0.0), /*qk=*/true, group);
  } else if (auto pv = dyn_cast<PVOp>(op)) {
    int64_t group = pv.getProbs().getType().getDimSize(1) /
                    pv.getValue().getType().getDimSize(1);
    SmallVector<OpFoldResult> sizes = {
        g.dim(pv.getProbs(), 0), g.dim(pv.getProbs(), 1),
        g.dim(pv.getProbs(), 2), g.dim(pv.getValue(), 3)};
    result = groupedContraction(g, pv.getProbs(), pv.getValue(),
                                g.fill(sizes, 0.0), /*qk=*/false, group);
  } else if (auto sc = dyn_cast<ScaleOp>(op)) {
    ScoreMath m;
    m.scale = sc.getScale().convertToDouble();
    result = elementwise(g, {sc.getInput()}, elt,
                         [&](OpBuilder &b, Location l, ValueRange a) {
                           return m.apply(b, l, a[0], Value(), Value(),
                                          Value(), Value());
                         });
  } else if (auto cap = dyn_cast<SoftcapOp>(op)) {
    ScoreMath m;
    m.softcap = cap.getCap().convertToDouble();
    result = elementwise(g, {cap.getInput()}, elt,
                         [&](OpBuilder &b, Location l, ValueRange a) {
                           return m.apply(b, l, a[0], Value(), Value(),
                                          Value(), Value());
                         });
  } else if (auto rb = dyn_cast<RelativePositionBiasOp>(op)) {
    ScoreMath m;
    m.rel = RelativeBiasAttr::get(op->getContext(), rb.getNumBuckets(),
                                  rb.getMaxDistance(), rb.getBidirectional());
    m.table = rb.getTable();
    // Query row i sits at key position i + kv_len - q_len (bottom-right)
    // or i (top-left).
    Value in = rb.getInput();
    Value offset = iconst(ob, loc, 0);
    if (rb.getAlign() == CausalAlignment::bottom_right) {
      Value kv = tensor::DimOp::create(ob, loc, in, 3);
      Value ql = tensor::DimOp::create(ob, loc, in, 2);
      offset = arith::SubIOp::create(ob, loc, kv, ql);
    }
    result = scoresMap(g, in,
                       [&](OpBuilder &b, Location l, Value x, ValueRange i) {
                         Value qp = arith::AddIOp::create(b, l, i[2], offset);
                         return m.apply(b, l, x, qp, i[3], i[1], Value());
                       });
  } else if (auto mk = dyn_cast<MaskOp>(op)) {
    ScoreMath m;
    m.mask = mk.getKind();
    m.window = mk.getWindow();
    Value in = mk.getInput();
    Value offset = iconst(ob, loc, 0);
    if (mk.getKind() != MaskKind::none &&
        mk.getAlign() == CausalAlignment::bottom_right) {
      Value kv = tensor::DimOp::create(ob, loc, in, 3);
      Value ql = tensor::DimOp::create(ob, loc, in, 2);
      offset = arith::SubIOp::create(ob, loc, kv, ql);
    }
    Value lens = mk.getKvLengths();
    result = scoresMap(g, in, [&](OpBuilder &b, Location l, Value x,
                                  ValueRange i) {
      Value limit;
      if (lens) {
        limit = tensor::ExtractOp::create(b, l, lens, ValueRange{i[0]});
        if (!limit.getType().isIndex())
          limit = arith::IndexCastOp::create(b, l, b.getIndexType(), limit);
      }
      Value qp = arith::AddIOp::create(b, l, i[2], offset);
      return m.apply(b, l, x, qp, i[3], Value(), limit);
    });
  } else if (auto sm = dyn_cast<SoftmaxOp>(op)) {
    if (resTy.getRank() != 4)
      return op->emitError("convert-attn-to-linalg: softmax of rank ")
             << resTy.getRank() << " is not lowered yet";
    Value s = sm.getInput();
    SmallVector<OpFoldResult> rows = {g.dim(s, 0), g.dim(s, 1), g.dim(s, 2)};
    AffineMap id4 = AffineMap::getMultiDimIdentityMap(4, ob.getContext());
    AffineMap row4 = g.map(4, {g.d(0), g.d(1), g.d(2)});
    SmallVector<IteratorType> red = {kPar, kPar, kPar, kRed};
    Value mx = g.generic({s}, g.fill(rows, -INFINITY), {id4, row4}, red,
                         [&](OpBuilder &b, Location l, ValueRange a) {
                           return arith::MaximumFOp::create(b, l, a[0], a[1])
                               .getResult();
                         });
    // e = exp(s - max) (a full row of -inf gives 0s).
    SmallVector<OpFoldResult> sizes = {g.dim(s, 0), g.dim(s, 1), g.dim(s, 2),
                                       g.dim(s, 3)};
    Value e = g.generic({s, mx}, g.empty(sizes, elt), {id4, row4, id4},
                  SmallVector<IteratorType>(4, kPar),
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value d = arith::SubFOp::create(b, l, a[0],
                                                    safeMax(b, l, a[1]));
                    return math::ExpOp::create(b, l, d).getResult();
                  });
    Value sum = g.generic({e}, g.fill(rows, 0.0), {id4, row4}, red,
                          [&](OpBuilder &b, Location l, ValueRange a) {
                            return arith::AddFOp::create(b, l, a[0], a[1],
                                                         kReduceFlags)
                                .getResult();
                          });
    result = g.generic({e, sum}, g.empty(sizes, elt), {id4, row4, id4},
                       SmallVector<IteratorType>(4, kPar),
                       [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                         Value zero = fconst(b, l, elt, 0.0);
                         Value isZero = arith::CmpFOp::create(
                             b, l, arith::CmpFPredicate::OEQ, a[1], zero);
                         Value div = arith::DivFOp::create(b, l, a[0], a[1]);
                         return arith::SelectOp::create(b, l, isZero, zero,
                                                        div);
                       });
  } else {
    return success(); // not an op of this conversion
  }
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
  return success();
}

struct ConvertAttnToLinalgPass
    : attn::impl::ConvertAttnToLinalgPassBase<ConvertAttnToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    int64_t lanes = microKernelLanes;
    if (lanes != 0 && lanes != 4 && lanes != 8 && lanes != 16) {
      emitError(getOperation().getLoc())
          << "convert-attn-to-linalg: micro-kernel-lanes must be 0, 4, 8 or "
             "16, not "
          << lanes;
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<OnlineAttentionOp, OnlineFinalizeOp, QKOp, ScaleOp, SoftcapOp,
              RelativePositionBiasOp, MaskOp, SoftmaxOp, PVOp, LinearOp,
              RMSNormOp, LayerNormOp, RopeOp, SplitHeadsOp, MergeHeadsOp,
              AddOp, SigmoidGateOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (microKernelLanes > 0 && microKernelHandles(op)) {
        op->setAttr(kVectorLanesAttr, b.getI64IntegerAttr(microKernelLanes));
        continue;
      }
      if (auto oa = dyn_cast<OnlineAttentionOp>(op))
        lowerOnlineAttention(oa, b);
      else if (auto fin = dyn_cast<OnlineFinalizeOp>(op))
        lowerOnlineFinalize(fin, b);
      else {
        bool handled = false;
        if (failed(lowerGraphOp(op, b, handled)))
          return signalPassFailure();
        if (!handled && failed(lowerReferenceOp(op, b)))
          return signalPassFailure();
      }
    }
  }
};

} // namespace
