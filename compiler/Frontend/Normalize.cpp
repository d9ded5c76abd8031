//===- Normalize.cpp - config.json families -> ModelSpec ------------------===//
//
// This file implements the entry of the normalization of Hugging Face
// configs into a ModelSpec (model_type -> family -> its normalization) and
// the field readers the families share. Each family's conventions follow
// its transformers configuration and modeling code: the decoder-only RoPE
// families are a table in DecoderFamilies.cpp, GPT-2, BERT, Falcon, T5 and
// Whisper have their own functions in EncoderFamilies.cpp, RoPE and its
// scalings are read in Rope.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/NormalizeUtils.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::normalize;

namespace {

const llvm::StringRef kModelTypes[] = {"llama",
                                       "mistral",
                                       "qwen2",
                                       "qwen3",
                                       "qwen3_next",
                                       "gemma2",
                                       "gemma3",
                                       "gemma3_text",
                                       "phi3",
                                       "gpt2",
                                       "bert",
                                       "falcon",
                                       "RefinedWeb",
                                       "RefinedWebModel",
                                       "t5",
                                       "whisper",
                                       "deepseek_v2",
                                       "deepseek_v3",
                                       "kimi_k2",
                                       "qwen3_moe",
                                       "mixtral",
                                       "glm4_moe",
                                       "gpt_oss",
                                       "olmo2",
                                       "minimax_m2",
                                       "cohere2",
                                       "llama4",
                                       "llama4_text",
                                       "granitemoehybrid",
                                       "kimi_linear",
                                       "nemotron_h"};

} // namespace

void normalize::readDims(FieldReader &r, const Defaults &d, bool required,
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

/// Reads `layer_types` if given (validated), else returns an empty vector.
std::vector<std::string> normalize::readLayerTypes(FieldReader &r, int64_t layers,
                                        bool allowLinear, bool allowChunked) {
  std::vector<llvm::StringRef> accepted = {"full_attention",
                                           "sliding_attention"};
  if (allowLinear)
    accepted.push_back("linear_attention");
  if (allowChunked)
    accepted.push_back("chunked_attention");
  return r.optEnumArray("layer_types", accepted, size_t(layers))
      .value_or(std::vector<std::string>{});
}

/// Reads a positive sliding window, returning nullopt when absent or null.
std::optional<int64_t> normalize::readWindow(FieldReader &r, llvm::StringRef key,
                                  std::optional<int64_t> dflt) {
  // An explicit null means no window (Mistral 7B v0.2+, Qwen2 configs).
  if (r.has(key) && !r.present(key))
    return std::nullopt;
  return r.optInt({key}, 1, kMaxPositions, dflt);
}

bool normalize::noteNextnLayers(FieldReader &r, ModelSpec &spec,
                                std::optional<std::string> where) {
  if (!r.present("num_nextn_predict_layers"))
    return true;
  int64_t mtp =
      r.optInt({"num_nextn_predict_layers"}, 0, kMaxLayers, 0).value_or(0);
  if (r.failed())
    return false;
  if (mtp > 0)
    spec.notes.push_back("num_nextn_predict_layers = " + std::to_string(mtp) +
                         ": the multi-token-prediction layers (" +
                         where.value_or("model.layers." +
                                        std::to_string(spec.numLayers) + ".*") +
                         ") are not part of the decoder and are skipped");
  return true;
}

std::string normalize::layerPrefix(llvm::StringRef pattern, int64_t i) {
  std::string p = pattern.str();
  size_t at = p.find("{i}");
  return p.substr(0, at) + std::to_string(i) + p.substr(at + 3);
}

bool normalize::readQuantization(FieldReader &r, ModelSpec &spec) {
  if (!r.present("quantization_config"))
    return true;
  std::optional<FieldReader> q = r.optObject("quantization_config");
  if (!q)
    return false;
  std::string method = q->optString({"quant_method"}, "").value_or("");
  std::string fmt = q->optString({"fmt"}, "e4m3").value_or("e4m3");
  std::optional<std::vector<double>> blocks =
      q->optNumArray("weight_block_size");
  if (r.failed())
    return false;
  bool blockwise128 =
      blocks && blocks->size() == 2 && (*blocks)[0] == 128 && (*blocks)[1] == 128;
  if (method == "fp8" && fmt == "e4m3" && blockwise128) {
    spec.notes.push_back(
        "quantization_config: FP8 E4M3 weights in 128x128 blocks; block, "
        "layer and model read them (F8_E4M3 with their weight_scale_inv) "
        "and dequantize them to float32 as they load");
    return true;
  }
  if (method == "mxfp4") {
    spec.notes.push_back(
        "quantization_config: MXFP4 experts (blocks of 32 FP4 E2M1 values "
        "with an E8M0 scale, '<name>_blocks' and '<name>_scales'): layer and "
        "model read them as stored and dequantize them to float32 as they "
        "load; the attention and the router stay unquantized "
        "(modules_to_not_convert)");
    return true;
  }
  spec.notes.push_back(
      "quantization_config (quant_method " +
      (method.empty() ? std::string("not given") : "'" + method + "'") +
      "): these quantized weights are not read; block, layer and model "
      "take F32, BF16, F16 or blockwise FP8 E4M3 (128x128) tensors; the "
      "attention kernels compile as for any checkpoint");
  return true;
}

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
    root.error("model_type") << "unknown model_type " << quoteForError(*mt)
                             << "; accepted: "
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
  if (family == "llama4_text")
    family = "llama4";
  // Kimi-K2 is DeepSeek-V3's architecture (its config names
  // DeepseekV3ForCausalLM) with other sizes.
  if (family == "kimi_k2")
    family = "deepseek_v3";
  spec.family = family;

  // One function per family that has its own conventions; the decoder-only
  // RoPE families share one, driven by their table (DecoderFamilies.cpp).
  using Normalizer = bool (*)(FieldReader &, ModelSpec &);
  static const std::pair<llvm::StringRef, Normalizer> kOthers[] = {
      {"gpt2", normalizeGPT2},
      {"bert", normalizeBERT},
      {"falcon", normalizeFalcon},
      {"t5", normalizeT5},
      {"whisper", normalizeWhisper},
      {"deepseek_v2", normalizeLatent},
      {"deepseek_v3", normalizeLatent},
      {"granitemoehybrid", normalizeGraniteHybrid},
      {"kimi_linear", normalizeKimiLinear},
      {"nemotron_h", normalizeNemotronH}};
  if (!readQuantization(root, spec))
    return false;
  for (auto [name, fn] : kOthers)
    if (family == name)
      return fn(root, spec) && readFeedForward(root, spec);
  bool handled = false;
  bool ok = normalizeDecoderFamily(root, family, *mt, spec, handled);
  if (!handled)
    root.error("model_type") << "internal error: no normalization for "
                                "model_type " << quoteForError(*mt);
  return ok && handled && readFeedForward(root, spec);
}
