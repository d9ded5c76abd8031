//===- LinalgBuilder.cpp - helpers of convert-attn-to-linalg --------------===//
//
// This file implements the helpers the convert-attn-to-linalg patterns
// share: T5 buckets, the score transform, grouped contractions and the
// row/elementwise maps over score tensors.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/AttnToLinalg/LinalgBuilder.h"

#include <cmath>

namespace mlir {
namespace attn {
namespace to_linalg {

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


Value ScoreMath::apply(OpBuilder &b, Location loc, Value s, Value qPos, Value kPos,
            Value head, Value kvLimit) const {
  Type t = s.getType();
  // A scale of 1 folds away (arith.mulf x, 1.0 is x).
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
  if (mask == MaskKind::chunked) {
    // The key in the query's chunk: j >= q - (q mod chunk), the mod
    // non-negative (with j <= q above, the same chunk).
    Value c = iconst(b, loc, *window);
    Value abs = qPos;
    if (origin) // key 0 is the sequence's token `origin`
      abs = arith::AddIOp::create(b, loc, qPos, origin);
    Value rem = arith::RemSIOp::create(b, loc, abs, c);
    Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rem,
                                      iconst(b, loc, 0));
    Value fixed = arith::AddIOp::create(b, loc, rem, c);
    rem = arith::SelectOp::create(b, loc, neg, fixed, rem);
    Value start = arith::SubIOp::create(b, loc, qPos, rem);
    both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, kPos,
                               start));
  }
  if (kvLimit)
    both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, kPos,
                               kvLimit));
  if (visible)
    s = arith::SelectOp::create(b, loc, visible, s, negInf(b, loc, t));
  return s;
}

Value safeMax(OpBuilder &b, Location loc, Value m) {
  Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                      negInf(b, loc, m.getType()));
  return arith::SelectOp::create(b, loc, isInf,
                                 fconst(b, loc, m.getType(), 0.0), m);
}


/// QKᵀ or P·V with grouped heads: out[b,h,i,x] += a[b,h,i,r] * c[b,h/G,.,.]
/// (qk: r = d, c = k[j=x, d]; pv: r = j, c = v[j, x]). The innermost loop
/// walks contiguous memory: d for QKᵀ, x (the value dim) for P·V.
Value groupedContraction(GenericBuilder &g, Value lhs, Value rhs, Value init,
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
                     Value x = toAcc(b, l, a[0], acc);
                     Value y = toAcc(b, l, a[1], acc);
                     return fma(b, l, x, y, a[2]);
                   });
}

/// Applies `fn` elementwise over a [B, H, Sq, Skv] tensor, with the loop
/// indices available.
Value scoresMap(GenericBuilder &g, Value s,
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
Value elementwise(GenericBuilder &g, ValueRange ins, Type elt,
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
Value rowSum(GenericBuilder &g, Value x,
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

Value rowSumOfSquares(GenericBuilder &g, Value x) {
  return rowSum(g, x, [](OpBuilder &b, Location l, Value v) {
    return arith::MulFOp::create(b, l, v, v).getResult();
  });
}

AffineMap rowMap(GenericBuilder &g, int64_t r) {
  SmallVector<AffineExpr> rowE;
  for (int64_t i = 0; i < r - 1; ++i)
    rowE.push_back(g.d(i));
  return g.map(r, rowE);
}

Value asRows(GenericBuilder &g, Value x,
             SmallVector<ReassociationIndices> &re) {
  auto xTy = cast<RankedTensorType>(x.getType());
  int64_t r = xTy.getRank();
  re.clear();
  if (r == 2)
    return x;
  if (r == 1) {
    re = {{0, 1}};
    OpFoldResult n = g.dim(x, 0);
    auto t = RankedTensorType::get({1, xTy.getDimSize(0)},
                                   xTy.getElementType());
    return tensor::ExpandShapeOp::create(
        g.b, g.loc, t, x, re,
        SmallVector<OpFoldResult>{g.b.getIndexAttr(1), n});
  }
  ReassociationIndices lead;
  for (int64_t i = 0; i < r - 1; ++i)
    lead.push_back(i);
  re = {lead, {r - 1}};
  return tensor::CollapseShapeOp::create(g.b, g.loc, x, re);
}

Value fromRows(GenericBuilder &g, Value rows, Value like,
               ArrayRef<ReassociationIndices> re) {
  if (re.empty())
    return rows;
  auto likeTy = cast<RankedTensorType>(like.getType());
  auto rowsTy = cast<RankedTensorType>(rows.getType());
  int64_t r = likeTy.getRank();
  SmallVector<int64_t> shape(likeTy.getShape().drop_back());
  shape.push_back(rowsTy.getDimSize(1));
  auto t = RankedTensorType::get(shape, rowsTy.getElementType());
  if (r == 1)
    return tensor::CollapseShapeOp::create(g.b, g.loc, t, rows, re);
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < r - 1; ++i)
    sizes.push_back(g.dim(like, i));
  sizes.push_back(g.dim(rows, 1));
  return tensor::ExpandShapeOp::create(g.b, g.loc, t, rows, re, sizes);
}

} // namespace to_linalg
} // namespace attn
} // namespace mlir
