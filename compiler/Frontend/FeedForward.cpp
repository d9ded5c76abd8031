//===- FeedForward.cpp - each transformer layer's feed-forward network ----===//
//
// This file implements readFeedForward: after a family's normalization has
// described the attention sub-blocks, it attaches to the last sub-block of
// every transformer layer the feed-forward network that closes the layer, as
// the family's transformers modeling code computes it: its kind (gated
// SwiGLU/GeGLU, two-layer MLP, mixture of experts), activation, intermediate
// size, norm and residual placement, and checkpoint tensor names. What is not
// compiled (the mixture of experts, MLP biases on gated networks, unknown
// activations) is recorded with the reason instead of failing the config:
// the attention entries compile as before.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/NormalizeUtils.h"

#include "llvm/ADT/StringRef.h"

#include <functional>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::normalize;

/// transformers' ACT2FN name -> attn.activation, or "" when not compiled.
static std::string activationFor(llvm::StringRef name) {
  if (name == "silu" || name == "swish")
    return "silu";
  if (name == "gelu")
    return "gelu";
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" ||
      name == "gelu_tanh")
    return "gelu_tanh";
  if (name == "relu")
    return "relu";
  if (name == "relu2")
    return "relu2";
  return "";
}

/// The activation of field `key` (default `dflt`) into `f`; an unknown one
/// leaves the network uncompiled with the reason.
void normalize::readActivation(FieldReader &r, llvm::StringRef key,
                               const std::string &dflt, FFNSpec &f) {
  std::string name = r.optString({key}, dflt).value_or(dflt);
  f.activation = activationFor(name);
  if (f.activation.empty())
    f.unsupported = "its activation '" + name + "' (field '" + r.name(key) +
                    "') is not compiled; accepted: silu, swish, gelu, "
                    "gelu_new, gelu_pytorch_tanh, relu, relu2";
}

/// The prefix of a weight name ending in `suffix` ("model.layers.3.").
std::string normalize::prefixOf(const std::string &name,
                                llvm::StringRef suffix) {
  llvm::StringRef n(name);
  return n.ends_with(suffix) ? n.drop_back(suffix.size()).str() : name;
}

namespace {

/// GraniteMoeHybridDecoderLayer: after every layer's mixer (Mamba2 or
/// attention), post_attention_layernorm, then a mixture of experts
/// (block_sparse_moe: router.layer [E, hidden], the top-k logits softmaxed
/// among themselves, i.e. normalized top-k softmax; each expert's
/// input_linear [2I, hidden] = gate and up halves, output_linear [hidden,
/// I]) plus the shared MLP (shared_mlp.input_linear [2S, hidden] halves,
/// output_linear), or the shared MLP alone with num_local_experts 0; the
/// sum scaled by residual_multiplier (LayerSpec::residualScale) before the
/// residual.
bool readGraniteMoE(FieldReader &r, ModelSpec &spec) {
  FFNSpec f;
  f.intermediate = r.optInt({"intermediate_size"}, 1, kMaxIntermediate, 11008)
                       .value_or(11008);
  f.numExperts = r.optInt({"num_local_experts"}, 0, 1 << 20, 8).value_or(8);
  f.topK = r.optInt({"num_experts_per_tok"}, 1, 1 << 20, 2).value_or(2);
  f.sharedIntermediate =
      r.optInt({"shared_intermediate_size"}, 1, kMaxIntermediate, 1024)
          .value_or(1024);
  readActivation(r, "hidden_act", "silu", f);
  if (r.failed())
    return false;
  if (f.numExperts > 0 && f.topK > f.numExperts) {
    r.error("num_experts_per_tok")
        << "num_experts_per_tok (" << f.topK << ") exceeds num_local_experts ("
        << f.numExperts << "); accepted: 1 to num_local_experts";
    return false;
  }
  for (LayerSpec &l : spec.layers) {
    std::string p = "model.layers." + std::to_string(l.layerInStack) + ".";
    FFNSpec lf = f;
    lf.norm.weight = p + "post_attention_layernorm.weight";
    std::string shared = p + "shared_mlp.";
    if (f.numExperts == 0) {
      // The shared MLP alone: a gated network, gate and up the halves of
      // input_linear's rows (as Phi-3's gate_up_proj).
      lf.kind = FFNKind::Gated;
      lf.intermediate = f.sharedIntermediate;
      lf.sharedIntermediate = 0;
      lf.gateUp.weight = shared + "input_linear.weight";
      lf.down.weight = shared + "output_linear.weight";
    } else {
      std::string moe = p + "block_sparse_moe.";
      lf.kind = FFNKind::MoE;
      lf.scoring = ExpertScoring::Softmax;
      lf.normTopK = true;
      lf.router.weight = moe + "router.layer.weight";
      lf.gateUp.weight = moe + "input_linear.weight";
      lf.down.weight = moe + "output_linear.weight";
      lf.sharedGateUp.weight = shared + "input_linear.weight";
      lf.sharedDown.weight = shared + "output_linear.weight";
    }
    l.ffn = lf;
  }
  return true;
}

bool readDecoderFamily(FieldReader &r, ModelSpec &spec) {
  // Long: every decoder family's fields, each checked where it is read.
  const std::string &fam = spec.family;
  bool gemma = fam == "gemma2" || fam == "gemma3";
  int64_t dflt = fam == "llama" || fam == "olmo2"       ? 11008
                 : fam == "mistral" || fam == "mixtral"  ? 14336
                 : fam == "qwen2" || fam == "qwen3"      ? 22016
                 : fam == "qwen3_moe"                    ? 6144
                 : gemma                                 ? 9216
                 : fam == "phi3"                         ? 8192
                 : fam == "minimax_m2"                   ? 1536
                 : fam == "cohere2"                      ? 22528
                                                         : 5632;
  FFNSpec f;
  f.kind = FFNKind::Gated;
  f.intermediate =
      r.optInt({"intermediate_size"}, 1, kMaxIntermediate, dflt).value_or(dflt);
  if (gemma)
    readActivation(r, "hidden_activation", "gelu_pytorch_tanh", f);
  else
    readActivation(r, "hidden_act", "silu", f);
  bool mlpBias = r.optBool({"mlp_bias"}, false).value_or(false);
  if (r.failed())
    return false;
  if (mlpBias && f.unsupported.empty())
    f.unsupported = "'mlp_bias': true (biases on gate_proj, up_proj and "
                    "down_proj) is not compiled; accepted: false";
  // Qwen3-Next and Qwen3-MoE (Qwen3NextDecoderLayer, Qwen3MoeDecoderLayer):
  // layer i is a sparse mixture of experts unless it is in mlp_only_layers
  // or off decoder_sparse_step; Mixtral: every layer.
  FFNSpec moe = f;
  std::vector<double> mlpOnly;
  int64_t sparseStep = 1;
  bool qwenMoE = fam == "qwen3_next" || fam == "qwen3_moe";
  bool mixtral = fam == "mixtral";
  bool minimax = fam == "minimax_m2";
  if (qwenMoE) {
    bool next = fam == "qwen3_next";
    moe.kind = FFNKind::MoE;
    int64_t experts = next ? 512 : 128, topK = next ? 10 : 8,
            inter = next ? 512 : 768;
    moe.numExperts =
        r.optInt({"num_experts"}, 0, 1 << 20, experts).value_or(experts);
    moe.topK =
        r.optInt({"num_experts_per_tok"}, 1, 1 << 20, topK).value_or(topK);
    moe.normTopK = r.optBool({"norm_topk_prob"}, next).value_or(next);
    moe.intermediate = r.optInt({"moe_intermediate_size"}, 1,
                                kMaxIntermediate, inter)
                           .value_or(inter);
    // Qwen3-Next's shared expert (Qwen3-MoE has none).
    if (next)
      moe.sharedIntermediate =
          r.optInt({"shared_expert_intermediate_size"}, 1, kMaxIntermediate,
                   512)
              .value_or(512);
    sparseStep =
        r.optInt({"decoder_sparse_step"}, 1, kMaxLayers, 1).value_or(1);
    mlpOnly = r.optNumArray("mlp_only_layers").value_or(std::vector<double>{});
    if (r.failed())
      return false;
  }
  if (mixtral) {
    // MixtralSparseMoeBlock: softmax, top-k, the k weights renormalized;
    // each expert is the whole intermediate_size network.
    moe.kind = FFNKind::MoE;
    moe.numExperts =
        r.optInt({"num_local_experts"}, 1, 1 << 20, 8).value_or(8);
    moe.topK = r.optInt({"num_experts_per_tok"}, 1, 1 << 20, 2).value_or(2);
    moe.normTopK = true;
    if (r.failed())
      return false;
  }
  if (minimax) {
    // MiniMaxM2SparseMoeBlock: sigmoid scores, the top-k of scores +
    // e_score_correction_bias, their scores divided by their sum; each
    // expert the whole intermediate_size network.
    moe.kind = FFNKind::MoE;
    moe.numExperts =
        r.optInt({"num_local_experts"}, 1, 1 << 20, 256).value_or(256);
    moe.topK = r.optInt({"num_experts_per_tok"}, 1, 1 << 20, 8).value_or(8);
    moe.normTopK = true;
    moe.scoring = ExpertScoring::Sigmoid;
    if (r.failed())
      return false;
  }
  if (qwenMoE || mixtral || minimax) {
    if (moe.numExperts > 0 && moe.topK > moe.numExperts) {
      r.error("num_experts_per_tok")
          << "num_experts_per_tok (" << moe.topK
          << ") exceeds "
          << (mixtral || minimax ? "num_local_experts" : "num_experts")
          << " (" << moe.numExperts << "); accepted: 1 to "
          << (mixtral || minimax ? "num_local_experts" : "num_experts");
      return false;
    }
  }
  bool olmo = fam == "olmo2";
  // Llama4TextDecoderLayer: the layers of moe_layers (default every
  // interleave_moe_layer_step-th) a mixture of experts, the others a SwiGLU
  // of intermediate_size_mlp, both under feed_forward.
  bool llama4 = fam == "llama4";
  std::vector<double> moeLayers;
  bool llama4MoE = false;
  if (llama4) {
    f.intermediate = r.optInt({"intermediate_size_mlp"}, 1, kMaxIntermediate,
                              16384)
                         .value_or(16384);
    int64_t step = r.optInt({"interleave_moe_layer_step"}, 1, kMaxLayers, 1)
                       .value_or(1);
    std::optional<std::vector<double>> given = r.optNumArray("moe_layers");
    int64_t experts =
        r.optInt({"num_local_experts"}, 1, 1 << 20, 16).value_or(16);
    int64_t topK =
        r.optInt({"num_experts_per_tok"}, 1, 1 << 20, 1).value_or(1);
    int64_t expertInter =
        r.optInt({"intermediate_size"}, 1, kMaxIntermediate, 8192)
            .value_or(8192);
    if (r.failed())
      return false;
    if (given)
      moeLayers = *given;
    else
      for (int64_t i = step - 1; i < spec.numLayers; i += step)
        moeLayers.push_back(double(i));
    moe.kind = FFNKind::MoE;
    moe.numExperts = experts;
    moe.topK = topK;
    moe.intermediate = expertInter;
    moe.sharedIntermediate = expertInter;
    // Llama4TextMoe: the top-k router logits' sigmoids (the others 0)
    // scale each expert's input; no renormalization; the shared expert
    // (intermediate_size) on every token, added.
    moe.scoring = ExpertScoring::Sigmoid;
    moe.normTopK = false;
    moe.fusedExperts = true;
    moe.halvesGateUp = true;
    moe.scaleInput = true;
    if (moe.topK > moe.numExperts) {
      r.error("num_experts_per_tok")
          << "num_experts_per_tok (" << moe.topK
          << ") exceeds num_local_experts (" << moe.numExperts
          << "); accepted: 1 to num_local_experts";
      return false;
    }
    llama4MoE = true;
  }
  // Cohere2DecoderLayer: the MLP of the attention's normed input, added
  // next to the attention (no norm of its own).
  bool cohere = fam == "cohere2";
  f.placement = moe.placement = gemma    ? FFNPlacement::PrePost
                                : olmo   ? FFNPlacement::Output
                                : cohere ? FFNPlacement::Parallel
                                         : FFNPlacement::Pre;
  for (LayerSpec &l : spec.layers) {
    // (OLMo-2 has no input norm: its layer prefix from q_proj.)
    std::string p =
        olmo ? prefixOf(l.q.weight, "self_attn.q_proj.weight")
             : prefixOf(l.normW.weight, "input_layernorm.weight");
    if (llama4) {
      FFNSpec lf = llama4MoE && llvm::is_contained(moeLayers,
                                                   double(l.index))
                       ? moe
                       : f;
      lf.placement = FFNPlacement::Pre;
      lf.norm.weight = p + "post_attention_layernorm.weight";
      std::string m = p + "feed_forward.";
      if (lf.kind == FFNKind::MoE) {
        lf.router.weight = m + "router.weight";
        lf.gate.weight = lf.up.weight = m + "experts.gate_up_proj";
        lf.down.weight = m + "experts.down_proj";
        lf.sharedGate.weight = m + "shared_expert.gate_proj.weight";
        lf.sharedUp.weight = m + "shared_expert.up_proj.weight";
        lf.sharedDown.weight = m + "shared_expert.down_proj.weight";
      } else {
        lf.gate.weight = m + "gate_proj.weight";
        lf.up.weight = m + "up_proj.weight";
        lf.down.weight = m + "down_proj.weight";
      }
      l.ffn = lf;
      continue;
    }
    bool sparse = (qwenMoE && moe.numExperts > 0 &&
                   (l.index + 1) % sparseStep == 0 &&
                   !llvm::is_contained(mlpOnly, double(l.index))) ||
                  mixtral || minimax;
    if (sparse && (mixtral || minimax)) {
      // The checkpoints' names (block_sparse_moe: w1 gate, w3 up, w2 down).
      FFNSpec lf = moe;
      std::string m = p + "block_sparse_moe.";
      lf.norm.weight = p + "post_attention_layernorm.weight";
      lf.router.weight = m + "gate.weight";
      lf.gate.weight = m + "experts.{e}.w1.weight";
      lf.up.weight = m + "experts.{e}.w3.weight";
      lf.down.weight = m + "experts.{e}.w2.weight";
      if (minimax)
        lf.scoreBias = m + "e_score_correction_bias";
      l.ffn = lf;
      continue;
    }
    if (sparse) {
      FFNSpec lf = moe;
      std::string m = p + "mlp.";
      lf.norm.weight = p + "post_attention_layernorm.weight";
      lf.router.weight = m + "gate.weight";
      lf.gate.weight = m + "experts.{e}.gate_proj.weight";
      lf.up.weight = m + "experts.{e}.up_proj.weight";
      lf.down.weight = m + "experts.{e}.down_proj.weight";
      if (fam == "qwen3_next") {
        lf.sharedGate.weight = m + "shared_expert.gate_proj.weight";
        lf.sharedUp.weight = m + "shared_expert.up_proj.weight";
        lf.sharedDown.weight = m + "shared_expert.down_proj.weight";
        lf.sharedExpertGate.weight = m + "shared_expert_gate.weight";
      }
      l.ffn = lf;
      continue;
    }
    FFNSpec lf = f;
    if (gemma) {
      lf.norm.weight = p + "pre_feedforward_layernorm.weight";
      lf.postNorm.weight = p + "post_feedforward_layernorm.weight";
    } else if (olmo) {
      lf.postNorm.weight = p + "post_feedforward_layernorm.weight";
    } else if (cohere) {
      // (the attention's normed input)
    } else {
      lf.norm.weight = p + "post_attention_layernorm.weight";
    }
    if (fam == "phi3")
      lf.gateUp.weight = p + "mlp.gate_up_proj.weight";
    else {
      lf.gate.weight = p + "mlp.gate_proj.weight";
      lf.up.weight = p + "mlp.up_proj.weight";
    }
    lf.down.weight = p + "mlp.down_proj.weight";
    l.ffn = lf;
  }
  return true;
}

/// A two-layer MLP of intermediate size `interKey` (default `inter`) and
/// activation `actKey` (default `act`).
FFNSpec denseFFN(FieldReader &r, llvm::StringRef interKey, int64_t inter,
                 llvm::StringRef actKey, const std::string &act) {
  FFNSpec f;
  f.kind = FFNKind::Dense;
  f.intermediate =
      r.optInt({interKey}, 1, kMaxIntermediate, inter).value_or(inter);
  readActivation(r, actKey, act, f);
  return f;
}

/// Gives every layer `f` with its tensors: prefix(l) + the module names
/// `norm`, `up`, `down`, each with its ".weight" and ".bias".
void attachDense(ModelSpec &spec, const FFNSpec &f,
                 std::function<std::string(const LayerSpec &)> prefix,
                 llvm::StringRef norm, llvm::StringRef up,
                 llvm::StringRef down) {
  auto proj = [](const std::string &p, llvm::StringRef module) {
    return Proj{p + module.str() + ".weight", p + module.str() + ".bias"};
  };
  for (LayerSpec &l : spec.layers) {
    std::string p = prefix(l);
    l.ffn = f;
    l.ffn.norm = proj(p, norm);
    l.ffn.up = proj(p, up);
    l.ffn.down = proj(p, down);
  }
}

bool readGPT2(FieldReader &r, ModelSpec &spec) {
  int64_t h = spec.hiddenSize;
  FFNSpec f = denseFFN(r, "n_inner", 4 * h, "activation_function", "gelu_new");
  f.transposedWeights = true;
  if (r.failed())
    return false;
  attachDense(
      spec, f,
      [](const LayerSpec &l) { return prefixOf(l.normW.weight, "ln_1.weight"); },
      "ln_2", "mlp.c_fc", "mlp.c_proj");
  return true;
}

bool readBERT(FieldReader &r, ModelSpec &spec) {
  FFNSpec f = denseFFN(r, "intermediate_size", 3072, "hidden_act", "gelu");
  f.placement = FFNPlacement::Post;
  if (r.failed())
    return false;
  attachDense(
      spec, f,
      [](const LayerSpec &l) {
        return "bert.encoder.layer." + std::to_string(l.index) + ".";
      },
      "output.LayerNorm", "intermediate.dense", "output.dense");
  return true;
}

bool readFalcon(FieldReader &r, ModelSpec &spec) {
  int64_t h = spec.hiddenSize;
  FFNSpec f = denseFFN(r, "ffn_hidden_size", 4 * h, "activation", "gelu");
  bool newArch =
      r.optBool({"new_decoder_architecture"}, false).value_or(false);
  bool parallel = r.optBool({"parallel_attn"}, true).value_or(true);
  bool bias = r.optBool({"bias"}, false).value_or(false);
  if (r.failed())
    return false;
  // FalconDecoderLayer: the new architecture and parallel_attn add the MLP
  // of the layer's (normed) input next to the attention; otherwise the MLP
  // follows the attention with post_attention_layernorm.
  f.placement = newArch || parallel ? FFNPlacement::Parallel
                                    : FFNPlacement::Pre;
  for (LayerSpec &l : spec.layers) {
    std::string p = "transformer.h." + std::to_string(l.index) + ".";
    FFNSpec lf = f;
    if (f.placement == FFNPlacement::Pre)
      lf.norm = {p + "post_attention_layernorm.weight",
                 p + "post_attention_layernorm.bias"};
    else if (llvm::StringRef(l.normW.weight).ends_with("ln_attn.weight"))
      lf.norm = {p + "ln_mlp.weight", p + "ln_mlp.bias"};
    lf.up = {p + "mlp.dense_h_to_4h.weight",
             bias ? p + "mlp.dense_h_to_4h.bias" : ""};
    lf.down = {p + "mlp.dense_4h_to_h.weight",
               bias ? p + "mlp.dense_4h_to_h.bias" : ""};
    l.ffn = lf;
  }
  return true;
}

/// T5 and Whisper: the encoder's self-attention layers and the decoder's
/// cross-attention layers close a transformer layer.
bool readEncoderDecoder(FieldReader &r, ModelSpec &spec) {
  bool t5 = spec.family == "t5";
  FFNSpec f;
  f.kind = FFNKind::Dense;
  int64_t encInter = 0, decInter = 0;
  if (t5) {
    encInter = decInter =
        r.optInt({"d_ff"}, 1, kMaxIntermediate, 2048).value_or(2048);
    std::string proj =
        r.optString({"feed_forward_proj"}, "relu").value_or("relu");
    llvm::StringRef act(proj);
    if (act.consume_front("gated-"))
      f.kind = FFNKind::Gated;
    // T5Config: "gated-gelu" means the tanh approximation (gelu_new).
    std::string name = act.str();
    if (f.kind == FFNKind::Gated && name == "gelu")
      name = "gelu_new";
    f.activation = activationFor(name);
    if (f.activation.empty())
      f.unsupported = "its activation '" + proj + "' (field '" +
                      r.name("feed_forward_proj") +
                      "') is not compiled; accepted: relu, gelu, silu, "
                      "gated-gelu, gated-silu, gated-relu";
  } else {
    encInter = r.optInt({"encoder_ffn_dim"}, 1, kMaxIntermediate, 1536)
                   .value_or(1536);
    decInter = r.optInt({"decoder_ffn_dim"}, 1, kMaxIntermediate, 1536)
                   .value_or(1536);
    readActivation(r, "activation_function", "gelu", f);
  }
  if (r.failed())
    return false;
  for (LayerSpec &l : spec.layers) {
    bool encoder = l.stack == "encoder";
    if (!encoder && l.role != LayerRole::CrossAttention)
      continue; // the decoder's self-attention: cross attention follows
    FFNSpec lf = f;
    lf.intermediate = encoder ? encInter : decInter;
    std::string i = std::to_string(l.layerInStack);
    if (t5) {
      std::string p = l.stack + ".block." + i + ".layer." +
                      (encoder ? "1." : "2.");
      lf.norm.weight = p + "layer_norm.weight";
      std::string d = p + "DenseReluDense.";
      if (lf.kind == FFNKind::Gated) {
        lf.gate.weight = d + "wi_0.weight";
        lf.up.weight = d + "wi_1.weight";
      } else {
        lf.up.weight = d + "wi.weight";
      }
      lf.down.weight = d + "wo.weight";
    } else {
      std::string p = "model." + l.stack + ".layers." + i + ".";
      lf.norm = {p + "final_layer_norm.weight", p + "final_layer_norm.bias"};
      lf.up = {p + "fc1.weight", p + "fc1.bias"};
      lf.down = {p + "fc2.weight", p + "fc2.bias"};
    }
    l.ffn = lf;
  }
  return true;
}

/// gpt-oss (GptOssMLP): the router with its bias, its top-k logits
/// softmaxed (the softmax over all experts renormalized over the k: the
/// same weights), each expert's gate_up_proj (gate and up interleaved) and
/// down_proj with biases, stored x·W or as MXFP4 blocks, and the SwiGLU
/// clamped at swiglu_limit: (clamp(up) + 1) · g · sigmoid(1.702 g).
bool readGptOss(FieldReader &r, ModelSpec &spec) {
  FFNSpec moe;
  moe.kind = FFNKind::MoE;
  moe.activation = "silu";
  moe.intermediate =
      r.optInt({"intermediate_size"}, 1, kMaxIntermediate, 2880).value_or(2880);
  moe.numExperts =
      r.optInt({"num_local_experts"}, 1, 1 << 20, 128).value_or(128);
  moe.topK = r.optInt({"num_experts_per_tok"}, 1, 1 << 20, 4).value_or(4);
  moe.swigluLimit =
      r.optNum({"swiglu_limit"}, 1e-6, 1e6, 7.0).value_or(7.0);
  moe.swigluAlpha =
      r.optNum({"swiglu_alpha"}, 1e-6, 1e6, 1.702).value_or(1.702);
  if (r.failed())
    return false;
  if (moe.topK > moe.numExperts) {
    r.error("num_experts_per_tok")
        << "num_experts_per_tok (" << moe.topK << ") exceeds num_local_experts ("
        << moe.numExperts << "); accepted: 1 to num_local_experts";
    return false;
  }
  moe.scoring = ExpertScoring::Softmax;
  moe.normTopK = true;
  moe.fusedExperts = true;
  for (LayerSpec &l : spec.layers) {
    std::string p = prefixOf(l.normW.weight, "input_layernorm.weight");
    std::string m = p + "mlp.";
    FFNSpec lf = moe;
    lf.placement = FFNPlacement::Pre;
    lf.norm.weight = p + "post_attention_layernorm.weight";
    lf.router = {m + "router.weight", m + "router.bias"};
    lf.gate.weight = lf.up.weight = m + "experts.gate_up_proj";
    lf.down.weight = m + "experts.down_proj";
    lf.expertGateUpBias = m + "experts.gate_up_proj_bias";
    lf.expertDownBias = m + "experts.down_proj_bias";
    l.ffn = lf;
  }
  return true;
}

} // namespace

bool normalize::readFeedForward(FieldReader &root, ModelSpec &spec) {
  const std::string &fam = spec.family;
  if (fam == "gpt2")
    return readGPT2(root, spec);
  if (fam == "bert")
    return readBERT(root, spec);
  if (fam == "falcon")
    return readFalcon(root, spec);
  if (fam == "t5" || fam == "whisper")
    return readEncoderDecoder(root, spec);
  if (fam == "deepseek_v2" || fam == "deepseek_v3" || fam == "glm4_moe")
    return readRoutedFamily(root, spec);
  if (fam == "gpt_oss")
    return readGptOss(root, spec);
  if (fam == "kimi_linear")
    return readKimiFeedForward(root, spec);
  if (fam == "granitemoehybrid")
    return readGraniteMoE(root, spec);
  if (fam == "nemotron_h")
    return readNemotronFeedForward(root, spec);
  // A multimodal Gemma 3 config keeps the language model's fields under
  // text_config.
  if ((fam == "gemma3" || fam == "llama4") && root.present("text_config")) {
    std::optional<FieldReader> text = root.optObject("text_config");
    return text && readDecoderFamily(*text, spec);
  }
  return readDecoderFamily(root, spec);
}
