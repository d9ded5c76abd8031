//===- LinearOps.cpp - linear attention -> linalg -------------------------===//
//
// This file implements the convert-attn-to-linalg patterns of linear
// attention: the graph ops of a Gated DeltaNet layer (the causal depthwise
// convolution with its state, the L2 norm, the gate and beta formulas, the
// gated RMSNorm), each a few linalg.generic ops on tensors, and
// attn.gated_delta_rule as its eager recurrence, token by token over whole
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
// With `lengths`, a padding token's gate and beta are taken as 0 (the state
// stays: S · e⁰ + k ⊗ 0) and its output as 0.
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
      // With lengths, token t of a sequence past its length is padding: its
      // gate and beta are 0 (the state stays), its output 0.
      Value lengths = op.getLengths();
      auto maskPadding = [&](Value x) -> Value {
        if (!lengths)
          return x;
        auto ty = cast<RankedTensorType>(x.getType());
        int64_t r = ty.getRank();
        AffineMap id = AffineMap::getMultiDimIdentityMap(r, b.getContext());
        SmallVector<OpFoldResult> sizes;
        for (int64_t i = 0; i < r; ++i)
          sizes.push_back(g.dim(x, i));
        return g.generic(
            {x, lengths}, g.empty(sizes, elt), {id, g.map(r, {g.d(0)}), id},
            SmallVector<IteratorType>(r, kPar),
            [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
              Value ti = arith::IndexCastOp::create(nb, nl,
                                                    a[1].getType(), t);
              Value valid = arith::CmpIOp::create(
                  nb, nl, arith::CmpIPredicate::slt, ti, a[1]);
              Value zeroF = fconst(nb, nl, elt, 0.0);
              return arith::SelectOp::create(nb, nl, valid, a[0], zeroF);
            });
      };
      gt = maskPadding(gt);
      bt = maskPadding(bt);
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
      o = maskPadding(o);
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

/// x / (1 + exp(-x)).
Value silu(OpBuilder &b, Location loc, Value x) {
  Value one = fconst(b, loc, x.getType(), 1.0);
  Value neg = arith::NegFOp::create(b, loc, x);
  Value e = math::ExpOp::create(b, loc, neg);
  Value den = arith::AddFOp::create(b, loc, one, e);
  return arith::DivFOp::create(b, loc, x, den);
}

/// The sizes of `x`, dimension by dimension.
SmallVector<OpFoldResult> sizesOf(GenericBuilder &g, Value x) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0, e = cast<RankedTensorType>(x.getType()).getRank();
       i < e; ++i)
    sizes.push_back(g.dim(x, i));
  return sizes;
}

/// y[b, s, c] = silu(Σ_j w[c, j] · xs[b, s + j, c]) over the padded input
/// xs = stateᵀ ++ x [B, K − 1 + S, C]; the new state is xs's last K − 1
/// rows, transposed back to [B, C, K − 1].
struct LowerCausalConv1d : OpConversionPattern<CausalConv1dOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CausalConv1dOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto xTy = cast<RankedTensorType>(x.getType());
    Type elt = xTy.getElementType();
    GenericBuilder g{rewriter, loc, elt};
    OpBuilder &b = rewriter;
    int64_t c = xTy.getDimSize(2);
    int64_t k = cast<RankedTensorType>(op.getWeight().getType()).getDimSize(1);
    OpFoldResult batch = g.dim(x, 0), C = b.getIndexAttr(c),
                 K1 = b.getIndexAttr(k - 1), zero = b.getIndexAttr(0),
                 one = b.getIndexAttr(1);
    Value seq = tensor::DimOp::create(b, loc, x, 1);
    Value kMinus1 = iconst(b, loc, k - 1);
    Value padded = arith::AddIOp::create(b, loc, seq, kMinus1);
    AffineExpr B = g.d(0), S = g.d(1), Cd = g.d(2), J = g.d(3);
    AffineMap id3 = AffineMap::getMultiDimIdentityMap(3, b.getContext());
    SmallVector<IteratorType> par3(3, kPar);
    // The K − 1 inputs before the sequence, as rows [B, K − 1, C].
    Value head;
    if (Value state = op.getState())
      head = g.generic({state}, g.empty({batch, K1, C}, elt),
                       {g.map(3, {B, Cd, S}), id3}, par3,
                       [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    else
      head = g.fill({batch, K1, C}, 0.0);
    SmallVector<OpFoldResult> strides(3, one);
    Value xs = g.empty({batch, padded, C}, elt);
    xs = tensor::InsertSliceOp::create(b, loc, head, xs,
                                       SmallVector<OpFoldResult>{zero, zero,
                                                                 zero},
                                       SmallVector<OpFoldResult>{batch, K1, C},
                                       strides);
    xs = tensor::InsertSliceOp::create(b, loc, x, xs,
                                       SmallVector<OpFoldResult>{zero, K1,
                                                                 zero},
                                       SmallVector<OpFoldResult>{batch, seq, C},
                                       strides);
    Value acc = g.generic(
        {xs, op.getWeight()}, g.fill({batch, seq, C}, 0.0),
        {g.map(4, {B, S + J, Cd}), g.map(4, {Cd, J}), g.map(4, {B, S, Cd})},
        {kPar, kPar, kPar, kRed},
        [](OpBuilder &nb, Location nl, ValueRange a) {
          return fma(nb, nl, a[0], a[1], a[2]);
        });
    Value y = elementwise(g, {acc}, elt,
                          [](OpBuilder &nb, Location nl, ValueRange a) {
                            return silu(nb, nl, a[0]);
                          });
    Value tail = tensor::ExtractSliceOp::create(
        b, loc, g.tensor({batch, K1, C}, elt), xs,
        SmallVector<OpFoldResult>{zero, seq, zero},
        SmallVector<OpFoldResult>{batch, K1, C}, strides);
    Value state = g.generic({tail}, g.empty({batch, C, K1}, elt),
                            {g.map(3, {B, Cd, S}), id3}, par3,
                            [](OpBuilder &, Location, ValueRange a) {
                              return a[0];
                            });
    rewriter.replaceOp(
        op, {castToType(b, loc, y, op.getResult().getType()),
             castToType(b, loc, state, op.getFinalState().getType())});
    return success();
  }
};

/// g[b, h, s] = −exp(A_log[h]) · softplus(a[b, s, h] + dt_bias[h]) and
/// beta[b, h, s] = sigmoid(b[b, s, h]); softplus as torch's (x for x > 20).
struct LowerGatedDeltaGates : OpConversionPattern<GatedDeltaGatesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatedDeltaGatesOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value a = op.getA();
    auto aTy = cast<RankedTensorType>(a.getType());
    Type elt = aTy.getElementType();
    GenericBuilder g{rewriter, loc, elt};
    SmallVector<OpFoldResult> sizes = {g.dim(a, 0), g.dim(a, 2), g.dim(a, 1)};
    AffineExpr B = g.d(0), H = g.d(1), S = g.d(2);
    AffineMap tok = g.map(3, {B, S, H}), head = g.map(3, {H}),
              out = g.map(3, {B, H, S});
    SmallVector<IteratorType> par3(3, kPar);
    Value gate = g.generic(
        {a, op.getALog(), op.getDtBias()}, g.empty(sizes, elt),
        {tok, head, head, out}, par3,
        [&](OpBuilder &nb, Location nl, ValueRange v) -> Value {
          Value x = arith::AddFOp::create(nb, nl, v[0], v[2]);
          Value e = math::ExpOp::create(nb, nl, x);
          Value log1p = math::Log1pOp::create(nb, nl, e);
          Value big = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT,
                                            x, fconst(nb, nl, elt, 20.0));
          Value sp = arith::SelectOp::create(nb, nl, big, x, log1p);
          Value decay = math::ExpOp::create(nb, nl, v[1]);
          Value prod = arith::MulFOp::create(nb, nl, decay, sp);
          return arith::NegFOp::create(nb, nl, prod);
        });
    Value beta = g.generic(
        {op.getB()}, g.empty(sizes, elt), {tok, out}, par3,
        [&](OpBuilder &nb, Location nl, ValueRange v) -> Value {
          Value one = fconst(nb, nl, elt, 1.0);
          Value neg = arith::NegFOp::create(nb, nl, v[0]);
          Value e = math::ExpOp::create(nb, nl, neg);
          Value den = arith::AddFOp::create(nb, nl, one, e);
          return arith::DivFOp::create(nb, nl, one, den);
        });
    rewriter.replaceOp(op, {castToType(rewriter, loc, gate, op.getGate().getType()),
                            castToType(rewriter, loc, beta,
                                       op.getBeta().getType())});
    return success();
  }
};

} // namespace

namespace mlir {
namespace attn {
namespace to_linalg {

// Found by argument-dependent lookup from LowerToLinalg<OpT>.

static Value lowerOp(L2NormOp op, GenericBuilder &g) {
  Value x = op.getInput();
  auto ty = cast<RankedTensorType>(x.getType());
  Type elt = ty.getElementType();
  int64_t r = ty.getRank();
  Value ss = rowSum(g, x, [](OpBuilder &b, Location l, Value v) {
    return arith::MulFOp::create(b, l, v, v).getResult();
  });
  double eps = op.getEpsilon().convertToDouble();
  SmallVector<AffineExpr> rowE;
  for (int64_t i = 0; i < r - 1; ++i)
    rowE.push_back(g.d(i));
  AffineMap id = AffineMap::getMultiDimIdentityMap(r, g.b.getContext());
  return g.generic({x, ss}, g.empty(sizesOf(g, x), elt),
                   {id, g.map(r, rowE), id}, SmallVector<IteratorType>(r, kPar),
                   [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                     Value sum = arith::AddFOp::create(b, l, a[1],
                                                       fconst(b, l, elt, eps));
                     Value inv = math::RsqrtOp::create(b, l, sum);
                     return arith::MulFOp::create(b, l, a[0], inv);
                   });
}

static Value lowerOp(GatedRMSNormOp op, GenericBuilder &g) {
  Value x = op.getInput();
  auto ty = cast<RankedTensorType>(x.getType());
  Type elt = ty.getElementType();
  int64_t r = ty.getRank(), n = ty.getDimSize(r - 1);
  Value ss = rowSum(g, x, [](OpBuilder &b, Location l, Value v) {
    return arith::MulFOp::create(b, l, v, v).getResult();
  });
  double eps = op.getEpsilon().convertToDouble();
  SmallVector<AffineExpr> rowE;
  for (int64_t i = 0; i < r - 1; ++i)
    rowE.push_back(g.d(i));
  AffineMap id = AffineMap::getMultiDimIdentityMap(r, g.b.getContext());
  return g.generic(
      {x, ss, op.getWeight(), op.getGate()}, g.empty(sizesOf(g, x), elt),
      {id, g.map(r, rowE), g.map(r, {g.d(r - 1)}), id, id},
      SmallVector<IteratorType>(r, kPar),
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value mean =
            arith::DivFOp::create(b, l, a[1], fconst(b, l, elt, double(n)));
        Value sum = arith::AddFOp::create(b, l, mean, fconst(b, l, elt, eps));
        Value inv = math::RsqrtOp::create(b, l, sum);
        Value y = arith::MulFOp::create(b, l, a[0], inv);
        y = arith::MulFOp::create(b, l, y, a[2]);
        Value gate = silu(b, l, a[3]);
        return arith::MulFOp::create(b, l, y, gate);
      });
}

} // namespace to_linalg
} // namespace attn
} // namespace mlir

void mlir::attn::to_linalg::populateLinearOpPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerGatedDeltaRule, LowerCausalConv1d, LowerGatedDeltaGates,
               LowerToLinalg<L2NormOp>, LowerToLinalg<GatedRMSNormOp>>(
      patterns.getContext());
}
