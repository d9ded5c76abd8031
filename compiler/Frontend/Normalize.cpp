//===- Normalize.cpp - config.json families -> ModelSpec ------------------===//
//
// This file implements the normalization of Hugging Face configs into a
// ModelSpec. Each family's conventions follow its transformers configuration
// and modeling code: field names and aliases, class defaults (used when a
// field is absent, as transformers does), which layers slide, how heads,
// head dims, scales, biases, norms and RoPE are derived, and the checkpoint
// tensor names of each layer.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/ConfigSource.h"
#include "compiler/Frontend/ModelSpec.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

// Bounds that catch absurd values while admitting every real model.
constexpr int64_t kMaxHeads = 4096;
constexpr int64_t kMaxHeadDim = 4096;
constexpr int64_t kMaxHidden = 1 << 20;
constexpr int64_t kMaxLayers = 10000;
constexpr int64_t kMaxPositions = int64_t(1) << 40;

const llvm::StringRef kModelTypes[] = {
    "llama",  "mistral",   "qwen2", "qwen3",       "qwen3_next",
    "gemma2", "gemma3",    "gemma3_text", "phi3",  "gpt2",
    "bert",   "falcon",    "RefinedWeb", "RefinedWebModel", "t5",
    "whisper"};

/// Class defaults of a decoder family's transformers config.
struct Defaults {
  int64_t hidden = 4096, layers = 32, heads = 32;
  std::optional<int64_t> kvHeads; ///< nullopt: equal to heads.
  std::optional<int64_t> headDim; ///< nullopt: hidden / heads.
  int64_t maxPos = 2048;
  double eps = 1e-6;
  double theta = 10000.0;
  double partialRotary = 1.0;
};

struct Dims {
  int64_t hidden = 0, layers = 0, heads = 0, kvHeads = 0, headDim = 0;
  std::optional<int64_t> maxPos;
  double eps = 1e-6;
};

/// Reads hidden size, layer count, heads, KV heads and head dim. With
/// `required`, the three size fields must be present (top-level configs
/// always write them); nested sub-configs fall back to `d` as transformers
/// does, with a note.
void readDims(FieldReader &r, const Defaults &d, bool required,
              llvm::ArrayRef<llvm::StringRef> hiddenKeys,
              llvm::ArrayRef<llvm::StringRef> layerKeys,
              llvm::ArrayRef<llvm::StringRef> headKeys,
              llvm::ArrayRef<llvm::StringRef> kvKeys,
              llvm::ArrayRef<llvm::StringRef> headDimKeys,
              llvm::ArrayRef<llvm::StringRef> maxPosKeys,
              llvm::ArrayRef<llvm::StringRef> epsKeys, Dims &out,
              ModelSpec &spec) {
  auto size = [&](llvm::ArrayRef<llvm::StringRef> keys, int64_t hi,
                  int64_t dflt, llvm::StringRef meaning) {
    if (required)
      return r.reqInt(keys, 1, hi, meaning);
    if (!r.firstPresent(keys) && !r.failed())
      spec.notes.push_back(r.name(keys.front()) + " not given: using the " +
                           spec.family + " default " + std::to_string(dflt));
    return r.optInt(keys, 1, hi, dflt).value_or(dflt);
  };
  out.hidden = size(hiddenKeys, kMaxHidden, d.hidden, "the model width");
  out.layers = size(layerKeys, kMaxLayers, d.layers, "the number of layers");
  out.heads =
      size(headKeys, kMaxHeads, d.heads, "the number of query heads");
  if (r.failed())
    return;
  int64_t kvDefault = d.kvHeads.value_or(out.heads);
  out.kvHeads = kvKeys.empty()
                    ? out.heads
                    : r.optInt(kvKeys, 1, kMaxHeads, kvDefault).value_or(1);
  std::optional<int64_t> headDim =
      headDimKeys.empty()
          ? std::nullopt
          : r.optInt(headDimKeys, 1, kMaxHeadDim, d.headDim);
  if (r.failed())
    return;
  if (headDim) {
    out.headDim = *headDim;
  } else {
    if (out.hidden % out.heads != 0) {
      r.error(r.firstPresent(headKeys).value_or(headKeys.front().str()))
          << "field '"
          << r.name(r.firstPresent(headKeys).value_or(headKeys.front().str()))
          << "' (" << out.heads << ") does not divide the hidden size ("
          << out.hidden
          << ") and no head_dim is given; accepted: a head count that divides "
             "the hidden size, or an explicit head_dim";
      return;
    }
    out.headDim = out.hidden / out.heads;
    if (out.headDim > kMaxHeadDim) {
      r.errorHere() << "the implied head_dim (hidden size " << out.hidden
                    << " / " << out.heads << " heads = " << out.headDim
                    << ") exceeds " << kMaxHeadDim;
      return;
    }
  }
  if (out.heads % out.kvHeads != 0) {
    std::string key = r.firstPresent(kvKeys).value_or(kvKeys.front().str());
    r.error(key) << "the number of query heads (" << out.heads
                 << ") is not a multiple of the number of key/value heads ("
                 << out.kvHeads << ", field '" << r.name(key)
                 << "'); grouped-query attention needs query heads = group "
                    "size x key/value heads";
    return;
  }
  if (!maxPosKeys.empty())
    out.maxPos = r.optInt(maxPosKeys, 1, kMaxPositions, d.maxPos);
  if (!epsKeys.empty())
    out.eps = r.optNum(epsKeys, 1e-30, 1.0, d.eps).value_or(d.eps);
}

//===----------------------------------------------------------------------===//
// RoPE
//===----------------------------------------------------------------------===//

std::vector<double> defaultInvFreq(double theta, int64_t dim) {
  std::vector<double> f;
  for (int64_t i = 0; i < dim; i += 2)
    f.push_back(1.0 / std::pow(theta, double(i) / double(dim)));
  return f;
}

/// Reads rope_theta, partial_rotary_factor and rope_scaling (or the
/// transformers v5 `rope_parameters`, optionally per layer type) and computes
/// the frequencies the scaling implies.
RopeSpec readRope(FieldReader &r, int64_t headDim, const Defaults &d,
                  std::optional<int64_t> maxPos, llvm::StringRef layerType,
                  std::optional<double> thetaOverride = std::nullopt,
                  bool allowScaling = true) {
  RopeSpec rope;
  std::optional<FieldReader> params = r.optObject("rope_parameters");
  // v5 configs may key rope_parameters by layer type (Gemma 3).
  if (params && params->present(layerType))
    params = params->optObject(layerType);
  if (r.failed())
    return rope;
  rope.theta = r.optNum({"rope_theta"}, 1.0, 1e12, d.theta).value_or(d.theta);
  if (params)
    rope.theta = params->optNum({"rope_theta"}, 1.0, 1e12, rope.theta)
                     .value_or(rope.theta);
  if (thetaOverride)
    rope.theta = *thetaOverride;
  double partial = r.optNum({"partial_rotary_factor"}, 1e-6, 1.0,
                            d.partialRotary)
                       .value_or(1.0);
  if (params)
    partial = params->optNum({"partial_rotary_factor"}, 1e-6, 1.0, partial)
                  .value_or(partial);
  rope.rotaryDim = static_cast<int64_t>(double(headDim) * partial);
  if (r.failed())
    return rope;
  if (rope.rotaryDim < 2 || rope.rotaryDim % 2 != 0) {
    r.error("partial_rotary_factor")
        << "the rotary dimension head_dim x partial_rotary_factor = "
        << headDim << " x " << formatNumber(partial) << " = " << rope.rotaryDim
        << " must be an even number >= 2";
    return rope;
  }

  // Scaling: rope_scaling (v4) or the rope_parameters object (v5).
  std::optional<FieldReader> scaling;
  if (allowScaling) {
    scaling = r.optObject("rope_scaling");
    if (!scaling && params && params->firstPresent({"rope_type", "type"}))
      scaling = params;
  }
  if (r.failed() || !scaling)
    return rope;
  static const llvm::StringRef kTypes[] = {"default", "linear", "dynamic",
                                           "yarn",    "longrope", "su",
                                           "llama3"};
  std::optional<std::string> type;
  std::string typeKey = scaling->present("rope_type") ? "rope_type" : "type";
  type = scaling->optEnum(typeKey, kTypes, std::nullopt);
  if (r.failed())
    return rope;
  if (!type) {
    scaling->errorHere() << "field '" << scaling->name("rope_type")
                         << "' is missing; accepted: "
                         << llvm::join(llvm::ArrayRef<llvm::StringRef>(kTypes), ", ");
    return rope;
  }
  rope.scalingType = *type == "su" ? "longrope" : *type;
  rope.scalingPointer = scaling->pointer();
  if (rope.scalingType == "default")
    return rope;
  std::vector<double> base = defaultInvFreq(rope.theta, rope.rotaryDim);
  if (rope.scalingType == "longrope") {
    rope.factor = scaling->optNum({"factor"}, 1e-6, 1e6, 1.0).value_or(1.0);
    rope.unsupported = "rope_scaling type 'longrope' switches between short "
                       "and long frequency factors depending on the sequence "
                       "length at run time";
    return rope;
  }
  rope.factor = 1.0;
  std::optional<double> factor = scaling->optNum({"factor"}, 1e-6, 1e6);
  if (r.failed())
    return rope;
  if (!factor) {
    scaling->errorHere() << "field '" << scaling->name("factor")
                         << "' is missing: rope_type '" << rope.scalingType
                         << "' needs a positive scaling factor";
    return rope;
  }
  rope.factor = *factor;
  if (rope.scalingType == "dynamic") {
    rope.unsupported = "rope_scaling type 'dynamic' (dynamic NTK) recomputes "
                       "the frequencies from the sequence length at run time";
    return rope;
  }
  if (rope.scalingType == "linear") {
    for (double &f : base)
      f /= rope.factor;
    rope.invFreq = base;
    return rope;
  }
  if (rope.scalingType == "llama3") {
    double low = scaling->optNum({"low_freq_factor"}, 1e-6, 1e6, 1.0)
                     .value_or(1.0);
    double high = scaling->optNum({"high_freq_factor"}, 1e-6, 1e6, 4.0)
                      .value_or(4.0);
    double oldCtx =
        double(scaling->optInt({"original_max_position_embeddings"}, 1,
                               kMaxPositions, 8192)
                   .value_or(8192));
    if (r.failed())
      return rope;
    if (high <= low) {
      scaling->error("high_freq_factor")
          << "field '" << scaling->name("high_freq_factor")
          << "' must exceed low_freq_factor (" << formatNumber(low) << ")";
      return rope;
    }
    double lowWavelen = oldCtx / low, highWavelen = oldCtx / high;
    for (double &f : base) {
      double wavelen = 2 * M_PI / f;
      double scaled = wavelen > lowWavelen ? f / rope.factor : f;
      if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
        double smooth = (oldCtx / wavelen - low) / (high - low);
        scaled = (1 - smooth) * scaled / rope.factor + smooth * scaled;
      }
      f = scaled;
    }
    rope.invFreq = base;
    return rope;
  }
  // yarn, as transformers' _compute_yarn_parameters.
  double betaFast = scaling->optNum({"beta_fast"}, 1e-6, 1e6, 32.0)
                        .value_or(32.0);
  double betaSlow = scaling->optNum({"beta_slow"}, 1e-6, 1e6, 1.0)
                        .value_or(1.0);
  std::optional<double> mscale = scaling->optNum({"mscale"}, 0.0, 1e6);
  std::optional<double> mscaleAll =
      scaling->optNum({"mscale_all_dim"}, 0.0, 1e6);
  std::optional<double> attnFactor =
      scaling->optNum({"attention_factor"}, 1e-6, 1e6);
  bool truncate = scaling->optBool({"truncate"}, true).value_or(true);
  int64_t origMax = scaling
                        ->optInt({"original_max_position_embeddings"}, 1,
                                 kMaxPositions, maxPos.value_or(d.maxPos))
                        .value_or(d.maxPos);
  if (r.failed())
    return rope;
  auto getMscale = [](double s, double m) {
    return s <= 1 ? 1.0 : 0.1 * m * std::log(s) + 1.0;
  };
  if (attnFactor)
    rope.attentionFactor = *attnFactor;
  else if (mscale && mscaleAll && *mscale != 0 && *mscaleAll != 0)
    rope.attentionFactor =
        getMscale(rope.factor, *mscale) / getMscale(rope.factor, *mscaleAll);
  else
    rope.attentionFactor = getMscale(rope.factor, 1.0);
  double dim = double(rope.rotaryDim);
  auto correctionDim = [&](double rot) {
    return dim * std::log(double(origMax) / (rot * 2 * M_PI)) /
           (2 * std::log(rope.theta));
  };
  double lo = correctionDim(betaFast), hi = correctionDim(betaSlow);
  if (truncate) {
    lo = std::floor(lo);
    hi = std::ceil(hi);
  }
  lo = std::max(lo, 0.0);
  hi = std::min(hi, dim - 1);
  if (lo == hi)
    hi += 0.001;
  std::vector<double> out;
  for (size_t i = 0; i < base.size(); ++i) {
    double ramp = std::clamp((double(i) - lo) / (hi - lo), 0.0, 1.0);
    double extrapolationFactor = 1.0 - ramp;
    double extrap = base[i], interp = base[i] / rope.factor;
    out.push_back(interp * (1 - extrapolationFactor) +
                  extrap * extrapolationFactor);
  }
  rope.invFreq = out;
  return rope;
}

//===----------------------------------------------------------------------===//
// Layer types (which layers slide, which are linear attention)
//===----------------------------------------------------------------------===//

/// Reads `layer_types` if given (validated), else returns an empty vector.
std::vector<std::string> readLayerTypes(FieldReader &r, int64_t layers,
                                        bool allowLinear) {
  std::vector<llvm::StringRef> accepted = {"full_attention",
                                           "sliding_attention"};
  if (allowLinear)
    accepted.push_back("linear_attention");
  return r.optEnumArray("layer_types", accepted, size_t(layers))
      .value_or(std::vector<std::string>{});
}

/// Reads a positive sliding window, returning nullopt when absent or null.
std::optional<int64_t> readWindow(FieldReader &r, llvm::StringRef key,
                                  std::optional<int64_t> dflt) {
  // An explicit null means no window (Mistral 7B v0.2+, Qwen2 configs).
  if (r.has(key) && !r.present(key))
    return std::nullopt;
  return r.optInt({key}, 1, kMaxPositions, dflt);
}

std::string layerPrefix(llvm::StringRef pattern, int64_t i) {
  std::string p = pattern.str();
  size_t at = p.find("{i}");
  return p.substr(0, at) + std::to_string(i) + p.substr(at + 3);
}

//===----------------------------------------------------------------------===//
// Decoder-only RoPE families
//===----------------------------------------------------------------------===//

struct DecoderFamily {
  Defaults d;
  bool nested = false;            ///< read from text_config with defaults.
  std::string prefix = "model.layers.{i}.";
  /// Biases: "none", "qkv" (Qwen2), "attention_bias" (field toggles q,k,v,o).
  std::string bias = "attention_bias";
  bool qkNorm = false;
  bool gemmaNorms = false;        ///< (1 + w) RMSNorm, pre and post norms.
  bool fusedQKV = false;          ///< Phi-3 qkv_proj.
  bool outputGate = false;        ///< Qwen3-Next.
  bool allowLinear = false;       ///< Qwen3-Next linear-attention layers.
};

bool normalizeDecoder(FieldReader &r, const DecoderFamily &fam,
                      ModelSpec &spec) {
  const Defaults &d = fam.d;
  Dims dims;
  readDims(r, d, !fam.nested, {"hidden_size"}, {"num_hidden_layers"},
           {"num_attention_heads"}, {"num_key_value_heads"}, {"head_dim"},
           {"max_position_embeddings"}, {"rms_norm_eps"}, dims, spec);
  if (r.failed())
    return false;
  spec.hiddenSize = dims.hidden;
  spec.numLayers = dims.layers;
  spec.maxPositions = dims.maxPos;

  // Which layers are full, sliding or linear attention.
  std::vector<std::string> types =
      readLayerTypes(r, dims.layers, fam.allowLinear);
  std::optional<int64_t> window;
  const std::string &family = spec.family;
  if (family == "qwen2" || family == "qwen3") {
    bool use = r.optBool({"use_sliding_window"}, false).value_or(false);
    window = readWindow(r, "sliding_window", 4096);
    int64_t maxWindowLayers =
        r.optInt({"max_window_layers"}, 0, kMaxLayers, 28).value_or(28);
    if (!use)
      window.reset();
    if (types.empty())
      for (int64_t i = 0; i < dims.layers; ++i)
        types.push_back(window && i >= maxWindowLayers ? "sliding_attention"
                                                       : "full_attention");
  } else if (family == "mistral" || family == "phi3") {
    window = readWindow(r, "sliding_window",
                        family == "mistral" ? std::optional<int64_t>(4096)
                                            : std::nullopt);
    if (types.empty())
      types.assign(dims.layers, window ? "sliding_attention" : "full_attention");
  } else if (family == "gemma2") {
    window = readWindow(r, "sliding_window", 4096);
    if (types.empty())
      for (int64_t i = 0; i < dims.layers; ++i)
        types.push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
  } else if (family == "gemma3") {
    window = readWindow(r, "sliding_window", 4096);
    int64_t pattern = r.optInt({"sliding_window_pattern",
                                "_sliding_window_pattern"},
                               1, kMaxLayers, 6)
                          .value_or(6);
    if (types.empty())
      for (int64_t i = 0; i < dims.layers; ++i)
        types.push_back((i + 1) % pattern ? "sliding_attention"
                                          : "full_attention");
  } else if (family == "qwen3_next") {
    int64_t interval =
        r.optInt({"full_attention_interval"}, 1, kMaxLayers, 4).value_or(4);
    if (types.empty())
      for (int64_t i = 0; i < dims.layers; ++i)
        types.push_back((i + 1) % interval ? "linear_attention"
                                           : "full_attention");
  } else {
    if (types.empty())
      types.assign(dims.layers, "full_attention");
  }
  if (r.failed())
    return false;
  for (int64_t i = 0; i < dims.layers; ++i)
    if (types[i] == "sliding_attention" && !window) {
      r.error("layer_types")
          << "layer " << i
          << " is a sliding_attention layer but the config gives no "
             "sliding_window; accepted: a positive 'sliding_window', or "
             "full_attention layers";
      return false;
    }

  // Scale and soft-capping.
  double scale = 1.0 / std::sqrt(double(dims.headDim));
  std::optional<double> softcap;
  if (family == "gemma2" || family == "gemma3") {
    double qpas = r.optNum({"query_pre_attn_scalar"}, 1e-6, 1e9, 256.0)
                      .value_or(256.0);
    scale = 1.0 / std::sqrt(qpas);
    softcap = r.optNum({"attn_logit_softcapping"}, 1e-6, 1e9,
                       family == "gemma2" ? std::optional<double>(50.0)
                                          : std::nullopt);
    if (r.has("attn_logit_softcapping") &&
        !r.present("attn_logit_softcapping"))
      softcap.reset();
  }

  // Biases.
  bool qkvBias = false, oBias = false;
  if (fam.bias == "qkv") {
    qkvBias = true;
  } else if (fam.bias == "attention_bias") {
    qkvBias = oBias =
        r.optBool({"attention_bias"}, false).value_or(false);
  }
  if (r.failed())
    return false;

  std::optional<double> localTheta;
  if (family == "gemma3")
    localTheta = r.optNum({"rope_local_base_freq"}, 1.0, 1e12, 10000.0);
  RopeSpec fullRope =
      readRope(r, dims.headDim, d, dims.maxPos, "full_attention");
  RopeSpec slidingRope = fullRope;
  if (family == "gemma3")
    slidingRope = readRope(r, dims.headDim, d, dims.maxPos,
                           "sliding_attention", localTheta,
                           /*allowScaling=*/false);
  if (r.failed())
    return false;

  for (int64_t i = 0; i < dims.layers; ++i) {
    LayerSpec l;
    l.index = i;
    l.stack = "decoder";
    l.layerInStack = i;
    l.layerType = types[i];
    std::string p = layerPrefix(fam.prefix, i);
    if (types[i] == "linear_attention") {
      l.role = LayerRole::LinearAttention;
      l.unsupportedWhy = "Gated DeltaNet linear attention (" + p +
                         "linear_attn), not softmax attention";
      spec.layers.push_back(l);
      continue;
    }
    l.causal = true;
    if (types[i] == "sliding_attention")
      l.window = window;
    l.numHeads = dims.heads;
    l.numKVHeads = dims.kvHeads;
    l.headDimQK = l.headDimV = dims.headDim;
    l.scale = scale;
    l.softcap = softcap;
    l.position = PositionKind::Rope;
    l.rope = types[i] == "sliding_attention" ? slidingRope : fullRope;
    l.qkNorm = fam.qkNorm;
    l.outputGate = fam.outputGate;
    l.norm = fam.gemmaNorms || fam.outputGate ? NormKind::RMSUnitOffset
                                              : NormKind::RMS;
    l.placement = fam.gemmaNorms ? NormPlacement::PrePost : NormPlacement::Pre;
    l.normEps = dims.eps;
    l.normW.weight = p + "input_layernorm.weight";
    if (fam.gemmaNorms)
      l.postNormW.weight = p + "post_attention_layernorm.weight";
    std::string a = p + "self_attn.";
    if (fam.fusedQKV) {
      l.layout = QKVLayout::FusedConcat;
      l.qkv.weight = a + "qkv_proj.weight";
    } else {
      l.q.weight = a + "q_proj.weight";
      l.k.weight = a + "k_proj.weight";
      l.v.weight = a + "v_proj.weight";
      if (qkvBias) {
        l.q.bias = a + "q_proj.bias";
        l.k.bias = a + "k_proj.bias";
        l.v.bias = a + "v_proj.bias";
      }
    }
    l.o.weight = a + "o_proj.weight";
    if (oBias)
      l.o.bias = a + "o_proj.bias";
    if (fam.qkNorm) {
      l.qNormW.weight = a + "q_norm.weight";
      l.kNormW.weight = a + "k_norm.weight";
    }
    spec.layers.push_back(l);
  }
  return !r.failed();
}

//===----------------------------------------------------------------------===//
// GPT-2, BERT, Falcon
//===----------------------------------------------------------------------===//

bool normalizeGPT2(FieldReader &r, ModelSpec &spec) {
  Defaults d;
  d.hidden = 768;
  d.layers = 12;
  d.heads = 12;
  d.maxPos = 1024;
  d.eps = 1e-5;
  Dims dims;
  readDims(r, d, true, {"n_embd", "hidden_size"}, {"n_layer", "num_hidden_layers"},
           {"n_head", "num_attention_heads"}, {}, {},
           {"n_positions", "max_position_embeddings"},
           {"layer_norm_epsilon"}, dims, spec);
  bool scaleWeights =
      r.optBool({"scale_attn_weights"}, true).value_or(true);
  bool byLayer =
      r.optBool({"scale_attn_by_inverse_layer_idx"}, false).value_or(false);
  if (r.failed())
    return false;
  spec.hiddenSize = dims.hidden;
  spec.numLayers = dims.layers;
  spec.maxPositions = dims.maxPos;
  for (int64_t i = 0; i < dims.layers; ++i) {
    LayerSpec l;
    l.index = l.layerInStack = i;
    l.stack = "decoder";
    l.layerType = "full_attention";
    l.numHeads = l.numKVHeads = dims.heads;
    l.headDimQK = l.headDimV = dims.headDim;
    l.scale = scaleWeights ? 1.0 / std::sqrt(double(dims.headDim)) : 1.0;
    if (byLayer)
      l.scale /= double(i + 1);
    l.position = PositionKind::Absolute;
    l.norm = NormKind::Layer;
    l.normEps = dims.eps;
    std::string p = "h." + std::to_string(i) + ".";
    l.normW = {p + "ln_1.weight", p + "ln_1.bias"};
    l.layout = QKVLayout::FusedConcat;
    l.transposedWeights = true;
    l.qkv = {p + "attn.c_attn.weight", p + "attn.c_attn.bias"};
    l.o = {p + "attn.c_proj.weight", p + "attn.c_proj.bias"};
    spec.layers.push_back(l);
  }
  return true;
}

bool normalizeBERT(FieldReader &r, ModelSpec &spec) {
  Defaults d;
  d.hidden = 768;
  d.layers = 12;
  d.heads = 12;
  d.maxPos = 512;
  d.eps = 1e-12;
  Dims dims;
  readDims(r, d, true, {"hidden_size"}, {"num_hidden_layers"},
           {"num_attention_heads"}, {}, {}, {"max_position_embeddings"},
           {"layer_norm_eps"}, dims, spec);
  std::optional<std::string> posType = r.optEnum(
      "position_embedding_type",
      {"absolute", "relative_key", "relative_key_query"}, "absolute");
  bool isDecoder = r.optBool({"is_decoder"}, false).value_or(false);
  if (r.failed())
    return false;
  if (*posType != "absolute") {
    r.error("position_embedding_type")
        << "field 'position_embedding_type' is \"" << *posType
        << "\": BERT's relative position embeddings are not supported; "
           "accepted: \"absolute\"";
    return false;
  }
  spec.hiddenSize = dims.hidden;
  spec.numLayers = dims.layers;
  spec.maxPositions = dims.maxPos;
  for (int64_t i = 0; i < dims.layers; ++i) {
    LayerSpec l;
    l.index = l.layerInStack = i;
    l.stack = isDecoder ? "decoder" : "encoder";
    l.layerType = isDecoder ? "full_attention" : "bidirectional_attention";
    l.causal = isDecoder;
    l.numHeads = l.numKVHeads = dims.heads;
    l.headDimQK = l.headDimV = dims.headDim;
    l.scale = 1.0 / std::sqrt(double(dims.headDim));
    l.position = PositionKind::Absolute;
    l.norm = NormKind::Layer;
    l.placement = NormPlacement::Post;
    l.normEps = dims.eps;
    std::string p = "bert.encoder.layer." + std::to_string(i) + ".attention.";
    l.q = {p + "self.query.weight", p + "self.query.bias"};
    l.k = {p + "self.key.weight", p + "self.key.bias"};
    l.v = {p + "self.value.weight", p + "self.value.bias"};
    l.o = {p + "output.dense.weight", p + "output.dense.bias"};
    l.normW = {p + "output.LayerNorm.weight", p + "output.LayerNorm.bias"};
    spec.layers.push_back(l);
  }
  return true;
}

bool normalizeFalcon(FieldReader &r, ModelSpec &spec) {
  Defaults d;
  d.hidden = 4544;
  d.layers = 32;
  d.heads = 71;
  d.maxPos = 2048;
  d.eps = 1e-5;
  Dims dims;
  // num_kv_heads is read below: its meaning depends on the architecture.
  readDims(r, d, true, {"hidden_size", "n_embd"},
           {"num_hidden_layers", "n_layer"}, {"num_attention_heads", "n_head"},
           {}, {}, {"max_position_embeddings"}, {"layer_norm_epsilon"}, dims,
           spec);
  bool newArch =
      r.optBool({"new_decoder_architecture"}, false).value_or(false);
  bool multiQuery = r.optBool({"multi_query"}, true).value_or(true);
  bool alibi = r.optBool({"alibi"}, false).value_or(false);
  bool bias = r.optBool({"bias"}, false).value_or(false);
  bool parallel = r.optBool({"parallel_attn"}, true).value_or(true);
  int64_t kv = dims.heads;
  if (newArch)
    kv = r.optInt({"num_kv_heads", "n_head_kv"}, 1, kMaxHeads, dims.heads)
             .value_or(1);
  else if (multiQuery)
    kv = 1;
  int64_t numLn = r.optInt({"num_ln_in_parallel_attn"}, 1, 2, newArch ? 2 : 1)
                      .value_or(2);
  if (r.failed())
    return false;
  if (dims.heads % kv != 0) {
    r.error("num_kv_heads") << "the number of query heads (" << dims.heads
                            << ") is not a multiple of 'num_kv_heads' (" << kv
                            << ")";
    return false;
  }
  spec.hiddenSize = dims.hidden;
  spec.numLayers = dims.layers;
  spec.maxPositions = dims.maxPos;
  RopeSpec rope;
  if (!alibi) {
    rope = readRope(r, dims.headDim, d, dims.maxPos, "full_attention");
    if (r.failed())
      return false;
  }
  for (int64_t i = 0; i < dims.layers; ++i) {
    LayerSpec l;
    l.index = l.layerInStack = i;
    l.stack = "decoder";
    l.layerType = "full_attention";
    l.numHeads = dims.heads;
    l.numKVHeads = kv;
    l.headDimQK = l.headDimV = dims.headDim;
    l.scale = 1.0 / std::sqrt(double(dims.headDim));
    l.position = alibi ? PositionKind::Alibi : PositionKind::Rope;
    l.rope = rope;
    l.norm = NormKind::Layer;
    l.normEps = dims.eps;
    std::string p = "transformer.h." + std::to_string(i) + ".";
    std::string ln = newArch && parallel && numLn == 2 ? "ln_attn"
                                                        : "input_layernorm";
    l.normW = {p + ln + ".weight", p + ln + ".bias"};
    l.layout = newArch ? QKVLayout::FusedGrouped
               : kv == 1 ? QKVLayout::FusedConcat
                         : QKVLayout::FusedPerHead;
    l.qkv.weight = p + "self_attention.query_key_value.weight";
    l.o.weight = p + "self_attention.dense.weight";
    if (bias) {
      l.qkv.bias = p + "self_attention.query_key_value.bias";
      l.o.bias = p + "self_attention.dense.bias";
    }
    spec.layers.push_back(l);
  }
  if (!parallel)
    spec.notes.push_back("parallel_attn is false: attention and MLP run in "
                         "sequence (the attention block is the same)");
  return true;
}

//===----------------------------------------------------------------------===//
// Encoder-decoder: T5, Whisper
//===----------------------------------------------------------------------===//

bool normalizeT5(FieldReader &r, ModelSpec &spec) {
  int64_t dModel = r.reqInt({"d_model", "hidden_size"}, 1, kMaxHidden,
                            "the model width");
  int64_t dKv = r.reqInt({"d_kv", "head_dim"}, 1, kMaxHeadDim,
                         "the per-head dimension");
  int64_t heads = r.reqInt({"num_heads", "num_attention_heads"}, 1, kMaxHeads,
                           "the number of heads");
  int64_t layers = r.reqInt({"num_layers", "num_hidden_layers"}, 1,
                            kMaxLayers, "the number of encoder layers");
  int64_t decLayers = r.optInt({"num_decoder_layers"}, 1, kMaxLayers, layers)
                          .value_or(layers);
  int64_t buckets =
      r.optInt({"relative_attention_num_buckets"}, 1, 1 << 20, 32)
          .value_or(32);
  int64_t maxDist =
      r.optInt({"relative_attention_max_distance"}, 1, kMaxPositions, 128)
          .value_or(128);
  double eps = r.optNum({"layer_norm_epsilon"}, 1e-30, 1.0, 1e-6)
                   .value_or(1e-6);
  spec.maxPositions = r.optInt({"n_positions"}, 1, kMaxPositions);
  if (r.failed())
    return false;
  spec.hiddenSize = spec.encoderHiddenSize = dModel;
  spec.numLayers = decLayers;
  spec.numEncoderLayers = layers;
  spec.encoderDecoder = true;
  if (spec.maxPositions)
    spec.notes.push_back("T5 uses relative positions: n_positions is the "
                         "training length, not a hard limit");

  auto base = [&](LayerSpec &l) {
    l.numHeads = l.numKVHeads = heads;
    l.headDimQK = l.headDimV = dKv;
    l.scale = 1.0; // T5 folds the scaling into its initialization.
    l.norm = NormKind::RMS;
    l.normEps = eps;
    l.t5.numBuckets = buckets;
    l.t5.maxDistance = maxDist;
  };
  auto projs = [](LayerSpec &l, const std::string &a) {
    l.q.weight = a + "q.weight";
    l.k.weight = a + "k.weight";
    l.v.weight = a + "v.weight";
    l.o.weight = a + "o.weight";
  };
  int64_t index = 0;
  // Self-attention with T5's relative bias; block 0 of each stack owns the
  // table every layer of the stack uses.
  auto selfLayer = [&](const std::string &stack, int64_t i, bool causal) {
    LayerSpec l;
    base(l);
    l.index = index++;
    l.stack = stack;
    l.layerInStack = i;
    l.layerType = causal ? "full_attention" : "bidirectional_attention";
    l.causal = causal;
    l.position = PositionKind::T5Bias;
    l.t5.bidirectional = !causal;
    l.t5.tableTensor =
        stack + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight";
    std::string p = stack + ".block." + std::to_string(i) + ".layer.0.";
    l.normW.weight = p + "layer_norm.weight";
    projs(l, p + "SelfAttention.");
    spec.layers.push_back(l);
  };
  for (int64_t i = 0; i < layers; ++i)
    selfLayer("encoder", i, /*causal=*/false);
  for (int64_t i = 0; i < decLayers; ++i) {
    selfLayer("decoder", i, /*causal=*/true);
    std::string p = "decoder.block." + std::to_string(i) + ".layer.";
    LayerSpec c;
    base(c);
    c.index = index++;
    c.stack = "decoder";
    c.layerInStack = i;
    c.role = LayerRole::CrossAttention;
    c.layerType = "cross_attention";
    c.causal = false;
    c.position = PositionKind::Absolute;
    c.normW.weight = p + "1.layer_norm.weight";
    projs(c, p + "1.EncDecAttention.");
    spec.layers.push_back(c);
  }
  return true;
}

bool normalizeWhisper(FieldReader &r, ModelSpec &spec) {
  int64_t dModel = r.reqInt({"d_model", "hidden_size"}, 1, kMaxHidden,
                            "the model width");
  int64_t encLayers = r.reqInt({"encoder_layers"}, 1, kMaxLayers,
                               "the number of encoder layers");
  int64_t decLayers = r.reqInt({"decoder_layers"}, 1, kMaxLayers,
                               "the number of decoder layers");
  int64_t encHeads = r.reqInt({"encoder_attention_heads"}, 1, kMaxHeads,
                              "the number of encoder heads");
  int64_t decHeads = r.reqInt({"decoder_attention_heads"}, 1, kMaxHeads,
                              "the number of decoder heads");
  spec.maxSourcePositions =
      r.optInt({"max_source_positions"}, 1, kMaxPositions, 1500);
  spec.maxPositions =
      r.optInt({"max_target_positions"}, 1, kMaxPositions, 448);
  if (r.failed())
    return false;
  for (auto [key, h] : {std::pair<const char *, int64_t>{
                            "encoder_attention_heads", encHeads},
                        {"decoder_attention_heads", decHeads}})
    if (dModel % h != 0) {
      r.error(key) << "field '" << key << "' (" << h
                   << ") does not divide d_model (" << dModel
                   << "); Whisper's head_dim is d_model / heads";
      return false;
    }
  spec.hiddenSize = spec.encoderHiddenSize = dModel;
  spec.numLayers = decLayers;
  spec.numEncoderLayers = encLayers;
  spec.encoderDecoder = true;

  auto base = [&](LayerSpec &l, int64_t heads) {
    l.numHeads = l.numKVHeads = heads;
    l.headDimQK = l.headDimV = dModel / heads;
    l.scale = 1.0 / std::sqrt(double(l.headDimQK));
    l.scaleOnQuery = true; // q_proj(x) * scaling, as WhisperAttention does.
    l.position = PositionKind::Absolute;
    l.norm = NormKind::Layer;
    l.normEps = 1e-5;
  };
  auto projs = [](LayerSpec &l, const std::string &a) {
    l.q = {a + "q_proj.weight", a + "q_proj.bias"};
    l.k = {a + "k_proj.weight", ""}; // Whisper's k_proj has no bias.
    l.v = {a + "v_proj.weight", a + "v_proj.bias"};
    l.o = {a + "out_proj.weight", a + "out_proj.bias"};
  };
  int64_t index = 0;
  for (int64_t i = 0; i < encLayers; ++i) {
    LayerSpec l;
    base(l, encHeads);
    l.index = index++;
    l.stack = "encoder";
    l.layerInStack = i;
    l.layerType = "bidirectional_attention";
    l.causal = false;
    std::string p = "model.encoder.layers." + std::to_string(i) + ".";
    l.normW = {p + "self_attn_layer_norm.weight",
               p + "self_attn_layer_norm.bias"};
    projs(l, p + "self_attn.");
    spec.layers.push_back(l);
  }
  for (int64_t i = 0; i < decLayers; ++i) {
    std::string p = "model.decoder.layers." + std::to_string(i) + ".";
    LayerSpec s;
    base(s, decHeads);
    s.index = index++;
    s.stack = "decoder";
    s.layerInStack = i;
    s.layerType = "full_attention";
    s.causal = true;
    s.normW = {p + "self_attn_layer_norm.weight",
               p + "self_attn_layer_norm.bias"};
    projs(s, p + "self_attn.");
    spec.layers.push_back(s);

    LayerSpec c;
    base(c, decHeads);
    c.index = index++;
    c.stack = "decoder";
    c.layerInStack = i;
    c.role = LayerRole::CrossAttention;
    c.layerType = "cross_attention";
    c.causal = false;
    c.normW = {p + "encoder_attn_layer_norm.weight",
               p + "encoder_attn_layer_norm.bias"};
    projs(c, p + "encoder_attn.");
    spec.layers.push_back(c);
  }
  return true;
}

} // namespace

llvm::ArrayRef<llvm::StringRef> mlir::attn::supportedModelTypes() {
  return kModelTypes;
}

bool mlir::attn::normalizeConfig(const ConfigSource &src, ModelSpec &spec) {
  bool failed = false;
  FieldReader root(src, "", "", &failed);
  spec.configPath = src.filename().str();
  std::optional<std::string> mt = root.optString({"model_type"});
  if (failed)
    return false;
  if (!mt) {
    root.errorHere() << "missing field 'model_type'; accepted: "
                     << llvm::join(supportedModelTypes(), ", ");
    return false;
  }
  spec.modelType = *mt;
  if (!llvm::is_contained(supportedModelTypes(), *mt)) {
    root.error("model_type") << "unknown model_type \"" << *mt
                             << "\"; accepted: "
                             << llvm::join(supportedModelTypes(), ", ");
    return false;
  }
  if (const nlohmann::json *archs = root.get("architectures"))
    if (archs->is_array() && !archs->empty() && (*archs)[0].is_string())
      spec.architecture = (*archs)[0].get<std::string>();
  spec.dtype = root.optString({"torch_dtype", "dtype"}, "").value_or("");
  if (failed)
    return false;

  std::string family = *mt;
  if (family == "RefinedWeb" || family == "RefinedWebModel")
    family = "falcon";
  if (family == "gemma3_text")
    family = "gemma3";
  spec.family = family;

  if (family == "gpt2")
    return normalizeGPT2(root, spec);
  if (family == "bert")
    return normalizeBERT(root, spec);
  if (family == "falcon")
    return normalizeFalcon(root, spec);
  if (family == "t5")
    return normalizeT5(root, spec);
  if (family == "whisper")
    return normalizeWhisper(root, spec);

  DecoderFamily fam;
  Defaults &d = fam.d;
  if (family == "llama") {
    d.maxPos = 2048;
  } else if (family == "mistral") {
    d.kvHeads = 8;
    d.maxPos = 4096 * 32;
    fam.bias = "none";
  } else if (family == "qwen2") {
    d.maxPos = 32768;
    fam.bias = "qkv";
  } else if (family == "qwen3") {
    d.headDim = 128;
    d.maxPos = 32768;
    fam.qkNorm = true;
  } else if (family == "qwen3_next") {
    d.hidden = 2048;
    d.layers = 48;
    d.heads = 16;
    d.kvHeads = 2;
    d.headDim = 256;
    d.maxPos = 32768;
    d.partialRotary = 0.25;
    fam.qkNorm = true;
    fam.outputGate = true;
    fam.allowLinear = true;
  } else if (family == "gemma2" || family == "gemma3") {
    // Gemma3TextConfig starts from Gemma2Config's sizes.
    d.hidden = 2304;
    d.layers = 26;
    d.heads = 8;
    d.kvHeads = 4;
    d.headDim = 256;
    d.maxPos = family == "gemma2" ? 8192 : 131072;
    d.theta = family == "gemma2" ? 10000.0 : 1000000.0;
    fam.gemmaNorms = true;
    fam.qkNorm = family == "gemma3";
  } else if (family == "phi3") {
    d.maxPos = 4096;
    d.eps = 1e-5;
    fam.bias = "none";
    fam.fusedQKV = true;
  }

  // Multimodal Gemma 3 keeps the language model under text_config, written
  // as a diff against Gemma3TextConfig's defaults.
  if (*mt == "gemma3" && root.present("text_config")) {
    std::optional<FieldReader> text = root.optObject("text_config");
    if (!text)
      return false;
    fam.nested = true;
    fam.prefix = "language_model.model.layers.{i}.";
    return normalizeDecoder(*text, fam, spec);
  }
  return normalizeDecoder(root, fam, spec);
}
