//===- ModelSpec.h - normalized description of a model's attention -*- C++ -*-===//
//
// This file declares the normalized, family-independent description of a
// model's attention layers that the front end derives from a config.json.
// The IR emitter and `--describe` read only this.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_FRONTEND_MODELSPEC_H
#define ATTN_COMPILER_FRONTEND_MODELSPEC_H

#include "mlir/IR/Location.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace attn {

class ConfigSource;

enum class LayerRole {
  SelfAttention,   ///< q, k, v from the same sequence.
  CrossAttention,  ///< q from the decoder, k/v from the encoder output.
  LinearAttention, ///< not softmax attention (e.g. Gated DeltaNet).
};

enum class PositionKind {
  Absolute,   ///< added to the embeddings, nothing inside attention.
  Rope,       ///< rotary embedding of q and k.
  T5Bias,     ///< T5's bucketed relative-position bias on the scores.
  Alibi,      ///< ALiBi linear bias on the scores.
  None,       ///< NoPE: no position anywhere (Command R7B's global layers).
};

enum class NormKind { RMS, RMSUnitOffset, Layer };

/// Where the attention block's norms sit.
enum class NormPlacement {
  Pre,     ///< x + attn(norm(x)) (Llama, GPT-2, Whisper, T5, Falcon).
  PrePost, ///< x + post_norm(attn(norm(x))) (Gemma 2/3).
  Post,    ///< norm(x + attn(x)) (BERT).
  Output,  ///< x + post_norm(attn(x)): the sublayer's output only (OLMo-2).
};

/// How q, k, v come out of the projections.
enum class QKVLayout {
  Separate,      ///< q_proj, k_proj, v_proj.
  FusedConcat,   ///< one weight, output [q | k | v] (Phi-3, GPT-2, Falcon MQA).
  FusedGrouped,  ///< one weight, per KV group [q_0..q_{G-1}, k, v] (Falcon 40B+).
  FusedPerHead,  ///< one weight, per head [q, k, v] (Falcon non-MQA legacy).
};

struct RopeSpec {
  double theta = 10000.0;
  int64_t rotaryDim = 0;
  std::string scalingType = "default"; ///< rope_type of rope_scaling.
  double factor = 1.0;
  bool interleaved = false;
  /// Set when scaling rewrites the frequencies (linear, llama3, yarn...).
  std::vector<double> invFreq;
  /// longrope: the long-context frequencies, used when the largest position
  /// of a call + 1 exceeds `longAfter` (original_max_position_embeddings);
  /// invFreq holds the short ones.
  std::vector<double> longInvFreq;
  int64_t longAfter = 0;
  double attentionFactor = 1.0;
  /// Why the scaling cannot be compiled statically (dynamic, longrope...).
  std::string unsupported;
  /// Pointer of the config field that chose the scaling (for diagnostics).
  std::string scalingPointer;
};

struct T5BiasSpec {
  int64_t numBuckets = 32;
  int64_t maxDistance = 128;
  bool bidirectional = true;
  std::string tableTensor; ///< shared by all layers of a stack (block 0's).
};

/// One projection's checkpoint tensor names (bias empty when none).
struct Proj {
  std::string weight;
  std::string bias;
};

/// The feed-forward network that closes a transformer layer.
enum class FFNKind {
  None,  ///< this attention sub-block is not the layer's last (T5/Whisper
         ///< decoder self-attention: cross attention follows).
  Gated, ///< down(act(gate(x)) * up(x)): SwiGLU, GeGLU, T5's gated-gelu.
  Dense, ///< down(act(up(x) + b) ) + b: GPT-2, BERT, Falcon, T5, Whisper.
  MoE,   ///< a sparse mixture of experts.
  /// None, but the layer ends here: its block is the whole layer
  /// (Nemotron-H's mixer followed by another mixer); `<kind>_layer` is the
  /// block.
  Identity,
};

/// Where the feed-forward network's norm and residual sit.
enum class FFNPlacement {
  Pre,      ///< r + ffn(norm(r)), r the attention block's output.
  PrePost,  ///< r + post_norm(ffn(norm(r))) (Gemma 2/3).
  Post,     ///< norm(r + ffn(r)) (BERT).
  Parallel, ///< r + ffn(norm(x)), x the layer's input (Falcon); without a
            ///< norm weight of its own, the attention's normed input.
  Output,   ///< r + post_norm(ffn(r)) (OLMo-2).
};

/// How a mixture of experts scores its experts (transformers' routers).
enum class ExpertScoring {
  Softmax, ///< softmax over the router logits (Qwen, DeepSeek-V2)
  Sigmoid, ///< sigmoid of each logit (DeepSeek-V3, Kimi-K2)
};

/// How group-limited routing scores a group of experts.
enum class ExpertGroupScore {
  Max,     ///< its best expert (DeepSeek-V2's group_limited_greedy)
  TopTwoSum, ///< the sum of its best two (DeepSeek-V3's noaux_tc)
};

struct FFNSpec {
  FFNKind kind = FFNKind::None;
  std::string activation; ///< silu, gelu, gelu_tanh, relu (attn.activation)
  int64_t intermediate = 0;
  FFNPlacement placement = FFNPlacement::Pre;
  bool transposedWeights = false; ///< GPT-2 Conv1D: weights are [in, out].
  /// Gated: gate, up, down (or gateUp, Phi-3's [gate | up] in one weight);
  /// Dense: up (the first layer: c_fc, fc1, wi...) and down, with biases;
  /// MoE without a gate weight: plain experts act(x·upᵀ)·downᵀ (Nemotron-H),
  /// the same for the shared expert without sharedGate.
  Proj gate, up, down, gateUp;
  Proj norm, postNorm;
  /// MoE: the router [experts, hidden]; gate/up/down name each expert's
  /// tensors with "{e}" for its number (stacked [experts, ., .]); the
  /// shared expert's gated network and its sigmoid gate [1, hidden].
  int64_t numExperts = 0, topK = 0, sharedIntermediate = 0;
  bool normTopK = false;
  Proj router, sharedGate, sharedUp, sharedDown, sharedExpertGate;
  /// Gate and up as the two halves of one tensor's rows (GraniteMoeHybrid's
  /// input_linear, as stored [out, in]): the experts' [E, 2I, H] (MoE: in
  /// `gateUp`) and the shared MLP's [2S, H] (here).
  Proj sharedGateUp;
  /// Routing options (one implementation, transformers' routers as data):
  /// the scores, a per-expert bias added for the selection only
  /// (DeepSeek-V3's e_score_correction_bias: `router.bias`'s role is
  /// `scoreBias`), group-limited selection (numGroups groups of experts,
  /// the topKGroups best by groupScore kept, the others' scores masked to
  /// 0 as transformers masks them), the chosen weights normalized (with
  /// normEpsilon added to their sum) and scaled by routedScale.
  ExpertScoring scoring = ExpertScoring::Softmax;
  std::string scoreBias;
  int64_t numGroups = 1, topKGroups = 1;
  ExpertGroupScore groupScore = ExpertGroupScore::Max;
  /// The groups not kept: their experts' selection scores -inf (out of the
  /// running: Nemotron-H) instead of 0 (transformers' DeepSeek-V3).
  bool excludeOtherGroups = false;
  double routedScale = 1.0, normEpsilon = 0.0;
  /// gpt-oss: a bias on the router's logits, biases on each expert's
  /// projections (stored fused: see WeightArg::source), and the clamped
  /// SwiGLU (swiglu_limit, alpha).
  Proj routerBias;
  std::string expertGateUpBias, expertDownBias;
  std::optional<double> swigluLimit;
  double swigluAlpha = 1.702;
  /// The experts stored fused and as x·W (gpt-oss's gate_up_proj [E, H,
  /// 2I] with gate and up interleaved, down_proj [E, I, H], or their MXFP4
  /// blocks): gate/up/down name those tensors, read through
  /// WeightArg::source.
  bool fusedExperts = false;
  /// Llama 4: gate and up the halves of gate_up_proj (not interleaved),
  /// and each expert's input scaled by its routing weight (not its output).
  bool halvesGateUp = false;
  bool scaleInput = false;
  /// Why the layer's feed-forward network is not compiled (empty: it is).
  std::string unsupported;
};

/// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): the query through
/// an optional low-rank bottleneck; keys and values expanded per head from
/// one latent vector per token (kv_lora_rank wide, RMS-normed) that every
/// head shares, plus one rotary key per token that every head shares.
/// LayerSpec's numHeads is H (numKVHeads = H in the expanded form),
/// headDimQK = nopeDim + ropeDim, headDimV the value head dim, and the
/// rope applies to the ropeDim part only (LayerSpec::rope, rotaryDim =
/// ropeDim).
struct LatentSpec {
  int64_t qLoraRank = 0;  ///< 0: q_proj straight from the hidden states
  int64_t kvLoraRank = 0; ///< > 0 marks a latent-attention layer
  int64_t nopeDim = 0, ropeDim = 0;
  /// q_a_layernorm's and kv_a_layernorm's epsilon (the modules' default,
  /// not rms_norm_eps).
  double latentNormEps = 1e-6;
  /// q_a_proj, q_a_layernorm, q_b_proj (q_lora_rank > 0; else LayerSpec::q
  /// is q_proj), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj.
  Proj qA, qANorm, qB, kvA, kvANorm, kvB;
  /// The latent cache's row: the normed latent, then the rotary key.
  int64_t cacheWidth() const { return kvLoraRank + ropeDim; }
};

struct LayerSpec {
  int64_t index = 0;       ///< position in the model's layer order.
  std::string stack;       ///< "decoder" or "encoder".
  int64_t layerInStack = 0;
  LayerRole role = LayerRole::SelfAttention;
  std::string layerType;   ///< "full_attention", "sliding_attention", ...
  /// LinearAttention (Gated DeltaNet): numHeads is the value heads H_v,
  /// numKVHeads the query/key heads H_k, headDimQK d_k, headDimV d_v, scale
  /// 1/sqrt(d_k); the causal conv's kernel width and the weights' prefix
  /// (`model.layers.{i}.linear_attn.`).
  int64_t convKernel = 0;
  std::string linearPrefix;
  /// LinearAttention without the delta correction: Mamba2's SSD (numHeads
  /// the heads, numKVHeads n_groups, headDimQK d_state, headDimV the head
  /// dim, scale 1; `linearPrefix` is the mixer's, `model.layers.{i}.mamba.`).
  bool noDelta = false;
  /// LinearAttention with one decay per key channel: Kimi Delta Attention
  /// (Kimi-Linear's KimiDeltaAttention: q/k/v projections each with its
  /// short convolution, the gate from f_a_proj/f_b_proj with A_log and
  /// dt_bias, beta from b_proj, the output norm gated by
  /// sigmoid(g_b_proj(g_a_proj(x))); `linearPrefix` is
  /// `model.layers.{i}.self_attn.`).
  bool channelGate = false;
  /// The Mamba2 mixer's biases: on conv1d (mamba_conv_bias) and on in_proj
  /// and out_proj (mamba_proj_bias).
  bool mambaConvBias = false, mambaProjBias = false;
  /// The groups of the Mamba2 mixer's gated RMSNorm: 1 over the whole
  /// intermediate size (Granite-4.0-H), n_groups (Nemotron-H's
  /// group_size = intermediate / n_groups).
  int64_t mambaNormGroups = 1;
  /// Mamba2's dt clamp (time_step_limit), where it is not a no-op.
  std::optional<double> dtMin, dtMax;
  /// The attention (or mixer) sub-block's output is scaled by this before
  /// the residual add (GraniteMoeHybrid's residual_multiplier).
  double residualScale = 1.0;

  bool causal = true;
  std::optional<int64_t> window;
  /// Chunked local attention (Llama 4's attention_chunk_size): a query sees
  /// the keys of its own chunk up to itself (causal); exclusive with window.
  std::optional<int64_t> chunk;
  /// Llama 4: q and k RMS-normalized per head without a weight
  /// (Llama4TextL2Norm, eps normEps) on its RoPE layers.
  bool l2QkNorm = false;
  /// Llama 4's attention temperature on its NoPE layers: q at position p
  /// times log1p(floor((p + 1) / floorScale)) * attnScale + 1.
  struct Temperature {
    int64_t floorScale = 8192;
    double attnScale = 0.1;
  };
  std::optional<Temperature> temperature;
  /// The block reads the tokens' positions (RoPE, temperature).
  bool takesPositions() const {
    return position == PositionKind::Rope || temperature.has_value();
  }
  int64_t numHeads = 0, numKVHeads = 0, headDimQK = 0, headDimV = 0;
  double scale = 1.0;
  bool scaleOnQuery = false; ///< the eager code scales q instead of scores.
  std::optional<double> softcap;
  PositionKind position = PositionKind::Absolute;
  RopeSpec rope;
  T5BiasSpec t5;
  bool qkNorm = false;
  /// The q/k norm over the whole projection ([Hq·d] and [Hkv·d] weights,
  /// before the heads split: OLMo-2) instead of over each head's d.
  bool qkNormFlat = false;
  bool outputGate = false; ///< Qwen3-Next: o = o * sigmoid(gate).
  /// Attention sinks (gpt-oss): one learned logit per query head in every
  /// row's softmax (the checkpoint's tensor, [numHeads]); empty: none.
  std::string sinks;

  NormKind norm = NormKind::RMS;
  NormPlacement placement = NormPlacement::Pre;
  double normEps = 1e-6;

  QKVLayout layout = QKVLayout::Separate;
  bool transposedWeights = false; ///< GPT-2 Conv1D: weights are [in, out].
  Proj q, k, v, o, qkv;
  Proj normW, postNormW, qNormW, kNormW;
  LatentSpec latent;
  bool isLatent() const { return latent.kvLoraRank > 0; }

  /// The feed-forward network after this attention sub-block, when it is
  /// the last of its transformer layer.
  FFNSpec ffn;

  bool hasQKVBias() const {
    return !q.bias.empty() || !k.bias.empty() || !v.bias.empty() ||
           !qkv.bias.empty();
  }
};

/// The element type of the K/V cache the paged kernels read (a compile
/// option: attn-compile --kv-dtype); arithmetic stays fp32.
enum class KVCacheType { f32, bf16, f16 };
/// "f32", "bf16" or "f16": the option's spelling (--kv-dtype, --qo-dtype).
inline const char *dtypeName(KVCacheType t) {
  return t == KVCacheType::bf16  ? "bf16"
         : t == KVCacheType::f16 ? "f16"
                                 : "f32";
}

/// The entries of each layer kind compiled besides its fused kernel
/// (`<kind>_sdpa` / `<kind>_gdn`, always there): a compile option,
/// attn-compile --entries. An executable or library without one reports it
/// where a command or call would need it.
struct EntrySet {
  /// `<kind>_sdpa_reference` / `<kind>_gdn_reference`: the unfused copy
  /// `check` and `bench` compare with (`check` falls back to its float64
  /// reference without it).
  bool reference = true;
  /// `<kind>_paged` (and `<kind>_paged_part` with --distributed=mpi).
  bool paged = true;
  /// `<kind>_block` and `<kind>_layer`: the `block`, `layer` and `model`
  /// commands.
  bool blocks = true;
};

struct ModelSpec {
  std::string configPath;
  KVCacheType kvCache = KVCacheType::f32;
  /// The element type of q and the output of the softmax kinds' attention
  /// entries (`<kind>_sdpa`, its reference, `<kind>_paged`; attn-compile
  /// --qo-dtype): f32, or the cache's 16-bit type. The arithmetic stays
  /// fp32; the blocks and layers keep fp32 hidden states.
  KVCacheType qoType = KVCacheType::f32;
  EntrySet entries;
  /// Context-parallel entries (`<kind>_paged_part`, attn-compile
  /// --distributed=mpi).
  bool distributed = false;
  /// The kernels are compiled for CUDA (attn-compile --target=cuda).
  bool gpu = false;
  /// CUDA, bf16/f16 precision: the gated-delta kinds' chunked kernel on
  /// tensor cores for their longer sequences (attn-compile
  /// --gpu-linear-chunked; check's bound follows).
  bool gpuLinearChunked = false;
  /// Head sharding across ranks (attn-compile --tensor-parallel): the
  /// `<kind>_paged_part` kernels take numHeads / tensorParallel query heads
  /// and numKVHeads / tensorParallel KV heads, one rank's share.
  int64_t tensorParallel = 1;
  std::string modelType;     ///< as written in config.json.
  std::string family;        ///< normalized family name.
  std::string architecture;  ///< architectures[0] if given.
  std::string dtype;         ///< torch_dtype / dtype if given.
  int64_t hiddenSize = 0;
  /// Width of the encoder stream when it differs (never, for supported
  /// families; kept for cross attention's memory argument).
  int64_t encoderHiddenSize = 0;
  int64_t numLayers = 0;     ///< num_hidden_layers (decoder layers for enc-dec).
  int64_t numEncoderLayers = 0;
  std::optional<int64_t> maxPositions;
  std::optional<int64_t> maxSourcePositions; ///< encoder side (Whisper).
  bool encoderDecoder = false;
  std::vector<LayerSpec> layers;
  /// Notes on values the front end filled in or chose (shown by --describe).
  std::vector<std::string> notes;
};

/// Normalizes `src` into `spec`. On failure one error located in the config
/// has been emitted.
bool normalizeConfig(const ConfigSource &src, ModelSpec &spec);

/// The families normalizeConfig accepts (model_type values).
llvm::ArrayRef<llvm::StringRef> supportedModelTypes();

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_FRONTEND_MODELSPEC_H
