//===- TiledOps.cpp - attn tiled-form ops -> linalg -----------------------===//
//
// This file implements the convert-attn-to-linalg patterns of the tiled
// form: the online-softmax step (attn.online_attention) and its
// finalization, each a few linalg.generic ops on tensors computing in f32 (or
// f64). Masked scores are -inf. A row whose keys are all masked keeps
// max = -inf; its exponent shift uses 0 instead (exp(-inf - 0) = 0), so its
// sum stays 0 and it finalizes to 0 rather than NaN.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/AttnToLinalg/LinalgBuilder.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::to_linalg;

namespace {

/// The online-softmax step as linalg.generic ops: scores, row max, rescale,
/// exp, row sum, P·V. Returns (new acc, new max, new sum).
/// The index space of an online_attention tile on linalg: rows [lead...,
/// M] of the query, N keys; loop dims lead..., m, n, d.
struct OnlineDims {
  int64_t r, lead;
  unsigned mDim, nDim, dDim;
  SmallVector<OpFoldResult> rows, sSizes; ///< [lead..., M], [lead..., M, N]
  SmallVector<AffineExpr> rowE, sE;       ///< (lead..., m), (lead..., m, n)

  OnlineDims(OnlineAttentionOp::Adaptor op, Value k, GenericBuilder &g) {
    Value q = op.getQuery();
    r = cast<ShapedType>(q.getType()).getRank();
    lead = r - 2;
    for (int64_t i = 0; i < r - 1; ++i)
      rows.push_back(g.dim(q, i));
    sSizes = rows;
    sSizes.push_back(g.dim(k, 0));
    mDim = lead;
    nDim = lead + 1;
    dDim = lead + 2;
    for (unsigned i = 0; i <= mDim; ++i)
      rowE.push_back(g.d(i));
    sE = rowE;
    sE.push_back(g.d(nDim));
  }
};

/// The tile's scores: S = Q · Kᵀ, then scale, softcap, relative bias and
/// the position mask.
Value onlineScores(OnlineAttentionOp::Adaptor op, Value k, GenericBuilder &g,
                   const OnlineDims &dm, Type acc) {
  Value q = op.getQuery();
  SmallVector<AffineExpr> qE(dm.rowE);
  qE.push_back(g.d(dm.dDim));
  SmallVector<IteratorType> it(dm.lead + 2, kPar);
  it.push_back(kRed);
  Value s = g.generic(
      {q, k}, g.fill(dm.sSizes, 0.0),
      {g.map(dm.dDim + 1, qE), g.map(dm.dDim + 1, {g.d(dm.nDim), g.d(dm.dDim)}),
       g.map(dm.dDim + 1, dm.sE)},
      it, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value x = toAcc(b, l, a[0], acc);
        Value y = toAcc(b, l, a[1], acc);
        return fma(b, l, x, y, a[2]);
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
  math.origin = op.getRangeStart();
  Value qPos = op.getQPos(), kPos = op.getKvPos(),
        headOff = op.getHeadOffset();
  unsigned nS = dm.lead + 2;
  SmallVector<IteratorType> par(nS, kPar);
  return g.generic({s}, g.empty(dm.sSizes, acc),
                   {g.map(nS, dm.sE), g.map(nS, dm.sE)}, par,
                   [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                     Value m = linalg::IndexOp::create(b, l, dm.mDim);
                     Value nn = linalg::IndexOp::create(b, l, dm.nDim);
                     Value qp = arith::AddIOp::create(b, l, qPos, m);
                     Value kp = arith::AddIOp::create(b, l, kPos, nn);
                     Value head;
                     if (math.rel) {
                       Value h = linalg::IndexOp::create(b, l, 0);
                       head = arith::AddIOp::create(b, l, headOff, h);
                     }
                     return math.apply(b, l, a[0], qp, kp, head, Value());
                   });
}

/// A paged tile's keys (or values) as a tile [num_keys, d]: key n is row
/// (kv_pos + n) % P of page pages[(kv_pos + n) / P - kv_pos / P] of `pool`
/// [num_pages, P, d].
Value gatherPages(OpBuilder &b, Location loc, OnlineAttentionOp::Adaptor op,
                  Value pool) {
  auto ty = cast<RankedTensorType>(pool.getType());
  Value pageSize = tensor::DimOp::create(b, loc, pool, 1);
  Value r0 = arith::RemSIOp::create(b, loc, op.getKvPos(), pageSize);
  SmallVector<Value> dyn = {op.getNumKeys()};
  if (ty.isDynamicDim(2))
    dyn.push_back(tensor::DimOp::create(b, loc, pool, 2));
  auto tileTy = RankedTensorType::get({ShapedType::kDynamic, ty.getDimSize(2)},
                                      ty.getElementType());
  return tensor::GenerateOp::create(
      b, loc, tileTy, dyn,
      [&](OpBuilder &nb, Location l, ValueRange ix) {
        Value pos = arith::AddIOp::create(nb, l, r0, ix[0]);
        Value slot = arith::DivSIOp::create(nb, l, pos, pageSize);
        Value row = arith::RemSIOp::create(nb, l, pos, pageSize);
        Value page =
            tensor::ExtractOp::create(nb, l, op.getPages(), ValueRange{slot});
        if (!page.getType().isIndex())
          page = arith::IndexCastOp::create(nb, l, nb.getIndexType(), page);
        Value x = tensor::ExtractOp::create(nb, l, pool,
                                            ValueRange{page, row, ix[1]});
        tensor::YieldOp::create(nb, l, x);
      });
}

SmallVector<Value> lowerOnlineAttention(OnlineAttentionOp op,
                                        OnlineAttentionOp::Adaptor a,
                                        OpBuilder &ob) {
  Type acc = cast<ShapedType>(op.getAcc().getType()).getElementType();
  GenericBuilder g{ob, op.getLoc(), acc};
  Value k = a.getKey(), v = a.getValue();
  if (op.isPaged()) {
    k = gatherPages(ob, op.getLoc(), a, k);
    v = gatherPages(ob, op.getLoc(), a, v);
  }
  OnlineDims dm(a, k, g);
  int64_t r = dm.r, lead = dm.lead;
  unsigned nDim = dm.nDim;
  const SmallVector<OpFoldResult> &rows = dm.rows, &sSizes = dm.sSizes;
  const SmallVector<AffineExpr> &rowE = dm.rowE, &sE = dm.sE;
  Value s = onlineScores(a, k, g, dm, acc);
  unsigned nS = lead + 2;
  SmallVector<IteratorType> par(nS, kPar);

  // New row max.
  SmallVector<IteratorType> redN(lead + 1, kPar);
  redN.push_back(kRed);
  AffineMap sMap = g.map(nS, sE), rowMap = g.map(nS, rowE);
  Value newMax = g.generic({s}, a.getMax(), {sMap, rowMap}, redN,
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
  Value alpha =
      g.generic({a.getMax(), newMax}, g.empty(rows, acc), {rowId, rowId, rowId},
                parR, [&](OpBuilder &b, Location l, ValueRange a) {
                  Value diff =
                      arith::SubFOp::create(b, l, a[0], safeMax(b, l, a[1]));
                  return math::ExpOp::create(b, l, diff).getResult();
                });
  // sum' = sum · alpha + rowsum(p).
  Value sumScaled =
      g.generic({a.getSum(), alpha}, g.empty(rows, acc), {rowId, rowId, rowId},
                parR, [&](OpBuilder &b, Location l, ValueRange a) {
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
  accSizes.push_back(g.dim(a.getAcc(), r - 1));
  AffineMap accId = AffineMap::getMultiDimIdentityMap(r, ob.getContext());
  SmallVector<IteratorType> parA(r, kPar);
  Value accScaled =
      g.generic({a.getAcc(), alpha}, g.empty(accSizes, acc),
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
  return {newAcc, newMax, newSum};
}

/// acc / sum per row, 0 where sum is 0 (a row that saw no key).
Value lowerOnlineFinalize(OnlineFinalizeOp op, OnlineFinalizeOp::Adaptor a,
                          OpBuilder &ob) {
  Type acc = cast<ShapedType>(op.getAcc().getType()).getElementType();
  GenericBuilder g{ob, op.getLoc(), acc};
  RankedTensorType outTy = op.getType();
  int64_t r = outTy.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(r, ob.getContext());
  SmallVector<AffineExpr> rowE;
  for (int64_t i = 0; i < r - 1; ++i)
    rowE.push_back(g.d(i));
  Type outElt = outTy.getElementType();
  Value out = g.generic(
      {a.getAcc(), a.getSum()}, a.getInit(), {id, g.map(r, rowE), id},
      SmallVector<IteratorType>(r, kPar),
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
  return out;
}

struct OnlineAttentionLowering : OpConversionPattern<OnlineAttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OnlineAttentionOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> state = lowerOnlineAttention(op, a, rewriter);
    for (auto [value, result] : llvm::zip(state, op.getResults()))
      value = castToType(rewriter, op.getLoc(), value, result.getType());
    rewriter.replaceOp(op, state);
    return success();
  }
};

struct OnlineFinalizeLowering : OpConversionPattern<OnlineFinalizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OnlineFinalizeOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, castToType(rewriter, op.getLoc(),
                                      lowerOnlineFinalize(op, a, rewriter),
                                      op.getType()));
    return success();
  }
};

} // namespace

void mlir::attn::to_linalg::populateTiledOpPatterns(
    RewritePatternSet &patterns) {
  patterns.add<OnlineAttentionLowering, OnlineFinalizeLowering>(
      patterns.getContext());
}
