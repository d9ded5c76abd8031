//===- EmitLinear.cpp - Gated DeltaNet kinds as attn IR -------------------===//
//
// The emitter's Gated DeltaNet parts: a linear-attention kind's block (its
// short convolution, gates, attn.gated_delta_rule, gated norm and output
// projection) and its kernel entry `<kind>_gdn` (Mamba2's SSD too: the
// rule without the delta correction, LayerSpec::noDelta).
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Emitter.h"

using namespace mlir;
using namespace mlir::attn;

namespace mlir::attn::emit {

func::FuncOp Emitter::emitLinearKernel(const std::string &name,
                                       const LayerSpec &l) {
  Location loc = NameLoc::get(b.getStringAttr(name),
                              FileLineColLoc::get(ctx, spec.configPath, 1, 1));
  int64_t hv = l.numHeads, hk = l.numKVHeads, dk = l.headDimQK,
          dv = l.headDimV;
  RankedTensorType outTy = headsType(hv, dv),
                   stateTy = tensor({kDyn, hv, dk, dv}),
                   betaTy = tensor({kDyn, hv, kDyn}),
                   gateTy = l.channelGate ? headsType(hv, dk) : betaTy;
  SmallVector<Type> inputs = {headsType(hk, dk),
                              headsType(hk, dk),
                              outTy,
                              gateTy,
                              betaTy,
                              stateTy,
                              RankedTensorType::get({kDyn}, b.getI64Type())};
  auto fn = func::FuncOp::create(loc, name + "_gdn",
                                 b.getFunctionType(inputs, {outTy, stateTy}));
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value v = entry->getArgument(2);
  Value batch = tensor::DimOp::create(b, loc, v, 0);
  Value seq = tensor::DimOp::create(b, loc, v, 2);
  Value outInit = tensor::EmptyOp::create(b, loc, outTy, ValueRange{batch, seq});
  Value stateInit =
      tensor::EmptyOp::create(b, loc, stateTy, ValueRange{batch});
  auto op = GatedDeltaRuleOp::create(
      b, loc, TypeRange{outTy, stateTy}, entry->getArgument(0),
      entry->getArgument(1), v, entry->getArgument(3), entry->getArgument(4),
      entry->getArgument(5), entry->getArgument(6), outInit, stateInit,
      b.getF64FloatAttr(l.scale), l.noDelta ? b.getUnitAttr() : UnitAttr());
  func::ReturnOp::create(b, loc, op.getResults());
  return fn;
}

func::FuncOp Emitter::emitLinearKind(const std::string &name,
                                     const LayerSpec &l, bool withState) {
  Location loc = NameLoc::get(b.getStringAttr(name),
                              FileLineColLoc::get(ctx, spec.configPath, 1, 1));
  int64_t h = spec.hiddenSize, hk = l.numKVHeads, hv = l.numHeads,
          dk = l.headDimQK, dv = l.headDimV, r = hv / hk, K = l.convKernel,
          conv = 2 * hk * dk + hv * dv;
  RankedTensorType xTy = hiddenType(h);
  RankedTensorType convStateTy = tensor({kDyn, conv, K - 1}),
                   stateTy = tensor({kDyn, hv, dk, dv});
  std::vector<WeightArg> weights = layerWeights(spec, l);
  SmallVector<Type> inputs = {xTy}, results = {xTy};
  if (withState) {
    inputs.append({convStateTy, stateTy});
    results.append({convStateTy, stateTy});
  }
  unsigned first = inputs.size();
  for (const WeightArg &w : weights)
    inputs.push_back(tensor(w.shape));
  auto fn =
      func::FuncOp::create(loc, name, b.getFunctionType(inputs, results));
  nameWeightArgs(fn, first, weights, l);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value x = entry->getArgument(0);
  Value convState = withState ? entry->getArgument(1) : Value();
  Value state = withState ? entry->getArgument(2) : Value();
  Weights w;
  for (auto [i, arg] : llvm::enumerate(weights))
    w[arg.role] = entry->getArgument(first + i);
  auto linearTo = [&](Value in, llvm::StringRef role, int64_t out) {
    return LinearOp::create(b, loc, hiddenType(out), in, w.lookup(role),
                            Value(), UnitAttr())
        .getResult();
  };
  Value hIn = norm(loc, l, x, w.lookup("norm_weight"), Value());
  if (l.noDelta || l.channelGate) {
    MixerResult mix = l.noDelta ? mambaMixer(loc, l, w, hIn, convState, state)
                                : kdaMixer(loc, l, w, hIn, convState, state);
    Value res = residual(loc, l, x, mix.out);
    if (withState)
      func::ReturnOp::create(b, loc, ValueRange{res, mix.convState, mix.state});
    else
      func::ReturnOp::create(b, loc, ValueRange{res});
    return fn;
  }
  // in_proj_qkvz holds, per key head, [q (dk), k (dk), v (r·dv), z (r·dv)]
  // and in_proj_ba [b (r), a (r)] (fix_query_key_value_ordering).
  Value qkvz = linearTo(hIn, "in_proj_qkvz_weight", 2 * hk * dk + 2 * hv * dv);
  Value ba = linearTo(hIn, "in_proj_ba_weight", 2 * hv);
  int64_t per = 2 * dk + 2 * r * dv;
  Value q = sliceHeads(loc, qkvz, hk, per, 0, dk, 1);
  Value k = sliceHeads(loc, qkvz, hk, per, dk, dk, 1);
  Value v = sliceHeads(loc, qkvz, hk, per, 2 * dk, r * dv, 1);
  Value z = sliceHeads(loc, qkvz, hk, per, 2 * dk + r * dv, r * dv, 1);
  Value bb = sliceHeads(loc, ba, hk, 2 * r, 0, r, 1);
  Value a = sliceHeads(loc, ba, hk, 2 * r, r, r, 1);
  // The short causal convolution over [q | k | v], then SiLU.
  Value mixed = tensor::ConcatOp::create(b, loc, hiddenType(conv), 2,
                                         ValueRange{q, k, v});
  Value convW = tensor::CollapseShapeOp::create(
      b, loc, tensor({conv, K}), w.lookup("conv1d_weight"),
      SmallVector<ReassociationIndices>{{0, 1}, {2}});
  auto convOp = CausalConv1dOp::create(
      b, loc, TypeRange{hiddenType(conv), convStateTy}, mixed, convW,
      /*bias=*/Value(), convState);
  Value y = convOp.getResult();
  Value qh = SplitHeadsOp::create(b, loc, headsType(hk, dk),
                                  sliceHeads(loc, y, 1, conv, 0, hk * dk, 1));
  Value kh = SplitHeadsOp::create(
      b, loc, headsType(hk, dk), sliceHeads(loc, y, 1, conv, hk * dk, hk * dk, 1));
  Value vh = SplitHeadsOp::create(
      b, loc, headsType(hv, dv),
      sliceHeads(loc, y, 1, conv, 2 * hk * dk, hv * dv, 1));
  FloatAttr l2eps = b.getF64FloatAttr(1e-6);
  qh = L2NormOp::create(b, loc, qh, l2eps);
  kh = L2NormOp::create(b, loc, kh, l2eps);
  RankedTensorType gateTy = tensor({kDyn, hv, kDyn});
  auto gates = GatedDeltaGatesOp::create(
      b, loc, TypeRange{gateTy, gateTy}, a, bb, w.lookup("A_log"),
      w.lookup("dt_bias"), UnitAttr(), FloatAttr(), FloatAttr());
  Value batch = tensor::DimOp::create(b, loc, vh, 0);
  Value seq = tensor::DimOp::create(b, loc, vh, 2);
  RankedTensorType oTy = headsType(hv, dv);
  Value oInit = tensor::EmptyOp::create(b, loc, oTy, ValueRange{batch, seq});
  Value sInit = tensor::EmptyOp::create(b, loc, stateTy, ValueRange{batch});
  auto rule = GatedDeltaRuleOp::create(
      b, loc, TypeRange{oTy, stateTy}, qh, kh, vh, gates.getGate(),
      gates.getBeta(), state, /*lengths=*/Value(), oInit, sInit,
      b.getF64FloatAttr(l.scale));
  // The gated RMSNorm per value head, then out_proj and the residual.
  Value m = MergeHeadsOp::create(b, loc, hiddenType(hv * dv), rule.getOutput());
  SmallVector<ReassociationIndices> re = {{0}, {1}, {2, 3}};
  Value m4 = perHead(loc, m, hv, dv);
  Value z4 = perHead(loc, z, hv, dv);
  Value normed = GatedRMSNormOp::create(
      b, loc, tensor({kDyn, kDyn, hv, dv}), m4, z4,
      w.lookup("gated_norm_weight"), b.getF64FloatAttr(l.normEps));
  Value flat = tensor::CollapseShapeOp::create(b, loc, hiddenType(hv * dv),
                                               normed, re);
  Value out = linearTo(flat, "out_proj_weight", h);
  Value res = residual(loc, l, x, out);
  if (withState)
    func::ReturnOp::create(
        b, loc, ValueRange{res, convOp.getFinalState(), rule.getFinalState()});
  else
    func::ReturnOp::create(b, loc, ValueRange{res});
  return fn;
}

Emitter::MixerResult Emitter::kdaMixer(Location loc, const LayerSpec &l,
                                       const Weights &w, Value hIn,
                                       Value convState, Value state) {
  // Kimi-Linear's KimiDeltaAttention.forward, op by op.
  int64_t h = spec.hiddenSize, hk = l.numKVHeads, hv = l.numHeads,
          dk = l.headDimQK, dv = l.headDimV, K = l.convKernel,
          conv = 2 * hk * dk + hv * dv;
  auto linearTo = [&](Value in, llvm::StringRef role, int64_t out) {
    return LinearOp::create(b, loc, hiddenType(out), in, w.lookup(role),
                            Value(), UnitAttr())
        .getResult();
  };
  // q, k and v, each through its own depthwise convolution and SiLU: one
  // convolution over [q | k | v] with the three weights stacked (every
  // channel is its own), and one state [B, 2·Hk·dk + Hv·dv, K − 1].
  Value q = linearTo(hIn, "q_proj_weight", hk * dk);
  Value k = linearTo(hIn, "k_proj_weight", hk * dk);
  Value v = linearTo(hIn, "v_proj_weight", hv * dv);
  Value mixed = tensor::ConcatOp::create(b, loc, hiddenType(conv), 2,
                                         ValueRange{q, k, v});
  SmallVector<Value> convWs;
  for (auto [role, c] :
       {std::pair<const char *, int64_t>{"q_conv1d_weight", hk * dk},
        {"k_conv1d_weight", hk * dk},
        {"v_conv1d_weight", hv * dv}}) {
    Value cw = tensor::CollapseShapeOp::create(
        b, loc, tensor({c, K}), w.lookup(role),
        SmallVector<ReassociationIndices>{{0, 1}, {2}});
    convWs.push_back(cw);
  }
  Value convW = tensor::ConcatOp::create(b, loc, tensor({conv, K}), 0, convWs);
  auto convOp = CausalConv1dOp::create(
      b, loc, TypeRange{hiddenType(conv), tensor({kDyn, conv, K - 1})}, mixed,
      convW, /*bias=*/Value(), convState);
  Value y = convOp.getResult();
  Value qh = SplitHeadsOp::create(b, loc, headsType(hk, dk),
                                  sliceHeads(loc, y, 1, conv, 0, hk * dk, 1));
  Value kh =
      SplitHeadsOp::create(b, loc, headsType(hk, dk),
                           sliceHeads(loc, y, 1, conv, hk * dk, hk * dk, 1));
  Value vh = SplitHeadsOp::create(
      b, loc, headsType(hv, dv),
      sliceHeads(loc, y, 1, conv, 2 * hk * dk, hv * dv, 1));
  // fla's kernels L2-normalize q and k (use_qk_l2norm_in_kernel, eps 1e-6).
  FloatAttr l2eps = b.getF64FloatAttr(1e-6);
  qh = L2NormOp::create(b, loc, qh, l2eps);
  kh = L2NormOp::create(b, loc, kh, l2eps);
  // The per-channel decay −exp(A_log)·softplus(f_b(f_a(x)) + dt_bias) and
  // β = sigmoid(b_proj(x)).
  Value fa = linearTo(hIn, "f_a_weight", dk);
  Value f = linearTo(fa, "f_b_weight", hv * dk);
  Value betaIn = linearTo(hIn, "b_proj_weight", hv);
  Value aLog = tensor::CollapseShapeOp::create(
      b, loc, tensor({hv}), w.lookup("A_log"),
      SmallVector<ReassociationIndices>{{0, 1, 2, 3}});
  RankedTensorType gateTy = headsType(hv, dk),
                   betaTy = tensor({kDyn, hv, kDyn});
  auto gates = GatedDeltaGatesOp::create(b, loc, TypeRange{gateTy, betaTy}, f,
                                         betaIn, aLog, w.lookup("dt_bias"),
                                         UnitAttr(), FloatAttr(), FloatAttr());
  RankedTensorType oTy = headsType(hv, dv),
                   stateTy = tensor({kDyn, hv, dk, dv});
  Value batch = tensor::DimOp::create(b, loc, vh, 0);
  Value seq = tensor::DimOp::create(b, loc, vh, 2);
  Value oInit = tensor::EmptyOp::create(b, loc, oTy, ValueRange{batch, seq});
  Value sInit = tensor::EmptyOp::create(b, loc, stateTy, ValueRange{batch});
  auto rule = GatedDeltaRuleOp::create(b, loc, TypeRange{oTy, stateTy}, qh, kh,
                                       vh, gates.getGate(), gates.getBeta(),
                                       state, /*lengths=*/Value(), oInit, sInit,
                                       b.getF64FloatAttr(l.scale));
  // o_norm: RMSNorm per value head gated by sigmoid(g_b(g_a(x))), then
  // o_proj.
  Value ga = linearTo(hIn, "g_a_weight", dv);
  Value gOut = linearTo(ga, "g_b_weight", hv * dv);
  Value m = MergeHeadsOp::create(b, loc, hiddenType(hv * dv), rule.getOutput());
  SmallVector<ReassociationIndices> re = {{0}, {1}, {2, 3}};
  Value m4 = perHead(loc, m, hv, dv);
  Value g4 = perHead(loc, gOut, hv, dv);
  Value normed = GatedRMSNormOp::create(
      b, loc, tensor({kDyn, kDyn, hv, dv}), m4, g4,
      w.lookup("gated_norm_weight"), b.getF64FloatAttr(l.normEps),
      /*gate_first=*/UnitAttr(), /*sigmoid=*/b.getUnitAttr());
  Value flat =
      tensor::CollapseShapeOp::create(b, loc, hiddenType(hv * dv), normed, re);
  Value out = linearTo(flat, "out_proj_weight", h);
  return {out, convOp.getFinalState(), rule.getFinalState()};
}

Value Emitter::perHead(Location loc, Value t, int64_t heads, int64_t dim) {
  Value d0 = tensor::DimOp::create(b, loc, t, 0);
  Value d1 = tensor::DimOp::create(b, loc, t, 1);
  SmallVector<OpFoldResult> shape = {d0, d1, b.getIndexAttr(heads),
                                     b.getIndexAttr(dim)};
  return tensor::ExpandShapeOp::create(
      b, loc, tensor({kDyn, kDyn, heads, dim}), t,
      SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}}, shape);
}

Value Emitter::residual(Location loc, const LayerSpec &l, Value x, Value y) {
  if (l.residualScale != 1.0)
    y = ScaleOp::create(b, loc, y, b.getF64FloatAttr(l.residualScale));
  return AddOp::create(b, loc, x, y);
}

Emitter::MixerResult Emitter::mambaMixer(Location loc, const LayerSpec &l,
                                         const Weights &w, Value hIn,
                                         Value convState, Value state) {
  // transformers' GraniteMoeHybridMambaLayer.torch_forward, op by op.
  int64_t h = spec.hiddenSize, g = l.numKVHeads, hv = l.numHeads,
          n = l.headDimQK, p = l.headDimV, inner = hv * p,
          conv = inner + 2 * g * n, total = inner + conv + hv, K = l.convKernel;
  auto linearTo = [&](Value in, llvm::StringRef role, int64_t out) {
    return LinearOp::create(b, loc, hiddenType(out), in,
                            w.lookup((role + "_weight").str()),
                            w.lookup((role + "_bias").str()), UnitAttr())
        .getResult();
  };
  // in_proj: [gate (I) | x B C (conv) | dt (heads)].
  Value proj = linearTo(hIn, "in_proj", total);
  Value z = sliceHeads(loc, proj, 1, total, 0, inner, 1);
  Value xbc = sliceHeads(loc, proj, 1, total, inner, conv, 1);
  Value dt = sliceHeads(loc, proj, 1, total, inner + conv, hv, 1);
  // The causal convolution (with its bias), then the activation (SiLU).
  Value convW = tensor::CollapseShapeOp::create(
      b, loc, tensor({conv, K}), w.lookup("conv1d_weight"),
      SmallVector<ReassociationIndices>{{0, 1}, {2}});
  auto convOp = CausalConv1dOp::create(
      b, loc, TypeRange{hiddenType(conv), tensor({kDyn, conv, K - 1})}, xbc,
      convW, w.lookup("conv1d_bias"), convState);
  Value y = convOp.getResult();
  Value xh = SplitHeadsOp::create(b, loc, headsType(hv, p),
                                  sliceHeads(loc, y, 1, conv, 0, inner, 1));
  Value bh = SplitHeadsOp::create(b, loc, headsType(g, n),
                                  sliceHeads(loc, y, 1, conv, inner, g * n, 1));
  Value ch = SplitHeadsOp::create(
      b, loc, headsType(g, n),
      sliceHeads(loc, y, 1, conv, inner + g * n, g * n, 1));
  // dt = softplus(dt + dt_bias) is β; the decay's log is −exp(A_log)·dt.
  RankedTensorType gateTy = tensor({kDyn, hv, kDyn});
  FloatAttr dtMin = l.dtMin ? b.getF64FloatAttr(*l.dtMin) : FloatAttr(),
            dtMax = l.dtMax ? b.getF64FloatAttr(*l.dtMax) : FloatAttr();
  auto gates = GatedDeltaGatesOp::create(
      b, loc, TypeRange{gateTy, gateTy}, dt, dt, w.lookup("A_log"),
      w.lookup("dt_bias"), b.getUnitAttr(), dtMin, dtMax);
  // The SSD: the rule without the delta correction, C the queries, B the
  // keys (n_groups of them), x the values.
  RankedTensorType oTy = headsType(hv, p), stateTy = tensor({kDyn, hv, n, p});
  Value batch = tensor::DimOp::create(b, loc, xh, 0);
  Value seq = tensor::DimOp::create(b, loc, xh, 2);
  Value oInit = tensor::EmptyOp::create(b, loc, oTy, ValueRange{batch, seq});
  Value sInit = tensor::EmptyOp::create(b, loc, stateTy, ValueRange{batch});
  auto rule = GatedDeltaRuleOp::create(b, loc, TypeRange{oTy, stateTy}, ch, bh,
                                       xh, gates.getGate(), gates.getBeta(),
                                       state, /*lengths=*/Value(), oInit, sInit,
                                       b.getF64FloatAttr(1.0), b.getUnitAttr());
  // The D skip, the gated RMSNorm (gate first) over the whole intermediate
  // or over each of its groups (Nemotron-H), out_proj.
  Value skipped =
      SkipAddOp::create(b, loc, oTy, rule.getOutput(), xh, w.lookup("D"));
  Value m = MergeHeadsOp::create(b, loc, hiddenType(inner), skipped);
  Value normW = w.lookup("gated_norm_weight");
  Value normed;
  if (int64_t groups = l.mambaNormGroups; groups > 1) {
    int64_t size = inner / groups;
    Value m4 = perHead(loc, m, groups, size);
    Value z4 = perHead(loc, z, groups, size);
    Value w2 = tensor::ExpandShapeOp::create(
        b, loc, tensor({groups, size}), normW,
        SmallVector<ReassociationIndices>{{0, 1}});
    Value n4 = GatedRMSNormOp::create(
        b, loc, tensor({kDyn, kDyn, groups, size}), m4, z4, w2,
        b.getF64FloatAttr(l.normEps), b.getUnitAttr());
    normed = tensor::CollapseShapeOp::create(
        b, loc, hiddenType(inner), n4,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  } else {
    normed =
        GatedRMSNormOp::create(b, loc, hiddenType(inner), m, z, normW,
                               b.getF64FloatAttr(l.normEps), b.getUnitAttr());
  }
  Value out = linearTo(normed, "out_proj", h);
  return {out, convOp.getFinalState(), rule.getFinalState()};
}

} // namespace mlir::attn::emit
