//===- GraphOps.cpp - attn graph-level ops -> linalg ----------------------===//
//
// This file implements the convert-attn-to-linalg patterns of the graph-level
// ops of a transformer block: projections, norms, RoPE, head layout,
// residual and gates, each a few linalg.generic ops on tensors.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/AttnToLinalg/LinalgBuilder.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::to_linalg;

namespace mlir {
namespace attn {
namespace to_linalg {

// Found by argument-dependent lookup from LowerToLinalg<OpT>.

/// y[lead, o] = sum_i x[lead, i] * W[o, i] (+ b[o]) (W[i, o] when
/// `transposed`): one linalg.matmul over x's rows (the leading dims
/// collapsed), transpose-B maps for W [out, in], into the bias broadcast
/// (or zeros). A named op, so that elementwise fusion leaves it whole (a
/// norm fused into it would be recomputed for every output feature) and the
/// CPU pipeline gives it the GEMM kernel.
Value linearOf(GenericBuilder &g, Value x, Value weight, Value bias,
               bool transposed) {
  OpBuilder &ob = g.b;
  SmallVector<ReassociationIndices> re;
  Value rows = asRows(g, x, re);
  OpFoldResult count = g.dim(rows, 0);
  OpFoldResult out = g.dim(weight, transposed ? 1 : 0);
  SmallVector<OpFoldResult> sizes = {count, out};
  Value init = g.fill(sizes, 0.0);
  if (bias) {
    AffineMap id = AffineMap::getMultiDimIdentityMap(2, ob.getContext());
    init = g.generic({bias}, init, {g.map(2, {g.d(1)}), id}, {kPar, kPar},
                     [&](OpBuilder &, Location, ValueRange a) {
                       return a[0];
                     });
  }
  Type resTy = init.getType();
  Value y = transposed
                ? linalg::MatmulOp::create(ob, g.loc, TypeRange{resTy},
                                           ValueRange{rows, weight},
                                           ValueRange{init})
                      .getResult(0)
                : linalg::MatmulTransposeBOp::create(ob, g.loc,
                                                     TypeRange{resTy},
                                                     ValueRange{rows, weight},
                                                     ValueRange{init})
                      .getResult(0);
  return fromRows(g, y, x, re);
}

static Value lowerOp(LinearOp lin, LinearOp::Adaptor a, GenericBuilder &g) {
  return linearOf(g, a.getInput(), a.getWeight(), a.getBias(),
                  lin.getTransposeWeight());
}

/// 0.5 · x · (1 + v): both GELUs' last steps.
static Value halfTimesOnePlus(OpBuilder &b, Location l, Value x, Value v) {
  Type t = x.getType();
  Value one = fconst(b, l, t, 1.0);
  Value onePlus = arith::AddFOp::create(b, l, v, one);
  Value half = fconst(b, l, t, 0.5);
  Value h = arith::MulFOp::create(b, l, x, half);
  return arith::MulFOp::create(b, l, h, onePlus);
}

/// The activation `act` of `x`, as transformers' ACT2FN computes it (one
/// op per statement: the IR must not depend on the host compiler's order of
/// argument evaluation).
Value activate(OpBuilder &b, Location l, Activation act, Value x) {
  Type t = x.getType();
  switch (act) {
  case Activation::silu: {
    Value sig = sigmoid(b, l, x);
    return arith::MulFOp::create(b, l, x, sig);
  }
  case Activation::relu: {
    Value zero = fconst(b, l, t, 0.0);
    return arith::MaximumFOp::create(b, l, x, zero);
  }
  case Activation::relu2: {
    Value zero = fconst(b, l, t, 0.0);
    Value r = arith::MaximumFOp::create(b, l, x, zero);
    return arith::MulFOp::create(b, l, r, r);
  }
  case Activation::gelu: {
    // 0.5 x (1 + erf(x / sqrt(2)))
    Value invSqrt2 = fconst(b, l, t, M_SQRT1_2);
    Value scaled = arith::MulFOp::create(b, l, x, invSqrt2);
    Value e = math::ErfOp::create(b, l, scaled);
    return halfTimesOnePlus(b, l, x, e);
  }
  case Activation::gelu_tanh: {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Value x2 = arith::MulFOp::create(b, l, x, x);
    Value x3 = arith::MulFOp::create(b, l, x2, x);
    Value c = fconst(b, l, t, 0.044715);
    Value cx3 = arith::MulFOp::create(b, l, x3, c);
    Value inner = arith::AddFOp::create(b, l, x, cx3);
    Value k = fconst(b, l, t, std::sqrt(2.0 / M_PI));
    Value arg = arith::MulFOp::create(b, l, inner, k);
    Value th = math::TanhOp::create(b, l, arg);
    return halfTimesOnePlus(b, l, x, th);
  }
  }
  llvm_unreachable("unknown activation");
}

Value gatedNetwork(GenericBuilder &g, Value x, Value gateW, Value upW,
                   Value downW, Activation act) {
  Type elt = cast<RankedTensorType>(x.getType()).getElementType();
  Value gate = linearOf(g, x, gateW, Value(), false);
  Value up = linearOf(g, x, upW, Value(), false);
  Value h = elementwise(g, {gate, up}, elt,
                        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                          Value act0 = activate(b, l, act, a[0]);
                          return arith::MulFOp::create(b, l, act0, a[1]);
                        });
  return linearOf(g, h, downW, Value(), false);
}

static Value lowerOp(GatedMLPOp mlp, GatedMLPOp::Adaptor a, GenericBuilder &g) {
  return gatedNetwork(g, a.getInput(), a.getGateWeight(), a.getUpWeight(),
                      a.getDownWeight(), mlp.getActivation());
}

static Value lowerOp(MLPOp mlp, MLPOp::Adaptor a, GenericBuilder &g) {
  Type elt = mlp.getResult().getType().getElementType();
  bool t = mlp.getTransposeWeight();
  Value up = linearOf(g, a.getInput(), a.getUpWeight(), a.getUpBias(), t);
  Activation act = mlp.getActivation();
  Value h = elementwise(g, {up}, elt,
                        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                          return activate(b, l, act, a[0]);
                        });
  return linearOf(g, h, a.getDownWeight(), a.getDownBias(), t);
}

static Value lowerOp(RMSNormOp rms, RMSNormOp::Adaptor a, GenericBuilder &g) {
  OpBuilder &ob = g.b;
  auto resTy = cast<RankedTensorType>(rms->getResult(0).getType());
  Type elt = resTy.getElementType();
  int64_t r = resTy.getRank();
  Value result;
  Value x = a.getInput();
  int64_t n = resTy.getDimSize(r - 1);
  Value ss = rowSumOfSquares(g, x);
  double eps = rms.getEpsilon().convertToDouble();
  bool offset = rms.getUnitOffset();
  AffineMap id = AffineMap::getMultiDimIdentityMap(r, ob.getContext());
  result = g.generic(
      {x, ss, a.getWeight()}, g.empty(g.sizes(x), elt),
      {id, rowMap(g, r), g.map(r, {g.d(r - 1)}), id},
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
  return result;
}

static Value lowerOp(LayerNormOp ln, LayerNormOp::Adaptor a,
                     GenericBuilder &g) {
  OpBuilder &ob = g.b;
  auto resTy = cast<RankedTensorType>(ln->getResult(0).getType());
  Type elt = resTy.getElementType();
  int64_t r = resTy.getRank();
  Value result;
  Value x = a.getInput();
  int64_t n = resTy.getDimSize(r - 1);
  Value sum = rowSum(g, x, [](OpBuilder &, Location, Value v) { return v; });
  Value sq = rowSumOfSquares(g, x);
  double eps = ln.getEpsilon().convertToDouble();
  AffineMap id = AffineMap::getMultiDimIdentityMap(r, ob.getContext());
  AffineMap lastMap = g.map(r, {g.d(r - 1)});
  SmallVector<Value> ins = {x, sum, sq, a.getWeight()};
  SmallVector<AffineMap> maps = {id, rowMap(g, r), rowMap(g, r), lastMap};
  if (a.getBias()) {
    ins.push_back(a.getBias());
    maps.push_back(lastMap);
  }
  maps.push_back(id);
  bool hasBias = a.getBias() != nullptr;
  result = g.generic(
      ins, g.empty(g.sizes(x), elt), maps, SmallVector<IteratorType>(r, kPar),
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
  return result;
}

static Value lowerOp(SplitHeadsOp split, SplitHeadsOp::Adaptor a,
                     GenericBuilder &g) {
  OpBuilder &ob = g.b;
  auto resTy = cast<RankedTensorType>(split->getResult(0).getType());
  Type elt = resTy.getElementType();
  Value result;
  // out[b, h, s, d] = x[b, s, h * D + d].
  Value x = a.getInput();
  int64_t d = resTy.getDimSize(3);
  SmallVector<OpFoldResult> sizes = {g.dim(x, 0),
                                     ob.getIndexAttr(resTy.getDimSize(1)),
                                     g.dim(x, 1), ob.getIndexAttr(d)};
  AffineMap id = AffineMap::getMultiDimIdentityMap(4, ob.getContext());
  result = g.generic({x}, g.empty(sizes, elt),
                     {g.map(4, {g.d(0), g.d(2), g.d(1) * d + g.d(3)}), id},
                     SmallVector<IteratorType>(4, kPar),
                     [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  return result;
}

static Value lowerOp(MergeHeadsOp merge, MergeHeadsOp::Adaptor a,
                     GenericBuilder &g) {
  OpBuilder &ob = g.b;
  auto resTy = cast<RankedTensorType>(merge->getResult(0).getType());
  Type elt = resTy.getElementType();
  Value result;
  // out[b, s, c] = x[b, c / D, s, c % D].
  Value x = a.getInput();
  int64_t d = cast<RankedTensorType>(x.getType()).getDimSize(3);
  SmallVector<OpFoldResult> sizes = {g.dim(x, 0), g.dim(x, 2),
                                     ob.getIndexAttr(resTy.getDimSize(2))};
  AffineMap id = AffineMap::getMultiDimIdentityMap(3, ob.getContext());
  Value init = g.empty(sizes, elt);
  result = g.generic(
      {x}, init,
      {g.map(3, {g.d(0), g.d(2).floorDiv(d), g.d(1), g.d(2) % d}), id},
      SmallVector<IteratorType>(3, kPar),
      [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  return result;
}

static Value lowerOp(RopeOp rope, RopeOp::Adaptor a, GenericBuilder &g) {
  OpBuilder &ob = g.b;
  Location loc = g.loc;
  auto resTy = cast<RankedTensorType>(rope->getResult(0).getType());
  Type elt = resTy.getElementType();
  Value result;
  // Angles in f64 (positions up to 1e6 keep their precision), cos/sin
  // times attention_factor, rotate the pairs, pass features >= rotary_dim.
  Value x = a.getInput(), pos = a.getPositions();
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
  if (std::optional<ArrayRef<double>> lf = rope.getLongInvFreq()) {
    // LongRoPE: the long table when max(positions) + 1 > long_after, for
    // the whole call (transformers' longrope_frequency_update).
    Value longTable = arith::ConstantOp::create(
        ob, loc, tableTy, DenseElementsAttr::get(tableTy, *lf));
    Type i64 = ob.getI64Type();
    Value lowest = arith::ConstantOp::create(
        ob, loc, ob.getI64IntegerAttr(std::numeric_limits<int64_t>::min()));
    Value init = linalg::FillOp::create(ob, loc, lowest,
                                        g.empty({}, i64))
                     .getResult(0);
    Value maxPos = g.generic(
        {pos}, init, {AffineMap::getMultiDimIdentityMap(2, ob.getContext()),
                      g.map(2, {})},
        {utils::IteratorType::reduction, utils::IteratorType::reduction},
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          return arith::MaxSIOp::create(b, l, a[0], a[1]);
        });
    Value largest = tensor::ExtractOp::create(ob, loc, maxPos, ValueRange{});
    Value after = arith::ConstantOp::create(
        ob, loc, ob.getI64IntegerAttr(*rope.getLongAfter()));
    // max + 1 > long_after, i.e. max >= long_after (no overflow at max).
    Value isLong = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::sge,
                                         largest, after);
    table = arith::SelectOp::create(ob, loc, isLong, longTable, table);
  }
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
          // One op per statement: the IR must not depend on the host
          // compiler's argument evaluation order.
          Value one = iconst(b, l, 1);
          Value next = arith::AddIOp::create(b, l, di, one);
          Value prev = arith::SubIOp::create(b, l, di, one);
          partner = arith::SelectOp::create(b, l, first, next, prev);
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
        Value diff = arith::SubFOp::create(b, l, xc, os);
        Value sum = arith::AddFOp::create(b, l, xc, os);
        Value rot = arith::SelectOp::create(b, l, first, diff, sum);
        return arith::SelectOp::create(b, l, rotated, rot, a[0]);
      });
  return result;
}

static Value lowerOp(TemperatureScaleOp op, TemperatureScaleOp::Adaptor a,
                     GenericBuilder &g) {
  OpBuilder &ob = g.b;
  auto resTy = cast<RankedTensorType>(op->getResult(0).getType());
  Type elt = resTy.getElementType();
  Value x = a.getInput(), pos = a.getPositions();
  int64_t floorScale = op.getFloorScale();
  double attnScale = op.getAttnScale().convertToDouble();
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < 4; ++i)
    sizes.push_back(g.dim(x, i));
  AffineMap id = AffineMap::getMultiDimIdentityMap(4, ob.getContext());
  Type f64 = ob.getF64Type();
  return g.generic(
      {x, pos}, g.empty(sizes, elt), {id, g.map(4, {g.d(0), g.d(2)}), id},
      SmallVector<IteratorType>(4, kPar),
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        // log1p(floor((p + 1) / floor_scale)) * attn_scale + 1, in f64.
        Value p = a[1];
        Type it = p.getType();
        Value one = arith::ConstantOp::create(b, l, IntegerAttr::get(it, 1));
        Value fs =
            arith::ConstantOp::create(b, l, IntegerAttr::get(it, floorScale));
        Value q = arith::FloorDivSIOp::create(
            b, l, arith::AddIOp::create(b, l, p, one), fs);
        Value qf = arith::SIToFPOp::create(b, l, f64, q);
        Value t = math::Log1pOp::create(b, l, qf);
        t = arith::MulFOp::create(b, l, t, fconst(b, l, f64, attnScale));
        t = arith::AddFOp::create(b, l, t, fconst(b, l, f64, 1.0));
        t = arith::TruncFOp::create(b, l, elt, t);
        return arith::MulFOp::create(b, l, a[0], t);
      });
}

static Value lowerOp(AddOp add, AddOp::Adaptor a, GenericBuilder &g) {
  auto resTy = cast<RankedTensorType>(add->getResult(0).getType());
  Type elt = resTy.getElementType();
  Value result;
  result = elementwise(g, {a.getLhs(), a.getRhs()}, elt,
                       [](OpBuilder &b, Location l, ValueRange a) {
                         return arith::AddFOp::create(b, l, a[0], a[1])
                             .getResult();
                       });
  return result;
}

static Value lowerOp(SigmoidGateOp gate, SigmoidGateOp::Adaptor a,
                     GenericBuilder &g) {
  auto resTy = cast<RankedTensorType>(gate->getResult(0).getType());
  Type elt = resTy.getElementType();
  Value result;
  result = elementwise(g, {a.getInput(), a.getGate()}, elt,
                       [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                         Value sig = sigmoid(b, l, a[1]);
                         return arith::MulFOp::create(b, l, a[0], sig);
                       });
  return result;
}

} // namespace to_linalg
} // namespace attn
} // namespace mlir

void mlir::attn::to_linalg::populateGraphOpPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerToLinalg<LinearOp>,
               LowerToLinalg<RMSNormOp>,
               LowerToLinalg<LayerNormOp>,
               LowerToLinalg<SplitHeadsOp>,
               LowerToLinalg<MergeHeadsOp>,
               LowerToLinalg<RopeOp>,
               LowerToLinalg<TemperatureScaleOp>,
               LowerToLinalg<AddOp>,
               LowerToLinalg<SigmoidGateOp>, LowerToLinalg<GatedMLPOp>,
               LowerToLinalg<MLPOp>>(patterns.getContext());
}
