//===- DecoderFamilies.cpp - decoder-only RoPE families -------------------===//
//
// This file implements the normalization of the decoder-only RoPE families
// (llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, qwen3_next, gemma2,
// gemma3, glm4_moe, gpt_oss, minimax_m2, olmo2, phi3, cohere2, llama4). What
// differs between them is data, one table entry per family (kFamilies):
// class defaults, which layers slide, the scale and soft-capping rules,
// biases, norms, RoPE per layer type and checkpoint names. normalizeDecoder
// reads a config with one entry and has no family name in it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/NormalizeUtils.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::normalize;

namespace {

/// Which layers are sliding (or linear) attention when `layer_types` is
/// absent.
enum class LayerPattern {
  AllFull,          ///< llama
  AllSlideIfWindow, ///< mistral, phi3: every layer slides when a window is set
  MaxWindowLayers,  ///< qwen2/3: use_sliding_window, layers >= max_window_layers
  EvenSlide,        ///< gemma2: even layers slide
  SlidePattern,     ///< gemma3: every sliding_window_pattern-th layer is full
  LinearInterval,   ///< qwen3_next: every full_attention_interval-th is full
  UseSlidingAll,    ///< qwen3_moe: every layer slides with use_sliding_window
  Llama4,           ///< llama4: RoPE layers chunked, NoPE layers full
};

/// Which projections have biases: none, q/k/v always (Qwen2), q/k/v/o
/// with attention_bias (Llama), q/k/v only with attention_bias (GLM-4.5).
enum class Bias { None, QKV, AttentionBiasField, QKVAttentionBiasField };

/// Everything a decoder family's normalization needs to know about it.
struct DecoderFamily {
  DecoderFamily(llvm::StringLiteral name, Defaults d) : name(name), d(d) {}
  llvm::StringLiteral name;
  Defaults d;
  LayerPattern layers = LayerPattern::AllFull;
  std::optional<int64_t> defaultWindow; ///< sliding_window's class default
  Bias bias = Bias::AttentionBiasField;
  /// Gemma: scale 1/sqrt(query_pre_attn_scalar) and logits soft-capping
  /// (attn_logit_softcapping, default `defaultSoftcap`).
  bool gemmaScale = false;
  std::optional<double> defaultSoftcap;
  /// Gemma 3: sliding layers use rope_local_base_freq, without scaling.
  bool localRope = false;
  bool qkNorm = false;
  /// The config field that switches the per-head q/k RMSNorm on (GLM-4.5's
  /// use_qk_norm, default false); nullptr: `qkNorm` decides.
  const char *qkNormField = nullptr;
  /// The checkpoint carries num_nextn_predict_layers multi-token-prediction
  /// layers past the decoder (GLM-4.5, DeepSeek-V3).
  bool nextnLayers = false;
  /// OLMo-2: no norm on the sublayers' inputs, RMSNorm on their outputs
  /// (post_attention_layernorm, post_feedforward_layernorm) before the
  /// residual, the q/k norms over the whole projections.
  bool olmoNorms = false;
  /// The q/k norms over the whole projections with pre-norms (MiniMax-M2).
  bool qkNormFlat = false;
  /// The config may give the rotary part as `rotary_dim` (MiniMax's
  /// configs) besides partial_rotary_factor.
  bool rotaryDimField = false;
  /// Command R7B (Cohere2): LayerNorm without bias (layer_norm_eps),
  /// interleaved RoPE on the sliding layers only (the full ones NoPE).
  bool cohereLayers = false;
  /// sliding_window_pattern's class default (SlidePattern).
  int64_t defaultSlidePattern = 6;
  /// Llama 4: NoPE layers (no_rope_layers), chunked attention on the RoPE
  /// layers, the weightless q/k norm there, temperature on the NoPE ones,
  /// interleaved RoPE.
  bool llama4 = false;
  /// attention_bias's class default (gpt-oss: true).
  bool defaultAttentionBias = false;
  /// Attention sinks: a learned logit per query head (`self_attn.sinks`).
  bool sinks = false;
  /// The rope scaling the config class fills in when the config gives
  /// none (GptOssConfig: yarn, factor 32 over 4096 positions).
  std::optional<YarnParams> defaultYarn;
  bool gemmaNorms = false; ///< (1 + w) RMSNorm, pre and post norms.
  bool fusedQKV = false;   ///< Phi-3 qkv_proj.
  bool outputGate = false; ///< Qwen3-Next.
  /// Multimodal configs keep the language model under text_config, a diff
  /// against the text config's defaults, with this tensor prefix.
  const char *textConfigPrefix = nullptr;
};

Defaults defaults(int64_t maxPos) {
  Defaults d;
  d.maxPos = maxPos;
  return d;
}

/// Gemma3TextConfig starts from Gemma2Config's sizes.
Defaults gemmaDefaults(int64_t maxPos, double theta) {
  Defaults d;
  d.hidden = 2304;
  d.layers = 26;
  d.heads = 8;
  d.kvHeads = 4;
  d.headDim = 256;
  d.maxPos = maxPos;
  d.theta = theta;
  return d;
}

std::vector<DecoderFamily> makeFamilies() {
  // Long: a table, one entry per decoder family.
  std::vector<DecoderFamily> f;
  f.push_back(DecoderFamily("llama", defaults(2048)));
  {
    DecoderFamily m{"mistral", defaults(4096 * 32)};
    m.d.kvHeads = 8;
    m.layers = LayerPattern::AllSlideIfWindow;
    m.defaultWindow = 4096;
    m.bias = Bias::None;
    f.push_back(m);
  }
  {
    DecoderFamily q{"qwen2", defaults(32768)};
    q.layers = LayerPattern::MaxWindowLayers;
    q.defaultWindow = 4096;
    q.bias = Bias::QKV;
    f.push_back(q);
  }
  {
    DecoderFamily q{"qwen3", defaults(32768)};
    q.d.headDim = 128;
    q.layers = LayerPattern::MaxWindowLayers;
    q.defaultWindow = 4096;
    q.qkNorm = true;
    f.push_back(q);
  }
  {
    DecoderFamily q{"qwen3_next", defaults(32768)};
    q.d.hidden = 2048;
    q.d.layers = 48;
    q.d.heads = 16;
    q.d.kvHeads = 2;
    q.d.headDim = 256;
    q.d.partialRotary = 0.25;
    q.layers = LayerPattern::LinearInterval;
    q.qkNorm = true;
    q.outputGate = true;
    f.push_back(q);
  }
  {
    DecoderFamily g{"gemma2", gemmaDefaults(8192, 10000.0)};
    g.layers = LayerPattern::EvenSlide;
    g.defaultWindow = 4096;
    g.gemmaScale = true;
    g.defaultSoftcap = 50.0;
    g.gemmaNorms = true;
    f.push_back(g);
  }
  {
    DecoderFamily g{"gemma3", gemmaDefaults(131072, 1000000.0)};
    g.layers = LayerPattern::SlidePattern;
    g.defaultWindow = 4096;
    g.gemmaScale = true;
    g.localRope = true;
    g.gemmaNorms = true;
    g.qkNorm = true;
    g.textConfigPrefix = "language_model.model.layers.{i}.";
    f.push_back(g);
  }
  {
    // Qwen3MoeConfig: Qwen3's attention (no head_dim of its own: hidden /
    // heads), every layer sliding when use_sliding_window.
    DecoderFamily q{"qwen3_moe", defaults(32768)};
    q.d.hidden = 2048;
    q.d.layers = 24;
    q.d.heads = 32;
    q.d.kvHeads = 4;
    q.layers = LayerPattern::UseSlidingAll;
    q.defaultWindow = 4096;
    q.qkNorm = true;
    f.push_back(q);
  }
  {
    // MixtralConfig: Mistral's attention, no window by default.
    DecoderFamily m{"mixtral", defaults(4096 * 32)};
    m.d.hidden = 4096;
    m.d.layers = 32;
    m.d.heads = 32;
    m.d.kvHeads = 8;
    m.d.eps = 1e-5;
    m.d.theta = 1e6;
    m.layers = LayerPattern::AllSlideIfWindow;
    m.bias = Bias::None;
    f.push_back(m);
  }
  {
    // Glm4MoeConfig: 96 heads of 128 (not hidden / heads), RoPE on the
    // first half of each head, q/k/v biases with attention_bias (o_proj
    // never), the q/k norm with use_qk_norm.
    DecoderFamily g{"glm4_moe", defaults(131072)};
    g.d.hidden = 4096;
    g.d.layers = 46;
    g.d.heads = 96;
    g.d.kvHeads = 8;
    g.d.headDim = 128;
    g.d.eps = 1e-5;
    g.d.partialRotary = 0.5;
    g.bias = Bias::QKVAttentionBiasField;
    g.qkNormField = "use_qk_norm";
    g.nextnLayers = true;
    f.push_back(g);
  }
  {
    // GptOssConfig: 64 heads of 64 over 8 KV heads, even layers sliding
    // (window 128), q/k/v/o biases by default, sinks, YaRN by default.
    DecoderFamily g{"gpt_oss", defaults(131072)};
    g.d.hidden = 2880;
    g.d.layers = 36;
    g.d.heads = 64;
    g.d.kvHeads = 8;
    g.d.headDim = 64;
    g.d.eps = 1e-5;
    g.d.theta = 150000.0;
    g.layers = LayerPattern::EvenSlide;
    g.defaultWindow = 128;
    g.defaultAttentionBias = true;
    g.sinks = true;
    YarnParams y;
    y.factor = 32.0;
    y.truncate = false;
    y.originalMax = 4096;
    g.defaultYarn = y;
    f.push_back(g);
  }
  {
    // MiniMaxM2Config: 48 heads of 128 over 8 KV heads, the q/k norms over
    // the whole projections, RoPE on the config's rotary_dim.
    DecoderFamily m{"minimax_m2", defaults(196608)};
    m.d.hidden = 3072;
    m.d.layers = 62;
    m.d.heads = 48;
    m.d.kvHeads = 8;
    m.d.headDim = 128;
    m.d.theta = 5000000.0;
    m.bias = Bias::None;
    m.qkNorm = true;
    m.qkNormFlat = true;
    m.rotaryDimField = true;
    f.push_back(m);
  }
  {
    // Olmo2Config: Llama's sizes, rms_norm_eps 1e-5.
    DecoderFamily o{"olmo2", defaults(2048)};
    o.d.eps = 1e-5;
    o.qkNorm = true;
    o.olmoNorms = true;
    f.push_back(o);
  }
  {
    // Cohere2Config: every 4th layer full (NoPE), the others sliding over
    // 4096 keys with interleaved RoPE; q/k/v/o biases with attention_bias.
    DecoderFamily c{"cohere2", defaults(8192)};
    c.d.hidden = 8192;
    c.d.layers = 40;
    c.d.heads = 64;
    c.d.eps = 1e-5;
    c.layers = LayerPattern::SlidePattern;
    c.defaultSlidePattern = 4;
    c.defaultWindow = 4096;
    c.cohereLayers = true;
    f.push_back(c);
  }
  {
    // Llama4TextConfig (the language model of Llama4Config's text_config,
    // or a llama4_text config itself).
    DecoderFamily l{"llama4", defaults(4096 * 32)};
    l.d.hidden = 5120;
    l.d.layers = 48;
    l.d.heads = 40;
    l.d.kvHeads = 8;
    l.d.headDim = 128;
    l.d.eps = 1e-5;
    l.d.theta = 500000.0;
    l.layers = LayerPattern::Llama4;
    l.llama4 = true;
    l.textConfigPrefix = "language_model.model.layers.{i}.";
    f.push_back(l);
  }
  {
    DecoderFamily p{"phi3", defaults(4096)};
    p.d.eps = 1e-5;
    p.layers = LayerPattern::AllSlideIfWindow;
    p.bias = Bias::None;
    p.fusedQKV = true;
    f.push_back(p);
  }
  return f;
}

const std::vector<DecoderFamily> &families() {
  static const std::vector<DecoderFamily> kFamilies = makeFamilies();
  return kFamilies;
}

/// Each layer's type (`layer_types`, else the family's pattern) and the
/// sliding window.
bool readLayerKinds(FieldReader &r, const DecoderFamily &fam, int64_t layers,
                    std::vector<std::string> &types,
                    std::optional<int64_t> &window) {
  types = readLayerTypes(r, layers,
                         fam.layers == LayerPattern::LinearInterval,
                         fam.layers == LayerPattern::Llama4);
  // Llama 4 derives its types from no_rope_layers (readLlama4).
  if (fam.layers == LayerPattern::Llama4)
    return !r.failed();
  if (fam.layers != LayerPattern::AllFull &&
      fam.layers != LayerPattern::LinearInterval &&
      fam.layers != LayerPattern::Llama4)
    window = readWindow(r, "sliding_window", fam.defaultWindow);
  // The type of layer i when layer_types is absent.
  std::function<bool(int64_t)> slides = [](int64_t) { return false; };
  const char *other = "sliding_attention";
  switch (fam.layers) {
  case LayerPattern::AllFull:
    break;
  case LayerPattern::AllSlideIfWindow:
    slides = [&](int64_t) { return bool(window); };
    break;
  case LayerPattern::UseSlidingAll: {
    bool use = r.optBool({"use_sliding_window"}, false).value_or(false);
    if (!use)
      window.reset();
    slides = [&](int64_t) { return bool(window); };
    break;
  }
  case LayerPattern::MaxWindowLayers: {
    bool use = r.optBool({"use_sliding_window"}, false).value_or(false);
    int64_t maxWindowLayers =
        r.optInt({"max_window_layers"}, 0, kMaxLayers, 28).value_or(28);
    if (!use)
      window.reset();
    slides = [&, maxWindowLayers](int64_t i) {
      return window && i >= maxWindowLayers;
    };
    break;
  }
  case LayerPattern::EvenSlide:
    slides = [](int64_t i) { return i % 2 == 0; };
    break;
  case LayerPattern::SlidePattern: {
    int64_t pattern = r.optInt({"sliding_window_pattern",
                                "_sliding_window_pattern"},
                               1, kMaxLayers, fam.defaultSlidePattern)
                          .value_or(fam.defaultSlidePattern);
    slides = [pattern](int64_t i) { return (i + 1) % pattern != 0; };
    break;
  }
  case LayerPattern::Llama4:
    // Set by readLlama4 from no_rope_layers (chunked on RoPE layers).
    break;
  case LayerPattern::LinearInterval: {
    int64_t interval =
        r.optInt({"full_attention_interval"}, 1, kMaxLayers, 4).value_or(4);
    slides = [interval](int64_t i) { return (i + 1) % interval != 0; };
    other = "linear_attention";
    break;
  }
  }
  if (r.failed())
    return false;
  if (types.empty())
    for (int64_t i = 0; i < layers; ++i)
      types.push_back(slides(i) ? other : "full_attention");
  // Qwen3-Next's layers are linear or full (Qwen3NextConfig): it reads no
  // sliding_window, so a sliding layer is not a missing window.
  if (fam.layers == LayerPattern::LinearInterval)
    for (int64_t i = 0; i < layers; ++i)
      if (types[i] == "sliding_attention") {
        r.error("layer_types")
            << "layer " << i << " is a sliding_attention layer, which "
            << fam.name
            << " does not have (its attention takes no sliding_window); "
               "accepted: linear_attention and full_attention";
        return false;
      }
  for (int64_t i = 0; i < layers; ++i)
    if (types[i] == "sliding_attention" && !window) {
      r.error("layer_types")
          << "layer " << i
          << " is a sliding_attention layer but the config gives no "
             "sliding_window; accepted: a positive 'sliding_window', or "
             "full_attention layers";
      return false;
    }
  return true;
}

/// The attention-side fields shared by every layer of the model.
struct Common {
  Dims dims;
  /// Gated DeltaNet's sizes (qwen3_next's linear_* fields).
  int64_t linKeyHeads = 0, linValueHeads = 0, linKeyDim = 0, linValueDim = 0,
          convKernel = 0;
  double scale = 1.0;
  std::optional<double> softcap;
  bool qkvBias = false, oBias = false;
  bool qkNorm = false;
  RopeSpec fullRope, slidingRope;
  /// Llama 4: per layer, whether it uses RoPE (no_rope_layers' 1s); the
  /// chunk of its chunked layers; the q/k L2 norm; the temperature.
  std::vector<bool> useRope;
  std::optional<int64_t> chunk;
  bool l2QkNorm = false;
  std::optional<LayerSpec::Temperature> temperature;
};

/// Llama4TextConfig's per-layer fields: no_rope_layers (default: every
/// no_rope_layer_interval-th layer NoPE), layer_types (default: chunked on
/// RoPE layers, full on NoPE ones), attention_chunk_size, use_qk_norm and
/// the temperature tuning.
bool readLlama4(FieldReader &r, int64_t layers,
                std::vector<std::string> &types, Common &c) {
  std::optional<std::vector<double>> noRope = r.optNumArray("no_rope_layers");
  int64_t interval =
      r.optInt({"no_rope_layer_interval"}, 1, kMaxLayers, 4).value_or(4);
  if (r.failed())
    return false;
  if (noRope && !noRope->empty()) {
    if (int64_t(noRope->size()) < layers) {
      r.error("no_rope_layers")
          << "no_rope_layers lists " << noRope->size()
          << " layers; accepted: one 0 (NoPE) or 1 (RoPE) per layer, "
          << layers << " at least";
      return false;
    }
    for (int64_t i = 0; i < layers; ++i) {
      double v = (*noRope)[i];
      if (v != 0 && v != 1) {
        r.error("no_rope_layers")
            << "no_rope_layers[" << i << "] is " << formatNumber(v)
            << "; accepted: 0 (NoPE) or 1 (RoPE)";
        return false;
      }
      c.useRope.push_back(v == 1);
    }
  } else {
    for (int64_t i = 0; i < layers; ++i)
      c.useRope.push_back((i + 1) % interval != 0);
  }
  if (types.empty())
    for (int64_t i = 0; i < layers; ++i)
      types.push_back(c.useRope[i] ? "chunked_attention" : "full_attention");
  for (int64_t i = 0; i < layers; ++i)
    if (types[i] == "sliding_attention") {
      r.error("layer_types")
          << "layer " << i
          << " is a sliding_attention layer, which Llama 4 has no window "
             "for; accepted: chunked_attention, full_attention";
      return false;
    }
  if (r.has("attention_chunk_size") && !r.present("attention_chunk_size"))
    c.chunk.reset(); // null: the chunked layers are plainly causal
  else
    c.chunk = r.optInt({"attention_chunk_size"}, 1, kMaxPositions, 8192);
  c.l2QkNorm = r.optBool({"use_qk_norm"}, true).value_or(true);
  bool tuning = r.optBool({"attn_temperature_tuning"}, true).value_or(true);
  int64_t floorScale =
      r.optInt({"floor_scale"}, 1, kMaxPositions, 8192).value_or(8192);
  double attnScale = r.optNum({"attn_scale"}, 1e-12, 1e6, 0.1).value_or(0.1);
  if (r.failed())
    return false;
  if (tuning)
    c.temperature = LayerSpec::Temperature{floorScale, attnScale};
  return true;
}

/// qwen3_next's linear-attention sizes, with transformers' defaults
/// (Qwen3NextConfig).
bool readLinear(FieldReader &r, Common &c) {
  c.linKeyHeads =
      r.optInt({"linear_num_key_heads"}, 1, 4096, 16).value_or(16);
  c.linValueHeads =
      r.optInt({"linear_num_value_heads"}, 1, 4096, 32).value_or(32);
  c.linKeyDim = r.optInt({"linear_key_head_dim"}, 1, 4096, 128).value_or(128);
  c.linValueDim =
      r.optInt({"linear_value_head_dim"}, 1, 4096, 128).value_or(128);
  c.convKernel =
      r.optInt({"linear_conv_kernel_dim"}, 1, 64, 4).value_or(4);
  if (r.failed())
    return false;
  if (c.linValueHeads % c.linKeyHeads != 0) {
    r.error("linear_num_value_heads")
        << "linear_num_value_heads (" << c.linValueHeads
        << ") must be a multiple of linear_num_key_heads (" << c.linKeyHeads
        << "): each query/key head serves a whole group of value heads";
    return false;
  }
  // The recurrent state every sequence carries through each linear layer:
  // Hv x d_k x d_v floats (Qwen3-Next: 2 MB). Past 4 GiB per sequence and
  // layer no machine serves a batch of them (check and bench would run out
  // of memory instead).
  int64_t stateBytes = 4 * c.linValueHeads * c.linKeyDim * c.linValueDim;
  if (stateBytes > (int64_t(1) << 32)) {
    r.error("linear_num_value_heads")
        << "the linear layers' recurrent state, linear_num_value_heads x "
           "linear_key_head_dim x linear_value_head_dim = "
        << c.linValueHeads << " x " << c.linKeyDim << " x " << c.linValueDim
        << " floats, is " << stateBytes / (1 << 20)
        << " MiB per sequence and layer; accepted: at most 4096 MiB";
    return false;
  }
  return true;
}

bool readCommon(FieldReader &r, const DecoderFamily &fam, Common &c) {
  c.scale = 1.0 / std::sqrt(double(c.dims.headDim));
  if (fam.layers == LayerPattern::LinearInterval && !readLinear(r, c))
    return false;
  if (fam.gemmaScale) {
    double qpas = r.optNum({"query_pre_attn_scalar"}, 1e-6, 1e9, 256.0)
                      .value_or(256.0);
    c.scale = 1.0 / std::sqrt(qpas);
    c.softcap = r.optNum({"attn_logit_softcapping"}, 1e-6, 1e9,
                         fam.defaultSoftcap);
    if (r.has("attn_logit_softcapping") &&
        !r.present("attn_logit_softcapping"))
      c.softcap.reset();
  }
  if (fam.bias == Bias::QKV)
    c.qkvBias = true;
  else if (fam.bias == Bias::AttentionBiasField)
    c.qkvBias = c.oBias = r.optBool({"attention_bias"},
                                    fam.defaultAttentionBias)
                              .value_or(fam.defaultAttentionBias);
  else if (fam.bias == Bias::QKVAttentionBiasField)
    c.qkvBias = r.optBool({"attention_bias"}, false).value_or(false);
  c.qkNorm = fam.qkNorm;
  if (fam.qkNormField)
    c.qkNorm = r.optBool({fam.qkNormField}, false).value_or(false);
  if (r.failed())
    return false;
  std::optional<double> localTheta;
  if (fam.localRope)
    localTheta = r.optNum({"rope_local_base_freq"}, 1.0, 1e12, 10000.0);
  c.fullRope = readRope(r, c.dims.headDim, fam.d, c.dims.maxPos,
                        "full_attention", std::nullopt, true,
                        fam.defaultYarn ? &*fam.defaultYarn : nullptr);
  c.slidingRope = c.fullRope;
  if (fam.localRope)
    c.slidingRope = readRope(r, c.dims.headDim, fam.d, c.dims.maxPos,
                             "sliding_attention", localTheta,
                             /*allowScaling=*/false);
  return !r.failed();
}

/// Layer `i` of type `type` with the tensor prefix `p`.
LayerSpec makeLayer(const DecoderFamily &fam, const Common &c, int64_t i,
                    const std::string &type, std::optional<int64_t> window,
                    const std::string &p) {
  LayerSpec l;
  l.index = i;
  l.stack = "decoder";
  l.layerInStack = i;
  l.layerType = type;
  if (type == "linear_attention") {
    l.role = LayerRole::LinearAttention;
    l.linearPrefix = p + "linear_attn.";
    l.numHeads = c.linValueHeads;
    l.numKVHeads = c.linKeyHeads;
    l.headDimQK = c.linKeyDim;
    l.headDimV = c.linValueDim;
    l.scale = 1.0 / std::sqrt(double(c.linKeyDim));
    l.convKernel = c.convKernel;
    l.normEps = c.dims.eps;
    l.norm = NormKind::RMSUnitOffset; // Qwen3NextRMSNorm: (1 + w)
    l.normW.weight = p + "input_layernorm.weight";
    return l;
  }
  l.causal = true;
  if (type == "sliding_attention")
    l.window = window;
  l.numHeads = c.dims.heads;
  l.numKVHeads = c.dims.kvHeads;
  l.headDimQK = l.headDimV = c.dims.headDim;
  l.scale = c.scale;
  l.softcap = c.softcap;
  l.position = PositionKind::Rope;
  l.rope = type == "sliding_attention" ? c.slidingRope : c.fullRope;
  if (fam.llama4) {
    // Llama4TextAttention: interleaved (complex) RoPE, chunked attention
    // and the weightless q/k norm on RoPE layers; temperature on NoPE ones.
    bool useRope = c.useRope[size_t(i)];
    l.rope.interleaved = true;
    if (!useRope)
      l.position = PositionKind::None;
    if (type == "chunked_attention")
      l.chunk = c.chunk;
    l.l2QkNorm = useRope && c.l2QkNorm;
    if (!useRope)
      l.temperature = c.temperature;
  }
  if (fam.cohereLayers) {
    // Cohere2Attention: rotary (interleaved pairs) on sliding layers only.
    l.rope.interleaved = true;
    if (type != "sliding_attention")
      l.position = PositionKind::None;
  }
  l.qkNorm = c.qkNorm;
  l.outputGate = fam.outputGate;
  l.norm = fam.gemmaNorms || fam.outputGate ? NormKind::RMSUnitOffset
           : fam.cohereLayers                ? NormKind::Layer
                                             : NormKind::RMS;
  l.placement = fam.gemmaNorms  ? NormPlacement::PrePost
                : fam.olmoNorms ? NormPlacement::Output
                                : NormPlacement::Pre;
  l.normEps = c.dims.eps;
  if (!fam.olmoNorms)
    l.normW.weight = p + "input_layernorm.weight";
  if (fam.gemmaNorms || fam.olmoNorms)
    l.postNormW.weight = p + "post_attention_layernorm.weight";
  l.qkNormFlat = fam.olmoNorms || fam.qkNormFlat;
  std::string a = p + "self_attn.";
  if (fam.fusedQKV) {
    l.layout = QKVLayout::FusedConcat;
    l.qkv.weight = a + "qkv_proj.weight";
  } else {
    l.q.weight = a + "q_proj.weight";
    l.k.weight = a + "k_proj.weight";
    l.v.weight = a + "v_proj.weight";
    if (c.qkvBias) {
      l.q.bias = a + "q_proj.bias";
      l.k.bias = a + "k_proj.bias";
      l.v.bias = a + "v_proj.bias";
    }
  }
  l.o.weight = a + "o_proj.weight";
  if (c.oBias)
    l.o.bias = a + "o_proj.bias";
  if (fam.sinks)
    l.sinks = a + "sinks";
  if (c.qkNorm) {
    l.qNormW.weight = a + "q_norm.weight";
    l.kNormW.weight = a + "k_norm.weight";
  }
  return l;
}

/// Reads the config `r` (the top level, or text_config when `nested`) of
/// family `fam` into `spec`.
bool normalizeDecoder(FieldReader &r, const DecoderFamily &fam, bool nested,
                      const std::string &prefix, ModelSpec &spec) {
  Common c;
  readDims(r, fam.d, !nested, {"hidden_size"}, {"num_hidden_layers"},
           {"num_attention_heads"}, {"num_key_value_heads"}, {"head_dim"},
           {"max_position_embeddings"},
           {fam.cohereLayers ? "layer_norm_eps" : "rms_norm_eps"}, c.dims,
           spec);
  if (r.failed())
    return false;
  spec.hiddenSize = c.dims.hidden;
  spec.numLayers = c.dims.layers;
  spec.maxPositions = c.dims.maxPos;
  std::vector<std::string> types;
  std::optional<int64_t> window;
  DecoderFamily f = fam;
  if (fam.rotaryDimField && r.present("rotary_dim")) {
    // MiniMax writes the rotary part in features: the same as
    // partial_rotary_factor = rotary_dim / head_dim.
    int64_t rd = r.optInt({"rotary_dim"}, 2, c.dims.headDim).value_or(2);
    if (r.failed())
      return false;
    f.d.partialRotary = double(rd) / double(c.dims.headDim);
    if (r.present("partial_rotary_factor")) {
      double p = r.optNum({"partial_rotary_factor"}, 1e-6, 1.0).value_or(0);
      if (r.failed())
        return false;
      if (int64_t(double(c.dims.headDim) * p) != rd) {
        r.error("partial_rotary_factor")
            << "partial_rotary_factor " << formatNumber(p) << " gives "
            << int64_t(double(c.dims.headDim) * p)
            << " rotary features of head_dim " << c.dims.headDim
            << ", rotary_dim gives " << rd
            << "; accepted: one of the two, or both agreeing";
        return false;
      }
    }
  }
  if (!readLayerKinds(r, f, c.dims.layers, types, window) ||
      (f.llama4 && !readLlama4(r, c.dims.layers, types, c)) ||
      !readCommon(r, f, c))
    return false;
  if (fam.nextnLayers && !noteNextnLayers(r, spec))
    return false;
  for (int64_t i = 0; i < c.dims.layers; ++i)
    spec.layers.push_back(
        makeLayer(fam, c, i, types[i], window, layerPrefix(prefix, i)));
  return !r.failed();
}

} // namespace

bool normalize::normalizeDecoderFamily(FieldReader &root,
                                       llvm::StringRef family,
                                       llvm::StringRef modelType,
                                       ModelSpec &spec, bool &handled) {
  const DecoderFamily *fam = nullptr;
  for (const DecoderFamily &f : families())
    if (f.name == family)
      fam = &f;
  handled = fam != nullptr;
  if (!fam)
    return false;
  // A multimodal config (model_type "gemma3" with a text_config) keeps the
  // language model there, as a diff against the text config's defaults.
  if (fam->textConfigPrefix && modelType == fam->name &&
      root.present("text_config")) {
    std::optional<FieldReader> text = root.optObject("text_config");
    if (!text)
      return false;
    if (root.present("vision_config"))
      spec.notes.push_back(
          fam->llama4
              ? "vision_config: the vision tower and the multimodal "
                "projector are not compiled, the language model "
                "(text_config) is"
              : "vision_config: the vision tower and the multimodal "
                "projector are not compiled, the language model "
                "(text_config) is; its masks are causal everywhere, so the "
                "bidirectional attention among one image's tokens (Gemma "
                "3's token_type_ids) is not applied");
    return normalizeDecoder(*text, *fam, /*nested=*/true,
                            fam->textConfigPrefix, spec);
  }
  return normalizeDecoder(root, *fam, /*nested=*/false, "model.layers.{i}.",
                          spec);
}
