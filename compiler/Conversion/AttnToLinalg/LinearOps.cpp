//===- LinearOps.cpp - linear attention -> linalg -------------------------===//
//
// This file implements the convert-attn-to-linalg pattern of
// attn.gated_delta_rule: the eager recurrence, token by token over whole
// [batch, Hv, ...] tensors, as transformers' torch_recurrent_gated_delta_rule
// runs it. It is the unfused reference path of linear attention (the
// executables' `check` and `bench` compare the chunked kernel with it): an
// algorithm independent of the chunkwise-parallel (WY/UT) form the tiled
// path computes. Per token t, with r = Hv / Hk (value head h reads query/key
// head h floordiv r through the indexing maps, no copy):
//
//   S   = S · exp(g_t)                     [B, Hv, d_k, d_v]
//   kv  = Sᵀ k_t                            [B, Hv, d_v]
//   δ   = β_t · (v_t − kv)
//   S   = S + k_t ⊗ δ
//   o_t = Sᵀ (scale · q_t)
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/AttnToLinalg/LinalgBuilder.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::to_linalg;

namespace {

struct LowerGatedDeltaRule : OpConversionPattern<GatedDeltaRuleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatedDeltaRuleOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType kTy = op.getKey().getType(),
                     vTy = op.getValue().getType();
    Type elt = vTy.getElementType();
    GenericBuilder g{rewriter, loc, elt};
    OpBuilder &b = rewriter;
    int64_t hk = kTy.getDimSize(1), hv = vTy.getDimSize(1), r = hv / hk;
    int64_t dk = kTy.getDimSize(3), dv = vTy.getDimSize(3);
    OpFoldResult batch = g.dim(op.getValue(), 0);
    Value seq = tensor::DimOp::create(b, loc, op.getValue(), 2);
    OpFoldResult H = b.getIndexAttr(hv), DK = b.getIndexAttr(dk),
                 DV = b.getIndexAttr(dv), one = b.getIndexAttr(1),
                 zero = b.getIndexAttr(0);
    SmallVector<OpFoldResult> stateSizes = {batch, H, DK, DV};
    Value state = op.getInitialState();
    if (state)
      state = castToType(b, loc, state, g.tensor(stateSizes, elt));
    else
      state = g.fill(stateSizes, 0.0);
    Value out = castToType(b, loc, op.getOutInit(),
                           g.tensor({batch, H, g.dim(op.getValue(), 2), DV},
                                    elt));
    // One op per statement: the IR must not depend on the host compiler's
    // order of evaluating arguments.
    Value zeroIdx = iconst(b, loc, 0);
    Value oneIdx = iconst(b, loc, 1);
    auto loop = scf::ForOp::create(b, loc, zeroIdx, seq, oneIdx,
                                   ValueRange{state, out});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value t = loop.getInductionVar();
      Value S = loop.getRegionIterArg(0), O = loop.getRegionIterArg(1);
      // Token t of a [B, heads, seq(, d)] operand as [B, heads(, d)].
      auto token = [&](Value x) {
        auto ty = cast<RankedTensorType>(x.getType());
        SmallVector<OpFoldResult> offs = {zero, zero, t},
                                  sizes = {batch, b.getIndexAttr(
                                                      ty.getDimSize(1)),
                                           one};
        SmallVector<OpFoldResult> shape = {batch,
                                           b.getIndexAttr(ty.getDimSize(1))};
        if (ty.getRank() == 4) {
          offs.push_back(zero);
          sizes.push_back(b.getIndexAttr(ty.getDimSize(3)));
          shape.push_back(b.getIndexAttr(ty.getDimSize(3)));
        }
        SmallVector<OpFoldResult> strides(ty.getRank(), one);
        return tensor::ExtractSliceOp::create(b, loc, g.tensor(shape, elt), x,
                                              offs, sizes, strides)
            .getResult();
      };
      Value q = token(op.getQuery()), k = token(op.getKey()),
            v = token(op.getValue()), gt = token(op.getGate()),
            bt = token(op.getBeta());
      AffineExpr B = g.d(0), Hd = g.d(1), I = g.d(2), J = g.d(3);
      AffineExpr Hk = Hd.floorDiv(r);
      // Loop dims (b, h, i, j): state [b, h, i, j], k/q [b, h/r, i],
      // per-head scalars [b, h], per-column vectors [b, h, j].
      AffineMap state4 = g.map(4, {B, Hd, I, J}), head4 = g.map(4, {B, Hd}),
                key4 = g.map(4, {B, Hk, I}), col4 = g.map(4, {B, Hd, J});
      AffineMap head3 = g.map(3, {B, Hd}), col3 = g.map(3, {B, Hd, I});
      SmallVector<IteratorType> par4(4, kPar), par3(3, kPar);
      SmallVector<IteratorType> redI = {kPar, kPar, kRed, kPar};
      SmallVector<OpFoldResult> colSizes = {batch, H, DV};
      // S = S · exp(g_t).
      Value S1 = g.generic({S, gt}, g.empty(stateSizes, elt), {state4, head4,
                                                                state4},
                           par4, [&](OpBuilder &nb, Location nl,
                                     ValueRange a) -> Value {
                             return arith::MulFOp::create(
                                 nb, nl, a[0], math::ExpOp::create(nb, nl,
                                                                   a[1]));
                           });
      // kv[b, h, j] = Σ_i S[b, h, i, j] · k[b, h/r, i].
      Value kv = g.generic({S1, k}, g.fill(colSizes, 0.0),
                           {state4, key4, col4}, redI,
                           [&](OpBuilder &nb, Location nl, ValueRange a) {
                             return fma(nb, nl, a[0], a[1], a[2]);
                           });
      // δ = β · (v − kv).
      Value delta = g.generic(
          {v, kv, bt}, g.empty(colSizes, elt), {col3, col3, head3, col3},
          par3, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
            return arith::MulFOp::create(
                nb, nl, arith::SubFOp::create(nb, nl, a[0], a[1]), a[2]);
          });
      // S = S + k ⊗ δ.
      Value S2 = g.generic({S1, k, delta}, g.empty(stateSizes, elt),
                           {state4, key4, col4, state4}, par4,
                           [&](OpBuilder &nb, Location nl, ValueRange a) {
                             return fma(nb, nl, a[1], a[2], a[0]);
                           });
      // o[b, h, j] = Σ_i S[b, h, i, j] · scale · q[b, h/r, i].
      Value scale = fconst(b, loc, elt, op.getScale().convertToDouble());
      Value o = g.generic(
          {S2, q}, g.fill(colSizes, 0.0), {state4, key4, col4}, redI,
          [&](OpBuilder &nb, Location nl, ValueRange a) {
            Value sq = arith::MulFOp::create(nb, nl, a[1], scale);
            return fma(nb, nl, a[0], sq, a[2]);
          });
      SmallVector<OpFoldResult> offs = {zero, zero, t, zero},
                                sizes = {batch, H, one, DV},
                                strides(4, one);
      Value O2 = tensor::InsertSliceOp::create(b, loc, o, O, offs, sizes,
                                               strides);
      scf::YieldOp::create(b, loc, ValueRange{S2, O2});
    }
    rewriter.replaceOp(
        op, {castToType(b, loc, loop.getResult(1), op.getOutput().getType()),
             castToType(b, loc, loop.getResult(0),
                        op.getFinalState().getType())});
    return success();
  }
};

} // namespace

void mlir::attn::to_linalg::populateLinearOpPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerGatedDeltaRule>(patterns.getContext());
}
