//===- NormalizeUtils.h - shared pieces of config normalization -*- C++ -*-===//
//
// Internal to compiler/Frontend: the bounds, class defaults and field readers
// that every family's normalization (Normalize.cpp, DecoderFamilies.cpp,
// EncoderFamilies.cpp, Rope.cpp) shares.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_FRONTEND_NORMALIZEUTILS_H
#define ATTN_COMPILER_FRONTEND_NORMALIZEUTILS_H

#include "compiler/Frontend/ConfigSource.h"
#include "compiler/Frontend/ModelSpec.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace attn {
namespace normalize {

// Bounds that catch absurd values while admitting every real model.
constexpr int64_t kMaxHeads = 4096;
constexpr int64_t kMaxHeadDim = 4096;
constexpr int64_t kMaxHidden = 1 << 20;
constexpr int64_t kMaxLayers = 10000;
constexpr int64_t kMaxPositions = int64_t(1) << 40;

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
              ModelSpec &spec);

/// yarn's parameters (rope_scaling's fields, or a family's default).
struct YarnParams {
  double factor = 1.0, betaFast = 32.0, betaSlow = 1.0;
  std::optional<double> mscale, mscaleAll, attentionFactor;
  bool truncate = true;
  int64_t originalMax = 4096;
};

/// Reads rope_theta, partial_rotary_factor and rope_scaling (or the
/// transformers v5 `rope_parameters`, optionally per layer type) and computes
/// the frequencies the scaling implies (Rope.cpp); `defaultYarn`: the
/// scaling when the config gives none (a family's class default).
RopeSpec readRope(FieldReader &r, int64_t headDim, const Defaults &d,
                  std::optional<int64_t> maxPos, llvm::StringRef layerType,
                  std::optional<double> thetaOverride = std::nullopt,
                  bool allowScaling = true,
                  const YarnParams *defaultYarn = nullptr);

/// Reads `layer_types` if given (validated), else returns an empty vector.
std::vector<std::string> readLayerTypes(FieldReader &r, int64_t layers,
                                        bool allowLinear,
                                        bool allowChunked = false);

/// Reads a positive sliding window, returning nullopt when absent or null.
std::optional<int64_t> readWindow(FieldReader &r, llvm::StringRef key,
                                  std::optional<int64_t> dflt);

/// A note for num_nextn_predict_layers (the multi-token-prediction layers a
/// checkpoint carries past the decoder, which transformers skips: `where`
/// they are, by default model.layers.<numLayers>.*); false on a malformed
/// field. spec.numLayers must be set.
bool noteNextnLayers(FieldReader &r, ModelSpec &spec,
                     std::optional<std::string> where = std::nullopt);

/// `model.layers.{i}.` with layer `i`.
std::string layerPrefix(llvm::StringRef pattern, int64_t i);

/// The decoder-only RoPE families (DecoderFamilies.cpp): llama, mistral,
/// qwen2, qwen3, qwen3_next, gemma2, gemma3, phi3. False when `family` is
/// not one of them (`handled` false) or on an error.
bool normalizeDecoderFamily(FieldReader &root, llvm::StringRef family,
                            llvm::StringRef modelType, ModelSpec &spec,
                            bool &handled);

/// The other families (EncoderFamilies.cpp).
bool normalizeGPT2(FieldReader &r, ModelSpec &spec);
bool normalizeBERT(FieldReader &r, ModelSpec &spec);
bool normalizeFalcon(FieldReader &r, ModelSpec &spec);
bool normalizeT5(FieldReader &r, ModelSpec &spec);
bool normalizeWhisper(FieldReader &r, ModelSpec &spec);
/// Multi-head latent attention: deepseek_v2, and deepseek_v3 (also
/// kimi_k2's family) (LatentFamilies.cpp).
bool normalizeLatent(FieldReader &r, ModelSpec &spec);
/// Multi-head latent attention expands keys and values per query head:
/// num_key_value_heads must equal num_attention_heads (an error if not).
bool latentKvHeadsMatch(FieldReader &r, int64_t kvHeads, int64_t heads);
/// granitemoehybrid (HybridFamilies.cpp): Mamba2 and attention layers.
bool normalizeGraniteHybrid(FieldReader &r, ModelSpec &spec);
/// kimi_linear (HybridFamilies.cpp): Kimi Delta Attention and MLA layers
/// without rotary (Kimi-Linear).
bool normalizeKimiLinear(FieldReader &r, ModelSpec &spec);
/// nemotron_h (HybridFamilies.cpp): Mamba2 and attention blocks, each with
/// the MLP or MoE block that follows it as its layer's feed-forward
/// network (the kind and norm set; readNemotronFeedForward fills it).
bool normalizeNemotronH(FieldReader &r, ModelSpec &spec);
/// Notes what the checkpoint's quantization_config means for the weights
/// block, layer and model read (blockwise FP8 E4M3 is read; others not).
bool readQuantization(FieldReader &r, ModelSpec &spec);
/// The largest intermediate size a feed-forward network is read with.
constexpr int64_t kMaxIntermediate = int64_t(1) << 24;
/// The activation of field `key` (default `dflt`) into `f`; an unknown one
/// leaves the network uncompiled with the reason (FeedForward.cpp).
void readActivation(FieldReader &r, llvm::StringRef key,
                    const std::string &dflt, FFNSpec &f);
/// The prefix of a weight name ending in `suffix` ("model.layers.3.").
std::string prefixOf(const std::string &name, llvm::StringRef suffix);
/// The DeepSeek-style routed mixtures of experts (RoutedFeedForward.cpp):
/// deepseek_v2/v3, kimi_k2 and glm4_moe; kimi_linear's.
bool readRoutedFamily(FieldReader &r, ModelSpec &spec);
bool readKimiFeedForward(FieldReader &r, ModelSpec &spec);
bool readNemotronFeedForward(FieldReader &r, ModelSpec &spec);
/// Attaches each transformer layer's feed-forward network (FeedForward.cpp)
/// to the last attention sub-block of the layer, after the family's
/// normalization filled spec.layers.
bool readFeedForward(FieldReader &root, ModelSpec &spec);

} // namespace normalize
} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_FRONTEND_NORMALIZEUTILS_H
