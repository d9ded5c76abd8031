//===- LatentFamilies.cpp - multi-head latent attention families ----------===//
//
// This file implements the normalization of the DeepSeek-V2/V3 families
// (model_type deepseek_v2, deepseek_v3 and kimi_k2, which is DeepSeek-V3's
// architecture), as transformers' DeepseekV2Config/DeepseekV3Config and
// modeling_deepseek_v2.py/modeling_deepseek_v3.py define them: multi-head
// latent attention (LatentSpec) on every layer. The feed-forward networks
// (dense, then the mixture of experts) are read by FeedForward.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/NormalizeUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::normalize;

namespace {

/// The class defaults that differ between the two configs.
struct LatentDefaults {
  Defaults d;
  int64_t qLoraRank = 1536;
};

LatentDefaults latentDefaults(bool v3) {
  LatentDefaults l;
  l.d.hidden = v3 ? 7168 : 4096;
  l.d.layers = v3 ? 61 : 32;
  l.d.heads = v3 ? 128 : 32;
  l.d.maxPos = v3 ? 4096 : 2048;
  return l;
}

/// DeepSeek-V3's softmax scale: qk_head_dim^-1/2, times mscale² when the
/// rope scaling gives mscale_all_dim (yarn_get_mscale(factor,
/// mscale_all_dim) = 0.1·mscale_all_dim·ln(factor) + 1 for a factor > 1).
/// transformers' DeepSeek-V2 does not rescale.
double latentScale(FieldReader &r, bool v3, int64_t qkHeadDim,
                   const RopeSpec &rope, ModelSpec &spec) {
  double scale = 1.0 / std::sqrt(double(qkHeadDim));
  if (!v3)
    return scale;
  std::optional<FieldReader> scaling = r.optObject("rope_scaling");
  if (!scaling) {
    std::optional<FieldReader> params = r.optObject("rope_parameters");
    if (params && params->present("mscale_all_dim"))
      scaling = params;
  }
  if (!scaling || r.failed())
    return scale;
  double all =
      scaling->optNum({"mscale_all_dim"}, 0.0, 1e6, 0.0).value_or(0.0);
  if (all == 0.0 || rope.factor <= 1.0)
    return scale;
  double m = 0.1 * all * std::log(rope.factor) + 1.0;
  spec.notes.push_back("softmax scale (qk_nope_head_dim + qk_rope_head_dim)"
                       "^-1/2 times mscale^2 = " +
                       formatNumber(m * m) + " (mscale_all_dim " +
                       formatNumber(all) + ", factor " +
                       formatNumber(rope.factor) + ")");
  return scale * m * m;
}

} // namespace

bool normalize::latentKvHeadsMatch(FieldReader &r, int64_t kvHeads,
                                   int64_t heads) {
  if (kvHeads == heads)
    return true;
  r.error("num_key_value_heads")
      << "num_key_value_heads (" << kvHeads
      << ") must equal num_attention_heads (" << heads
      << ") in multi-head latent attention: kv_b_proj expands the latent "
         "into keys and values for every query head";
  return false;
}

bool normalize::normalizeLatent(FieldReader &r, ModelSpec &spec) {
  bool v3 = spec.family == "deepseek_v3";
  LatentDefaults ld = latentDefaults(v3);
  const Defaults &d = ld.d;
  spec.hiddenSize = r.reqInt({"hidden_size"}, 1, kMaxHidden, "the model width");
  spec.numLayers =
      r.reqInt({"num_hidden_layers"}, 1, kMaxLayers, "the number of layers");
  int64_t heads = r.reqInt({"num_attention_heads"}, 1, kMaxHeads,
                           "the number of query heads");
  if (r.failed())
    return false;
  // The expanded keys and values have one head per query head:
  // repeat_kv(num_attention_heads / num_key_value_heads) must be 1.
  int64_t kvHeads =
      r.optInt({"num_key_value_heads"}, 1, kMaxHeads, heads).value_or(heads);
  if (r.failed())
    return false;
  if (!latentKvHeadsMatch(r, kvHeads, heads))
    return false;
  LatentSpec lat;
  // q_lora_rank: null (DeepSeek-V2-Lite) means q_proj, no bottleneck.
  if (r.has("q_lora_rank") && !r.present("q_lora_rank"))
    lat.qLoraRank = 0;
  else
    lat.qLoraRank = r.optInt({"q_lora_rank"}, 1, kMaxHidden, ld.qLoraRank)
                        .value_or(ld.qLoraRank);
  lat.kvLoraRank =
      r.optInt({"kv_lora_rank"}, 1, kMaxHidden, 512).value_or(512);
  lat.nopeDim =
      r.optInt({"qk_nope_head_dim"}, 1, kMaxHeadDim, 128).value_or(128);
  lat.ropeDim =
      r.optInt({"qk_rope_head_dim"}, 2, kMaxHeadDim, 64).value_or(64);
  int64_t vDim = r.optInt({"v_head_dim"}, 1, kMaxHeadDim, 128).value_or(128);
  std::optional<int64_t> maxPos =
      r.optInt({"max_position_embeddings"}, 1, kMaxPositions, d.maxPos);
  double eps = r.optNum({"rms_norm_eps"}, 1e-30, 1.0, d.eps).value_or(d.eps);
  bool bias = r.optBool({"attention_bias"}, false).value_or(false);
  // DeepSeek-V3 applies the rotary embedding to the checkpoint's
  // interleaved pairs unless rope_interleave is false; DeepSeek-V2's complex
  // rotary always pairs (x[2i], x[2i+1]).
  bool interleave =
      v3 ? r.optBool({"rope_interleave"}, true).value_or(true) : true;
  if (r.failed())
    return false;
  if (lat.ropeDim % 2 != 0) {
    r.error("qk_rope_head_dim")
        << "qk_rope_head_dim (" << lat.ropeDim
        << ") must be even: the rotary embedding rotates pairs of features";
    return false;
  }
  spec.maxPositions = maxPos;
  // DeepseekV2/V3Config set head_dim = qk_rope_head_dim: the rotary
  // frequencies (and yarn's ranges) are over the rope part.
  RopeSpec rope = readRope(r, lat.ropeDim, d, maxPos, "full_attention");
  if (r.failed())
    return false;
  rope.interleaved = interleave;
  double scale =
      latentScale(r, v3, lat.nopeDim + lat.ropeDim, rope, spec);
  if (r.failed())
    return false;
  if (!v3 && rope.factor > 1.0) {
    std::optional<FieldReader> scaling = r.optObject("rope_scaling");
    if (scaling && scaling->present("mscale_all_dim"))
      spec.notes.push_back(
          "rope_scaling gives mscale_all_dim, but transformers' DeepSeek-V2 "
          "attention does not scale the softmax by mscale^2 (DeepSeek's own "
          "V2 code does): the softmax scale stays "
          "(qk_nope_head_dim + qk_rope_head_dim)^-1/2, as transformers "
          "computes it");
  }
  if (!noteNextnLayers(r, spec))
    return false;
  for (int64_t i = 0; i < spec.numLayers; ++i) {
    std::string p = layerPrefix("model.layers.{i}.", i);
    std::string a = p + "self_attn.";
    LayerSpec l;
    l.index = i;
    l.stack = "decoder";
    l.layerInStack = i;
    l.layerType = "full_attention";
    l.causal = true;
    l.numHeads = l.numKVHeads = heads;
    l.headDimQK = lat.nopeDim + lat.ropeDim;
    l.headDimV = vDim;
    l.scale = scale;
    l.position = PositionKind::Rope;
    l.rope = rope;
    l.norm = NormKind::RMS;
    l.placement = NormPlacement::Pre;
    l.normEps = eps;
    l.normW.weight = p + "input_layernorm.weight";
    LatentSpec ll = lat;
    if (ll.qLoraRank > 0) {
      ll.qA = {a + "q_a_proj.weight", bias ? a + "q_a_proj.bias" : ""};
      ll.qANorm.weight = a + "q_a_layernorm.weight";
      ll.qB.weight = a + "q_b_proj.weight";
    } else {
      l.q.weight = a + "q_proj.weight";
    }
    ll.kvA = {a + "kv_a_proj_with_mqa.weight",
              bias ? a + "kv_a_proj_with_mqa.bias" : ""};
    ll.kvANorm.weight = a + "kv_a_layernorm.weight";
    ll.kvB.weight = a + "kv_b_proj.weight";
    l.latent = ll;
    l.o = {a + "o_proj.weight", bias ? a + "o_proj.bias" : ""};
    spec.layers.push_back(l);
  }
  return true;
}
