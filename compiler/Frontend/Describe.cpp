//===- Describe.cpp - ModelSpec -> --describe JSON ------------------------===//
//
// This file implements `attn-compile --describe`: the normalized description
// of every layer, and per layer kind the KV-cache bytes per token and the
// attention FLOPs at 1k, 32k, 262,144 tokens and the model's maximum (the
// quadratic wall). The field names are documented in the README.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Frontend.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::attn;
using ojson = nlohmann::ordered_json;

namespace {

const char *positionName(PositionKind k) {
  switch (k) {
  case PositionKind::Absolute:
    return "absolute";
  case PositionKind::Rope:
    return "rope";
  case PositionKind::T5Bias:
    return "t5_relative_bias";
  case PositionKind::Alibi:
    return "alibi";
  case PositionKind::None:
    return "none (NoPE)";
  }
  return "unknown";
}

const char *roleName(LayerRole r) {
  switch (r) {
  case LayerRole::SelfAttention:
    return "self";
  case LayerRole::CrossAttention:
    return "cross";
  case LayerRole::LinearAttention:
    return "linear_attention";
  }
  return "unknown";
}

const char *normName(NormKind k) {
  switch (k) {
  case NormKind::RMS:
    return "rms";
  case NormKind::RMSUnitOffset:
    return "rms_unit_offset";
  case NormKind::Layer:
    return "layer";
  }
  return "unknown";
}

const char *placementName(NormPlacement p) {
  switch (p) {
  case NormPlacement::Pre:
    return "pre";
  case NormPlacement::PrePost:
    return "pre_and_post";
  case NormPlacement::Post:
    return "post";
  case NormPlacement::Output:
    return "post_sublayer";
  }
  return "unknown";
}

/// An exact count as a JSON integer (double past 2^64).
ojson count(unsigned __int128 v) {
  if (v <= static_cast<unsigned __int128>(UINT64_MAX))
    return static_cast<uint64_t>(v);
  return static_cast<double>(v);
}

/// Visible (query, key) pairs of one head for a sequence of n tokens.
unsigned __int128 visiblePairs(const LayerSpec &l, uint64_t n) {
  using u128 = unsigned __int128;
  if (!l.causal)
    return u128(n) * n;
  if (l.chunk) {
    // Whole chunks of c (c(c+1)/2 pairs each), then the last, partial one.
    uint64_t c = uint64_t(*l.chunk), full = n / c, rest = n % c;
    return u128(full) * c * (c + 1) / 2 + u128(rest) * (rest + 1) / 2;
  }
  if (!l.window || uint64_t(*l.window) >= n)
    return u128(n) * (n + 1) / 2;
  uint64_t w = uint64_t(*l.window);
  return u128(w) * (w + 1) / 2 + u128(n - w) * w;
}

/// Keys one new token attends to at context n.
uint64_t keysAt(const LayerSpec &l, uint64_t n) {
  if (l.causal && l.window)
    return std::min<uint64_t>(n, uint64_t(*l.window));
  if (l.causal && l.chunk) // the new token at position n: its chunk so far
    return n % uint64_t(*l.chunk) + 1;
  return n;
}

/// FLOPs of QKᵀ and P·V per (query, key) pair, over all query heads.
uint64_t flopsPerPair(const LayerSpec &l) {
  return 2 * uint64_t(l.numHeads) * uint64_t(l.headDimQK + l.headDimV);
}

/// Gated DeltaNet's state per sequence and layer, constant in the context:
/// the recurrent state H_v·d_k·d_v plus the causal conv's last K−1 inputs
/// over the q, k, v channels (2·H_k·d_k + H_v·d_v).
uint64_t linearStateBytes(const LayerSpec &l, uint64_t elemBytes) {
  uint64_t recurrent =
      uint64_t(l.numHeads) * uint64_t(l.headDimQK) * uint64_t(l.headDimV);
  uint64_t channels = 2 * uint64_t(l.numKVHeads) * uint64_t(l.headDimQK) +
                      uint64_t(l.numHeads) * uint64_t(l.headDimV);
  uint64_t conv = channels * uint64_t(std::max<int64_t>(l.convKernel - 1, 0));
  return (recurrent + conv) * elemBytes;
}

/// Gated DeltaNet's FLOPs per token in decode (the recurrence: decay, Sᵀk,
/// rank-1 update, Sᵀq: 7·d_k·d_v per value head; Mamba2's SSD has no Sᵀk:
/// 5·d_state·head_dim per head), constant in the context.
uint64_t linearDecodeFlops(const LayerSpec &l) {
  return (l.noDelta ? 5 : 7) * uint64_t(l.numHeads) * uint64_t(l.headDimQK) *
         uint64_t(l.headDimV);
}

/// Gated DeltaNet's prefill FLOPs per token, chunkwise form with chunks of
/// 64 (runtime/run/flops.h's formula): linear in the context.
double linearPrefillFlopsPerToken(const LayerSpec &l) {
  double c = 64, k = double(l.headDimQK), v = double(l.headDimV);
  // Mamba2's SSD: Q·Kᵀ, its product with V', Q·S and Kᵀ·V' per chunk.
  if (l.noDelta)
    return double(l.numHeads) * (2 * c * c * (k + v) + 4 * c * k * v) / c;
  return double(l.numHeads) *
         (2 * c * c * (3 * k + 2 * v) + 6 * c * k * v + c * c * c / 3) / c;
}

uint64_t kvBytesPerToken(const LayerSpec &l, uint64_t elemBytes) {
  // Multi-head latent attention caches one latent row per token.
  if (l.isLatent())
    return uint64_t(l.latent.cacheWidth()) * elemBytes;
  return uint64_t(l.numKVHeads) * uint64_t(l.headDimQK + l.headDimV) *
         elemBytes;
}

/// Multi-head latent attention's two forms, per layer, for `rows` query
/// rows over `ctx` cached tokens (FLOPs of the matrix products; H heads,
/// latent r, rope dr, nope dn, value dv):
///   expanded: every cached latent through kv_b_proj (2·r·H·(dn + dv) per
///             token), then attention with D = dn + dr and Dv = dv;
///   absorbed: each query row's nope part into the latent space
///             (2·H·dn·r), attention of all heads over the one cache row
///             (D = r + dr, Dv = r), the result back through W_UV
///             (2·H·r·dv).
struct LatentFlops {
  unsigned __int128 expanded, absorbed;
};
LatentFlops latentFlops(const LayerSpec &l, uint64_t rows, uint64_t ctx) {
  using u128 = unsigned __int128;
  const LatentSpec &m = l.latent;
  u128 h = uint64_t(l.numHeads), r = uint64_t(m.kvLoraRank),
       dr = uint64_t(m.ropeDim), dn = uint64_t(m.nopeDim),
       dv = uint64_t(l.headDimV);
  u128 expanded = 2 * ctx * r * h * (dn + dv) +
                  2 * u128(rows) * ctx * h * (dn + dr + dv);
  u128 absorbed = 2 * u128(rows) * h * (dn * r + r * dv) +
                  2 * u128(rows) * ctx * h * (2 * r + dr);
  return {expanded, absorbed};
}

/// The latent layer's own description: its sizes, the cache next to what
/// the same model would cache as plain MHA and as GQA with 8 KV heads, the
/// decode FLOPs of both forms and where the absorbed form stops doing less
/// work (what the compiled layers choose by at run time).
ojson latentKindJson(const LayerSpec &l) {
  const LatentSpec &m = l.latent;
  uint64_t h = uint64_t(l.numHeads),
           perHead = uint64_t(l.headDimQK + l.headDimV);
  ojson j;
  j["cache_row"] = m.cacheWidth();
  j["latent_cache_bytes_per_token_per_layer"] = {
      {"fp32", 4 * uint64_t(m.cacheWidth())},
      {"bf16", 2 * uint64_t(m.cacheWidth())}};
  j["same_model_as_mha_bytes_per_token_per_layer"] = {
      {"fp32", 4 * h * perHead}, {"bf16", 2 * h * perHead}};
  j["same_model_as_gqa8_bytes_per_token_per_layer"] = {
      {"fp32", 4 * 8 * perHead}, {"bf16", 2 * 8 * perHead}};
  ojson decode;
  for (uint64_t ctx : {uint64_t(4096), uint64_t(32768), uint64_t(131072)}) {
    LatentFlops f = latentFlops(l, 1, ctx);
    decode[std::to_string(ctx)] = {{"expanded", count(f.expanded)},
                                   {"absorbed", count(f.absorbed)}};
  }
  j["decode_flops_per_token_per_layer"] = decode;
  // Query rows up to which the absorbed form does less work, at a context
  // of ctx tokens: rows·(r·(dn+dv) + ctx·(2r − dn − dv)) < ctx·r·(dn+dv).
  int64_t r = m.kvLoraRank, dn = m.nopeDim, dv = l.headDimV;
  double a = double(r) * double(dn + dv), c = double(2 * r - dn - dv);
  ojson rows;
  for (uint64_t ctx : {uint64_t(4096), uint64_t(32768), uint64_t(131072)}) {
    double n = double(ctx);
    double x = c > 0 ? n * a / (a + n * c) : INFINITY;
    rows[std::to_string(ctx)] =
        std::isfinite(x) ? ojson(int64_t(std::ceil(x)) - 1) : ojson(nullptr);
  }
  j["absorbed_less_work_up_to_query_rows"] = rows;
  j["absorbed_less_work_up_to_query_rows_asymptotic"] =
      c > 0 ? ojson(a / c) : ojson(nullptr);
  // The smallest context at which one decode row is cheaper absorbed.
  uint64_t from = 1;
  while (from < (uint64_t(1) << 40)) {
    LatentFlops f = latentFlops(l, 1, from);
    if (f.absorbed < f.expanded)
      break;
    from *= 2;
  }
  uint64_t lo = from / 2 + 1, hi = from;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    LatentFlops f = latentFlops(l, 1, mid);
    if (f.absorbed < f.expanded)
      hi = mid;
    else
      lo = mid + 1;
  }
  j["absorbed_decode_less_work_from_context"] = hi;
  j["note"] = "multi-head latent attention: one latent row (kv_lora_rank + "
              "qk_rope_head_dim) cached per token and layer; prefill runs "
              "the expanded form (keys and values per head from kv_b_proj), "
              "decode the absorbed one (the query into the latent space, all "
              "heads over the cache rows, values read in place); the "
              "compiled layer chooses by query length at run time";
  return j;
}

std::optional<int64_t> maxContext(const ModelSpec &spec, const LayerSpec &l) {
  if (l.stack == "encoder" && spec.maxSourcePositions)
    return spec.maxSourcePositions;
  if (l.role == LayerRole::CrossAttention && spec.maxSourcePositions)
    return spec.maxSourcePositions;
  return spec.maxPositions;
}

/// The feed-forward network closing the layer (null for a decoder's
/// self-attention, which cross attention follows).
ojson feedForwardJson(const FFNSpec &f) {
  if (f.kind == FFNKind::None)
    return nullptr;
  ojson j;
  if (f.kind == FFNKind::Identity) {
    // The layer ends with its block (Nemotron-H: a mixer followed by
    // another mixer).
    j["kind"] = "none";
    j["compiled"] = true;
    return j;
  }
  j["kind"] = f.kind == FFNKind::Gated   ? "gated"
              : f.kind == FFNKind::Dense ? "dense"
                                         : "mixture_of_experts";
  // Nemotron-H's experts: act(x·upᵀ)·downᵀ, no gate.
  if (f.kind == FFNKind::MoE && f.gate.weight.empty() &&
      f.gateUp.weight.empty())
    j["gated_experts"] = false;
  j["activation"] = f.activation.empty() ? ojson(nullptr) : ojson(f.activation);
  j["intermediate_size"] = f.intermediate;
  j["placement"] = f.placement == FFNPlacement::Pre       ? "pre"
                   : f.placement == FFNPlacement::PrePost ? "pre_and_post"
                   : f.placement == FFNPlacement::Post    ? "post"
                   : f.placement == FFNPlacement::Output  ? "post_sublayer"
                                                          : "parallel";
  if (f.kind == FFNKind::MoE) {
    j["num_experts"] = f.numExperts;
    j["experts_per_token"] = f.topK;
    j["norm_topk_prob"] = f.normTopK;
    j["shared_expert_intermediate_size"] = f.sharedIntermediate;
    j["scoring"] =
        f.scoring == ExpertScoring::Sigmoid ? "sigmoid" : "softmax";
    j["selection_bias"] = !f.scoreBias.empty();
    if (f.numGroups > 1 || f.topKGroups > 1) {
      j["groups"] = {{"num_groups", f.numGroups},
                     {"groups_kept", f.topKGroups},
                     {"group_score", f.groupScore == ExpertGroupScore::TopTwoSum
                                         ? "top2_sum"
                                         : "max"}};
      if (f.excludeOtherGroups)
        j["groups"]["other_groups"] = "excluded (scores -inf)";
    }
    j["routed_scaling_factor"] = f.routedScale;
    if (!f.router.bias.empty())
      j["router_bias"] = true;
    if (!f.expertGateUpBias.empty())
      j["expert_biases"] = true;
    if (f.swigluLimit)
      j["clamped_swiglu"] = {{"limit", *f.swigluLimit},
                             {"alpha", f.swigluAlpha}};
    if (f.fusedExperts)
      j["experts_stored"] =
          f.halvesGateUp
              ? "fused gate_up_proj (gate, up its halves) and down_proj, x·W"
              : "fused gate_up_proj (gate, up interleaved) and down_proj, "
                "x·W or MXFP4 blocks";
    if (f.scaleInput)
      j["routing_weight_scales"] = "the expert's input";
    j["shared_expert_gate"] = !f.sharedExpertGate.weight.empty();
  }
  j["compiled"] = f.unsupported.empty();
  if (!f.unsupported.empty())
    j["note"] = f.unsupported;
  return j;
}

ojson layerJson(const LayerSpec &l,
                const std::string &kind) {
  ojson j;
  j["index"] = l.index;
  j["stack"] = l.stack;
  j["layer_in_stack"] = l.layerInStack;
  j["attention"] = roleName(l.role);
  j["layer_type"] = l.layerType;
  j["layer_kind"] = kind;
  if (l.role == LayerRole::LinearAttention) {
    j["compiled"] = true;
    j["kernel"] = l.noDelta ? "gated_delta_rule (no_delta: Mamba2's SSD)"
                  : l.channelGate
                      ? "gated_delta_rule (per-channel gate: Kimi Delta "
                        "Attention)"
                      : "gated_delta_rule";
    j["num_key_heads"] = l.numKVHeads;
    j["num_value_heads"] = l.numHeads;
    j["value_heads_per_key_head"] = l.numHeads / l.numKVHeads;
    j["key_head_dim"] = l.headDimQK;
    j["value_head_dim"] = l.headDimV;
    j["conv_kernel"] = l.convKernel;
    j["query_scale"] = l.scale;
    if (l.mambaNormGroups > 1)
      j["gated_norm_groups"] = l.mambaNormGroups;
    if (l.noDelta)
      j["note"] = "Mamba2 (" + l.linearPrefix +
                  "*): its SSD compiled as the gated delta rule without the "
                  "delta correction (keys = B with n_groups = " +
                  std::to_string(l.numKVHeads) +
                  " key heads, queries = C, values = x, beta = dt, gate = "
                  "dt·A), for the CPU (chunked and recurrent) and the GPU "
                  "(recurrent); the whole mixer compiled for the CPU "
                  "(in_proj, convolution, SSD, D skip, gated norm, out_proj; "
                  "`block` with its states)";
    else if (l.channelGate)
      j["note"] = "Kimi Delta Attention (" + l.linearPrefix +
                  "*): the gated delta rule with one decay per key channel; "
                  "the whole layer compiled for the CPU (q/k/v projections "
                  "with their short convolutions, the low-rank gate, the "
                  "chunked per-channel rule (recurrent up to 16 tokens), the "
                  "sigmoid-gated output norm; `block` with its states), the "
                  "recurrent rule alone for the GPU";
    else
      j["note"] = "Gated DeltaNet linear attention (" + l.linearPrefix +
                  "*): the whole layer compiled for the CPU (projections, "
                  "convolution, chunked gated delta rule, gated norm; "
                  "`block` with its states), the rule alone for the GPU";
    j["feed_forward"] = feedForwardJson(l.ffn);
    return j;
  }
  j["causal"] = l.causal;
  j["sliding_window"] = l.window ? ojson(*l.window) : ojson(nullptr);
  if (l.chunk)
    j["attention_chunk_size"] = *l.chunk;
  j["num_query_heads"] = l.numHeads;
  j["num_kv_heads"] = l.numKVHeads;
  j["gqa_group_size"] = l.numHeads / l.numKVHeads;
  j["head_dim_qk"] = l.headDimQK;
  j["head_dim_v"] = l.headDimV;
  j["softmax_scale"] = l.scale;
  j["logit_softcap"] = l.softcap ? ojson(*l.softcap) : ojson(nullptr);
  j["position"] = positionName(l.position);
  if (l.position == PositionKind::Rope) {
    ojson r;
    r["theta"] = l.rope.theta;
    r["rotary_dim"] = l.rope.rotaryDim;
    r["scaling"] = l.rope.scalingType;
    r["factor"] = l.rope.factor;
    r["attention_factor"] = l.rope.attentionFactor;
    if (!l.rope.longInvFreq.empty()) {
      // LongRoPE: which table a call uses is decided at run time.
      r["original_max_position_embeddings"] = l.rope.longAfter;
      r["long_factors_when"] =
          "the largest position + 1 exceeds " +
          std::to_string(l.rope.longAfter);
    }
    r["compiled"] = l.rope.unsupported.empty();
    j["rope"] = r;
  } else {
    j["rope"] = nullptr;
  }
  if (l.position == PositionKind::T5Bias)
    j["relative_bias"] = {{"num_buckets", l.t5.numBuckets},
                          {"max_distance", l.t5.maxDistance},
                          {"bidirectional", l.t5.bidirectional}};
  if (l.isLatent()) {
    const LatentSpec &m = l.latent;
    j["latent"] = {
        {"q_lora_rank", m.qLoraRank ? ojson(m.qLoraRank) : ojson(nullptr)},
        {"kv_lora_rank", m.kvLoraRank},
        {"qk_nope_head_dim", m.nopeDim},
        {"qk_rope_head_dim", m.ropeDim},
        {"v_head_dim", l.headDimV},
        {"cache_row", m.cacheWidth()},
        {"rope_interleaved", l.rope.interleaved}};
  }
  j["qk_norm"] = l.qkNorm;
  if (l.qkNormFlat)
    j["qk_norm_over"] = "projection";
  j["qkv_bias"] = l.hasQKVBias();
  j["o_bias"] = !l.o.bias.empty();
  j["output_gate"] = l.outputGate;
  j["attention_sinks"] = !l.sinks.empty();
  if (l.l2QkNorm)
    j["qk_l2_norm"] = true; // per head, no weight (Llama 4)
  if (l.temperature)
    j["attention_temperature"] = {
        {"floor_scale", l.temperature->floorScale},
        {"attn_scale", l.temperature->attnScale}};
  j["norm"] = normName(l.norm);
  j["norm_placement"] = placementName(l.placement);
  j["compiled"] = l.position != PositionKind::Alibi &&
                  (l.position != PositionKind::Rope ||
                   l.rope.unsupported.empty());
  j["feed_forward"] = feedForwardJson(l.ffn);
  return j;
}

} // namespace

ojson mlir::attn::describeModel(const ModelSpec &spec) {
  // Long: --describe's JSON, key after key in the order it prints.
  ojson out;
  out["config"] = spec.configPath;
  out["model_type"] = spec.modelType;
  out["family"] = spec.family;
  out["architecture"] =
      spec.architecture.empty() ? ojson(nullptr) : ojson(spec.architecture);
  out["dtype"] = spec.dtype.empty() ? ojson(nullptr) : ojson(spec.dtype);
  out["hidden_size"] = spec.hiddenSize;
  out["num_layers"] = spec.numLayers;
  out["encoder_decoder"] = spec.encoderDecoder;
  if (spec.encoderDecoder)
    out["num_encoder_layers"] = spec.numEncoderLayers;
  out["num_attention_layers"] = spec.layers.size();
  out["max_position_embeddings"] =
      spec.maxPositions ? ojson(*spec.maxPositions) : ojson(nullptr);
  if (spec.maxSourcePositions)
    out["max_source_positions"] = *spec.maxSourcePositions;

  std::vector<std::string> kinds = layerKindNames(spec);
  ojson layers = ojson::array();
  for (const LayerSpec &l : spec.layers)
    layers.push_back(layerJson(l, kinds[l.index]));
  out["layers"] = layers;

  const std::pair<const char *, std::optional<uint64_t>> contexts[] = {
      {"1024", 1024}, {"32768", 32768}, {"262144", 262144}, {"max", {}}};
  unsigned __int128 totalKv32 = 0, totalKv16 = 0, totalState32 = 0,
                    totalState16 = 0;
  std::vector<const LayerSpec *> linearKinds, softmaxKinds;
  std::map<std::string, unsigned __int128> totalDecode, totalPrefill;
  std::map<std::string, bool> totalKnown;
  ojson kindsJson = ojson::array();
  for (const LayerKind &kind : groupLayersByKind(spec)) {
    const LayerSpec &l = *kind.first;
    ojson k;
    k["name"] = kind.name;
    k["attention"] = roleName(l.role);
    k["layer_type"] = l.layerType;
    k["count"] = kind.layers.size();
    k["layers"] = kind.layers;
    if (l.role == LayerRole::LinearAttention) {
      uint64_t n = kind.layers.size();
      k["kv_cache_bytes_per_token"] = nullptr;
      k["state_bytes_per_sequence_per_layer"] = {
          {"fp32", linearStateBytes(l, 4)}, {"bf16", linearStateBytes(l, 2)}};
      k["state_bytes_per_sequence"] = {{"fp32", n * linearStateBytes(l, 4)},
                                       {"bf16", n * linearStateBytes(l, 2)}};
      totalState32 += n * linearStateBytes(l, 4);
      totalState16 += n * linearStateBytes(l, 2);
      ojson decode, prefill;
      for (auto [label, ctxLen] : contexts) {
        std::optional<uint64_t> c = ctxLen;
        if (!c && spec.maxPositions)
          c = uint64_t(*spec.maxPositions);
        if (!c) {
          decode[label] = nullptr;
          prefill[label] = nullptr;
          totalKnown[label] = false;
          continue;
        }
        unsigned __int128 dec = (unsigned __int128)n * linearDecodeFlops(l);
        double pre = double(n) * linearPrefillFlopsPerToken(l) * double(*c);
        decode[label] = count(dec);
        prefill[label] = count((unsigned __int128)pre);
        totalDecode[label] += dec;
        totalPrefill[label] += (unsigned __int128)pre;
        if (!totalKnown.count(label))
          totalKnown[label] = true;
      }
      k["attention_flops_per_token_per_layer"] = linearDecodeFlops(l);
      k["attention_flops_per_token"] = decode;
      k["prefill_attention_flops"] = prefill;
      k["note"] = "linear attention: a constant state per sequence instead "
                  "of a KV cache, constant work per token";
      linearKinds.push_back(&l);
      kindsJson.push_back(k);
      continue;
    }
    softmaxKinds.push_back(&l);
    uint64_t n = kind.layers.size();
    k["kv_cache_bytes_per_token_per_layer"] = {
        {"fp32", kvBytesPerToken(l, 4)}, {"bf16", kvBytesPerToken(l, 2)}};
    k["kv_cache_bytes_per_token"] = {{"fp32", n * kvBytesPerToken(l, 4)},
                                     {"bf16", n * kvBytesPerToken(l, 2)}};
    if (l.window)
      k["kv_cache_tokens_kept"] = *l.window;
    if (l.chunk)
      k["kv_cache_tokens_kept"] = *l.chunk;
    totalKv32 += n * kvBytesPerToken(l, 4);
    totalKv16 += n * kvBytesPerToken(l, 2);
    ojson decode, prefill;
    for (auto [label, ctxLen] : contexts) {
      std::optional<uint64_t> c = ctxLen;
      if (!c) {
        std::optional<int64_t> m = maxContext(spec, l);
        if (m)
          c = uint64_t(*m);
      }
      if (!c) {
        decode[label] = nullptr;
        prefill[label] = nullptr;
        totalKnown[label] = false;
        continue;
      }
      unsigned __int128 dec =
          (unsigned __int128)n * flopsPerPair(l) * keysAt(l, *c);
      unsigned __int128 pre =
          (unsigned __int128)n * flopsPerPair(l) * visiblePairs(l, *c);
      if (l.isLatent()) {
        // What the compiled layer runs: decode absorbed, prefill expanded
        // (every token's latent through kv_b_proj, then the attention).
        dec = (unsigned __int128)n * latentFlops(l, 1, *c).absorbed;
        pre += (unsigned __int128)n *
               (latentFlops(l, 0, *c).expanded);
      }
      decode[label] = count(dec);
      prefill[label] = count(pre);
      totalDecode[label] += dec;
      totalPrefill[label] += pre;
      if (!totalKnown.count(label))
        totalKnown[label] = true;
    }
    k["attention_flops_per_token"] = decode;
    k["prefill_attention_flops"] = prefill;
    if (l.isLatent())
      k["latent_attention"] = latentKindJson(l);
    kindsJson.push_back(k);
  }
  out["layer_kinds"] = kindsJson;
  ojson totals;
  totals["kv_cache_bytes_per_token"] = {{"fp32", count(totalKv32)},
                                        {"bf16", count(totalKv16)}};
  ojson td, tp;
  for (auto [label, unused] : contexts) {
    (void)unused;
    bool known = totalKnown.count(label) ? totalKnown[label] : true;
    td[label] = known ? count(totalDecode[label]) : ojson(nullptr);
    tp[label] = known ? count(totalPrefill[label]) : ojson(nullptr);
  }
  totals["attention_flops_per_token"] = td;
  totals["prefill_attention_flops"] = tp;
  if (!linearKinds.empty()) {
    totals["linear_state_bytes_per_sequence"] = {
        {"fp32", count(totalState32)}, {"bf16", count(totalState16)}};
    // Where one linear layer becomes cheaper than one softmax layer of the
    // first softmax kind: decode FLOPs per token (2·Hq·(d+dv) per key of
    // context against 7·Hv·dk·dv) and cache bytes (a KV entry per token
    // against the constant state).
    if (!softmaxKinds.empty()) {
      const LayerSpec &lin = *linearKinds.front(),
                      &soft = *softmaxKinds.front();
      auto ceilDiv = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
      totals["crossover"] = {
          {"linear_kind_layer", lin.index},
          {"softmax_kind_layer", soft.index},
          {"decode_flops_context",
           ceilDiv(linearDecodeFlops(lin), flopsPerPair(soft))},
          {"state_vs_kv_cache_bytes_context",
           ceilDiv(linearStateBytes(lin, 4), kvBytesPerToken(soft, 4))},
          {"note", "context lengths (tokens) past which one linear layer "
                   "does less decode work per token, and holds less state, "
                   "than one softmax layer's KV cache"}};
    }
  }
  out["totals"] = totals;
  ojson notes = ojson::array();
  for (const std::string &n : spec.notes)
    notes.push_back(n);
  out["notes"] = notes;
  return out;
}
