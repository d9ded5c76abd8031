//===- RoutedFeedForward.cpp - DeepSeek-style routed mixtures of experts
//---===//
//
// This file implements the feed-forward networks of the families whose
// mixture of experts routes as DeepSeek's does (readFeedForward calls them):
// DeepSeek-V2/V3, Kimi-K2 and GLM-4.5 (readRoutedFamily), and Kimi-Linear
// (readKimiFeedForward: the same router under its own field names, with
// w1/w3/w2 experts). The layers before first_k_dense_replace keep a SwiGLU
// MLP.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/NormalizeUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::normalize;

namespace {

/// The names a family gives its routing fields.
struct GroupFields {
  const char *experts, *groups, *topK;
};

/// Group-limited selection: `groups` groups of experts, the `topKGroups`
/// best kept, checked as the routers need them (groups of at least 2 when a
/// group is scored by its best two; enough experts kept for the top-k),
/// into moe.numGroups / moe.topKGroups; errors name the family's fields.
bool setGroups(FieldReader &r, FFNSpec &moe, int64_t groups, int64_t topKGroups,
               bool scoredByTwo, const GroupFields &f) {
  if (moe.numExperts % groups != 0 ||
      (scoredByTwo && moe.numExperts / groups < 2)) {
    r.error(f.groups) << f.groups << " (" << groups << ") must divide "
                      << f.experts << " (" << moe.numExperts << ")"
                      << (scoredByTwo ? " into groups of at least 2 experts "
                                        "(a group is scored by its best two)"
                                      : "");
    return false;
  }
  if (topKGroups > groups) {
    r.error("topk_group") << "topk_group (" << topKGroups << ") exceeds "
                          << f.groups << " (" << groups << "); accepted: 1 to "
                          << f.groups;
    return false;
  }
  if (moe.topK > moe.numExperts / groups * topKGroups) {
    r.error(f.topK) << f.topK << " (" << moe.topK
                    << ") exceeds the experts of the topk_group (" << topKGroups
                    << ") groups kept (" << moe.numExperts / groups << " each)";
    return false;
  }
  moe.numGroups = groups;
  moe.topKGroups = topKGroups;
  return true;
}

} // namespace

/// DeepSeek-V2/V3, Kimi-K2 and GLM-4.5 (DeepseekV2/V3DecoderLayer,
/// Glm4MoeDecoderLayer): the layers before first_k_dense_replace a SwiGLU
/// MLP, the others the mixture of experts with its shared experts
/// (DeepseekV2Moe / DeepseekV3MoE / Glm4MoeMoE): V3's and GLM's router
/// scores by sigmoid with e_score_correction_bias for the selection and
/// groups scored by their best two experts, V2's by softmax, greedy or with
/// groups scored by their best expert.
bool normalize::readRoutedFamily(FieldReader &r, ModelSpec &spec) {
  // Long: every MoE family's routing fields, each checked where read.
  bool glm = spec.family == "glm4_moe";
  bool v3 = spec.family == "deepseek_v3" || glm;
  /// Each family's class defaults (DeepseekV2Config, DeepseekV3Config,
  /// Glm4MoeConfig).
  auto pick = [&](auto v2Value, auto v3Value, auto glmValue) {
    return glm ? glmValue : v3 ? v3Value : v2Value;
  };
  FFNSpec dense;
  dense.kind = FFNKind::Gated;
  int64_t interDefault = pick(11008, 18432, 10944);
  dense.intermediate =
      r.optInt({"intermediate_size"}, 1, kMaxIntermediate, interDefault)
          .value_or(interDefault);
  readActivation(r, "hidden_act", "silu", dense);
  // DeepseekV2MLP's biases follow mlp_bias; DeepseekV3MLP and Glm4MoeMLP
  // have none.
  bool mlpBias = !v3 && r.optBool({"mlp_bias"}, false).value_or(false);
  FFNSpec moe = dense;
  moe.kind = FFNKind::MoE;
  int64_t expertsDefault = pick(64, 256, 128);
  moe.numExperts = r.optInt({"n_routed_experts"}, 1, 1 << 20, expertsDefault)
                       .value_or(expertsDefault);
  std::optional<int64_t> topK =
      r.optInt({"num_experts_per_tok"}, 1, 1 << 20,
               v3 ? std::optional<int64_t>(8) : std::nullopt);
  int64_t moeInterDefault = pick(1407, 2048, 1408);
  moe.intermediate =
      r.optInt({"moe_intermediate_size"}, 1, kMaxIntermediate, moeInterDefault)
          .value_or(moeInterDefault);
  int64_t shared =
      r.optInt({"n_shared_experts"}, 1, 1 << 10, pick(2, 1, 1)).value_or(1);
  moe.routedScale =
      r.optNum({"routed_scaling_factor"}, 0.0, 1e6, pick(1.0, 2.5, 1.0))
          .value_or(1.0);
  int64_t firstDense =
      r.optInt({"first_k_dense_replace"}, 0, kMaxLayers, pick(0, 3, 1))
          .value_or(0);
  // Glm4MoeConfig has no moe_layer_freq, scoring_func or topk_method: its
  // router is DeepSeek-V3's.
  int64_t freq =
      glm ? 1 : r.optInt({"moe_layer_freq"}, 1, kMaxLayers, 1).value_or(1);
  static const llvm::StringRef kV3Scoring[] = {"sigmoid"},
                               kV2Scoring[] = {"softmax"},
                               kV3Methods[] = {"noaux_tc"},
                               kV2Methods[] = {"greedy",
                                               "group_limited_greedy"};
  using Names = llvm::ArrayRef<llvm::StringRef>;
  if (!glm && r.present("scoring_func"))
    r.optEnum("scoring_func", v3 ? Names(kV3Scoring) : Names(kV2Scoring),
              std::nullopt);
  std::string method =
      glm ? std::string("noaux_tc")
          : r.optEnum("topk_method", v3 ? Names(kV3Methods) : Names(kV2Methods),
                      std::string(v3 ? "noaux_tc" : "greedy"))
                .value_or("greedy");
  bool grouped = v3 || method == "group_limited_greedy";
  std::optional<int64_t> groups, topKGroups;
  if (grouped) {
    std::optional<int64_t> noGroups;
    groups = r.optInt(
        {"n_group"}, 1, 1 << 20,
        pick(noGroups, std::optional<int64_t>(8), std::optional<int64_t>(1)));
    topKGroups = r.optInt(
        {"topk_group"}, 1, 1 << 20,
        pick(noGroups, std::optional<int64_t>(4), std::optional<int64_t>(1)));
  }
  bool normTopK = r.optBool({"norm_topk_prob"}, v3).value_or(v3);
  if (r.failed())
    return false;
  if (freq != 1) {
    r.error("moe_layer_freq")
        << "moe_layer_freq " << freq
        << " is not compiled: transformers' DeepSeek layers are a mixture "
           "of experts from first_k_dense_replace on, every layer; "
           "accepted: 1";
    return false;
  }
  bool anyMoE = firstDense < spec.numLayers;
  if (anyMoE && !topK) {
    r.error("num_experts_per_tok")
        << "field 'num_experts_per_tok' is missing: layers " << firstDense
        << ".." << spec.numLayers - 1
        << " (from first_k_dense_replace on) are a mixture of experts and "
           "need the number of experts per token";
    return false;
  }
  moe.topK = topK.value_or(1);
  if (anyMoE && moe.topK > moe.numExperts) {
    r.error("num_experts_per_tok")
        << "num_experts_per_tok (" << moe.topK << ") exceeds n_routed_experts ("
        << moe.numExperts << "); accepted: 1 to n_routed_experts";
    return false;
  }
  if (anyMoE && grouped) {
    if (!groups || !topKGroups) {
      r.error(groups ? "topk_group" : "n_group")
          << "topk_method '" << method
          << "' selects experts within groups: 'n_group' and 'topk_group' "
             "are needed";
      return false;
    }
    if (!setGroups(r, moe, *groups, *topKGroups, v3,
                   {"n_routed_experts", "n_group", "num_experts_per_tok"}))
      return false;
  }
  if (v3) {
    moe.scoring = ExpertScoring::Sigmoid;
    moe.groupScore = ExpertGroupScore::TopTwoSum;
    moe.normTopK = normTopK;
    moe.normEpsilon = 1e-20; // DeepseekV3TopkRouter, Glm4MoeMoE: sum + 1e-20
  } else {
    moe.scoring = ExpertScoring::Softmax;
    moe.groupScore = ExpertGroupScore::Max;
    // transformers' DeepseekV2Moe scales the chosen probabilities by
    // routed_scaling_factor and never renormalizes them.
    moe.normTopK = false;
    if (normTopK && anyMoE)
      spec.notes.push_back(
          "norm_topk_prob is true but transformers' DeepSeek-V2 mixture of "
          "experts does not renormalize the chosen weights: not applied");
  }
  moe.sharedIntermediate = moe.intermediate * shared;
  if (mlpBias && dense.unsupported.empty())
    dense.unsupported = moe.unsupported =
        "'mlp_bias': true (biases on the MLPs' projections) is not "
        "compiled; accepted: false";
  for (LayerSpec &l : spec.layers) {
    std::string p = prefixOf(l.normW.weight, "input_layernorm.weight");
    std::string m = p + "mlp.";
    FFNSpec lf = l.index < firstDense ? dense : moe;
    lf.placement = FFNPlacement::Pre;
    lf.norm.weight = p + "post_attention_layernorm.weight";
    if (lf.kind == FFNKind::MoE) {
      lf.router.weight = m + "gate.weight";
      if (v3)
        lf.scoreBias = m + "gate.e_score_correction_bias";
      lf.gate.weight = m + "experts.{e}.gate_proj.weight";
      lf.up.weight = m + "experts.{e}.up_proj.weight";
      lf.down.weight = m + "experts.{e}.down_proj.weight";
      lf.sharedGate.weight = m + "shared_experts.gate_proj.weight";
      lf.sharedUp.weight = m + "shared_experts.up_proj.weight";
      lf.sharedDown.weight = m + "shared_experts.down_proj.weight";
    } else {
      lf.gate.weight = m + "gate_proj.weight";
      lf.up.weight = m + "up_proj.weight";
      lf.down.weight = m + "down_proj.weight";
    }
    l.ffn = lf;
  }
  return true;
}

/// Kimi-Linear (KimiDecoderLayer): a SwiGLU MLP (mlp.gate_proj/up_proj/
/// down_proj) before first_k_dense_replace and off moe_layer_freq, else
/// KimiSparseMoeBlock: DeepSeek-V3's router under other names
/// (moe_router_activation_func scores, e_score_correction_bias for the
/// selection, groups of num_expert_group scored by their best two, the
/// chosen scores renormalized by moe_renormalize with + 1e-20, times
/// routed_scaling_factor), the experts' w1 (gate), w3 (up), w2 (down), and
/// num_shared_experts × moe_intermediate_size shared experts.
bool normalize::readKimiFeedForward(FieldReader &r, ModelSpec &spec) {
  FFNSpec dense;
  dense.kind = FFNKind::Gated;
  dense.activation = "silu";
  dense.intermediate =
      r.optInt({"intermediate_size"}, 1, kMaxIntermediate, 11008)
          .value_or(11008);
  std::optional<int64_t> experts =
      r.optInt({"num_experts"}, 1, 1 << 20, std::nullopt);
  int64_t firstDense =
      r.optInt({"first_k_dense_replace"}, 0, kMaxLayers, 0).value_or(0);
  int64_t freq = r.optInt({"moe_layer_freq"}, 1, kMaxLayers, 1).value_or(1);
  if (r.failed())
    return false;
  FFNSpec moe = dense;
  if (experts) {
    moe.kind = FFNKind::MoE;
    moe.numExperts = *experts;
    std::optional<int64_t> topK =
        r.optInt({"num_experts_per_token"}, 1, 1 << 20, std::nullopt);
    std::optional<int64_t> inter =
        r.optInt({"moe_intermediate_size"}, 1, kMaxIntermediate, std::nullopt);
    int64_t shared =
        r.optInt({"num_shared_experts"}, 0, 1 << 10, 0).value_or(0);
    moe.routedScale =
        r.optNum({"routed_scaling_factor"}, 0.0, 1e6, 1.0).value_or(1.0);
    moe.normTopK = r.optBool({"moe_renormalize"}, true).value_or(true);
    std::string scoring =
        r.optEnum("moe_router_activation_func", {"sigmoid", "softmax"},
                  std::string("sigmoid"))
            .value_or("sigmoid");
    // use_grouped_topk only picks vLLM's code path: KimiMoEGate always
    // selects within groups (with one group, the plain top-k).
    r.optBool({"use_grouped_topk"}, true);
    int64_t groups = r.optInt({"num_expert_group"}, 1, 1 << 20, 1).value_or(1);
    int64_t topKGroups = r.optInt({"topk_group"}, 1, 1 << 20, 1).value_or(1);
    if (r.failed())
      return false;
    for (auto [key, v] : {std::pair<const char *, std::optional<int64_t> &>{
                              "num_experts_per_token", topK},
                          {"moe_intermediate_size", inter}})
      if (!v) {
        r.error(key) << "field '" << key
                     << "' is missing: num_experts is set, so the layers "
                        "from first_k_dense_replace on are a mixture of "
                        "experts and need it";
        return false;
      }
    moe.topK = *topK;
    moe.intermediate = *inter;
    if (moe.topK > moe.numExperts) {
      r.error("num_experts_per_token")
          << "num_experts_per_token (" << moe.topK << ") exceeds num_experts ("
          << moe.numExperts << "); accepted: 1 to num_experts";
      return false;
    }
    if (!setGroups(
            r, moe, groups, topKGroups, /*scoredByTwo=*/true,
            {"num_experts", "num_expert_group", "num_experts_per_token"}))
      return false;
    moe.scoring =
        scoring == "sigmoid" ? ExpertScoring::Sigmoid : ExpertScoring::Softmax;
    moe.groupScore = ExpertGroupScore::TopTwoSum;
    // KimiMoEGate: renormalized only with more than one expert per token.
    moe.normTopK = moe.normTopK && moe.topK > 1;
    moe.normEpsilon = 1e-20;
    moe.sharedIntermediate = moe.intermediate * shared;
    if (firstDense < spec.numLayers)
      spec.notes.push_back(
          "mixture of experts: the chosen experts are weighted by their "
          "scores without e_score_correction_bias, as DeepSeek-V3 and vLLM's "
          "kimi_linear weigh them (the bias only selects); modeling_kimi.py's "
          "KimiMoEGate adds the bias to its scores in place, so its weights "
          "carry it");
  }
  for (LayerSpec &l : spec.layers) {
    std::string p = prefixOf(l.normW.weight, "input_layernorm.weight");
    bool isMoE = experts && l.index >= firstDense && l.index % freq == 0;
    FFNSpec lf = isMoE ? moe : dense;
    lf.placement = FFNPlacement::Pre;
    lf.norm.weight = p + "post_attention_layernorm.weight";
    if (isMoE) {
      std::string m = p + "block_sparse_moe.";
      lf.router.weight = m + "gate.weight";
      lf.scoreBias = m + "gate.e_score_correction_bias";
      lf.gate.weight = m + "experts.{e}.w1.weight";
      lf.up.weight = m + "experts.{e}.w3.weight";
      lf.down.weight = m + "experts.{e}.w2.weight";
      if (lf.sharedIntermediate > 0) {
        lf.sharedGate.weight = m + "shared_experts.gate_proj.weight";
        lf.sharedUp.weight = m + "shared_experts.up_proj.weight";
        lf.sharedDown.weight = m + "shared_experts.down_proj.weight";
      }
    } else {
      std::string m = p + "mlp.";
      lf.gate.weight = m + "gate_proj.weight";
      lf.up.weight = m + "up_proj.weight";
      lf.down.weight = m + "down_proj.weight";
    }
    l.ffn = lf;
  }
  return true;
}

/// Nemotron-H's MLP and MoE blocks (NemotronHMLP, NemotronHMoE), each the
/// feed-forward network of the mixer layer before it (normalizeNemotronH
/// set its kind and its norm, the block's own): the MLP
/// down(act(up(x))) with mlp_hidden_act (relu2) and mlp_bias; the mixture
/// of experts DeepSeek-V3's router (sigmoid scores,
/// e_score_correction_bias for the selection only, n_group groups scored
/// by their best two, topk_group kept, the chosen scores renormalized with
/// + 1e-20 under norm_topk_prob, times routed_scaling_factor) over plain
/// experts act(x·upᵀ)·downᵀ, plus the shared expert, a plain MLP of
/// moe_shared_expert_intermediate_size (times n_shared_experts, as vLLM).
bool normalize::readNemotronFeedForward(FieldReader &r, ModelSpec &spec) {
  // Long: the MLP's and the mixture's fields, each checked where read.
  bool anyMlp = false, anyMoE = false;
  for (const LayerSpec &l : spec.layers) {
    anyMlp |= l.ffn.kind == FFNKind::Dense;
    anyMoE |= l.ffn.kind == FFNKind::MoE;
  }
  FFNSpec base;
  readActivation(r, "mlp_hidden_act", "relu2", base);
  bool mlpBias = r.optBool({"mlp_bias"}, false).value_or(false);
  if (r.failed())
    return false;
  // intermediate_size: one size, or (vLLM) one per MLP block in order (a
  // list of one applies to all).
  std::vector<int64_t> mlpSizes;
  if (anyMlp) {
    const nlohmann::json *v = r.get("intermediate_size");
    size_t mlps = 0;
    for (const LayerSpec &l : spec.layers)
      mlps += l.ffn.kind == FFNKind::Dense;
    if (v && v->is_array()) {
      std::optional<std::vector<double>> list =
          r.optNumArray("intermediate_size");
      if (r.failed())
        return false;
      for (double d : *list) {
        if (d != std::floor(d) || d < 1 || d > double(kMaxIntermediate)) {
          r.error("intermediate_size")
              << "intermediate_size holds " << formatNumber(d)
              << "; accepted: integers 1 to " << kMaxIntermediate;
          return false;
        }
        mlpSizes.push_back(int64_t(d));
      }
      if (mlpSizes.size() != 1 && mlpSizes.size() != mlps) {
        r.error("intermediate_size")
            << "intermediate_size lists " << mlpSizes.size() << " sizes for "
            << mlps << " MLP blocks; accepted: one size, or one per MLP block";
        return false;
      }
    } else {
      mlpSizes.push_back(
          r.optInt({"intermediate_size"}, 1, kMaxIntermediate, 21504)
              .value_or(21504));
      if (r.failed())
        return false;
    }
  }
  FFNSpec moe = base;
  moe.kind = FFNKind::MoE;
  if (anyMoE) {
    moe.numExperts =
        r.optInt({"n_routed_experts", "num_local_experts"}, 1, 1 << 20, 8)
            .value_or(8);
    moe.topK = r.optInt({"num_experts_per_tok"}, 1, 1 << 20, 2).value_or(2);
    moe.intermediate =
        r.optInt({"moe_intermediate_size"}, 1, kMaxIntermediate, 7688)
            .value_or(7688);
    int64_t sharedInter = r.optInt({"moe_shared_expert_intermediate_size"}, 1,
                                   kMaxIntermediate, 7688)
                              .value_or(7688);
    int64_t shared = r.optInt({"n_shared_experts"}, 0, 1 << 10, 1).value_or(1);
    moe.routedScale =
        r.optNum({"routed_scaling_factor"}, 0.0, 1e6, 1.0).value_or(1.0);
    moe.normTopK = r.optBool({"norm_topk_prob"}, true).value_or(true);
    int64_t groups = r.optInt({"n_group"}, 1, 1 << 20, 1).value_or(1);
    int64_t topKGroups = r.optInt({"topk_group"}, 1, 1 << 20, 1).value_or(1);
    std::optional<int64_t> latent =
        r.optInt({"moe_latent_size"}, 1, kMaxHidden);
    if (r.failed())
      return false;
    if (moe.topK > moe.numExperts) {
      r.error("num_experts_per_tok")
          << "num_experts_per_tok (" << moe.topK
          << ") exceeds n_routed_experts (" << moe.numExperts
          << "); accepted: 1 to n_routed_experts";
      return false;
    }
    if (!setGroups(r, moe, groups, topKGroups, /*scoredByTwo=*/true,
                   {"n_routed_experts", "n_group", "num_experts_per_tok"}))
      return false;
    moe.scoring = ExpertScoring::Sigmoid;
    moe.groupScore = ExpertGroupScore::TopTwoSum;
    // NemotronHMoE masks the other groups' scores to -inf.
    moe.excludeOtherGroups = true;
    moe.normEpsilon = 1e-20;
    moe.sharedIntermediate = sharedInter * shared;
    if (shared != 1)
      spec.notes.push_back(
          "n_shared_experts = " + std::to_string(shared) +
          ": the shared expert is " +
          (shared ? std::to_string(shared) + " x "
                  : std::string("absent (0 x ")) +
          "moe_shared_expert_intermediate_size wide" + (shared ? "" : ")") +
          ", as vLLM builds it (transformers always builds one of "
          "moe_shared_expert_intermediate_size)");
    if (latent && moe.unsupported.empty())
      moe.unsupported =
          "moe_latent_size " + std::to_string(*latent) +
          " (the experts run in a latent space through fc1_latent_proj and "
          "fc2_latent_proj: Nemotron 3 Super's latent MoE) is not compiled; "
          "accepted: null";
    if (mlpBias && moe.unsupported.empty())
      moe.unsupported = "'mlp_bias': true (biases on the shared expert's "
                        "projections) is not compiled in a mixture of "
                        "experts; accepted: false";
  }
  size_t mlpIndex = 0;
  for (LayerSpec &l : spec.layers) {
    if (l.ffn.kind != FFNKind::Dense && l.ffn.kind != FFNKind::MoE)
      continue;
    std::string m = prefixOf(l.ffn.norm.weight, "norm.weight") + "mixer.";
    FFNSpec lf = l.ffn.kind == FFNKind::MoE ? moe : base;
    lf.kind = l.ffn.kind;
    lf.norm = l.ffn.norm;
    lf.placement = FFNPlacement::Pre;
    if (lf.kind == FFNKind::Dense) {
      lf.intermediate = mlpSizes[mlpSizes.size() == 1 ? 0 : mlpIndex++];
      lf.up = {m + "up_proj.weight", mlpBias ? m + "up_proj.bias" : ""};
      lf.down = {m + "down_proj.weight", mlpBias ? m + "down_proj.bias" : ""};
    } else {
      lf.router.weight = m + "gate.weight";
      lf.scoreBias = m + "gate.e_score_correction_bias";
      lf.up.weight = m + "experts.{e}.up_proj.weight";
      lf.down.weight = m + "experts.{e}.down_proj.weight";
      if (lf.sharedIntermediate > 0) {
        lf.sharedUp.weight = m + "shared_experts.up_proj.weight";
        lf.sharedDown.weight = m + "shared_experts.down_proj.weight";
      }
    }
    l.ffn = lf;
  }
  return true;
}
