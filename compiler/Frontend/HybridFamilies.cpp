//===- HybridFamilies.cpp - Mamba2 / attention hybrid families ------------===//
//
// This file implements the normalization of the hybrid families whose
// linear layers are Mamba2 mixers: IBM Granite-4.0-H (`granitemoehybrid`,
// transformers' GraniteMoeHybridConfig: `layer_types` of "mamba" and
// "attention", every layer closed by a mixture of experts with a shared
// MLP). A Mamba2 layer is a LinearAttention layer without the delta
// correction (LayerSpec::noDelta): its SSD is attn.gated_delta_rule with
// no_delta, B the keys, C the queries, x the values, dt the beta and dt·A
// the gate, n_groups the query/key heads, scale 1.
//
// What is compiled: the kernels (each Mamba2 kind's `<kind>_gdn`, the
// attention kinds' `<kind>_sdpa` and paged entries) and the blocks: the
// Mamba2 mixer (in_proj, the convolution over x, B and C with its bias,
// dt = softplus(dt + dt_bias), the SSD, the D skip, the gated RMSNorm with
// the gate first, out_proj) or the attention, each with its pre-norm and
// residual_multiplier; the layers, closed by the mixture of experts with its
// shared MLP (FeedForward.cpp's readGraniteMoE).
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/NormalizeUtils.h"

#include <cctype>
#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::normalize;

namespace {

/// A linear layer's recurrent state per sequence, heads x rows x columns
/// floats (named by `factors`): past 4 GiB no machine serves a batch, and
/// the error names `key`.
bool stateFits(FieldReader &r, llvm::StringRef key, llvm::StringRef kind,
               llvm::StringRef factors, int64_t heads, int64_t rows,
               int64_t cols) {
  int64_t bytes = 4 * heads * rows * cols;
  if (bytes <= (int64_t(1) << 32))
    return true;
  r.error(key) << "the " << kind << " layers' state, " << factors << " = "
               << heads << " x " << rows << " x " << cols << " floats, is "
               << bytes / (1 << 20)
               << " MiB per sequence and layer; accepted: at most 4096 MiB";
  return false;
}

/// The Mamba2 mixer's sizes.
struct MambaDims {
  int64_t heads = 0, groups = 0, state = 0, headDim = 0, conv = 0;
};

/// What a Mamba2 layer takes from its family besides its sizes.
struct MambaOptions {
  std::string prefix; ///< the mixer's weights ("model.layers.3.mamba.")
  bool convBias = true, projBias = false;
  int64_t normGroups = 1;
  std::optional<double> dtMin, dtMax;
};

/// `l` as a Mamba2 layer: the gated delta rule without the delta
/// correction, n_groups the key heads, d_state the key dim, scale 1.
void setMambaLayer(LayerSpec &l, const MambaDims &m, const MambaOptions &o) {
  l.layerType = "mamba";
  l.role = LayerRole::LinearAttention;
  l.noDelta = true;
  l.linearPrefix = o.prefix;
  l.numHeads = m.heads;
  l.numKVHeads = m.groups;
  l.headDimQK = m.state;
  l.headDimV = m.headDim;
  l.scale = 1.0;
  l.convKernel = m.conv;
  l.mambaConvBias = o.convBias;
  l.mambaProjBias = o.projBias;
  l.mambaNormGroups = o.normGroups;
  l.dtMin = o.dtMin;
  l.dtMax = o.dtMax;
}

/// GraniteMoeHybridConfig's mamba_* fields (its defaults), checked as its
/// constructor checks them.
bool readGraniteMamba(FieldReader &r, int64_t hidden, MambaDims &m) {
  m.heads = r.optInt({"mamba_n_heads"}, 1, 1 << 20, 128).value_or(128);
  m.groups = r.optInt({"mamba_n_groups"}, 1, 1 << 20, 1).value_or(1);
  m.state = r.optInt({"mamba_d_state"}, 1, kMaxHeadDim, 256).value_or(256);
  m.conv = r.optInt({"mamba_d_conv"}, 1, 64, 4).value_or(4);
  int64_t expand = r.optInt({"mamba_expand"}, 1, 64, 2).value_or(2);
  if (r.failed())
    return false;
  int64_t inner = expand * hidden;
  if (inner % m.heads != 0) {
    r.error("mamba_n_heads")
        << "mamba_n_heads (" << m.heads
        << ") must divide mamba_expand x hidden_size (" << inner
        << "): the mixer's " << inner << " channels split into heads";
    return false;
  }
  // mamba_d_head: "auto" (the default) is the intermediate size / heads.
  const nlohmann::json *dh = r.get("mamba_d_head");
  if (dh && dh->is_string() && dh->get<std::string>() == "auto")
    m.headDim = inner / m.heads;
  else
    m.headDim = r.optInt({"mamba_d_head"}, 1, kMaxHeadDim, inner / m.heads)
                    .value_or(inner / m.heads);
  if (r.failed())
    return false;
  if (m.headDim * m.heads != inner) {
    r.error("mamba_d_head")
        << "mamba_d_head (" << m.headDim << ") x mamba_n_heads (" << m.heads
        << ") must equal mamba_expand x hidden_size (" << inner
        << "); accepted: \"auto\" or " << inner / m.heads;
    return false;
  }
  if (m.heads % m.groups != 0) {
    r.error("mamba_n_groups")
        << "mamba_n_groups (" << m.groups << ") must divide mamba_n_heads ("
        << m.heads << "): each group's B and C serve a whole run of heads";
    return false;
  }
  // The state every sequence carries through each Mamba2 layer: heads x
  // d_state x head_dim floats.
  return stateFits(r, "mamba_d_state", "Mamba2",
                   "mamba_n_heads x mamba_d_state x mamba_d_head", m.heads,
                   m.state, m.headDim);
}

/// One bound of time_step_limit: a number, or infinity as configs spell it
/// (a string "inf"/"Infinity", transformers 5's {"__float__": "Infinity"},
/// or json.dump's bare Infinity, which ConfigSource reads as "+Inf").
std::optional<double> limitValue(const nlohmann::json &v) {
  if (v.is_number())
    return v.get<double>();
  const nlohmann::json *s = &v;
  if (v.is_object() && v.size() == 1 && v.contains("__float__"))
    s = &v["__float__"];
  if (!s->is_string())
    return std::nullopt;
  std::string t = s->get<std::string>();
  bool neg = !t.empty() && t[0] == '-';
  if (neg || (!t.empty() && t[0] == '+'))
    t = t.substr(1);
  for (char &c : t)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  if (t != "inf" && t != "infinity")
    return std::nullopt;
  return neg ? -HUGE_VAL : HUGE_VAL;
}

/// time_step_limit [lo, hi], transformers' clamp of dt after its softplus:
/// dtMin where lo > 0 (softplus is never below 0), dtMax where hi is finite.
bool readTimeStepLimit(FieldReader &r, std::optional<double> &dtMin,
                       std::optional<double> &dtMax,
                       llvm::StringRef key = "time_step_limit") {
  if (!r.present(key))
    return true;
  const nlohmann::json &v = *r.get(key);
  std::optional<double> lo, hi;
  if (v.is_array() && v.size() == 2) {
    lo = limitValue(v[0]);
    hi = limitValue(v[1]);
  }
  if (!lo || !hi || *lo > *hi || (std::isinf(*lo) && *lo > 0)) {
    r.error(key)
        << r.name(key)
        << " must be [low, high] with low <= high (numbers, "
           "or Infinity / \"Infinity\" / {\"__float__\": \"Infinity\"} for no "
           "upper bound), found "
        << describeJsonValue(v);
    return false;
  }
  if (*lo > 0)
    dtMin = *lo;
  if (!std::isinf(*hi))
    dtMax = *hi;
  return true;
}

} // namespace

bool normalize::normalizeGraniteHybrid(FieldReader &r, ModelSpec &spec) {
  Defaults d;
  d.hidden = 4096;
  d.layers = 32;
  d.heads = 32;
  d.maxPos = 2048;
  d.eps = 1e-6;
  Dims dims;
  readDims(r, d, /*required=*/false, {"hidden_size"}, {"num_hidden_layers"},
           {"num_attention_heads"}, {"num_key_value_heads"}, {},
           {"max_position_embeddings"}, {"rms_norm_eps"}, dims, spec);
  if (r.failed())
    return false;
  spec.hiddenSize = dims.hidden;
  spec.numLayers = dims.layers;
  spec.maxPositions = dims.maxPos;
  // layer_types (alias layers_block_type): every layer Mamba2 when absent.
  std::vector<std::string> types =
      r.optEnumArray("layer_types", {"mamba", "attention"}, size_t(dims.layers))
          .value_or(std::vector<std::string>{});
  if (r.failed())
    return false;
  if (types.empty())
    types.assign(size_t(dims.layers), "mamba");
  MambaDims m;
  if (!readGraniteMamba(r, dims.hidden, m))
    return false;
  // GraniteMoeHybridAttention: scores scaled by attention_multiplier (not
  // 1/sqrt(d)), RoPE only with position_embedding_type "rope" (none
  // otherwise), q/k/v/o biases with attention_bias.
  double scale =
      r.optNum({"attention_multiplier"}, 1e-12, 1e6, 1.0).value_or(1.0);
  double residualScale =
      r.optNum({"residual_multiplier"}, 0.0, 1e6, 1.0).value_or(1.0);
  bool convBias = r.optBool({"mamba_conv_bias"}, true).value_or(true);
  bool projBias = r.optBool({"mamba_proj_bias"}, false).value_or(false);
  std::string act = r.optString({"hidden_act"}, "silu").value_or("silu");
  std::optional<std::string> pos = r.optString({"position_embedding_type"});
  bool bias = r.optBool({"attention_bias"}, false).value_or(false);
  if (r.failed())
    return false;
  if (pos && *pos != "rope" && *pos != "nope") {
    r.error("position_embedding_type")
        << "position_embedding_type " << quoteForError(*pos)
        << " is not one GraniteMoeHybrid knows; accepted: \"rope\", "
           "\"nope\" or null (no position embedding)";
    return false;
  }
  // The mixer's convolution is followed by hidden_act, which the compiled
  // convolution computes as SiLU.
  if (act != "silu" && act != "swish") {
    r.error("hidden_act")
        << "hidden_act " << quoteForError(act)
        << " after the Mamba2 convolution is not compiled; accepted: silu, "
           "swish";
    return false;
  }
  std::optional<double> dtMin, dtMax;
  if (!readTimeStepLimit(r, dtMin, dtMax))
    return false;
  bool rope = pos && *pos == "rope";
  RopeSpec ropeSpec;
  if (rope) {
    ropeSpec = readRope(r, dims.headDim, d, dims.maxPos, "full_attention");
    if (r.failed())
      return false;
  }
  for (int64_t i = 0; i < dims.layers; ++i) {
    std::string p = layerPrefix("model.layers.{i}.", i);
    LayerSpec l;
    l.index = i;
    l.stack = "decoder";
    l.layerInStack = i;
    l.norm = NormKind::RMS;
    l.placement = NormPlacement::Pre;
    l.normEps = dims.eps;
    l.normW.weight = p + "input_layernorm.weight";
    l.residualScale = residualScale;
    if (types[size_t(i)] == "mamba") {
      setMambaLayer(l, m, {p + "mamba.", convBias, projBias, 1, dtMin, dtMax});
      spec.layers.push_back(l);
      continue;
    }
    std::string a = p + "self_attn.";
    l.layerType = "full_attention";
    l.causal = true;
    l.numHeads = dims.heads;
    l.numKVHeads = dims.kvHeads;
    l.headDimQK = l.headDimV = dims.headDim;
    l.scale = scale;
    l.position = rope ? PositionKind::Rope : PositionKind::None;
    if (rope)
      l.rope = ropeSpec;
    l.q.weight = a + "q_proj.weight";
    l.k.weight = a + "k_proj.weight";
    l.v.weight = a + "v_proj.weight";
    l.o.weight = a + "o_proj.weight";
    if (bias) {
      l.q.bias = a + "q_proj.bias";
      l.k.bias = a + "k_proj.bias";
      l.v.bias = a + "v_proj.bias";
      l.o.bias = a + "o_proj.bias";
    }
    spec.layers.push_back(l);
  }
  return true;
}

namespace {

/// A 1-based layer list of Kimi-Linear's linear_attn_config (kda_layers,
/// full_attn_layers): integers in [1, layers], no repeats; marks each in
/// `owner` (0-based) with `tag`, refusing a layer another list claimed.
bool readLayerList(FieldReader &cfg, llvm::StringRef key, int64_t layers,
                   int tag, std::vector<int> &owner) {
  std::optional<std::vector<double>> list = cfg.optNumArray(key);
  if (cfg.failed())
    return false;
  if (!list) {
    cfg.error(key) << "field '" << cfg.name(key)
                   << "' is missing: Kimi-Linear lists its layers by number "
                      "(1-based) in kda_layers and full_attn_layers";
    return false;
  }
  for (double v : *list) {
    if (v != std::floor(v) || v < 1 || v > double(layers)) {
      cfg.error(key) << cfg.name(key) << " holds " << formatNumber(v)
                     << "; accepted: layer numbers 1 to num_hidden_layers ("
                     << layers
                     << "), 1-based as KimiLinearConfig."
                        "is_kda_layer reads them";
      return false;
    }
    int &o = owner[size_t(v) - 1];
    if (o != 0) {
      cfg.error(key) << "layer " << formatNumber(v) << " appears "
                     << (o == tag ? "twice in " + cfg.name(key)
                                  : "in both kda_layers and full_attn_layers");
      return false;
    }
    o = tag;
  }
  return true;
}

} // namespace

bool normalize::normalizeKimiLinear(FieldReader &r, ModelSpec &spec) {
  // Long: two layer kinds (KDA and MLA without rotary), each checked as
  // KimiLinearConfig and modeling_kimi.py assert.
  spec.hiddenSize = r.reqInt({"hidden_size"}, 1, kMaxHidden, "the model width");
  spec.numLayers =
      r.reqInt({"num_hidden_layers"}, 1, kMaxLayers, "the number of layers");
  int64_t heads = r.reqInt({"num_attention_heads"}, 1, kMaxHeads,
                           "the number of query heads");
  if (r.failed())
    return false;
  int64_t kvHeads =
      r.optInt({"num_key_value_heads"}, 1, kMaxHeads, heads).value_or(heads);
  double eps = r.optNum({"rms_norm_eps"}, 1e-30, 1.0, 1e-6).value_or(1e-6);
  spec.maxPositions = r.optInt({"model_max_length", "max_position_embeddings"},
                               1, kMaxPositions);
  std::string act = r.optString({"hidden_act"}, "silu").value_or("silu");
  if (r.failed())
    return false;
  // Which layers are KDA (linear_attn_config.kda_layers, 1-based) and which
  // MLA (the rest: KimiDecoderLayer builds MLA wherever is_kda_layer is
  // false; full_attn_layers must agree).
  std::vector<int> owner(size_t(spec.numLayers), 0);
  std::optional<FieldReader> lin = r.optObject("linear_attn_config");
  if (r.failed())
    return false;
  int64_t kdaHeads = 0, kdaDim = 0, convK = 0;
  if (lin) {
    kdaHeads =
        lin->reqInt({"num_heads"}, 1, kMaxHeads, "the number of KDA heads");
    kdaDim = lin->reqInt({"head_dim"}, 1, kMaxHeadDim, "the KDA head size");
    convK = lin->reqInt({"short_conv_kernel_size"}, 1, 64,
                        "the short convolutions' kernel width");
    if (lin->failed())
      return false;
    if (!readLayerList(*lin, "kda_layers", spec.numLayers, 1, owner) ||
        !readLayerList(*lin, "full_attn_layers", spec.numLayers, 2, owner))
      return false;
    for (int64_t i = 0; i < spec.numLayers; ++i)
      if (owner[size_t(i)] == 0) {
        lin->error("full_attn_layers")
            << "layer " << i + 1 << " (1-based) is in neither kda_layers nor "
            << lin->name("full_attn_layers")
            << ": every layer must be listed in one of them";
        return false;
      }
    // The KDA state every sequence carries per layer: H x d x d floats.
    if (!stateFits(*lin, "head_dim", "KDA", "num_heads x head_dim x head_dim",
                   kdaHeads, kdaDim, kdaDim))
      return false;
  }
  bool anyMla = llvm::is_contained(owner, 0) || llvm::is_contained(owner, 2);
  // KimiMLAAttention: q_proj (q_lora_rank must be null), the latent and
  // one shared key part through kv_a_proj_with_mqa, kv_a_layernorm (eps
  // 1e-6: KimiRMSNorm's default, not rms_norm_eps), kv_b_proj; no rotary
  // (mla_use_nope, asserted); scaling (nope + rope)^-1/2.
  LatentSpec lat;
  int64_t vDim = 0;
  if (anyMla) {
    if (r.present("q_lora_rank")) {
      r.error("q_lora_rank")
          << "q_lora_rank must be null for Kimi-Linear: its MLA layers "
             "project the queries with q_proj (KimiMLAAttention asserts it)";
      return false;
    }
    bool nope = r.optBool({"mla_use_nope"}, false).value_or(false);
    lat.kvLoraRank = r.reqInt({"kv_lora_rank"}, 1, kMaxHidden,
                              "the latent width of the MLA layers");
    lat.nopeDim = r.reqInt({"qk_nope_head_dim"}, 1, kMaxHeadDim,
                           "the MLA layers' per-head key part");
    lat.ropeDim = r.reqInt({"qk_rope_head_dim"}, 1, kMaxHeadDim,
                           "the MLA layers' shared key part");
    vDim = r.reqInt({"v_head_dim"}, 1, kMaxHeadDim,
                    "the MLA layers' value head size");
    if (r.failed())
      return false;
    if (!nope) {
      r.error("mla_use_nope")
          << "mla_use_nope is false (or absent): Kimi-Linear's MLA layers "
             "are defined without a rotary embedding only (KimiMLAAttention "
             "asserts use_nope); accepted: true";
      return false;
    }
    if (!latentKvHeadsMatch(r, kvHeads, heads))
      return false;
    lat.latentNormEps = 1e-6;
  }
  if (act != "silu") {
    r.error("hidden_act") << "hidden_act " << quoteForError(act)
                          << " is not Kimi-Linear's; accepted: silu";
    return false;
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
    l.norm = NormKind::RMS;
    l.placement = NormPlacement::Pre;
    l.normEps = eps;
    l.normW.weight = p + "input_layernorm.weight";
    if (owner[size_t(i)] == 1) {
      l.layerType = "kda";
      l.role = LayerRole::LinearAttention;
      l.channelGate = true;
      l.linearPrefix = a;
      l.numHeads = l.numKVHeads = kdaHeads;
      l.headDimQK = l.headDimV = kdaDim;
      l.scale = 1.0 / std::sqrt(double(kdaDim));
      l.convKernel = convK;
      spec.layers.push_back(l);
      continue;
    }
    l.layerType = "full_attention";
    l.causal = true;
    l.numHeads = l.numKVHeads = heads;
    l.headDimQK = lat.nopeDim + lat.ropeDim;
    l.headDimV = vDim;
    l.scale = 1.0 / std::sqrt(double(l.headDimQK));
    l.position = PositionKind::None;
    l.q.weight = a + "q_proj.weight";
    LatentSpec ll = lat;
    ll.kvA.weight = a + "kv_a_proj_with_mqa.weight";
    ll.kvANorm.weight = a + "kv_a_layernorm.weight";
    ll.kvB.weight = a + "kv_b_proj.weight";
    l.latent = ll;
    l.o.weight = a + "o_proj.weight";
    spec.layers.push_back(l);
  }
  return true;
}

namespace {

/// Nemotron-H's blocks, one character each: M (Mamba2), * (attention),
/// - (MLP), E (mixture of experts): hybrid_override_pattern, or
/// layers_block_type (alias layer_types) as transformers 5 saves it, with
/// its names and the legacy ones.
bool readNemotronBlocks(FieldReader &r, std::string &blocks) {
  std::optional<std::string> listKey =
      r.firstPresent({"layers_block_type", "layer_types"});
  if (r.present("hybrid_override_pattern")) {
    blocks = r.optString({"hybrid_override_pattern"}).value_or("");
    if (r.failed())
      return false;
    for (size_t i = 0; i < blocks.size(); ++i)
      if (!llvm::StringRef("M*-E").contains(blocks[i])) {
        r.error("hybrid_override_pattern")
            << "hybrid_override_pattern holds "
            << quoteForError(blocks.substr(i, 1)) << " at position " << i
            << "; accepted: M (Mamba2), * (attention), - (MLP), E (mixture "
               "of experts)";
        return false;
      }
  } else if (listKey) {
    const nlohmann::json &v = *r.get(*listKey);
    if (!v.is_array()) {
      r.error(*listKey) << r.name(*listKey) << " must be a list of block "
                        << "types, found " << describeJsonValue(v);
      return false;
    }
    static const std::pair<const char *, char> kNames[] = {
        {"linear_attention", 'M'}, {"mamba", 'M'}, {"full_attention", '*'},
        {"attention", '*'},        {"mlp", '-'},   {"moe", 'E'}};
    for (size_t i = 0; i < v.size(); ++i) {
      char c = 0;
      for (auto [name, ch] : kNames)
        if (v[i].is_string() && v[i].get<std::string>() == name)
          c = ch;
      if (!c) {
        r.error(*listKey)
            << r.name(*listKey) << "[" << i << "] is "
            << describeJsonValue(v[i])
            << "; accepted: \"linear_attention\" (or \"mamba\"), "
               "\"full_attention\" (or \"attention\"), \"mlp\", \"moe\"";
        return false;
      }
      blocks += c;
    }
  } else {
    r.errorHere() << "field 'hybrid_override_pattern' is missing (nor "
                     "'layers_block_type'): Nemotron-H lists its blocks, "
                     "e.g. \"M-M*-\" (M Mamba2, * attention, - MLP, E "
                     "mixture of experts)";
    return false;
  }
  llvm::StringRef key = listKey && !r.present("hybrid_override_pattern")
                            ? llvm::StringRef(*listKey)
                            : llvm::StringRef("hybrid_override_pattern");
  if (blocks.empty()) {
    r.error(key) << r.name(key) << " is empty: a model needs a block";
    return false;
  }
  // Each MLP or MoE block closes the mixer block before it (the layer
  // this compiler builds: mixer, then feed-forward network, each with its
  // pre-norm and residual); a model's first block, or one after another
  // feed-forward block, has no mixer to close.
  for (size_t i = 0; i < blocks.size(); ++i) {
    bool ffn = blocks[i] == '-' || blocks[i] == 'E';
    if (ffn && (i == 0 || blocks[i - 1] == '-' || blocks[i - 1] == 'E')) {
      r.error(key) << r.name(key) << ": block " << i << " ('" << blocks[i]
                   << "', "
                   << (blocks[i] == '-' ? "an MLP" : "a mixture of experts")
                   << ") "
                   << (i == 0 ? "starts the model"
                              : "follows another feed-forward block")
                   << "; compiled: every MLP or MoE block right after a "
                      "Mamba2 (M) or attention (*) block, which it closes";
      return false;
    }
  }
  if (r.present("num_hidden_layers")) {
    int64_t n = r.optInt({"num_hidden_layers"}, 1, kMaxLayers).value_or(0);
    if (r.failed())
      return false;
    if (n != int64_t(blocks.size())) {
      r.error("num_hidden_layers")
          << "num_hidden_layers (" << n << ") disagrees with " << r.name(key)
          << " (" << blocks.size() << " blocks); accepted: " << blocks.size()
          << " or absent";
      return false;
    }
  }
  return true;
}

/// NemotronHConfig's Mamba2 fields (its defaults; the legacy mamba_*
/// names as aliases): the mixer's intermediate size is mamba_num_heads x
/// mamba_head_dim.
bool readNemotronMamba(FieldReader &r, MambaDims &m) {
  m.heads = r.optInt({"mamba_num_heads"}, 1, 1 << 20, 128).value_or(128);
  m.headDim = r.optInt({"mamba_head_dim"}, 1, kMaxHeadDim, 64).value_or(64);
  m.state = r.optInt({"ssm_state_size"}, 1, kMaxHeadDim, 128).value_or(128);
  m.groups =
      r.optInt({"mamba_n_groups", "n_groups"}, 1, 1 << 20, 8).value_or(8);
  m.conv = r.optInt({"mamba_d_conv", "conv_kernel"}, 1, 64, 4).value_or(4);
  if (r.failed())
    return false;
  if (m.heads % m.groups != 0) {
    r.error(r.present("mamba_n_groups") ? "mamba_n_groups" : "n_groups")
        << "n_groups (" << m.groups << ") must divide mamba_num_heads ("
        << m.heads << "): each group's B and C serve a whole run of heads";
    return false;
  }
  return stateFits(r, "ssm_state_size", "Mamba2",
                   "mamba_num_heads x ssm_state_size x mamba_head_dim", m.heads,
                   m.state, m.headDim);
}

} // namespace

bool normalize::normalizeNemotronH(FieldReader &r, ModelSpec &spec) {
  // Long: four block kinds, each checked as NemotronHConfig and
  // modeling_nemotron_h.py (with vLLM's nemotron_h.py) read them.
  std::string blocks;
  if (!readNemotronBlocks(r, blocks))
    return false;
  spec.hiddenSize =
      r.optInt({"hidden_size"}, 1, kMaxHidden, 4096).value_or(4096);
  spec.maxPositions =
      r.optInt({"max_position_embeddings"}, 1, kMaxPositions, 4096);
  double eps =
      r.optNum({"layer_norm_epsilon"}, 1e-30, 1.0, 1e-5).value_or(1e-5);
  if (r.failed())
    return false;
  bool anyMamba = llvm::is_contained(blocks, 'M'),
       anyAttention = llvm::is_contained(blocks, '*');
  MambaDims m;
  std::optional<double> dtMin, dtMax;
  bool convBias = true, projBias = false;
  if (anyMamba) {
    if (!readNemotronMamba(r, m))
      return false;
    convBias =
        r.optBool({"mamba_conv_bias", "use_conv_bias"}, true).value_or(true);
    projBias = r.optBool({"use_bias"}, false).value_or(false);
    std::string act =
        r.optString({"mamba_hidden_act"}, "silu").value_or("silu");
    if (r.failed())
      return false;
    if (act != "silu" && act != "swish") {
      r.error("mamba_hidden_act")
          << "mamba_hidden_act " << quoteForError(act)
          << " after the Mamba2 convolution is not compiled; accepted: "
             "silu, swish";
      return false;
    }
    // transformers' CUDA path and vLLM clamp dt to time_step_limit (alias
    // mamba_dt_limit); its torch_forward clamps below at time_step_min.
    if (!readTimeStepLimit(r, dtMin, dtMax,
                           r.present("mamba_dt_limit") ? "mamba_dt_limit"
                                                       : "time_step_limit"))
      return false;
    spec.notes.push_back(
        "Mamba2 dt: softplus(dt + dt_bias) clamped to time_step_limit, as "
        "transformers' CUDA path and vLLM compute it (transformers' "
        "torch_forward clamps it below at time_step_min instead)");
  }
  // NemotronHAttention: no position embedding, scaling head_dim^-1/2, no
  // biases (transformers and vLLM build q/k/v/o without them).
  int64_t heads = 0, kvHeads = 0, headDim = 0;
  if (anyAttention) {
    heads = r.optInt({"num_attention_heads"}, 1, kMaxHeads, 32).value_or(32);
    kvHeads =
        r.optInt({"num_key_value_heads"}, 1, kMaxHeads, heads).value_or(heads);
    headDim = r.optInt({"head_dim", "attention_head_dim"}, 1, kMaxHeadDim, 128)
                  .value_or(128);
    bool bias = r.optBool({"attention_bias"}, false).value_or(false);
    std::optional<int64_t> window =
        r.optInt({"sliding_window"}, 1, kMaxPositions);
    if (r.failed())
      return false;
    if (heads % kvHeads != 0) {
      r.error("num_key_value_heads")
          << "num_key_value_heads (" << kvHeads
          << ") must divide num_attention_heads (" << heads << ")";
      return false;
    }
    if (bias) {
      r.error("attention_bias")
          << "attention_bias true is not compiled: transformers' and vLLM's "
             "NemotronHAttention build q/k/v/o without biases; accepted: "
             "false";
      return false;
    }
    if (window) {
      r.error("sliding_window")
          << "sliding_window " << *window
          << " is not compiled for Nemotron-H (transformers' "
             "NemotronHAttention ignores it, vLLM applies it); accepted: "
             "null";
      return false;
    }
  }
  if (!noteNextnLayers(r, spec, "mtp.*"))
    return false;
  // One layer per mixer block, closed by the MLP or MoE block after it
  // (FFN kind Dense or MoE, its norm the block's: readNemotronFeedForward
  // fills the network), or by nothing (Identity).
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i] == '-' || blocks[i] == 'E')
      continue;
    std::string p = layerPrefix("backbone.layers.{i}.", int64_t(i));
    LayerSpec l;
    l.index = int64_t(spec.layers.size());
    l.stack = "decoder";
    l.layerInStack = int64_t(i);
    l.norm = NormKind::RMS;
    l.placement = NormPlacement::Pre;
    l.normEps = eps;
    l.normW.weight = p + "norm.weight";
    if (i + 1 < blocks.size() &&
        (blocks[i + 1] == '-' || blocks[i + 1] == 'E')) {
      l.ffn.kind = blocks[i + 1] == '-' ? FFNKind::Dense : FFNKind::MoE;
      l.ffn.norm.weight =
          layerPrefix("backbone.layers.{i}.", int64_t(i + 1)) + "norm.weight";
    } else {
      l.ffn.kind = FFNKind::Identity;
    }
    if (blocks[i] == 'M') {
      // The gated norm per group of intermediate / n_groups channels.
      setMambaLayer(l, m,
                    {p + "mixer.", convBias, projBias, m.groups, dtMin, dtMax});
    } else {
      std::string a = p + "mixer.";
      l.layerType = "full_attention";
      l.causal = true;
      l.numHeads = heads;
      l.numKVHeads = kvHeads;
      l.headDimQK = l.headDimV = headDim;
      l.scale = 1.0 / std::sqrt(double(headDim));
      l.position = PositionKind::None;
      l.q.weight = a + "q_proj.weight";
      l.k.weight = a + "k_proj.weight";
      l.v.weight = a + "v_proj.weight";
      l.o.weight = a + "o_proj.weight";
    }
    spec.layers.push_back(l);
  }
  spec.numLayers = int64_t(spec.layers.size());
  spec.notes.push_back(
      "Nemotron-H's " + std::to_string(blocks.size()) + " blocks make " +
      std::to_string(spec.numLayers) +
      " layers: each Mamba2 or attention block with the MLP or MoE block "
      "after it (its weights are block i+1's), or alone; layer_in_stack is "
      "the mixer's block number");
  return true;
}
