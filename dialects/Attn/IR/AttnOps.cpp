//===- AttnOps.cpp - attn dialect operations ------------------------------===//
//
// This file implements the verifiers of the `attn` graph operations (the
// fused and tiled ones are in AttnFusedOps.cpp, the checks they share in
// AttnVerify.cpp) and holds the generated op definitions. Types already
// say "ranked float tensor"; the verifiers check what they cannot: ranks,
// matching dims, head-count divisibility, static head counts and head dims,
// element types and attribute ranges. Messages name the operand and the dim.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/IR/AttnOps.h"
#include "dialects/Attn/IR/AttnVerify.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/ADT/SmallString.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::verify;

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  RankedTensorType x = getInput().getType(), w = getWeight().getType(),
                   y = getResult().getType();
  if (x.getRank() < 1)
    return emitOpError() << "expects an input of rank >= 1";
  if (w.getRank() != 2)
    return emitOpError() << "expects a weight of rank 2 ([out_features, "
                            "in_features]), got rank "
                         << w.getRank();
  if (y.getRank() != x.getRank())
    return emitOpError() << "expects the result rank (" << y.getRank()
                         << ") to equal the input rank (" << x.getRank()
                         << ")";
  int64_t last = x.getRank() - 1;
  unsigned outDim = getOutFeaturesDim(), inDim = 1 - outDim;
  if (failed(expectDimsAgree(*this, w, inDim, "weight in_features", x, last,
                             "the input's last dim")) ||
      failed(expectDimsAgree(*this, w, outDim, "weight out_features", y, last,
                             "the result's last dim")))
    return failure();
  for (int64_t i = 0; i < last; ++i)
    if (failed(expectDimsAgree(*this, x, i, "input dim " + std::to_string(i),
                               y, i, "result dim " + std::to_string(i))))
      return failure();
  if (Value b = getBias()) {
    ShapedType bt = tensorOf(b);
    if (bt.getRank() != 1)
      return emitOpError() << "expects a bias of rank 1, got rank "
                           << bt.getRank();
    if (failed(expectDimsAgree(*this, bt, 0, "bias size", w, outDim,
                               "weight out_features")))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Feed-forward networks
//===----------------------------------------------------------------------===//

/// The checks both feed-forward ops share: an input of rank >= 1 and a
/// result of its type; each weight of rank 2 whose `hidden` dim is the
/// input's last dim and whose other dim is the intermediate size of the
/// first one; each bias of rank 1 and its weight's output size.
static LogicalResult
verifyFeedForward(Operation *op, Value input, Value result,
                  ArrayRef<std::pair<Value, const char *>> weights,
                  ArrayRef<unsigned> hiddenDims,
                  ArrayRef<std::pair<Value, unsigned>> biases) {
  auto x = cast<RankedTensorType>(input.getType());
  if (x.getRank() < 1)
    return op->emitOpError() << "expects an input of rank >= 1";
  if (result.getType() != input.getType())
    return op->emitOpError()
           << "expects the result type to equal the input type";
  for (auto [w, name] : weights)
    if (tensorOf(w).getRank() != 2)
      return op->emitOpError() << "expects " << name << " of rank 2, got rank "
                               << tensorOf(w).getRank();
  int64_t last = x.getRank() - 1;
  ShapedType first = tensorOf(weights[0].first);
  unsigned firstInter = 1 - hiddenDims[0];
  for (auto [i, entry] : llvm::enumerate(weights)) {
    auto [w, name] = entry;
    unsigned h = hiddenDims[i];
    if (failed(expectDimsAgree(op, tensorOf(w), h,
                               std::string(name) + " hidden dim", x, last,
                               "the input's last dim")) ||
        failed(expectDimsAgree(op, tensorOf(w), 1 - h,
                               std::string(name) + " intermediate dim", first,
                               firstInter,
                               std::string(weights[0].second) +
                                   " intermediate dim")))
      return failure();
  }
  for (auto [b, weightIndex] : biases) {
    if (!b)
      continue;
    ShapedType bt = tensorOf(b);
    if (bt.getRank() != 1)
      return op->emitOpError()
             << "expects a bias of rank 1, got rank " << bt.getRank();
    // The output dim of a weight: its intermediate dim for the first
    // (up) weight, its hidden dim for the last (down) one.
    unsigned h = hiddenDims[weightIndex];
    unsigned outDim = weightIndex == 0 ? 1 - h : h;
    if (failed(expectDimsAgree(op, bt, 0, "bias size",
                               tensorOf(weights[weightIndex].first), outDim,
                               std::string(weights[weightIndex].second) +
                                   " output size")))
      return failure();
  }
  return success();
}

LogicalResult GatedMLPOp::verify() {
  return verifyFeedForward(*this, getInput(), getResult(),
                           {{getGateWeight(), "gate_weight"},
                            {getUpWeight(), "up_weight"},
                            {getDownWeight(), "down_weight"}},
                           {1, 1, 0}, {});
}

LogicalResult MLPOp::verify() {
  // [out, in] as stored by nn.Linear, [in, out] with transpose_weight.
  unsigned t = getTransposeWeight() ? 1 : 0;
  return verifyFeedForward(*this, getInput(), getResult(),
                           {{getUpWeight(), "up_weight"},
                            {getDownWeight(), "down_weight"}},
                           {1 - t, t}, {{getUpBias(), 0}, {getDownBias(), 1}});
}

LogicalResult MoEOp::verify() {
  auto x = getInput().getType();
  if (x.getRank() < 1)
    return emitOpError() << "expects an input of rank >= 1";
  if (getResult().getType() != x)
    return emitOpError() << "expects the result type to equal the input type";
  int64_t last = x.getRank() - 1;
  ShapedType router = tensorOf(getRouterWeight());
  if (router.getRank() != 2)
    return emitOpError() << "expects router_weight of rank 2 ([experts, "
                            "hidden]), got rank "
                         << router.getRank();
  if (failed(expectDimsAgree(*this, router, 1, "router_weight hidden dim", x,
                             last, "the input's last dim")))
    return failure();
  // Plain experts (no gate weight): the up weight stands in for the gate's
  // shape checks.
  bool gated = bool(getExpertGateWeight());
  ShapedType u = tensorOf(getExpertUpWeight()),
             d = tensorOf(getExpertDownWeight()),
             g = gated ? tensorOf(getExpertGateWeight()) : u;
  for (auto [t, name] : {std::pair<ShapedType, const char *>{
                             g, "expert_gate_weight"},
                         {u, "expert_up_weight"},
                         {d, "expert_down_weight"}})
    if (t.getRank() != 3)
      return emitOpError() << "expects " << name
                           << " of rank 3 ([experts, ., .]), got rank "
                           << t.getRank();
  // [E, I, H], [E, I, H], [E, H, I].
  if (failed(expectDimsAgree(*this, g, 0, "expert_gate_weight experts",
                             router, 0, "router_weight experts")) ||
      failed(expectDimsAgree(*this, u, 0, "expert_up_weight experts", router,
                             0, "router_weight experts")) ||
      failed(expectDimsAgree(*this, d, 0, "expert_down_weight experts",
                             router, 0, "router_weight experts")) ||
      failed(expectDimsAgree(*this, g, 2, "expert_gate_weight hidden dim", x,
                             last, "the input's last dim")) ||
      failed(expectDimsAgree(*this, u, 2, "expert_up_weight hidden dim", x,
                             last, "the input's last dim")) ||
      failed(expectDimsAgree(*this, d, 1, "expert_down_weight hidden dim", x,
                             last, "the input's last dim")) ||
      failed(expectDimsAgree(*this, u, 1, "expert_up_weight intermediate dim",
                             g, 1, "expert_gate_weight intermediate dim")) ||
      failed(expectDimsAgree(*this, d, 2,
                             "expert_down_weight intermediate dim", g, 1,
                             "expert_gate_weight intermediate dim")))
    return failure();
  if (!gated && (getExpertGateBias() || getSwigluLimit()))
    return emitOpError() << "expects gated experts (gate, up, down) with "
                            "expert_biases or swiglu_limit";
  int64_t k = getTopK();
  if (k < 1 || (!router.isDynamicDim(0) && k > router.getDimSize(0)))
    return emitOpError() << "expects top_k in [1, experts = "
                         << router.getDimSize(0) << "], got " << k;
  if (Value bias = getScoreBias())
    if (failed(expectShape(*this, tensorOf(bias), {router.getDimSize(0)},
                           "a score_bias [experts]")))
      return failure();
  if (Value bias = getRouterBias())
    if (failed(expectShape(*this, tensorOf(bias), {router.getDimSize(0)},
                           "a router_bias [experts]")))
      return failure();
  if (bool(getExpertGateBias()) != bool(getExpertUpBias()) ||
      bool(getExpertGateBias()) != bool(getExpertDownBias()))
    return emitOpError() << "expects the three expert biases together";
  if (getExpertGateBias() &&
      (failed(expectShape(*this, tensorOf(getExpertGateBias()),
                          {g.getDimSize(0), g.getDimSize(1)},
                          "an expert_gate_bias [experts, intermediate]")) ||
       failed(expectShape(*this, tensorOf(getExpertUpBias()),
                          {g.getDimSize(0), g.getDimSize(1)},
                          "an expert_up_bias [experts, intermediate]")) ||
       failed(expectShape(*this, tensorOf(getExpertDownBias()),
                          {d.getDimSize(0), d.getDimSize(1)},
                          "an expert_down_bias [experts, hidden]"))))
    return failure();
  if (std::optional<APFloat> limit = getSwigluLimit())
    if (failed(verifyPositiveFinite(*this, limit->convertToDouble(),
                                    "swiglu_limit")) ||
        failed(verifyPositiveFinite(
            *this, getSwigluAlpha().convertToDouble(), "swiglu_alpha")))
      return failure();
  if (failed(expectStatic(*this, router, 0, "router_weight experts")))
    return failure();
  int64_t experts = router.getDimSize(0), groups = getNumGroups(),
          kept = getTopkGroups();
  if (groups < 1 || experts % groups != 0)
    return emitOpError() << "expects num_groups to divide the experts ("
                         << experts << "), got " << groups;
  if (kept < 1 || kept > groups)
    return emitOpError() << "expects topk_groups in [1, num_groups = "
                         << groups << "], got " << kept;
  if (groups > 1 && getGroupScore() == GroupScore::top2_sum &&
      experts / groups < 2)
    return emitOpError() << "expects groups of at least 2 experts with "
                            "group_score top2_sum, got "
                         << experts / groups;
  if (groups > 1 && k > experts / groups * kept)
    return emitOpError() << "expects top_k (" << k
                         << ") at most the experts of the kept groups ("
                         << experts / groups * kept << ")";
  double scale = getRoutedScalingFactor().convertToDouble(),
         eps = getNormTopkEpsilon().convertToDouble();
  if (!std::isfinite(scale) || scale <= 0)
    return emitOpError() << "expects a positive finite "
                            "routed_scaling_factor, got "
                         << scale;
  if (!std::isfinite(eps) || eps < 0)
    return emitOpError() << "expects a finite norm_topk_epsilon >= 0, got "
                         << eps;
  Value shared[] = {getSharedGateWeight(), getSharedUpWeight(),
                    getSharedDownWeight()};
  if (!shared[1] && !shared[2]) {
    if (shared[0])
      return emitOpError() << "expects shared_up_weight and "
                              "shared_down_weight with shared_gate_weight";
    if (getSharedExpertGateWeight())
      return emitOpError() << "expects shared(...) with a shared_gate(...)";
    return success();
  }
  if (!shared[1] || !shared[2])
    return emitOpError() << "expects shared_up_weight and shared_down_weight "
                            "together";
  // A gated shared expert (gate, up, down) or a plain one (up, down).
  const char *sharedNames[] = {"shared_gate_weight", "shared_up_weight",
                               "shared_down_weight"};
  for (auto [v, name] : llvm::zip(shared, sharedNames))
    if (v && tensorOf(v).getRank() != 2)
      return emitOpError() << "expects " << name << " of rank 2, got rank "
                           << tensorOf(v).getRank();
  if (failed(shared[0] ? verifyFeedForward(*this, getInput(), getResult(),
                                           {{shared[0], "shared_gate_weight"},
                                            {shared[1], "shared_up_weight"},
                                            {shared[2], "shared_down_weight"}},
                                           {1, 1, 0}, {})
                       : verifyFeedForward(*this, getInput(), getResult(),
                                           {{shared[1], "shared_up_weight"},
                                            {shared[2], "shared_down_weight"}},
                                           {1, 0}, {})))
    return failure();
  if (Value gate = getSharedExpertGateWeight())
    if (failed(expectShape(*this, tensorOf(gate), {1, x.getDimSize(last)},
                           "shared_expert_gate_weight")))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Norms and RoPE
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "expects the result type to equal the input type";
  if (failed(verifyNormWeight(*this, getInput(), getWeight(), "weight")))
    return failure();
  return verifyPositiveFinite(*this, getEpsilon().convertToDouble(),
                              "epsilon");
}

LogicalResult L2NormOp::verify() {
  if (getInput().getType().getRank() < 1)
    return emitOpError() << "expects an input of rank >= 1";
  return verifyPositiveFinite(*this, getEpsilon().convertToDouble(),
                              "epsilon");
}

LogicalResult GatedRMSNormOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "expects the result type to equal the input type";
  if (getGate().getType() != getInput().getType())
    return emitOpError() << "expects a gate of the input's type "
                         << getInput().getType() << ", got "
                         << getGate().getType();
  // [groups, n] over an input [..., groups, n]: one weight per channel of
  // the normalized groups (Mamba2's grouped norm).
  ShapedType x = getInput().getType(), w = getWeight().getType();
  if (w.getRank() == 2) {
    if (x.getRank() < 2)
      return emitOpError() << "expects an input of rank >= 2 with a weight "
                              "[groups, n]";
    if (failed(expectDimsAgree(*this, w, 0, "weight groups", x, x.getRank() - 2,
                               "the input's dim -2")) ||
        failed(expectDimsAgree(*this, w, 1, "weight size", x, x.getRank() - 1,
                               "the input's last dim")))
      return failure();
  } else if (failed(
                 verifyNormWeight(*this, getInput(), getWeight(), "weight"))) {
    return failure();
  }
  return verifyPositiveFinite(*this, getEpsilon().convertToDouble(),
                              "epsilon");
}

LogicalResult CausalConv1dOp::verify() {
  RankedTensorType x = getInput().getType(), w = getWeight().getType();
  if (x.getRank() != 3)
    return emitOpError() << "expects an input [batch, seq, channels], got "
                         << x;
  if (w.getRank() != 2 || w.isDynamicDim(1) || w.getDimSize(1) < 1)
    return emitOpError() << "expects a weight [channels, kernel] with a "
                            "static kernel width >= 1, got "
                         << w;
  int64_t c = x.getDimSize(2), k = w.getDimSize(1), b = x.getDimSize(0);
  if (failed(expectDimsAgree(*this, w, 0, "weight channels", x, 2,
                             "input channels")) ||
      failed(expectShape(*this, getResult().getType(),
                         {b, x.getDimSize(1), c},
                         "a result [batch, seq, channels]")) ||
      failed(expectShape(*this, getFinalState().getType(), {b, c, k - 1},
                         "a final state [batch, channels, kernel - 1]")))
    return failure();
  if (Value s = getState())
    if (failed(expectShape(*this, cast<RankedTensorType>(s.getType()),
                           {b, c, k - 1},
                           "a state [batch, channels, kernel - 1]")))
      return failure();
  if (Value bias = getBias())
    if (failed(expectShape(*this, cast<RankedTensorType>(bias.getType()), {c},
                           "a bias [channels]")))
      return failure();
  return success();
}

LogicalResult SkipAddOp::verify() {
  RankedTensorType in = getInput().getType();
  if (in.getRank() != 4 || in.isDynamicDim(1))
    return emitOpError() << "expects an input [batch, heads, seq, head_dim] "
                            "with static heads, got "
                         << in;
  if (getX().getType() != in || getResult().getType() != in)
    return emitOpError() << "expects x and the result of the input's type "
                         << in << ", got " << getX().getType() << " and "
                         << getResult().getType();
  return expectShape(*this, getD().getType(), {in.getDimSize(1)}, "d [heads]");
}

LogicalResult GatedDeltaGatesOp::verify() {
  RankedTensorType a = getA().getType();
  if (getGate().getType().getRank() == 4) {
    // Kimi Delta Attention: one decay per key channel.
    RankedTensorType g = getGate().getType();
    if (g.isDynamicDim(1) || g.isDynamicDim(3))
      return emitOpError() << "expects a per-channel gate [batch, Hv, seq, "
                              "d_k] with static Hv and d_k, got "
                           << g;
    int64_t hv = g.getDimSize(1), dk = g.getDimSize(3), b = g.getDimSize(0),
            s = g.getDimSize(2);
    if (getBetaIsDt())
      return emitOpError() << "takes beta_is_dt (Mamba2) only with a gate "
                              "[batch, Hv, seq]";
    if (failed(expectShape(*this, a, {b, s, hv * dk},
                           "a [batch, seq, Hv * d_k] with a per-channel "
                           "gate")) ||
        failed(expectShape(*this, getB().getType(), {b, s, hv},
                           "b [batch, seq, Hv]")) ||
        failed(expectShape(*this, getALog().getType(), {hv}, "A_log [Hv]")) ||
        failed(expectShape(*this, getDtBias().getType(), {hv * dk},
                           "dt_bias [Hv * d_k] with a per-channel gate")) ||
        failed(expectShape(*this, getBeta().getType(), {b, hv, s},
                           "a beta [batch, Hv, seq]")))
      return failure();
    return expectSameElementType(
        *this, {getA(), getB(), getALog(), getDtBias(), getGate(), getBeta()},
        {"a", "b", "A_log", "dt_bias", "gate", "beta"});
  }
  if (a.getRank() != 3 || a.isDynamicDim(2))
    return emitOpError() << "expects a [batch, seq, Hv] with static Hv, got "
                         << a;
  int64_t b = a.getDimSize(0), s = a.getDimSize(1), hv = a.getDimSize(2);
  if (failed(expectShape(*this, getB().getType(), {b, s, hv},
                         "b [batch, seq, Hv]")) ||
      failed(expectShape(*this, getALog().getType(), {hv}, "A_log [Hv]")) ||
      failed(expectShape(*this, getDtBias().getType(), {hv},
                         "dt_bias [Hv]")) ||
      failed(expectShape(*this, getGate().getType(), {b, hv, s},
                         "a gate [batch, Hv, seq]")) ||
      failed(expectShape(*this, getBeta().getType(), {b, hv, s},
                         "a beta [batch, Hv, seq]")))
    return failure();
  if ((getDtMin() || getDtMax()) && !getBetaIsDt())
    return emitOpError() << "clamps dt (dt_min, dt_max) only with beta_is_dt";
  if (getDtMin() && getDtMax() &&
      !(getDtMin()->convertToDouble() <= getDtMax()->convertToDouble()))
    return emitOpError() << "expects dt_min <= dt_max, got "
                         << getDtMin()->convertToDouble() << " and "
                         << getDtMax()->convertToDouble();
  return expectSameElementType(
      *this, {getA(), getB(), getALog(), getDtBias(), getGate(), getBeta()},
      {"a", "b", "A_log", "dt_bias", "gate", "beta"});
}

LogicalResult LayerNormOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "expects the result type to equal the input type";
  if (failed(verifyNormWeight(*this, getInput(), getWeight(), "weight")))
    return failure();
  if (getBias() &&
      failed(verifyNormWeight(*this, getInput(), getBias(), "bias")))
    return failure();
  return verifyPositiveFinite(*this, getEpsilon().convertToDouble(),
                              "epsilon");
}

LogicalResult RopeOp::verify() {
  RankedTensorType x = getInput().getType();
  if (x != getResult().getType())
    return emitOpError() << "expects the result type to equal the input type";
  if (failed(expectRank(*this, getInput(), 4,
                        "an input [batch, heads, seq, head_dim]")) ||
      failed(expectStatic(*this, x, 3, "head_dim")) ||
      failed(expectRank(*this, getPositions(), 2, "positions [batch, seq]")))
    return failure();
  ShapedType pos = tensorOf(getPositions());
  if (failed(expectDimsAgree(*this, pos, 0, "positions batch", x, 0,
                             "input batch")) ||
      failed(expectDimsAgree(*this, pos, 1, "positions seq", x, 2,
                             "input seq")))
    return failure();
  int64_t rd = getRotaryDim(), d = x.getDimSize(3);
  if (rd <= 0 || rd % 2 != 0 || rd > d)
    return emitOpError() << "expects an even rotary_dim in [2, head_dim = "
                         << d << "], got " << rd;
  if (failed(verifyPositiveFinite(*this, getTheta().convertToDouble(),
                                  "theta")) ||
      failed(verifyPositiveFinite(
          *this, getAttentionFactor().convertToDouble(), "attention_factor")))
    return failure();
  if (std::optional<ArrayRef<double>> f = getInvFreq()) {
    if (static_cast<int64_t>(f->size()) != rd / 2)
      return emitOpError() << "expects inv_freq to list rotary_dim / 2 = "
                           << rd / 2 << " frequencies, got " << f->size();
    for (double v : *f)
      if (!std::isfinite(v) || v <= 0)
        return emitOpError()
               << "expects positive finite inv_freq entries, got "
               << numStr(v);
  }
  std::optional<ArrayRef<double>> lf = getLongInvFreq();
  if (bool(lf) != bool(getLongAfter()))
    return emitOpError() << "expects long_inv_freq and long_after together";
  if (lf) {
    if (!getInvFreq())
      return emitOpError() << "expects inv_freq (the short table) with "
                              "long_inv_freq";
    if (static_cast<int64_t>(lf->size()) != rd / 2)
      return emitOpError() << "expects long_inv_freq to list rotary_dim / 2 = "
                           << rd / 2 << " frequencies, got " << lf->size();
    for (double v : *lf)
      if (!std::isfinite(v) || v <= 0)
        return emitOpError()
               << "expects positive finite long_inv_freq entries, got "
               << numStr(v);
    if (*getLongAfter() < 1)
      return emitOpError() << "expects long_after >= 1, got "
                           << *getLongAfter();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Head split / merge
//===----------------------------------------------------------------------===//

/// Shared by split/merge: `flat` is [batch, seq, heads*d], `heads` is
/// [batch, heads, seq, d].
static LogicalResult verifyHeadReshape(Operation *op, RankedTensorType flat,
                                       StringRef flatName,
                                       RankedTensorType heads,
                                       StringRef headsName) {
  if (flat.getRank() != 3)
    return op->emitOpError() << "expects the " << flatName
                             << " to be [batch, seq, heads*head_dim], got rank "
                             << flat.getRank();
  if (heads.getRank() != 4)
    return op->emitOpError() << "expects the " << headsName
                             << " to be [batch, heads, seq, head_dim], got "
                                "rank "
                             << heads.getRank();
  if (failed(expectStatic(op, heads, 1, "head count")) ||
      failed(expectStatic(op, heads, 3, "head_dim")) ||
      failed(expectDimsAgree(op, flat, 0, flatName + " batch", heads, 0,
                             headsName + " batch")) ||
      failed(expectDimsAgree(op, flat, 1, flatName + " seq", heads, 2,
                             headsName + " seq")))
    return failure();
  int64_t width = heads.getDimSize(1) * heads.getDimSize(3);
  if (!dimsAgree(flat.getDimSize(2), width))
    return op->emitOpError()
           << "expects the " << flatName << " last dim ("
           << dimStr(flat.getDimSize(2)) << ") to equal heads * head_dim = "
           << heads.getDimSize(1) << " * " << heads.getDimSize(3) << " = "
           << width;
  if (flat.getElementType() != heads.getElementType())
    return op->emitOpError() << "expects input and result element types to "
                                "match";
  return success();
}

LogicalResult SplitHeadsOp::verify() {
  return verifyHeadReshape(*this, getInput().getType(), "input",
                           getResult().getType(), "result");
}

LogicalResult MergeHeadsOp::verify() {
  return verifyHeadReshape(*this, getResult().getType(), "result",
                           getInput().getType(), "input");
}

//===----------------------------------------------------------------------===//
// QK / scale / softcap / mask / softmax / PV
//===----------------------------------------------------------------------===//

LogicalResult QKOp::verify() {
  if (failed(expectRank(*this, getQuery(), 4,
                        "a query [batch, Hq, q_len, head_dim]")) ||
      failed(expectRank(*this, getKey(), 4,
                        "a key [batch, Hkv, kv_len, head_dim]")) ||
      failed(expectRank(*this, getResult(), 4,
                        "a result [batch, Hq, q_len, kv_len]")))
    return failure();
  RankedTensorType q = getQuery().getType(), k = getKey().getType(),
                   s = getResult().getType();
  if (failed(verifyHeadGroups(*this, q, "query", k, "key")) ||
      failed(expectStatic(*this, q, 3, "query head_dim")) ||
      failed(expectStatic(*this, k, 3, "key head_dim")) ||
      failed(expectDimsAgree(*this, q, 3, "query head_dim", k, 3,
                             "key head_dim")) ||
      failed(expectSameElementType(*this, {getQuery(), getResult()},
                                   {"query", "result"})) ||
      failed(expectNoWider(*this, getKey(), "key", getQuery(), "query")))
    return failure();
  return expectShape(*this, s,
                     {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2),
                      k.getDimSize(2)},
                     "a result of shape [batch, Hq, q_len, kv_len]");
}

LogicalResult ScaleOp::verify() {
  double s = getScale().convertToDouble();
  if (!std::isfinite(s) || s == 0)
    return emitOpError() << "expects a finite non-zero scale, got "
                         << numStr(s);
  return success();
}

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  // x * 1 is x: the front end, the decomposition and the lowering need no
  // special case for a scale of one.
  if (getScale().convertToDouble() == 1.0)
    return getInput();
  // (x * a) * b is x * (a * b), when that product is still a valid scale.
  if (auto inner = getInput().getDefiningOp<ScaleOp>()) {
    double product =
        inner.getScale().convertToDouble() * getScale().convertToDouble();
    if (std::isfinite(product) && product != 0) {
      getInputMutable().assign(inner.getInput());
      setScaleAttr(FloatAttr::get(getScaleAttr().getType(), product));
      if (product == 1.0)
        return getInput();
      return getResult();
    }
  }
  return {};
}

LogicalResult SoftcapOp::verify() {
  return verifyPositiveFinite(*this, getCap().convertToDouble(), "cap");
}

LogicalResult MaskOp::verify() {
  if (failed(expectRank(*this, getInput(), 4,
                        "scores [batch, heads, q_len, kv_len]")) ||
      failed(verifyMaskAttrs(*this, getKind(), getWindow())))
    return failure();
  return verifyKvLengths(*this, getKvLengths(), getInput().getType());
}

LogicalResult RelativePositionBiasOp::verify() {
  if (failed(expectRank(*this, getInput(), 4,
                        "scores [batch, heads, q_len, kv_len]")) ||
      failed(expectRank(*this, getTable(), 2,
                        "a table [num_buckets, heads]")))
    return failure();
  RankedTensorType s = getInput().getType(), t = getTable().getType();
  int64_t buckets = getNumBuckets();
  if (buckets < 2 || (getBidirectional() && buckets < 4))
    return emitOpError() << "expects num_buckets >= 2 (>= 4 when "
                            "bidirectional), got "
                         << buckets;
  if (getMaxDistance() <= 0)
    return emitOpError() << "expects a positive max_distance, got "
                         << getMaxDistance();
  if (!dimsAgree(t.getDimSize(0), buckets))
    return emitOpError() << "expects a table with num_buckets = " << buckets
                         << " rows, got " << dimStr(t.getDimSize(0));
  return expectDimsAgree(*this, t, 1, "table heads", s, 1, "score heads");
}

/// Shared by mask_bias / mask_cond: `like` is scores, result has its shape.
static LogicalResult verifyMaskConstruction(Operation *op, Value like,
                                            Value result, MaskKind kind,
                                            std::optional<int64_t> window) {
  if (failed(expectRank(op, like, 4, "scores [batch, heads, q_len, kv_len]")) ||
      failed(verifyMaskAttrs(op, kind, window)))
    return failure();
  if (tensorOf(like).getShape() != tensorOf(result).getShape())
    return op->emitOpError() << "expects the result to have the shape of the "
                                "scores";
  if (kind == MaskKind::none)
    return op->emitOpError() << "expects a causal or sliding_window mask "
                                "kind; a 'none' mask masks nothing";
  return success();
}

LogicalResult MaskBiasOp::verify() {
  return verifyMaskConstruction(*this, getLike(), getResult(), getKind(),
                                getWindow());
}

LogicalResult MaskCondOp::verify() {
  return verifyMaskConstruction(*this, getLike(), getResult(), getKind(),
                                getWindow());
}

LogicalResult SoftmaxOp::verify() {
  if (getInput().getType().getRank() < 1)
    return emitOpError() << "expects an input of rank >= 1";
  return success();
}

LogicalResult TemperatureScaleOp::verify() {
  RankedTensorType x = getInput().getType();
  if (x != getResult().getType())
    return emitOpError() << "expects the result type to equal the input type";
  if (failed(expectRank(*this, getInput(), 4,
                        "an input [batch, heads, seq, head_dim]")) ||
      failed(expectRank(*this, getPositions(), 2, "positions [batch, seq]")))
    return failure();
  ShapedType pos = tensorOf(getPositions());
  if (failed(expectDimsAgree(*this, pos, 0, "positions batch", x, 0,
                             "input batch")) ||
      failed(expectDimsAgree(*this, pos, 1, "positions seq", x, 2,
                             "input seq")))
    return failure();
  if (getFloorScale() <= 0)
    return emitOpError() << "expects a positive floor_scale, got "
                         << getFloorScale();
  return verifyPositiveFinite(*this, getAttnScale().convertToDouble(),
                              "attn_scale");
}

LogicalResult SinkSoftmaxOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "expects the result type to equal the input type";
  if (failed(expectRank(*this, getInput(), 4,
                        "scores [batch, H, q_len, kv_len]")))
    return failure();
  return verifySinks(*this, getSinks(), getInput());
}

LogicalResult PVOp::verify() {
  if (failed(expectRank(*this, getProbs(), 4,
                        "probabilities [batch, Hq, q_len, kv_len]")) ||
      failed(expectRank(*this, getValue(), 4,
                        "a value [batch, Hkv, kv_len, head_dim_v]")) ||
      failed(expectRank(*this, getResult(), 4,
                        "a result [batch, Hq, q_len, head_dim_v]")))
    return failure();
  RankedTensorType p = getProbs().getType(), v = getValue().getType(),
                   o = getResult().getType();
  if (failed(verifyHeadGroups(*this, p, "probabilities", v, "value")) ||
      failed(expectStatic(*this, v, 3, "value head_dim")) ||
      failed(expectDimsAgree(*this, p, 3, "probabilities kv_len", v, 2,
                             "value kv_len")) ||
      failed(expectSameElementType(*this, {getProbs(), getResult()},
                                   {"probabilities", "result"})) ||
      failed(expectNoWider(*this, getValue(), "value", getProbs(),
                           "probabilities")))
    return failure();
  return expectShape(*this, o,
                     {p.getDimSize(0), p.getDimSize(1), p.getDimSize(2),
                      v.getDimSize(3)},
                     "a result of shape [batch, Hq, q_len, head_dim_v]");
}

//===----------------------------------------------------------------------===//
// attn.moe's expert lists: `(gate, up, down)` for gated networks, `(up,
// down)` for plain ones.
//===----------------------------------------------------------------------===//

namespace {

/// `(` two or three operands `)`: the first of three is the gate.
ParseResult parseNetwork(OpAsmParser &p,
                         std::optional<OpAsmParser::UnresolvedOperand> &gate,
                         std::optional<OpAsmParser::UnresolvedOperand> &up,
                         std::optional<OpAsmParser::UnresolvedOperand> &down) {
  SmallVector<OpAsmParser::UnresolvedOperand, 3> ops;
  SMLoc at = p.getCurrentLocation();
  if (p.parseOperandList(ops, OpAsmParser::Delimiter::Paren))
    return failure();
  if (ops.size() != 2 && ops.size() != 3)
    return p.emitError(at) << "expects (gate, up, down) or (up, down), got "
                           << ops.size() << " operands";
  if (ops.size() == 3)
    gate = ops[0];
  up = ops[ops.size() - 2];
  down = ops.back();
  return success();
}

void printNetwork(OpAsmPrinter &p, Value gate, Value up, Value down) {
  p << '(';
  if (gate)
    p << gate << ", ";
  p << up << ", " << down << ')';
}

} // namespace

/// `(gate, up, down)` or `(up, down)`, then optionally `shared` and the
/// shared expert's network.
static ParseResult parseExperts(
    OpAsmParser &p, std::optional<OpAsmParser::UnresolvedOperand> &gate,
    OpAsmParser::UnresolvedOperand &up, OpAsmParser::UnresolvedOperand &down,
    std::optional<OpAsmParser::UnresolvedOperand> &sharedGate,
    std::optional<OpAsmParser::UnresolvedOperand> &sharedUp,
    std::optional<OpAsmParser::UnresolvedOperand> &sharedDown) {
  std::optional<OpAsmParser::UnresolvedOperand> u, d;
  if (parseNetwork(p, gate, u, d))
    return failure();
  up = *u;
  down = *d;
  if (failed(p.parseOptionalKeyword("shared")))
    return success();
  return parseNetwork(p, sharedGate, sharedUp, sharedDown);
}

static void printExperts(OpAsmPrinter &p, Operation *, Value gate, Value up,
                         Value down, Value sharedGate, Value sharedUp,
                         Value sharedDown) {
  printNetwork(p, gate, up, down);
  if (!sharedUp)
    return;
  p << " shared";
  printNetwork(p, sharedGate, sharedUp, sharedDown);
}

#define GET_OP_CLASSES
#include "dialects/Attn/IR/AttnOps.cpp.inc"
