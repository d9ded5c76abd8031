//===- LayerKinds.cpp - layer kinds, their weights and names --------------===//
//
// This file implements what the front end, the model table and --describe
// share about layer kinds: which layers need the same code (kindKey), the
// kinds' names and grouping, each kind's weights in argument order and
// their checkpoint name patterns.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Frontend.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <map>

using namespace mlir;
using namespace mlir::attn;

int64_t mlir::attn::queryWidth(const LayerSpec &l) {
  return l.numHeads * l.headDimQK * (l.outputGate ? 2 : 1);
}

namespace {

/// A weight list being built: tensors that are named (a role whose name is
/// empty is absent from the checkpoint and from the list).
struct WeightList {
  std::vector<WeightArg> w;
  bool transposed; ///< linear weights stored [in, out] (GPT-2's Conv1D)

  void add(const std::string &role, std::vector<int64_t> shape,
           const std::string &tensor, bool shared = false, int source = 0) {
    if (!tensor.empty())
      w.push_back({role, std::move(shape), tensor, shared, source});
  }
  /// `<role>_weight` [out, in] (or [in, out]) and `<role>_bias` [out].
  void linear(const std::string &role, const Proj &p, int64_t out,
              int64_t in) {
    add(role + "_weight",
        transposed ? std::vector<int64_t>{in, out}
                   : std::vector<int64_t>{out, in},
        p.weight);
    add(role + "_bias", {out}, p.bias);
  }
};

} // namespace

std::vector<WeightArg> mlir::attn::layerWeights(const ModelSpec &spec,
                                                const LayerSpec &l) {
  WeightList list{{}, l.transposedWeights};
  std::vector<WeightArg> &w = list.w;
  int64_t h = spec.hiddenSize;
  int64_t src = l.role == LayerRole::CrossAttention && spec.encoderHiddenSize
                    ? spec.encoderHiddenSize
                    : h;
  auto add = [&](const std::string &role, std::vector<int64_t> shape,
                 const std::string &tensor, bool shared = false) {
    list.add(role, std::move(shape), tensor, shared);
  };
  auto linear = [&](const std::string &role, const Proj &p, int64_t out,
                    int64_t in) { list.linear(role, p, out, in); };
  add("norm_weight", {h}, l.normW.weight);
  add("norm_bias", {h}, l.normW.bias);
  if (l.role == LayerRole::LinearAttention && l.noDelta) {
    // Mamba2 (transformers' GraniteMoeHybridMambaLayer), as stored:
    // in_proj gives [gate (I), x B C (the conv's channels), dt (heads)].
    int64_t hk = l.numKVHeads, hv = l.numHeads, dk = l.headDimQK,
            dv = l.headDimV, inner = hv * dv, conv = inner + 2 * hk * dk;
    const std::string &p = l.linearPrefix;
    add("in_proj_weight", {inner + conv + hv, h}, p + "in_proj.weight");
    if (l.mambaProjBias)
      add("in_proj_bias", {inner + conv + hv}, p + "in_proj.bias");
    add("conv1d_weight", {conv, 1, l.convKernel}, p + "conv1d.weight");
    if (l.mambaConvBias)
      add("conv1d_bias", {conv}, p + "conv1d.bias");
    add("dt_bias", {hv}, p + "dt_bias");
    add("A_log", {hv}, p + "A_log");
    add("D", {hv}, p + "D");
    add("gated_norm_weight", {inner}, p + "norm.weight");
    add("out_proj_weight", {h, inner}, p + "out_proj.weight");
    if (l.mambaProjBias)
      add("out_proj_bias", {h}, p + "out_proj.bias");
    return w;
  }
  if (l.role == LayerRole::LinearAttention && l.channelGate) {
    // Kimi Delta Attention (Kimi-Linear's KimiDeltaAttention), as stored:
    // each projection with its depthwise convolution, the low-rank gate and
    // output gate, A_log as [1, 1, H, 1].
    int64_t hk = l.numKVHeads, hv = l.numHeads, dk = l.headDimQK,
            dv = l.headDimV, K = l.convKernel;
    const std::string &p = l.linearPrefix;
    add("q_proj_weight", {hk * dk, h}, p + "q_proj.weight");
    add("k_proj_weight", {hk * dk, h}, p + "k_proj.weight");
    add("v_proj_weight", {hv * dv, h}, p + "v_proj.weight");
    add("q_conv1d_weight", {hk * dk, 1, K}, p + "q_conv1d.weight");
    add("k_conv1d_weight", {hk * dk, 1, K}, p + "k_conv1d.weight");
    add("v_conv1d_weight", {hv * dv, 1, K}, p + "v_conv1d.weight");
    add("f_a_weight", {dk, h}, p + "f_a_proj.weight");
    add("f_b_weight", {hv * dk, dk}, p + "f_b_proj.weight");
    add("dt_bias", {hv * dk}, p + "dt_bias");
    add("A_log", {1, 1, hv, 1}, p + "A_log");
    add("b_proj_weight", {hv, h}, p + "b_proj.weight");
    add("g_a_weight", {dv, h}, p + "g_a_proj.weight");
    add("g_b_weight", {hv * dv, dv}, p + "g_b_proj.weight");
    add("gated_norm_weight", {dv}, p + "o_norm.weight");
    add("out_proj_weight", {h, hv * dv}, p + "o_proj.weight");
    return w;
  }
  if (l.role == LayerRole::LinearAttention) {
    // Gated DeltaNet (transformers' Qwen3NextGatedDeltaNet), as stored.
    int64_t hk = l.numKVHeads, hv = l.numHeads, dk = l.headDimQK,
            dv = l.headDimV, conv = 2 * hk * dk + hv * dv;
    const std::string &p = l.linearPrefix;
    add("in_proj_qkvz_weight", {2 * hk * dk + 2 * hv * dv, h},
        p + "in_proj_qkvz.weight");
    add("in_proj_ba_weight", {2 * hv, h}, p + "in_proj_ba.weight");
    add("conv1d_weight", {conv, 1, l.convKernel}, p + "conv1d.weight");
    add("dt_bias", {hv}, p + "dt_bias");
    add("A_log", {hv}, p + "A_log");
    add("gated_norm_weight", {dv}, p + "norm.weight");
    add("out_proj_weight", {h, hv * dv}, p + "out_proj.weight");
    return w;
  }
  if (l.isLatent()) {
    // Multi-head latent attention (DeepseekV2/V3Attention), as stored.
    const LatentSpec &m = l.latent;
    int64_t qw = l.numHeads * l.headDimQK;
    if (m.qLoraRank > 0) {
      linear("q_a", m.qA, m.qLoraRank, h);
      add("q_a_norm_weight", {m.qLoraRank}, m.qANorm.weight);
      add("q_b_weight", {qw, m.qLoraRank}, m.qB.weight);
    } else {
      linear("q", l.q, qw, h);
    }
    linear("kv_a", m.kvA, m.cacheWidth(), h);
    add("kv_a_norm_weight", {m.kvLoraRank}, m.kvANorm.weight);
    add("kv_b_weight", {l.numHeads * (m.nopeDim + l.headDimV), m.kvLoraRank},
        m.kvB.weight);
    linear("o", l.o, h, l.numHeads * l.headDimV);
    return w;
  }
  int64_t kvq = l.numKVHeads * l.headDimQK, kvv = l.numKVHeads * l.headDimV;
  if (l.layout == QKVLayout::Separate) {
    linear("q", l.q, queryWidth(l), h);
    linear("k", l.k, kvq, src);
    linear("v", l.v, kvv, src);
  } else {
    linear("qkv", l.qkv, queryWidth(l) + kvq + kvv, h);
  }
  add("q_norm_weight",
      {l.qkNormFlat ? l.numHeads * l.headDimQK : l.headDimQK},
      l.qNormW.weight);
  add("k_norm_weight",
      {l.qkNormFlat ? l.numKVHeads * l.headDimQK : l.headDimQK},
      l.kNormW.weight);
  add("sinks", {l.numHeads}, l.sinks);
  if (l.position == PositionKind::T5Bias)
    add("relative_attention_bias", {l.t5.numBuckets, l.numHeads},
        l.t5.tableTensor, /*shared=*/true);
  linear("o", l.o, h, l.numHeads * l.headDimV);
  add("post_norm_weight", {h}, l.postNormW.weight);
  return w;
}

std::vector<WeightArg> mlir::attn::ffnWeights(const ModelSpec &spec,
                                              const LayerSpec &l) {
  const FFNSpec &f = l.ffn;
  WeightList w{{}, f.transposedWeights};
  if (!hasFeedForward(l) || f.kind == FFNKind::Identity)
    return w.w;
  int64_t h = spec.hiddenSize, n = f.intermediate;
  w.add("ffn_norm_weight", {h}, f.norm.weight);
  w.add("ffn_norm_bias", {h}, f.norm.bias);
  if (f.kind == FFNKind::MoE) {
    int64_t e = f.numExperts, s = f.sharedIntermediate;
    w.add("ffn_router_weight", {e, h}, f.router.weight);
    w.add("ffn_router_bias", {e}, f.router.bias);
    w.add("ffn_score_bias", {e}, f.scoreBias);
    // gpt-oss's fused experts: gate and up are the even and odd features
    // of gate_up_proj, down_proj is stored x·W (or all as MXFP4 blocks).
    bool fused = f.fusedExperts;
    int gateSrc = !fused          ? 0
                  : f.halvesGateUp ? kWeightGateOfGateUpHalves
                                   : kWeightGateOfGateUp;
    int upSrc = !fused          ? 0
                : f.halvesGateUp ? kWeightUpOfGateUpHalves
                                 : kWeightUpOfGateUp;
    w.add("ffn_experts_gate_up_weight", {e, 2 * n, h}, f.gateUp.weight);
    w.add("ffn_experts_gate_weight", {e, n, h}, f.gate.weight, false,
          gateSrc);
    w.add("ffn_experts_up_weight", {e, n, h}, f.up.weight, false, upSrc);
    w.add("ffn_experts_down_weight", {e, h, n}, f.down.weight, false,
          fused ? kWeightExpertsInOut : 0);
    w.add("ffn_experts_gate_bias", {e, n}, f.expertGateUpBias, false,
          kWeightGateOfBias);
    w.add("ffn_experts_up_bias", {e, n}, f.expertGateUpBias, false,
          kWeightUpOfBias);
    w.add("ffn_experts_down_bias", {e, h}, f.expertDownBias);
    w.add("ffn_shared_gate_up_weight", {2 * s, h}, f.sharedGateUp.weight);
    w.add("ffn_shared_gate_weight", {s, h}, f.sharedGate.weight);
    w.add("ffn_shared_up_weight", {s, h}, f.sharedUp.weight);
    w.add("ffn_shared_down_weight", {h, s}, f.sharedDown.weight);
    w.add("ffn_shared_expert_gate_weight", {1, h}, f.sharedExpertGate.weight);
    return w.w;
  }
  w.linear("ffn_gate_up", f.gateUp, 2 * n, h);
  w.linear("ffn_gate", f.gate, n, h);
  w.linear("ffn_up", f.up, n, h);
  w.linear("ffn_down", f.down, h, n);
  w.add("ffn_post_norm_weight", {h}, f.postNorm.weight);
  return w.w;
}

bool mlir::attn::hasFeedForward(const LayerSpec &l) {
  return l.ffn.kind != FFNKind::None && l.ffn.unsupported.empty();
}

std::string mlir::attn::tensorPattern(const std::string &tensor,
                                      int64_t layer) {
  std::string needle = "." + std::to_string(layer) + ".";
  std::string prefix = std::to_string(layer) + ".";
  if (tensor.rfind(prefix, 0) == 0)
    return "{i}." + tensor.substr(prefix.size());
  size_t at = tensor.find(needle);
  if (at != std::string::npos)
    return tensor.substr(0, at) + ".{i}." + tensor.substr(at + needle.size());
  // The next block's tensors (Nemotron-H: a mixer's layer closes with the
  // MLP or MoE block that follows it): "{i+1}".
  std::string next = "." + std::to_string(layer + 1) + ".";
  at = tensor.find(next);
  if (at == std::string::npos)
    return tensor;
  return tensor.substr(0, at) + ".{i+1}." + tensor.substr(at + next.size());
}

namespace {

std::string hexDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);
  return buf;
}

/// What makes two layers' attention halves need different code.
void attentionKey(llvm::raw_ostream &os, const ModelSpec &spec,
                  const LayerSpec &l) {
  if (l.role == LayerRole::LinearAttention) {
    os << l.numHeads << '|' << l.numKVHeads << '|' << l.headDimQK << '|'
       << l.headDimV << '|' << l.convKernel << '|' << hexDouble(l.normEps)
       << '|' << l.noDelta << l.channelGate << l.mambaConvBias
       << l.mambaProjBias << '|' << l.mambaNormGroups << '|'
       << (l.dtMin ? hexDouble(*l.dtMin) : std::string("-")) << ','
       << (l.dtMax ? hexDouble(*l.dtMax) : std::string("-")) << '|'
       << hexDouble(l.residualScale) << '|';
    for (const WeightArg &w : layerWeights(spec, l))
      os << w.role << ',';
    return;
  }
  os << l.causal << '|' << l.window.value_or(0) << '|' << l.chunk.value_or(0)
     << '|' << l.numHeads << '|'
     << l.numKVHeads << '|' << l.headDimQK << '|' << l.headDimV << '|'
     << hexDouble(l.scale) << '|' << l.scaleOnQuery << '|'
     << (l.softcap ? hexDouble(*l.softcap) : std::string("-")) << '|'
     << int(l.position) << '|';
  if (l.position == PositionKind::Rope) {
    os << hexDouble(l.rope.theta) << '|' << l.rope.rotaryDim << '|'
       << l.rope.interleaved << '|' << hexDouble(l.rope.attentionFactor);
    for (double f : l.rope.invFreq)
      os << ',' << hexDouble(f);
    os << '|' << l.rope.longAfter;
    for (double f : l.rope.longInvFreq)
      os << ',' << hexDouble(f);
    os << '|';
  }
  if (l.position == PositionKind::T5Bias)
    os << l.t5.numBuckets << '|' << l.t5.maxDistance << '|'
       << l.t5.bidirectional << '|';
  if (l.isLatent()) {
    const LatentSpec &m = l.latent;
    os << "latent" << m.qLoraRank << ',' << m.kvLoraRank << ',' << m.nopeDim
       << ',' << m.ropeDim << ',' << hexDouble(m.latentNormEps) << '|';
  }
  os << l.qkNorm << l.qkNormFlat << l.l2QkNorm << l.outputGate
     << !l.sinks.empty() << hexDouble(l.residualScale);
  if (l.temperature)
    os << 't' << l.temperature->floorScale << ','
       << hexDouble(l.temperature->attnScale);
  os
     << int(l.norm) << int(l.placement) << '|'
     << hexDouble(l.normEps) << '|' << int(l.layout)
     << l.transposedWeights << '|';
  for (const WeightArg &w : layerWeights(spec, l))
    os << w.role << ',';
}

/// Everything that makes two layers need different code, as a string: the
/// whole layer a kind compiles (its attention and its feed-forward network),
/// whatever the attention's role.
std::string kindKey(const ModelSpec &spec, const LayerSpec &l) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << int(l.role) << '|' << l.stack << '|';
  attentionKey(os, spec, l);
  const FFNSpec &f = l.ffn;
  os << '|' << int(f.kind) << f.activation << '|' << f.intermediate << '|'
     << int(f.placement) << f.transposedWeights << '|' << f.unsupported << '|'
     << f.numExperts << ',' << f.topK << ',' << f.normTopK << ','
     << f.sharedIntermediate << '|' << int(f.scoring) << ',' << f.numGroups
     << ',' << f.topKGroups << ',' << int(f.groupScore) << f.excludeOtherGroups
     << ',' << hexDouble(f.routedScale) << ',' << hexDouble(f.normEpsilon)
     << '|' << (f.swigluLimit ? hexDouble(*f.swigluLimit) : std::string("-"))
     << ',' << hexDouble(f.swigluAlpha) << ',' << f.fusedExperts
     << f.halvesGateUp << f.scaleInput << '|';
  for (const WeightArg &w : ffnWeights(spec, l))
    os << w.role << ',' << w.source << ',';
  return os.str();
}

} // namespace

std::vector<std::string> mlir::attn::layerKindNames(const ModelSpec &spec) {
  std::vector<std::string> names(spec.layers.size());
  std::map<std::string, std::string> byKey;
  std::map<std::string, int> used;
  for (const LayerSpec &l : spec.layers) {
    std::string key = kindKey(spec, l);
    auto it = byKey.find(key);
    if (it != byKey.end()) {
      names[l.index] = it->second;
      continue;
    }
    std::string base = l.layerType;
    if (spec.encoderDecoder)
      base = l.stack + "_" + l.layerType;
    int n = used[base]++;
    std::string name = n ? base + "_" + std::to_string(n) : base;
    byKey[key] = name;
    names[l.index] = name;
  }
  return names;
}

std::vector<LayerKind> mlir::attn::groupLayersByKind(const ModelSpec &spec) {
  std::vector<std::string> names = layerKindNames(spec);
  std::vector<LayerKind> kinds;
  std::map<std::string, size_t> index;
  for (const LayerSpec &l : spec.layers) {
    auto [it, added] = index.emplace(names[l.index], kinds.size());
    if (added)
      kinds.push_back(LayerKind{names[l.index], &l, {}});
    kinds[it->second].layers.push_back(l.index);
  }
  return kinds;
}

