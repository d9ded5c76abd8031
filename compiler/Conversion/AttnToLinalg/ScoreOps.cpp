//===- ScoreOps.cpp - the reference path's score ops -> linalg -----------===//
//
// This file implements the convert-attn-to-linalg patterns of the unfused
// reference path: QKᵀ and P·V with grouped heads, scale, softcap, T5 bias,
// mask and softmax over materialized [batch, heads, q_len, kv_len] scores.
// Masked scores are -inf; softmax of an all -inf row is 0, never NaN.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/AttnToLinalg/LinalgBuilder.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::to_linalg;

namespace mlir {
namespace attn {
namespace to_linalg {

/// The key position of query row 0 of the scores `s` [b, h, q_len, kv_len]:
/// `qPos` when given, kv_len - q_len for bottom-right alignment, else 0 (and
/// 0 when nothing reads positions).
static Value queryOffset(OpBuilder &b, Location loc, Value s, Value qPos,
                         bool positional, CausalAlignment align) {
  if (qPos)
    return qPos;
  if (!positional || align != CausalAlignment::bottom_right)
    return iconst(b, loc, 0);
  Value kv = tensor::DimOp::create(b, loc, s, 3);
  Value ql = tensor::DimOp::create(b, loc, s, 2);
  return arith::SubIOp::create(b, loc, kv, ql);
}

// Found by argument-dependent lookup from LowerToLinalg<OpT>.

static Value lowerOp(QKOp qk, QKOp::Adaptor a, GenericBuilder &g) {

  Value result;
  int64_t group = qk.getQuery().getType().getDimSize(1) /
                  qk.getKey().getType().getDimSize(1);
  SmallVector<OpFoldResult> sizes = {
      g.dim(a.getQuery(), 0), g.dim(a.getQuery(), 1), g.dim(a.getQuery(), 2),
      g.dim(a.getKey(), 2)};
  result = groupedContraction(g, a.getQuery(), a.getKey(), g.fill(sizes, 0.0),
                              /*qk=*/true, group);
  return result;
}

static Value lowerOp(PVOp pv, PVOp::Adaptor a, GenericBuilder &g) {

  Value result;
  int64_t group = pv.getProbs().getType().getDimSize(1) /
                  pv.getValue().getType().getDimSize(1);
  SmallVector<OpFoldResult> sizes = {
      g.dim(a.getProbs(), 0), g.dim(a.getProbs(), 1), g.dim(a.getProbs(), 2),
      g.dim(a.getValue(), 3)};
  result = groupedContraction(g, a.getProbs(), a.getValue(), g.fill(sizes, 0.0),
                              /*qk=*/false, group);
  return result;
}

/// The score transform `m` alone (scale or softcap), elementwise.
static Value scoreMap(GenericBuilder &g, Value input, const ScoreMath &m) {
  Type elt = cast<RankedTensorType>(input.getType()).getElementType();
  return elementwise(g, {input}, elt,
                     [&](OpBuilder &b, Location l, ValueRange a) {
                       return m.apply(b, l, a[0], Value(), Value(), Value(),
                                      Value());
                     });
}

static Value lowerOp(ScaleOp sc, ScaleOp::Adaptor a, GenericBuilder &g) {
  ScoreMath m;
  m.scale = sc.getScale().convertToDouble();
  return scoreMap(g, a.getInput(), m);
}

static Value lowerOp(SoftcapOp cap, SoftcapOp::Adaptor a, GenericBuilder &g) {
  ScoreMath m;
  m.softcap = cap.getCap().convertToDouble();
  return scoreMap(g, a.getInput(), m);
}

static Value lowerOp(RelativePositionBiasOp rb,
                     RelativePositionBiasOp::Adaptor a, GenericBuilder &g) {
  OpBuilder &ob = g.b;
  Location loc = g.loc;
  Operation *op = rb;
  Value result;
  ScoreMath m;
  m.rel = RelativeBiasAttr::get(op->getContext(), rb.getNumBuckets(),
                                rb.getMaxDistance(), rb.getBidirectional());
  m.table = a.getTable();
  Value in = a.getInput();
  Value offset =
      queryOffset(ob, loc, in, a.getQPos(), /*positional=*/true, a.getAlign());
  result = scoresMap(g, in,
                     [&](OpBuilder &b, Location l, Value x, ValueRange i) {
                       Value qp = arith::AddIOp::create(b, l, i[2], offset);
                       return m.apply(b, l, x, qp, i[3], i[1], Value());
                     });
  return result;
}

static Value lowerOp(MaskOp mk, MaskOp::Adaptor a, GenericBuilder &g) {
  OpBuilder &ob = g.b;
  Location loc = g.loc;
  Value result;
  ScoreMath m;
  m.mask = mk.getKind();
  m.window = mk.getWindow();
  Value in = a.getInput();
  Value offset = queryOffset(ob, loc, in, a.getQPos(),
                             mk.getKind() != MaskKind::none, a.getAlign());
  Value lens = a.getKvLengths();
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
  return result;
}

/// Softmax over the last dim of scores `s` [B, H, Sq, Skv], with one more
/// logit per row, `sinks[h]`, when `sinks` is given (its probability
/// dropped). A row of -inf (and no sink) gives 0s.
static Value softmaxRows(Operation *op, Value s, Value sinks,
                         GenericBuilder &g) {
  OpBuilder &ob = g.b;
  auto resTy = cast<RankedTensorType>(op->getResult(0).getType());
  Type elt = resTy.getElementType();
  if (resTy.getRank() != 4) {
    op->emitError("convert-attn-to-linalg: softmax of rank ")
        << resTy.getRank() << " is not lowered yet";
    return Value();
  }
  SmallVector<OpFoldResult> rows = {g.dim(s, 0), g.dim(s, 1), g.dim(s, 2)};
  AffineMap id4 = AffineMap::getMultiDimIdentityMap(4, ob.getContext());
  AffineMap row4 = g.map(4, {g.d(0), g.d(1), g.d(2)});
  SmallVector<IteratorType> red = {kPar, kPar, kPar, kRed};
  Value mx = g.generic({s}, g.fill(rows, -INFINITY), {id4, row4}, red,
                       [&](OpBuilder &b, Location l, ValueRange a) {
                         return arith::MaximumFOp::create(b, l, a[0], a[1])
                             .getResult();
                       });
  Value sumInit = g.fill(rows, 0.0);
  if (sinks) {
    // m = max(m, sink); the sum starts at exp(sink - m).
    AffineMap id3 = AffineMap::getMultiDimIdentityMap(3, ob.getContext());
    AffineMap head3 = g.map(3, {g.d(1)});
    SmallVector<IteratorType> par3(3, kPar);
    mx = g.generic({mx, sinks}, g.empty(rows, g.acc), {id3, head3, id3},
                   par3, [&](OpBuilder &b, Location l, ValueRange a) {
                     return arith::MaximumFOp::create(
                                b, l, a[0], toAcc(b, l, a[1], g.acc))
                         .getResult();
                   });
    sumInit = g.generic({mx, sinks}, g.empty(rows, g.acc), {id3, head3, id3},
                        par3, [&](OpBuilder &b, Location l, ValueRange a) {
                          Value d = arith::SubFOp::create(
                              b, l, toAcc(b, l, a[1], g.acc),
                              safeMax(b, l, a[0]));
                          return math::ExpOp::create(b, l, d).getResult();
                        });
  }
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
  Value sum = g.generic({e}, sumInit, {id4, row4}, red,
                        [&](OpBuilder &b, Location l, ValueRange a) {
                          return arith::AddFOp::create(b, l, a[0], a[1],
                                                       kReduceFlags)
                              .getResult();
                        });
  return g.generic({e, sum}, g.empty(sizes, elt), {id4, row4, id4},
                   SmallVector<IteratorType>(4, kPar),
                   [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                     Value zero = fconst(b, l, elt, 0.0);
                     Value isZero = arith::CmpFOp::create(
                         b, l, arith::CmpFPredicate::OEQ, a[1], zero);
                     Value div = arith::DivFOp::create(b, l, a[0], a[1]);
                     return arith::SelectOp::create(b, l, isZero, zero, div);
                   });
}

static Value lowerOp(SoftmaxOp sm, SoftmaxOp::Adaptor a, GenericBuilder &g) {
  return softmaxRows(sm, a.getInput(), Value(), g);
}

static Value lowerOp(SinkSoftmaxOp sm, SinkSoftmaxOp::Adaptor a,
                     GenericBuilder &g) {
  return softmaxRows(sm, a.getInput(), a.getSinks(), g);
}

} // namespace to_linalg
} // namespace attn
} // namespace mlir

void mlir::attn::to_linalg::populateScoreOpPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerToLinalg<QKOp>,
               LowerToLinalg<PVOp>,
               LowerToLinalg<ScaleOp>,
               LowerToLinalg<SoftcapOp>,
               LowerToLinalg<RelativePositionBiasOp>,
               LowerToLinalg<MaskOp>,
               LowerToLinalg<SoftmaxOp>,
               LowerToLinalg<SinkSoftmaxOp>>(patterns.getContext());
}
