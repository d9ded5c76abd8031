//===- EncoderFamilies.cpp - GPT-2, BERT, Falcon, T5, Whisper -------------===//
//
// This file implements the normalization of the families that are not
// decoder-only RoPE models (or whose conventions differ too much to share
// DecoderFamilies.cpp's table): GPT-2, BERT, Falcon, T5 and Whisper.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/NormalizeUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::normalize;

bool normalize::normalizeGPT2(FieldReader &r, ModelSpec &spec) {
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

bool normalize::normalizeBERT(FieldReader &r, ModelSpec &spec) {
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
        << "field 'position_embedding_type' is " << quoteForError(*posType)
        << ": BERT's relative position embeddings are not supported; "
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

bool normalize::normalizeFalcon(FieldReader &r, ModelSpec &spec) {
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

bool normalize::normalizeT5(FieldReader &r, ModelSpec &spec) {
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

bool normalize::normalizeWhisper(FieldReader &r, ModelSpec &spec) {
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
    } else if (dModel / h > kMaxHeadDim) {
      // The bound every family applies to the head dim (readDims).
      r.error(key) << "the implied head_dim (d_model " << dModel << " / "
                   << h << " heads = " << dModel / h << ") exceeds "
                   << kMaxHeadDim;
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

