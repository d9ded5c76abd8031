//===- Rope.cpp - RoPE parameters and frequency scaling --------------------===//
//
// This file implements the reading of a config's rotary embedding:
// rope_theta, partial_rotary_factor and rope_scaling (transformers v4) or
// rope_parameters (v5, optionally keyed by layer type), and the inverse
// frequencies each scaling type implies, as transformers'
// modeling_rope_utils computes them.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/NormalizeUtils.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::normalize;

namespace {

std::vector<double> defaultInvFreq(double theta, int64_t dim) {
  std::vector<double> f;
  for (int64_t i = 0; i < dim; i += 2)
    f.push_back(1.0 / std::pow(theta, double(i) / double(dim)));
  return f;
}

/// rope_theta and the rotary dimension (head_dim x partial_rotary_factor),
/// from the top level, overridden by `params` (v5) and `thetaOverride`.
bool readBase(FieldReader &r, std::optional<FieldReader> &params,
              int64_t headDim, const Defaults &d,
              std::optional<double> thetaOverride, RopeSpec &rope) {
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
    return false;
  if (rope.rotaryDim < 2 || rope.rotaryDim % 2 != 0) {
    // Point at the field that set the odd dimension: the factor where one
    // is given, else the head size (or, derived, hidden_size).
    auto diag = [&] {
      if (params && params->present("partial_rotary_factor"))
        return params->error("partial_rotary_factor");
      for (llvm::StringRef k :
           {"partial_rotary_factor", "qk_rope_head_dim", "head_dim"})
        if (r.present(k))
          return r.error(k);
      return r.error("hidden_size");
    }();
    diag << "the rotary dimension head_dim x partial_rotary_factor = "
         << headDim << " x " << formatNumber(partial) << " = " << rope.rotaryDim
         << " must be an even number >= 2 (RoPE rotates channels in pairs)";
    return false;
  }
  return true;
}

/// llama3: frequencies below low_freq_factor's wavelength are divided by
/// the factor, those above high_freq_factor's kept, the band between
/// interpolated.
void llama3Frequencies(FieldReader &r, FieldReader &scaling,
                       std::vector<double> &base, RopeSpec &rope) {
  double low =
      scaling.optNum({"low_freq_factor"}, 1e-6, 1e6, 1.0).value_or(1.0);
  double high =
      scaling.optNum({"high_freq_factor"}, 1e-6, 1e6, 4.0).value_or(4.0);
  double oldCtx = double(scaling
                             .optInt({"original_max_position_embeddings"}, 1,
                                     kMaxPositions, 8192)
                             .value_or(8192));
  if (r.failed())
    return;
  // Equal factors (Llama 4) leave no band to interpolate: each frequency
  // is divided by the factor or kept.
  if (high < low) {
    scaling.error("high_freq_factor")
        << "field '" << scaling.name("high_freq_factor")
        << "' must be at least low_freq_factor (" << formatNumber(low)
        << ")";
    return;
  }
  double lowWavelen = oldCtx / low, highWavelen = oldCtx / high;
  for (double &f : base) {
    double wavelen = 2 * M_PI / f;
    double scaled = wavelen > lowWavelen ? f / rope.factor : f;
    if (high > low && !(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
      double smooth = (oldCtx / wavelen - low) / (high - low);
      scaled = (1 - smooth) * scaled / rope.factor + smooth * scaled;
    }
    f = scaled;
  }
  rope.invFreq = base;
}

/// yarn's frequencies and attention factor from its parameters, as
/// transformers' _compute_yarn_parameters.
void computeYarn(const YarnParams &y, std::vector<double> &base,
                 RopeSpec &rope) {
  auto getMscale = [](double s, double m) {
    return s <= 1 ? 1.0 : 0.1 * m * std::log(s) + 1.0;
  };
  if (y.attentionFactor)
    rope.attentionFactor = *y.attentionFactor;
  else if (y.mscale && y.mscaleAll && *y.mscale != 0 && *y.mscaleAll != 0)
    rope.attentionFactor =
        getMscale(rope.factor, *y.mscale) / getMscale(rope.factor, *y.mscaleAll);
  else
    rope.attentionFactor = getMscale(rope.factor, 1.0);
  double dim = double(rope.rotaryDim);
  auto correctionDim = [&](double rot) {
    return dim * std::log(double(y.originalMax) / (rot * 2 * M_PI)) /
           (2 * std::log(rope.theta));
  };
  double lo = correctionDim(y.betaFast), hi = correctionDim(y.betaSlow);
  if (y.truncate) {
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
}

/// yarn's fields read from `scaling`, then computeYarn.
void yarnFrequencies(FieldReader &r, FieldReader &scaling,
                     std::vector<double> &base, std::optional<int64_t> maxPos,
                     const Defaults &d, RopeSpec &rope) {
  YarnParams y;
  y.factor = rope.factor;
  y.betaFast = scaling.optNum({"beta_fast"}, 1e-6, 1e6, 32.0).value_or(32.0);
  y.betaSlow = scaling.optNum({"beta_slow"}, 1e-6, 1e6, 1.0).value_or(1.0);
  y.mscale = scaling.optNum({"mscale"}, 0.0, 1e6);
  y.mscaleAll = scaling.optNum({"mscale_all_dim"}, 0.0, 1e6);
  y.attentionFactor = scaling.optNum({"attention_factor"}, 1e-6, 1e6);
  y.truncate = scaling.optBool({"truncate"}, true).value_or(true);
  y.originalMax = scaling
                      .optInt({"original_max_position_embeddings"}, 1,
                              kMaxPositions, maxPos.value_or(d.maxPos))
                      .value_or(d.maxPos);
  if (r.failed())
    return;
  // The correction range divides by log(rope_theta).
  if (!(rope.theta > 1.0)) {
    (r.present("rope_theta") ? r.error("rope_theta") : scaling.errorHere())
        << "rope_theta " << formatNumber(rope.theta)
        << " leaves yarn's correction range undefined (it divides by "
           "log(rope_theta)); accepted with yarn: rope_theta > 1";
    return;
  }
  computeYarn(y, base, rope);
}

/// longrope (Phi-3.5, Phi-4-mini), as transformers'
/// _compute_longrope_parameters and longrope_frequency_update: frequencies
/// 1 / (ext[i] * theta^(2i/dim)) with ext the short_factor list, or the
/// long_factor list once the largest position of a call + 1 exceeds
/// original_max_position_embeddings (the top-level field first, as Phi-3
/// writes it, then rope_scaling's, else max_position_embeddings); factor
/// (default max_position_embeddings / original) sets the attention factor
/// sqrt(1 + ln factor / ln original) unless attention_factor is given.
void longropeFrequencies(FieldReader &r, FieldReader &scaling,
                         std::optional<int64_t> maxPos, const Defaults &d,
                         RopeSpec &rope) {
  int64_t maxPositions = maxPos.value_or(d.maxPos);
  std::optional<int64_t> orig =
      r.optInt({"original_max_position_embeddings"}, 1, kMaxPositions);
  if (!orig)
    orig = scaling.optInt({"original_max_position_embeddings"}, 1,
                          kMaxPositions);
  std::optional<double> factor = scaling.optNum({"factor"}, 1e-6, 1e6);
  std::optional<double> attnFactor =
      scaling.optNum({"attention_factor"}, 1e-6, 1e6);
  size_t half = size_t(rope.rotaryDim / 2);
  auto readFactors = [&](llvm::StringRef key) {
    std::optional<std::vector<double>> v = scaling.optNumArray(key);
    if (r.failed())
      return std::vector<double>();
    if (!v) {
      scaling.errorHere() << "field '" << scaling.name(key)
                          << "' is missing: rope_type 'longrope' needs "
                          << half << " factors (rotary_dim / 2)";
      return std::vector<double>();
    }
    if (v->size() != half) {
      scaling.error(key) << "field '" << scaling.name(key) << "' lists "
                         << v->size() << " factors; accepted: rotary_dim / 2 = "
                         << half << " (head_dim x partial_rotary_factor = "
                         << rope.rotaryDim << ")";
      return std::vector<double>();
    }
    for (size_t i = 0; i < v->size(); ++i)
      if (double f = (*v)[i]; !std::isfinite(f) || f <= 0) {
        scaling.error(key) << "field '" << scaling.name(key) << "' holds "
                           << formatNumber(f) << " at index " << i
                           << "; accepted: positive finite factors";
        return std::vector<double>();
      }
    return *v;
  };
  std::vector<double> shortF = readFactors("short_factor");
  if (r.failed())
    return;
  std::vector<double> longF = readFactors("long_factor");
  if (r.failed())
    return;
  rope.longAfter = orig.value_or(maxPositions);
  rope.factor = factor.value_or(double(maxPositions) / double(rope.longAfter));
  if (attnFactor)
    rope.attentionFactor = *attnFactor;
  else if (rope.factor <= 1.0 || rope.longAfter <= 1)
    rope.attentionFactor = 1.0;
  else
    rope.attentionFactor =
        std::sqrt(1.0 + std::log(rope.factor) /
                            std::log(double(rope.longAfter)));
  std::vector<double> base = defaultInvFreq(rope.theta, rope.rotaryDim);
  for (size_t i = 0; i < half; ++i) {
    rope.invFreq.push_back(base[i] / shortF[i]);
    rope.longInvFreq.push_back(base[i] / longF[i]);
  }
}

} // namespace

RopeSpec normalize::readRope(FieldReader &r, int64_t headDim,
                             const Defaults &d, std::optional<int64_t> maxPos,
                             llvm::StringRef layerType,
                             std::optional<double> thetaOverride,
                             bool allowScaling,
                             const YarnParams *defaultYarn) {
  RopeSpec rope;
  std::optional<FieldReader> params = r.optObject("rope_parameters");
  // v5 configs may key rope_parameters by layer type (Gemma 3).
  if (params && params->present(layerType))
    params = params->optObject(layerType);
  if (r.failed() || !readBase(r, params, headDim, d, thetaOverride, rope))
    return rope;

  // Scaling: rope_scaling (v4) or the rope_parameters object (v5).
  std::optional<FieldReader> scaling;
  if (allowScaling) {
    scaling = r.optObject("rope_scaling");
    if (!scaling && params && params->firstPresent({"rope_type", "type"}))
      scaling = params;
  }
  if (r.failed())
    return rope;
  if (!scaling) {
    // A family whose config class fills in a scaling when the config has
    // none (GptOssConfig: yarn).
    if (allowScaling && defaultYarn && rope.theta > 1.0) {
      rope.scalingType = "yarn";
      rope.factor = defaultYarn->factor;
      std::vector<double> base = defaultInvFreq(rope.theta, rope.rotaryDim);
      computeYarn(*defaultYarn, base, rope);
    }
    return rope;
  }
  static const llvm::StringRef kTypes[] = {"default", "linear", "dynamic",
                                           "yarn",    "longrope", "su",
                                           "llama3"};
  std::string typeKey = scaling->present("rope_type") ? "rope_type" : "type";
  std::optional<std::string> type =
      scaling->optEnum(typeKey, kTypes, std::nullopt);
  if (r.failed())
    return rope;
  if (!type) {
    scaling->errorHere() << "field '" << scaling->name("rope_type")
                         << "' is missing; accepted: "
                         << llvm::join(llvm::ArrayRef<llvm::StringRef>(kTypes),
                                       ", ");
    return rope;
  }
  rope.scalingType = *type == "su" ? "longrope" : *type;
  rope.scalingPointer = scaling->pointer();
  if (rope.scalingType == "default")
    return rope;
  if (rope.scalingType == "longrope") {
    longropeFrequencies(r, *scaling, maxPos, d, rope);
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
  std::vector<double> base = defaultInvFreq(rope.theta, rope.rotaryDim);
  if (rope.scalingType == "linear") {
    for (double &f : base)
      f /= rope.factor;
    rope.invFreq = base;
  } else if (rope.scalingType == "llama3") {
    llama3Frequencies(r, *scaling, base, rope);
  } else {
    yarnFrequencies(r, *scaling, base, maxPos, d, rope);
  }
  return rope;
}
