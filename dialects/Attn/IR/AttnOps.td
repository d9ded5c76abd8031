//===- AttnOps.td - attn dialect operations ----------------*- tablegen -*-===//
//
// This file defines the operations of the `attn` dialect at its three levels:
// graph (what the front end emits), fused (one SDPA op) and tiled (online
// softmax state updates).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "dialects/Attn/IR/AttnBase.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"

//===----------------------------------------------------------------------===//
// Graph level
//===----------------------------------------------------------------------===//

def Attn_LinearOp : Attn_Op<"linear", [Pure]> {
  let summary = "linear projection y = x·Wᵀ (+ b)";
  let description = [{
    Applies a linear layer over the last dimension of `input`. The weight uses
    the checkpoint layout `[out_features, in_features]` (PyTorch `nn.Linear`),
    so Hugging Face tensors are used as stored; with `transpose_weight` it is
    `[in_features, out_features]` (GPT-2's `Conv1D`). The optional bias has
    shape `[out_features]`.

    ```mlir
    %q = attn.linear %x, %wq, %bq
        : (tensor<?x?x896xf32>, tensor<896x896xf32>, tensor<896xf32>)
          -> tensor<?x?x896xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Optional<Attn_FloatTensor>:$bias,
                       UnitAttr:$transpose_weight);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Dim of the weight holding out_features (0, or 1 when transposed).
    unsigned getOutFeaturesDim() { return getTransposeWeight() ? 1 : 0; }
  }];
  let hasVerifier = 1;
}

def Attn_GatedMLPOp : Attn_Op<"gated_mlp", [Pure]> {
  let summary = "gated feed-forward network (SwiGLU, GeGLU)";
  let description = [{
    `y = (act(x·W_gateᵀ) ⊙ (x·W_upᵀ))·W_downᵀ` over the last dimension of
    `input`: the dense feed-forward network of Llama, Mistral, Qwen, Phi-3
    (`silu`: SwiGLU) and Gemma (`gelu_tanh`: GeGLU). Weights in checkpoint
    layout: `gate_weight` and `up_weight` `[intermediate, hidden]`,
    `down_weight` `[hidden, intermediate]`. The result has the input's type.

    ```mlir
    %y = attn.gated_mlp <silu> %x, %wg, %wu, %wd
        : (tensor<?x?x896xf32>, tensor<4864x896xf32>, tensor<4864x896xf32>,
           tensor<896x4864xf32>) -> tensor<?x?x896xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$gate_weight,
                       Attn_FloatTensor:$up_weight,
                       Attn_FloatTensor:$down_weight,
                       Attn_ActivationAttr:$activation);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $activation $input `,` $gate_weight `,` $up_weight `,` $down_weight
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_MLPOp : Attn_Op<"mlp", [Pure, AttrSizedOperandSegments]> {
  let summary = "two-layer feed-forward network act(x·W_upᵀ + b)·W_downᵀ + b";
  let description = [{
    `y = act(x·W_upᵀ + b_up)·W_downᵀ + b_down` over the last dimension of
    `input`: the feed-forward network of GPT-2 (`c_fc`, `c_proj`), BERT
    (`intermediate.dense`, `output.dense`), Whisper (`fc1`, `fc2`), Falcon
    (`dense_h_to_4h`, `dense_4h_to_h`) and T5 (`wi`, `wo`, no biases). Weights
    as `attn.linear` takes them: `up_weight` `[intermediate, hidden]`,
    `down_weight` `[hidden, intermediate]`, or `[in, out]` each with
    `transpose_weight` (GPT-2's Conv1D); biases optional, `[intermediate]`
    and `[hidden]`. The result has the input's type.

    ```mlir
    %y = attn.mlp <gelu_tanh> %x, %w1 bias(%b1), %w2 bias(%b2)
        {transpose_weight}
        : (tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>,
           tensor<3072x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$up_weight,
                       Optional<Attn_FloatTensor>:$up_bias,
                       Attn_FloatTensor:$down_weight,
                       Optional<Attn_FloatTensor>:$down_bias,
                       Attn_ActivationAttr:$activation,
                       UnitAttr:$transpose_weight);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $activation $input `,` $up_weight (`bias` `(` $up_bias^ `)`)? `,`
    $down_weight (`bias` `(` $down_bias^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_MoEOp : Attn_Op<"moe", [Pure, AttrSizedOperandSegments]> {
  let summary = "sparse mixture of experts with optional shared experts";
  let description = [{
    The sparse mixture-of-experts block of Qwen2-MoE, Qwen3-MoE, Qwen3-Next
    (transformers' `*SparseMoeBlock`) and DeepSeek-V2/V3, Kimi-K2
    (`DeepseekV2Moe`, `DeepseekV3MoE`), over the last dimension of `input`
    (every leading position is a token). One routing, its variations as
    attributes:

    * scores `p` of the router logits `x·W_routerᵀ`: `softmax` over the E
      experts, or `sigmoid` of each (`scoring`);
    * the selection's scores `c = p + score_bias` (a per-expert bias that
      only steers the selection, DeepSeek-V3's `e_score_correction_bias`),
      else `c = p`;
    * with `num_groups` G > 1, group-limited selection: the experts in G
      equal groups, each scored by its best `c` (`group_score = max`) or
      the sum of its best two (`top2_sum`), the `topk_groups` best groups
      kept and the others' `c` set to 0 (as transformers' DeepSeek-V3 masks
      them), or with `exclude_other_groups` to -inf, out of the running
      (transformers' Nemotron-H, DeepSeek's reference code);
    * the `top_k` experts of largest `c` per token (the first on ties),
      each weighted by its `p` (not `c`); with `norm_topk_prob` the k
      weights divided by their sum plus `norm_topk_epsilon`; then all
      multiplied by `routed_scaling_factor`;
    * each expert e a gated network
      `(act(x·W_gate[e]ᵀ) ⊙ (x·W_up[e]ᵀ))·W_down[e]ᵀ`, or without a gate
      weight (`experts(%up, %down)`: Nemotron-H's non-gated experts) the
      plain network `act(x·W_up[e]ᵀ)·W_down[e]ᵀ`, computed only for the
      tokens routed to it (gathered, so each expert's weights are read once
      per call), its outputs scaled by their weights and summed;
    * with `router_bias(...)` (`[E]`), a bias added to the router logits
      (gpt-oss);
    * with `expert_biases(%gate_b, %up_b, %down_b)` (`[E, I]`, `[E, I]`,
      `[E, H]`), each expert's projections biased; with `swiglu_limit` L,
      the expert's activation is gpt-oss's clamped SwiGLU
      `(clamp(up, -L, L) + 1) · g · sigmoid(swiglu_alpha · g)`,
      `g = min(gate, L)`, instead of `act(gate) · up`;
    * with `scale_input`, each routed expert runs on its tokens scaled by
      their routing weights, its output added as it is (Llama 4:
      `expert(w · x)` instead of `w · expert(x)`);
    * with `shared(...)`, a shared expert (a gated network of its own size,
      DeepSeek's n_shared_experts together; `shared(%up, %down)` a plain
      one) on every token, added; with
      `shared_gate(...)` scaled first by `sigmoid(x·W_shared_gateᵀ)`
      (Qwen's `shared_expert_gate`).

    Expert weights are stacked: `expert_gate_weight` and `expert_up_weight`
    `[E, intermediate, hidden]`, `expert_down_weight` `[E, hidden,
    intermediate]`; the router `[E, hidden]`, the bias `[E]`; the shared
    expert's gate/up `[shared_intermediate, hidden]`, down `[hidden,
    shared_intermediate]`, its gate `[1, hidden]`. The result has the
    input's type.

    ```mlir
    %y = attn.moe <silu> %x, %router experts(%g, %u, %d)
        shared(%sg, %su, %sd) shared_gate(%sgate) {top_k = 10 : i64, norm_topk_prob}
        : (...) -> tensor<?x?x2048xf32>
    %z = attn.moe <silu> %x, %router score_bias(%bias) experts(%g, %u, %d)
        shared(%sg, %su, %sd)
        {top_k = 8 : i64, norm_topk_prob, norm_topk_epsilon = 1.0e-20 : f64,
         scoring = #attn.scoring<sigmoid>, num_groups = 8 : i64,
         topk_groups = 4 : i64, group_score = #attn.group_score<top2_sum>,
         routed_scaling_factor = 2.5 : f64}
        : (...) -> tensor<?x?x7168xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$router_weight,
                       Optional<Attn_FloatTensor>:$score_bias,
                       Optional<Attn_FloatTensor>:$expert_gate_weight,
                       Attn_FloatTensor:$expert_up_weight,
                       Attn_FloatTensor:$expert_down_weight,
                       Optional<Attn_FloatTensor>:$shared_gate_weight,
                       Optional<Attn_FloatTensor>:$shared_up_weight,
                       Optional<Attn_FloatTensor>:$shared_down_weight,
                       Optional<Attn_FloatTensor>:$shared_expert_gate_weight,
                       Optional<Attn_FloatTensor>:$router_bias,
                       Optional<Attn_FloatTensor>:$expert_gate_bias,
                       Optional<Attn_FloatTensor>:$expert_up_bias,
                       Optional<Attn_FloatTensor>:$expert_down_bias,
                       Attn_ActivationAttr:$activation, I64Attr:$top_k,
                       UnitAttr:$norm_topk_prob,
                       DefaultValuedAttr<F64Attr, "0.0">:$norm_topk_epsilon,
                       DefaultValuedAttr<Attn_RouterScoringAttr,
                           "::mlir::attn::RouterScoring::softmax">:$scoring,
                       DefaultValuedAttr<I64Attr, "1">:$num_groups,
                       DefaultValuedAttr<I64Attr, "1">:$topk_groups,
                       DefaultValuedAttr<Attn_GroupScoreAttr,
                           "::mlir::attn::GroupScore::max">:$group_score,
                       UnitAttr:$exclude_other_groups,
                       DefaultValuedAttr<F64Attr, "1.0">:$routed_scaling_factor,
                       OptionalAttr<F64Attr>:$swiglu_limit,
                       DefaultValuedAttr<F64Attr, "1.702">:$swiglu_alpha,
                       UnitAttr:$scale_input);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $activation $input `,` $router_weight
    (`router_bias` `(` $router_bias^ `)`)?
    (`score_bias` `(` $score_bias^ `)`)?
    `experts` `` custom<Experts>($expert_gate_weight, $expert_up_weight,
                                 $expert_down_weight, $shared_gate_weight,
                                 $shared_up_weight, $shared_down_weight)
    (`shared_gate` `(` $shared_expert_gate_weight^ `)`)?
    (`expert_biases` `(` $expert_gate_bias^ `,` $expert_up_bias `,`
     $expert_down_bias `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_RMSNormOp : Attn_Op<"rms_norm", [Pure]> {
  let summary = "RMSNorm over the last dimension";
  let description = [{
    `y = x / sqrt(mean(x²) + epsilon) * w`, over the last dimension of
    `input`; `weight` has the size of that dimension. With `unit_offset`
    the scale is `(1 + w)`, as Gemma stores it. Used both on hidden states
    `[batch, seq, hidden]` and, as q/k norm, on heads `[batch, heads, seq, d]`.

    ```mlir
    %y = attn.rms_norm %x, %w {epsilon = 1.0e-06 : f64}
        : (tensor<?x?x4096xf32>, tensor<4096xf32>) -> tensor<?x?x4096xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       F64Attr:$epsilon, UnitAttr:$unit_offset);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_LayerNormOp : Attn_Op<"layer_norm", [Pure]> {
  let summary = "LayerNorm over the last dimension";
  let description = [{
    `y = (x - mean(x)) / sqrt(var(x) + epsilon) * w (+ b)` over the last
    dimension of `input` (biased variance, as PyTorch).

    ```mlir
    %y = attn.layer_norm %x, %w, %b {epsilon = 1.0e-05 : f64}
        : (tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>)
          -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Optional<Attn_FloatTensor>:$bias, F64Attr:$epsilon);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_RopeOp : Attn_Op<"rope", [Pure]> {
  let summary = "rotary position embedding on the first rotary_dim features";
  let description = [{
    Rotates the first `rotary_dim` features of every head of `input`
    (`[batch, heads, seq, head_dim]`) by angles `position * inv_freq[i]`;
    features past `rotary_dim` pass through (partial rotary, as Phi-3 or
    GPT-NeoX). `positions` is `[batch, seq]`.

    The frequencies are `theta^(-2i / rotary_dim)` for `i < rotary_dim / 2`,
    unless `inv_freq` lists them explicitly (how the front end expresses
    Llama-3 or YaRN scaling). `attention_factor` multiplies cos and sin
    (YaRN's mscale). Pairs are `(x[i], x[i + rotary_dim/2])` (the "half"
    layout of Hugging Face Llama) or, with `interleaved`, `(x[2i], x[2i+1])`.

    LongRoPE (Phi-3.5, Phi-4-mini) gives a second table, `long_inv_freq`,
    and `long_after` (the pretraining length): when the largest entry of
    `positions` + 1 exceeds `long_after`, the whole call rotates with
    `long_inv_freq` instead of `inv_freq`, as transformers switches its
    frequencies by the largest position id of a forward pass.

    ```mlir
    %r = attn.rope %q, %pos {rotary_dim = 128 : i64, theta = 5.0e+05 : f64}
        : (tensor<?x32x?x128xf32>, tensor<?x?xi64>) -> tensor<?x32x?x128xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_IntTensor:$positions,
                       F64Attr:$theta, I64Attr:$rotary_dim,
                       OptionalAttr<DenseF64ArrayAttr>:$inv_freq,
                       DefaultValuedAttr<F64Attr, "1.0">:$attention_factor,
                       UnitAttr:$interleaved,
                       OptionalAttr<DenseF64ArrayAttr>:$long_inv_freq,
                       OptionalAttr<I64Attr>:$long_after);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_TemperatureScaleOp : Attn_Op<"temperature_scale", [Pure]> {
  let summary = "scale queries by their position (attention temperature)";
  let description = [{
    Llama 4's attention temperature tuning on its NoPE layers: each query
    row of `input` (`[batch, heads, seq, head_dim]`) at position `p`
    (`positions` `[batch, seq]`) is multiplied by
    `log1p(floor((p + 1) / floor_scale)) · attn_scale + 1`, which is 1 for
    positions below `floor_scale - 1` and grows slowly past them.

    ```mlir
    %q2 = attn.temperature_scale %q, %pos {attn_scale = 1.0e-01 : f64, floor_scale = 8192 : i64}
        : (tensor<?x40x?x128xf32>, tensor<?x?xi64>) -> tensor<?x40x?x128xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_IntTensor:$positions,
                       I64Attr:$floor_scale, F64Attr:$attn_scale);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_SplitHeadsOp : Attn_Op<"split_heads", [Pure]> {
  let summary = "[batch, seq, heads·d] -> [batch, heads, seq, d]";
  let description = [{
    Reshapes the last dimension into heads and transposes heads before the
    sequence, as `x.view(b, s, h, d).transpose(1, 2)` does. The head count and
    head dim are read from the (static) result type.

    ```mlir
    %h = attn.split_heads %x : tensor<?x?x4096xf32> -> tensor<?x32x?x128xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_MergeHeadsOp : Attn_Op<"merge_heads", [Pure]> {
  let summary = "[batch, heads, seq, d] -> [batch, seq, heads·d]";
  let description = [{
    The inverse of `attn.split_heads`: `x.transpose(1, 2).reshape(b, s, h*d)`.

    ```mlir
    %m = attn.merge_heads %o : tensor<?x32x?x128xf32> -> tensor<?x?x4096xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_QKOp : Attn_Op<"qk", [Pure]> {
  let summary = "attention scores Q·Kᵀ with grouped-query heads";
  let description = [{
    `scores[b, h, i, j] = sum_d q[b, h, i, d] * k[b, h / (Hq/Hkv), j, d]`.
    `q` is `[batch, Hq, q_len, d]`, `k` is `[batch, Hkv, kv_len, d]` with
    `Hq % Hkv == 0`: each group of `Hq/Hkv` consecutive query heads reads the
    same key head (grouped-query attention; Hkv = 1 is multi-query).
    No scaling is applied: see `attn.scale`.

    ```mlir
    %s = attn.qk %q, %k : (tensor<?x32x?x128xf32>, tensor<?x8x?x128xf32>)
                          -> tensor<?x32x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_ScaleOp : Attn_Op<"scale", [Pure, SameOperandsAndResultType]> {
  let summary = "multiply by a constant";
  let description = [{
    `y = x * scale`. Frameworks apply it to the scores or, folded, to the
    queries before `attn.qk`; both forms are recognized by the fusion.

    ```mlir
    %y = attn.scale %s {scale = 0.088388347648318433 : f64} : tensor<?x32x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, F64Attr:$scale);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  // scale 1 is the input; a scale of a scale is one scale.
  let hasFolder = 1;
}

def Attn_SoftcapOp : Attn_Op<"softcap", [Pure, SameOperandsAndResultType]> {
  let summary = "logit soft-capping cap·tanh(x / cap)";
  let description = [{
    Gemma 2's `attn_logit_softcapping`, applied to scaled scores before the
    mask.

    ```mlir
    %y = attn.softcap %s {cap = 5.0e+01 : f64} : tensor<?x8x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, F64Attr:$cap);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Attn_MaskOp : Attn_Op<"mask", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "set masked scores to -inf";
  let description = [{
    Replaces the scores `[batch, heads, q_len, kv_len]` of invisible keys by
    -inf. `kind` says which keys are visible (see `#attn.mask`), `window` is
    the sliding-window width (required with `sliding_window`, rejected
    otherwise), `align` places the causal diagonal when q_len != kv_len.
    With `kv_lengths` (`[batch]`, integer), keys `j >= kv_lengths[b]` are also
    masked (key padding); this combines with any kind. With `q_pos`, query
    row i sits at key position `q_pos + i` whatever `align` says (the rows
    of a tile of a longer query).

    ```mlir
    %m = attn.mask %s {kind = #attn.mask<sliding_window>, window = 4096 : i64}
        : tensor<?x32x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input,
                       Optional<Attn_IntTensor>:$kv_lengths,
                       Optional<Index>:$q_pos,
                       Attn_MaskKindAttr:$kind,
                       OptionalAttr<I64Attr>:$window,
                       DefaultValuedAttr<Attn_CausalAlignmentAttr,
                           "::mlir::attn::CausalAlignment::bottom_right">:$align);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`kv_lengths` `(` $kv_lengths^ `:` type($kv_lengths) `)`)?
    (`q_pos` `(` $q_pos^ `)`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Attn_MaskBiasOp : Attn_Op<"mask_bias", [Pure,
    AllTypesMatch<["like", "result"]>]> {
  let summary = "materialized additive mask: 0 where visible, -inf elsewhere";
  let description = [{
    The mask a framework materializes and adds to the scores
    (`scores + mask`): a tensor shaped like the scores `like`
    (`[batch, heads, q_len, kv_len]`) holding 0 for visible keys and -inf for
    masked ones, with `kind`, `window` and `align` as in `attn.mask`. The
    fusion recognizes `arith.addf %scores, (attn.mask_bias %scores)`.

    ```mlir
    %bias = attn.mask_bias %s {kind = #attn.mask<causal>} : tensor<?x8x?x?xf32>
    %m = arith.addf %s, %bias : tensor<?x8x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$like, Attn_MaskKindAttr:$kind,
                       OptionalAttr<I64Attr>:$window,
                       DefaultValuedAttr<Attn_CausalAlignmentAttr,
                           "::mlir::attn::CausalAlignment::bottom_right">:$align);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$like attr-dict `:` type($like)";
  let hasVerifier = 1;
}

def Attn_MaskCondOp : Attn_Op<"mask_cond", [Pure]> {
  let summary = "materialized boolean mask: true where visible";
  let description = [{
    The boolean form of `attn.mask_bias`, for masks written as
    `torch.where(mask, scores, -inf)`: `i1` true for visible keys. The fusion
    recognizes `arith.select (attn.mask_cond %s), %s, <-inf splat>`.

    ```mlir
    %c = attn.mask_cond %s {kind = #attn.mask<causal>}
        : tensor<?x8x?x?xf32> -> tensor<?x8x?x?xi1>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$like, Attn_MaskKindAttr:$kind,
                       OptionalAttr<I64Attr>:$window,
                       DefaultValuedAttr<Attn_CausalAlignmentAttr,
                           "::mlir::attn::CausalAlignment::bottom_right">:$align);
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = "$like attr-dict `:` type($like) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_SoftmaxOp : Attn_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax over the last dimension";
  let description = [{
    `y = exp(x - max(x)) / sum(exp(x - max(x)))` along the last dimension. A
    row whose entries are all -inf (every key masked) yields zeros rather than
    NaN, so that the unfused chain and `attn.sdpa` agree on fully masked rows.

    ```mlir
    %p = attn.softmax %s : tensor<?x32x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Attn_SinkSoftmaxOp : Attn_Op<"sink_softmax", [Pure]> {
  let summary = "softmax over the last dimension with a learned sink logit";
  let description = [{
    Attention sinks (gpt-oss): each row of the scores `[batch, H, q_len,
    kv_len]` is extended by one more logit, `sinks[h]` of its head, the
    softmax taken over the extended row, and the sink's probability dropped:
    `y = exp(x - m) / (sum(exp(x - m)) + exp(sinks[h] - m))` with `m =
    max(max(x), sinks[h])`. The rows sum to less than 1; a row whose scores
    are all -inf yields zeros (a sink of -inf is no sink).

    ```mlir
    %p = attn.sink_softmax %s, %sinks : (tensor<?x64x?x?xf32>, tensor<64xf32>) -> tensor<?x64x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$sinks);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $sinks attr-dict `:` `(` type($input) `,` type($sinks) `)`
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_PVOp : Attn_Op<"pv", [Pure]> {
  let summary = "probabilities times values, with grouped-query heads";
  let description = [{
    `out[b, h, i, e] = sum_j p[b, h, i, j] * v[b, h / (Hq/Hkv), j, e]`, with
    `p` `[batch, Hq, q_len, kv_len]` and `v` `[batch, Hkv, kv_len, dv]`.

    ```mlir
    %o = attn.pv %p, %v : (tensor<?x32x?x?xf32>, tensor<?x8x?x128xf32>)
                          -> tensor<?x32x?x128xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$probs, Attn_FloatTensor:$value);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $probs `,` $value attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_RelativePositionBiasOp : Attn_Op<"relative_position_bias",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "add T5's bucketed relative-position bias to the scores";
  let description = [{
    `scores[b, h, i, j] + table[bucket(j - i'), h]` with the query at key
    position `i' = i + kv_len - q_len` with `align = bottom_right` (the
    default, as T5 decoding with a cache places it) or `i' = i` with
    `align = top_left` (the same when q_len = kv_len), or `i' = q_pos + i`
    with a `q_pos` operand, where `bucket` is T5's
    log-spaced bucketing of the relative position into `num_buckets` buckets
    (half of them per direction when `bidirectional`) saturating at
    `max_distance`. `table` is `[num_buckets, heads]` (T5's
    `relative_attention_bias.weight`, shared by all layers of a stack).

    ```mlir
    %b = attn.relative_position_bias %s, %table
        {bidirectional, max_distance = 128 : i64, num_buckets = 32 : i64}
        : tensor<?x8x?x?xf32>, tensor<32x8xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$table,
                       Optional<Index>:$q_pos,
                       I64Attr:$num_buckets, I64Attr:$max_distance,
                       UnitAttr:$bidirectional,
                       DefaultValuedAttr<Attn_CausalAlignmentAttr,
                           "::mlir::attn::CausalAlignment::bottom_right">:$align);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $table (`q_pos` `(` $q_pos^ `)`)? attr-dict `:` type($input)
    `,` type($table)
  }];
  let hasVerifier = 1;
}

def Attn_SigmoidGateOp : Attn_Op<"sigmoid_gate",
    [Pure, SameOperandsAndResultType]> {
  let summary = "output gating x * sigmoid(gate)";
  let description = [{
    Qwen3-Next gates the attention output per element with a second half of
    its query projection: `attn_output * sigmoid(gate)`.

    ```mlir
    %g = attn.sigmoid_gate %o, %gate : tensor<?x16x?x256xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$gate);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input `,` $gate attr-dict `:` type($result)";
}

def Attn_L2NormOp : Attn_Op<"l2_norm", [Pure, SameOperandsAndResultType]> {
  let summary = "L2 normalization over the last dimension";
  let description = [{
    `y = x · rsqrt(Σ x² + epsilon)` over the last dimension, as
    flash-linear-attention's `l2norm` (and transformers' Qwen3-Next, which
    applies it to q and k before the gated delta rule, epsilon 1e-6).

    ```mlir
    %y = attn.l2_norm %q {epsilon = 1.0e-06 : f64} : tensor<?x16x?x128xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, F64Attr:$epsilon);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Attn_CausalConv1dOp : Attn_Op<"causal_conv1d", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "causal depthwise 1-D convolution with its state, then SiLU";
  let description = [{
    Gated DeltaNet's short convolution over the channels of q, k and v
    (transformers' `Qwen3NextGatedDeltaNet.conv1d`, kernel
    `linear_conv_kernel_dim`, no bias, followed by SiLU): `input` is
    `[batch, seq, C]`, `weight` `[C, K]` (the checkpoint's `[C, 1, K]`
    squeezed), and for channel c at token t

        y[t, c] = silu(Σ_{i<K} w[c, i] · x[t − K + 1 + i, c] + bias[c])

    (Mamba2's convolution over x, B and C has the optional `bias` `[C]`),
    where positions before the sequence read the optional `state`
    `[batch, C, K − 1]` (the last K − 1 inputs of the previous call, oldest
    first; zeros without it). The second result is the new state: the last
    K − 1 inputs of `state ++ input`, so decode can follow prefill.

    ```mlir
    %y, %s = attn.causal_conv1d %x, %w state(%s0 : tensor<?x8192x3xf32>)
        : (tensor<?x?x8192xf32>, tensor<8192x4xf32>)
          -> (tensor<?x?x8192xf32>, tensor<?x8192x3xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Optional<Attn_FloatTensor>:$bias,
                       Optional<Attn_FloatTensor>:$state);
  let results = (outs Attn_FloatTensor:$result,
                      Attn_FloatTensor:$final_state);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`state` `(` $state^ `:` type($state) `)`)? attr-dict
    `:` `(` type($input) `,` type($weight) `)` `->` `(` type($result) `,`
    type($final_state) `)`
  }];
  let hasVerifier = 1;
}

def Attn_GatedDeltaGatesOp : Attn_Op<"gated_delta_gates", [Pure]> {
  let summary = "Gated DeltaNet's decay gate and beta from their projections";
  let description = [{
    `g = −exp(A_log) · softplus(a + dt_bias)` (the log of the state's decay,
    ≤ 0) and `beta = sigmoid(b)`, per token and value head, as transformers'
    `Qwen3NextGatedDeltaNet` computes them (in f32): `a` and `b` are
    `[batch, seq, Hv]` (from `in_proj_ba`), `A_log` and `dt_bias` `[Hv]`.
    The results are laid out `[batch, Hv, seq]`, as `attn.gated_delta_rule`
    takes them. With `beta_is_dt` (Mamba2: `a` is in_proj's dt) beta is
    `dt = softplus(a + dt_bias)` itself, the factor of the gate
    `g = −exp(A_log) · dt`, and `b` is not read; `dt_min` / `dt_max` then
    clamp dt (Mamba2's `time_step_limit`) before both use it.

    With a per-channel gate result `[batch, Hv, seq, d_k]` (Kimi Delta
    Attention: flash-linear-attention's `fused_kda_gate`) `a` is
    `[batch, seq, Hv · d_k]` (f_b_proj(f_a_proj(x))) and `dt_bias`
    `[Hv · d_k]`: `g[b, h, t, c] = −exp(A_log[h]) · softplus(a[b, t, h·d_k + c]
    + dt_bias[h·d_k + c])`, one decay per key channel; `b` stays
    `[batch, seq, Hv]` and beta `[batch, Hv, seq]`.

    ```mlir
    %g, %beta = attn.gated_delta_gates %a, %b, %A_log, %dt_bias
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>,
           tensor<64xf32>) -> (tensor<?x64x?xf32>, tensor<?x64x?xf32>)
    %gk, %bk = attn.gated_delta_gates %f, %b, %A_log, %dt_bias
        : (tensor<?x?x4096xf32>, tensor<?x?x32xf32>, tensor<32xf32>,
           tensor<4096xf32>) -> (tensor<?x32x?x128xf32>, tensor<?x32x?xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$a, Attn_FloatTensor:$b,
                       Attn_FloatTensor:$a_log, Attn_FloatTensor:$dt_bias,
                       UnitAttr:$beta_is_dt, OptionalAttr<F64Attr>:$dt_min,
                       OptionalAttr<F64Attr>:$dt_max);
  let results = (outs Attn_FloatTensor:$gate, Attn_FloatTensor:$beta);
  let assemblyFormat = [{
    $a `,` $b `,` $a_log `,` $dt_bias attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_GatedRMSNormOp : Attn_Op<"gated_rms_norm", [Pure]> {
  let summary = "RMSNorm gated by silu(z) or sigmoid(z) (linear attention's output norm)";
  let description = [{
    `y = x / sqrt(mean(x²) + epsilon) · w · silu(z)` over the last dimension
    (transformers' `Qwen3NextRMSNormGated`: a plain weight, no unit offset);
    `gate` has the shape of `input`, `weight` the size of its last dim. With
    `gate_first` the gate comes before the norm (Mamba2's
    `MambaRMSNormGated`, norm_before_gate false): `u = x · silu(z)`,
    `y = u / sqrt(mean(u²) + epsilon) · w`. With `sigmoid` the gate is
    `sigmoid(z)` instead of `silu(z)` (Kimi Delta Attention's `o_norm`,
    flash-linear-attention's `FusedRMSNormGated(activation="sigmoid")`).
    The weight may also be `[groups, n]` over an input `[..., groups, n]`:
    each group of n channels normalized on its own, one weight per channel
    (Mamba2's grouped norm, `group_size = intermediate / n_groups`:
    Nemotron-H, Zamba2).

    ```mlir
    %y = attn.gated_rms_norm %o, %z, %w {epsilon = 1.0e-06 : f64}
        : (tensor<?x?x64x128xf32>, tensor<?x?x64x128xf32>, tensor<128xf32>)
          -> tensor<?x?x64x128xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$gate,
                       Attn_FloatTensor:$weight, F64Attr:$epsilon,
                       UnitAttr:$gate_first, UnitAttr:$sigmoid);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gate `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_SkipAddOp : Attn_Op<"skip_add", [Pure]> {
  let summary = "add a per-head multiple of the input (Mamba2's D skip)";
  let description = [{
    `y[b, h, t, :] = input[b, h, t, :] + d[h] · x[b, h, t, :]` over
    `[batch, heads, seq, head_dim]` tensors, `d` `[heads]`: Mamba2 adds
    `D · x` to the SSD's output (transformers' `D_residual`).

    ```mlir
    %y = attn.skip_add %o, %x, %d
        : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<8xf32>)
          -> tensor<?x8x?x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$x,
                       Attn_FloatTensor:$d);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $x `,` $d attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_AddOp : Attn_Op<"add", [Pure, Commutative, SameOperandsAndResultType]> {
  let summary = "elementwise sum (the residual connection)";
  let description = [{
    ```mlir
    %y = attn.add %x, %attn_out : tensor<?x?x4096xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$lhs, Attn_FloatTensor:$rhs);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Fused level
//===----------------------------------------------------------------------===//

def Attn_SDPAOp : Attn_Op<"sdpa", [Pure, AttrSizedOperandSegments,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<TilingInterface,
        ["getIterationDomain", "getLoopIteratorTypes",
         "getTiledImplementation", "getResultTilePosition",
         "generateResultTileValue"]>]> {
  let summary = "fused scaled-dot-product attention";
  let description = [{
    `softmax(mask(softcap(scale · Q·Kᵀ))) · V` as one op, with the semantics
    of the graph chain `attn.qk`, `attn.scale`, `attn.softcap`, `attn.mask`,
    `attn.softmax`, `attn.pv`: `q` is `[batch, Hq, q_len, d]`, `k` is
    `[batch, Hkv, kv_len, d]`, `v` is `[batch, Hkv, kv_len, dv]`, the result
    `[batch, Hq, q_len, dv]`, written into the destination `outs(%init)`
    (destination-passing style: `init`'s values are not read). The
    grouped-query group size is `Hq / Hkv`, read from the static head counts
    (`getGroupSize()`). Query rows that see no key produce zeros. Nothing of
    size q_len × kv_len is an operand or a result: lowering chooses whether
    such a matrix ever exists. With `relative_bias` and a `bias_table`
    operand (`[num_buckets, Hq]`), T5's relative-position bias is added to
    the scaled scores before the mask. With a `sinks` operand (`[Hq]`, the
    query's element type), each row's softmax has one more logit, its
    head's sink, whose probability is dropped (`attn.sink_softmax`).

    Query row i sits at key position `i + kv_len - q_len` (`align =
    bottom_right`) or `i` (`top_left`); with a `q_pos` operand, at
    `q_pos + i` whatever `align` says. Tiling along the query rows sets it:
    a tile of rows `[i0, i0 + n)` of a longer query is the same attention
    with `q_pos` = the position of row i0.

    The op implements `TilingInterface` over the result's dims (batch, query
    heads, query rows, value dims; all parallel), so upstream tiling
    (`transform.structured.tile_using_forall`, `scf::tileUsingSCF`) slices
    it: a query-head tile takes the key/value heads of its group(s), which
    needs a head tile that is a multiple or a divisor of the group size.

    ```mlir
    %o = attn.sdpa %q, %k, %v outs(%init : tensor<?x32x?x128xf32>)
        {mask = #attn.mask<causal>, scale = 0.088388347648318433 : f64}
        : (tensor<?x32x?x128xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>)
          -> tensor<?x32x?x128xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value,
                       Optional<Attn_IntTensor>:$kv_lengths,
                       Optional<Attn_FloatTensor>:$bias_table,
                       Optional<Index>:$q_pos,
                       Optional<Attn_FloatTensor>:$sinks,
                       Attn_FloatTensor:$init,
                       F64Attr:$scale,
                       OptionalAttr<Attn_RelativeBiasAttr>:$relative_bias,
                       DefaultValuedAttr<Attn_MaskKindAttr,
                           "::mlir::attn::MaskKind::none">:$mask,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap,
                       DefaultValuedAttr<Attn_CausalAlignmentAttr,
                           "::mlir::attn::CausalAlignment::bottom_right">:$align);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`kv_lengths` `(` $kv_lengths^ `:` type($kv_lengths) `)`)?
    (`bias_table` `(` $bias_table^ `:` type($bias_table) `)`)?
    (`q_pos` `(` $q_pos^ `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    `outs` `(` $init `:` type($init) `)`
    attr-dict `:` `(` type($query) `,` type($key) `,` type($value) `)`
    `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// Query heads per key/value head (1 for MHA, Hq for MQA).
    int64_t getGroupSize();
    /// An empty destination [batch, Hq, q_len, dv] for `query` and `value`.
    static Value createEmptyInit(OpBuilder &b, Location loc, Value query,
                                 Value value);
    MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
  let hasVerifier = 1;
}

def Attn_PagedSDPAOp : Attn_Op<"paged_sdpa", [Pure, AttrSizedOperandSegments,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<TilingInterface,
        ["getIterationDomain", "getLoopIteratorTypes",
         "getTiledImplementation", "getResultTilePosition"]>]> {
  let summary = "fused attention over a paged KV cache";
  let description = [{
    `attn.sdpa` whose keys and values live in pages of a pool, as serving
    engines keep their KV cache (vLLM, FlashInfer). `key_cache` is
    `[num_pages, Hkv, page_size, d]` and `value_cache` `[num_pages, Hkv,
    page_size, dv]`: one page holds `page_size` consecutive tokens of every
    KV head, each head's rows contiguous (FlashInfer's "HND" layout, so a
    tile of one head is a contiguous stream). Sequence b has
    `kv_lengths[b]` tokens; its token j is row `j % page_size` of page
    `block_table[b, j / page_size]` (`block_table` is `[batch,
    max_pages]`; entries past the sequence's last page are not read).
    `query` `[batch, Hq, q_len, d]` holds the sequence's last q_len tokens
    (decode: 1; speculative or chunked prefill: more): query row i sits at
    key position `kv_lengths[b] - q_len + i` (bottom-right, per sequence),
    which the causal and sliding-window masks use. The result `[batch, Hq,
    q_len, dv]` is written into `outs(%init)`; a row that sees no key is 0.
    The caches may be stored in a narrower float type than the query (bf16
    or f16 K/V with an f32 query: the arithmetic is the query's).

    With a `q_pos` operand (`[batch]`, integer), query row i of sequence b
    sits at key position `q_pos[b] + i` instead (any integer: a query
    before every key of the cache sees none of them under a causal mask):
    the cache then holds a range of the sequence that need not end at the
    query, as a shard of a context-parallel KV cache does, its keys
    numbered from 0 at the range's first token. With `range_start` too
    (`[batch]`, integer, only with `q_pos`), the range's first key is token
    `range_start[b]` of its sequence: the chunked mask, the one mask not
    invariant under a shift of both positions, cuts its chunks at multiples
    of `window` in the sequence's own positions (key j of the range is
    token `range_start[b] + j`) rather than the range's. With a second destination
    `stats_init` (`[batch, Hq, q_len, 2]`, f32, like the query), the op
    also returns each row's softmax statistics `stats[..., 0] = m`, the
    largest score it saw, and `stats[..., 1] = l = Σ_j exp(s_j - m)` (`-inf`
    and 0, with an output row of 0, for a row that saw no key): the partial
    result of a key range, which merges with those of the other ranges
    exactly by `M = max_r m_r`, `o = Σ_r e^(m_r - M) l_r o_r / Σ_r e^(m_r -
    M) l_r` (FlashAttention's split-K and ring attention's merge; the pair
    keeps m exact where a single log-sum-exp in f32 would round large
    logits). With `sinks` (`[Hq]`), each row's softmax also counts its
    head's sink logit (`attn.sink_softmax`), once: in `stats` the sink is
    part of (m, l) like one more key, so a caller that merges ranges passes
    the real sinks to one range and -inf (no sink) to the others.

    The op implements `TilingInterface` over the result's dims (batch,
    query heads, query rows, value dims; all parallel), as `attn.sdpa`: a
    tile reads the whole caches through its rows of the block table, the
    KV heads of its query heads' group(s), and keeps its rows' positions (a
    tile of some of the rows gets `q_pos` = its first row's position).

    ```mlir
    %o = attn.paged_sdpa %q, %kc, %vc, %table, %lens
        outs(%init : tensor<?x32x?x128xf32>)
        {mask = #attn.mask<causal>, scale = 0.088388347648318433 : f64}
        : (tensor<?x32x?x128xf32>, tensor<?x8x?x128xf32>,
           tensor<?x8x?x128xf32>, tensor<?x?xi32>, tensor<?xi64>)
          -> tensor<?x32x?x128xf32>

    %o, %stats = attn.paged_sdpa %q, %kc, %vc, %table, %lens
        q_pos(%pos : tensor<?xi64>)
        outs(%init : tensor<?x32x?x128xf32>, %sinit : tensor<?x32x?x2xf32>)
        {mask = #attn.mask<causal>, scale = 0.088388347648318433 : f64}
        : (tensor<?x32x?x128xf32>, tensor<?x8x?x128xf32>,
           tensor<?x8x?x128xf32>, tensor<?x?xi32>, tensor<?xi64>)
          -> tensor<?x32x?x128xf32>, tensor<?x32x?x2xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key_cache,
                       Attn_FloatTensor:$value_cache,
                       Attn_IntTensor:$block_table,
                       Attn_IntTensor:$kv_lengths,
                       Optional<Attn_IntTensor>:$q_pos,
                       Optional<Attn_IntTensor>:$range_start,
                       Optional<Attn_FloatTensor>:$sinks,
                       Attn_FloatTensor:$init,
                       Optional<Attn_FloatTensor>:$stats_init,
                       F64Attr:$scale,
                       DefaultValuedAttr<Attn_MaskKindAttr,
                           "::mlir::attn::MaskKind::none">:$mask,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs Attn_FloatTensor:$result,
                      Optional<Attn_FloatTensor>:$stats);
  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `,` $block_table `,` $kv_lengths
    (`q_pos` `(` $q_pos^ `:` type($q_pos) `)`)?
    (`range_start` `(` $range_start^ `:` type($range_start) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    `outs` `(` $init `:` type($init)
    (`,` $stats_init^ `:` type($stats_init))? `)`
    attr-dict `:` `(` type($query) `,` type($key_cache) `,`
    type($value_cache) `,` type($block_table) `,` type($kv_lengths) `)`
    `->` type($result) (`,` type($stats)^)?
  }];
  let extraClassDeclaration = [{
    /// Query heads per key/value head.
    int64_t getGroupSize();
    /// The destinations: `init`, then `stats_init` when present (the last
    /// operands).
    MutableOperandRange getDpsInitsMutable() {
      unsigned n = getStatsInit() ? 2 : 1;
      return MutableOperandRange(getOperation(),
                                 getOperation()->getNumOperands() - n, n);
    }
  }];
  let hasVerifier = 1;
}

def Attn_LatentAttentionOp : Attn_Op<"latent_attention", [Pure]> {
  let summary = "multi-head latent attention over a cache of latent rows";
  let description = [{
    The attention core of DeepSeek-V2/V3's multi-head latent attention
    (transformers' `DeepseekV3Attention` between its projections and
    `o_proj`), over a cache that holds one row per token shared by all
    heads: `cache` is `[batch, kv_len, r + dr]`, each row the token's
    RMS-normed latent (`r` = kv_lora_rank features) followed by its rotary
    key (`dr` = qk_rope_head_dim features, rotated). The queries come per
    head in two parts, `q_nope` `[batch, H, q_len, dn]` and `q_rope`
    `[batch, H, q_len, dr]` (rotated). `kv_b_weight` is the checkpoint's
    `kv_b_proj.weight`, `[H·(dn + dv), r]`: rows `h·(dn+dv) ..` give head
    h's key part W_UK[h] (`dn` rows), then its value W_UV[h] (`dv` rows).
    The semantics are those of the eager (expanded) computation: for head
    h, key j is `[W_UK[h]·latent_j, rope_j]`, value j is
    `W_UV[h]·latent_j`, and the result `[batch, H, q_len, dv]` is
    `softmax(scale · [q_nope, q_rope]·keyᵀ, masked) · value`, query row i
    at key position `i + kv_len - q_len` (bottom-right, as decode after a
    prefill), with the causal mask when `mask` says so and keys at or past
    `kv_lengths[b]` masked when that operand is given.

    Two forms compute it, and passes produce them:
    `attn-expand-latent-attention` (every cached latent through kv_b_proj,
    then `attn.sdpa` with D = dn + dr, Dv = dv: the work of prefill) and
    `attn-absorb-latent-attention` (q_nope·W_UK[h] into the latent space,
    then one `attn.sdpa` of all H heads over the cache rows with D = r + dr
    whose values are the first r features of the same rows, read in place,
    then ·W_UV[h]ᵀ: the work of decode); `attn-lower-latent-attention`
    emits both under an `scf.if` on the query and key lengths, taking the
    form that does less work.

    ```mlir
    %o = attn.latent_attention %qn, %qr, %cache, %wkvb
        {mask = #attn.mask<causal>, scale = 0.1352337788608801 : f64}
        : (tensor<?x128x?x128xf32>, tensor<?x128x?x64xf32>,
           tensor<?x?x576xf32>, tensor<32768x512xf32>)
          -> tensor<?x128x?x128xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$q_nope, Attn_FloatTensor:$q_rope,
                       Attn_FloatTensor:$cache, Attn_FloatTensor:$kv_b_weight,
                       Optional<Attn_IntTensor>:$kv_lengths,
                       F64Attr:$scale,
                       DefaultValuedAttr<Attn_MaskKindAttr,
                           "::mlir::attn::MaskKind::none">:$mask);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $q_nope `,` $q_rope `,` $cache `,` $kv_b_weight
    (`kv_lengths` `(` $kv_lengths^ `:` type($kv_lengths) `)`)?
    attr-dict `:` `(` type($q_nope) `,` type($q_rope) `,` type($cache) `,`
    type($kv_b_weight) `)` `->` type($result)
  }];
  let extraClassDeclaration = [{
    int64_t getNumHeads() { return getQNope().getType().getDimSize(1); }
    int64_t getNopeDim() { return getQNope().getType().getDimSize(3); }
    int64_t getRopeDim() { return getQRope().getType().getDimSize(3); }
    int64_t getLatentDim() {
      return getKvBWeight().getType().getDimSize(1);
    }
    int64_t getValueDim() { return getResult().getType().getDimSize(3); }
  }];
  let hasVerifier = 1;
}

def Attn_GatedDeltaRuleOp : Attn_Op<"gated_delta_rule", [Pure,
    AttrSizedOperandSegments, DestinationStyleOpInterface]> {
  let summary = "fused gated delta rule (linear attention, Gated DeltaNet)";
  let description = [{
    The recurrence of Gated DeltaNet's linear attention (transformers'
    `Qwen3NextGatedDeltaNet`, after its projections, convolution and L2
    norms) as one op. Per batch and value head, with a state S of shape
    `[d_k, d_v]` (the `initial_state` operand, else zeros), for each token t
    in order:

        S   <- S · exp(g_t)
        S   <- S + k_t ⊗ β_t · (v_t − Sᵀ k_t)
        o_t  = Sᵀ (scale · q_t)

    `query` and `key` are `[batch, Hk, seq, d_k]`, `value` is
    `[batch, Hv, seq, d_v]`, `gate` (g, the log of the decay, ≤ 0 in the
    model) and `beta` are `[batch, Hv, seq]`. With a per-channel gate
    `[batch, Hv, seq, d_k]` (Kimi Delta Attention, KDA) the decay is
    `S[i, :] <- S[i, :] · exp(g_t[i])`, one factor per key channel i (row of
    the state), instead of one per token.

    With `no_delta` the update has no delta correction:
    `S <- S · exp(g_t) + k_t ⊗ β_t · v_t` (Mamba2's SSD: k = B, q = C,
    v = x, β = dt, g = dt · A, scale 1; its D skip is outside the op, and
    `n_groups` of B/C shared by the heads are the Hk query/key heads).

    Value head h reads query/key
    head `h / (Hv / Hk)` (the grouped-query sharing of linear attention),
    so Hv must be a static multiple of Hk. The results
    are the output `[batch, Hv, seq, d_v]` and the final state
    `[batch, Hv, d_k, d_v]`, written into the destinations
    `outs(%out_init, %state_init)` (their values are not read). The work
    per token, and the state, are constant in the sequence length.

    With `lengths` (`[batch]`, integer), sequence b holds its first
    `lengths[b]` tokens (clamped to [0, seq]) and the rest is padding (a
    batch of different lengths, right-padded): padding tokens leave the
    state unchanged (the final state is the state after the sequence's own
    tokens) and their outputs are 0.

    ```mlir
    %o, %s = attn.gated_delta_rule %q, %k, %v, %g, %beta
        outs(%oi, %si : tensor<?x64x?x128xf32>, tensor<?x64x128x128xf32>)
        {scale = 0.088388347648318433 : f64}
        : (tensor<?x32x?x128xf32>, tensor<?x32x?x128xf32>,
           tensor<?x64x?x128xf32>, tensor<?x64x?xf32>, tensor<?x64x?xf32>)
          -> (tensor<?x64x?x128xf32>, tensor<?x64x128x128xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value, Attn_FloatTensor:$gate,
                       Attn_FloatTensor:$beta,
                       Optional<Attn_FloatTensor>:$initial_state,
                       Optional<Attn_IntTensor>:$lengths,
                       Attn_FloatTensor:$out_init, Attn_FloatTensor:$state_init,
                       F64Attr:$scale, UnitAttr:$no_delta);
  let results = (outs Attn_FloatTensor:$output, Attn_FloatTensor:$final_state);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $gate `,` $beta
    (`initial_state` `(` $initial_state^ `:` type($initial_state) `)`)?
    (`lengths` `(` $lengths^ `:` type($lengths) `)`)?
    `outs` `(` $out_init `,` $state_init `:` type($out_init) `,`
        type($state_init) `)`
    attr-dict `:` `(` type($query) `,` type($key) `,` type($value) `,`
        type($gate) `,` type($beta) `)`
    `->` `(` type($output) `,` type($final_state) `)`
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(),
                                 getOperation()->getNumOperands() - 2, 2);
    }
    /// A per-channel decay (KDA): gate [batch, Hv, seq, d_k].
    bool hasChannelGate() { return getGate().getType().getRank() == 4; }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tiled level
//===----------------------------------------------------------------------===//

def Attn_OnlineAttentionOp : Attn_Op<"online_attention", [
    AttrSizedOperandSegments, DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<TilingInterface,
        ["getIterationDomain", "getLoopIteratorTypes",
         "getTiledImplementation", "getResultTilePosition"]>,
    DeclareOpInterfaceMethods<PartialReductionOpInterface,
        ["generateInitialTensorForPartialReduction", "tileToPartialReduction",
         "mergeReductions", "getPartialResultTilePosition"]>]> {
  let summary = "fold one key/value tile into an online-softmax state";
  let description = [{
    One step of FlashAttention's online softmax. `query` is `[..., M, d]`:
    any leading dims (for example the query heads of one grouped-query group)
    share the single key tile `[N, d]` and value tile `[N, dv]`, which is how
    the tiled form proves that a K/V tile is loaded once per group. The state
    is the un-normalized accumulator `acc` `[..., M, dv]`, the running row
    maximum `max` `[..., M]` (start at -inf) and running row sum `sum`
    `[..., M]` (start at 0), all in natural-log units.

    Query row m sits at position `q_pos + m` and key n at `kv_pos + n`, both
    in key coordinates (the causal alignment offset is already added to
    `q_pos`); `mask`/`window` mask keys as in `attn.mask`. With
    `range_start`, key coordinate 0 is the sequence's token `range_start`
    (a context-parallel shard of a sequence): the chunked mask's chunks
    start at multiples of `window` in the sequence's positions
    (`range_start + q_pos + m`); the other masks and the bias depend on the
    difference of the positions only and ignore it. Key padding
    never reaches this op: the tiling pass cuts the key loop at the
    sequence's length. With `mask = none` the op needs no mask arithmetic at
    all, which is how fully visible tiles are expressed. With `relative_bias`,
    `bias_table` `[num_buckets, heads]` is indexed by the relative position
    (`kv_pos + n - q_pos - m`) and the head `head_offset + h` of the leading
    query dim.

    The op is in destination-passing style with `acc`, `max` and `sum` as
    its destinations: on tensors it returns their updated values; on
    buffers (after bufferization) it updates them in place and returns
    nothing. The CPU micro-kernel (`attn-cpu-micro-kernel`) lowers the
    buffer form.

    On tensors the op implements `TilingInterface` over `[lead..., M, N]`:
    the query's leading dims and rows are parallel, the keys a reduction.
    Since the op folds its keys into its destinations, a loop over key
    tiles that carries `acc`, `max` and `sum` (`scf::tileUsingSCF`,
    `transform.structured.tile_using_for` with a tile size on the last dim)
    is the online softmax itself. A tile's rows start at `q_pos + m0`, its
    keys at `kv_pos + n0`, its bias heads at `head_offset + h0`; a paged
    tile's page list starts at the page of its first key. It also
    implements `PartialReductionOpInterface` for split-K
    (`transform.structured.tile_reduction_using_forall`, the
    outer-parallel strategy): each split folds its keys into a state of its
    own from the identity (acc 0, max -inf, sum 0; the partial states carry
    the split as their last dim), and a log-sum-exp merge folds the splits'
    states and the op's destinations into its results.

    For each row: `s = softcap(scale · q·kᵀ)` with invisible keys at -inf,
    `m' = max(max, rowmax(s))`, `p = exp(s - m')`,
    `sum' = sum·exp(max - m') + rowsum(p)`,
    `acc' = acc·exp(max - m') + p·v`; a row that has seen no visible key keeps
    `max = -inf`, `sum = 0`, `acc = 0`.

    `pages(%pages : type, %num_keys)` makes the tile a run of pages of a
    paged KV cache: `key` is then one KV head's page pool `[num_pages,
    page_size, head_dim]` and `value` `[num_pages, page_size, head_dim_v]`
    (any strides, rows contiguous), `%pages` (1-D, integer or index) lists
    page numbers starting with the page that holds position `kv_pos`, and
    the tile's `num_keys` keys are positions `kv_pos + n`: key n is row
    `(kv_pos + n) % page_size` of page `pages[(kv_pos + n) / page_size -
    kv_pos / page_size]`. One tile spans as many pages as the tiling
    chooses (a page of 16 tokens is too short a tile: the per-tile softmax
    and rescale would dominate). Pages listed past the tile's last key
    (`%pages` may run to the end of the key range) are not read, only
    prefetched: a lowering may load ahead from them.

    ```mlir
    %a, %m, %l = attn.online_attention %qt, %kt, %vt, %acc, %max, %sum,
        %qpos, %kvpos {mask = #attn.mask<causal>, scale = 0.125 : f64}
        : (tensor<4x64x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>,
           tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
          -> (tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatShaped:$query, Attn_FloatShaped:$key,
                       Attn_FloatShaped:$value, Attn_FloatShaped:$acc,
                       Attn_FloatShaped:$max, Attn_FloatShaped:$sum,
                       Index:$q_pos, Index:$kv_pos,
                       Optional<Attn_FloatShaped>:$bias_table,
                       Optional<Index>:$head_offset,
                       Optional<Attn_IntShaped>:$pages,
                       Optional<Index>:$num_keys,
                       Optional<Index>:$range_start,
                       F64Attr:$scale,
                       OptionalAttr<Attn_RelativeBiasAttr>:$relative_bias,
                       DefaultValuedAttr<Attn_MaskKindAttr,
                           "::mlir::attn::MaskKind::none">:$mask,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs Variadic<Attn_FloatTensor>:$results);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $acc `,` $max `,` $sum `,` $q_pos `,`
    $kv_pos
    (`bias_table` `(` $bias_table^ `:` type($bias_table) `,` $head_offset `)`)?
    (`pages` `(` $pages^ `:` type($pages) `,` $num_keys `)`)?
    (`range_start` `(` $range_start^ `)`)?
    attr-dict `:` `(` type($query) `,` type($key) `,`
    type($value) `,` type($acc) `,` type($max) `,` type($sum) `)`
    (`->` `(` type($results)^ `)`)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(), /*start=*/3, /*length=*/3);
    }
    /// The updated state (tensor form only).
    Value getNewAcc() { return getResult(0); }
    Value getNewMax() { return getResult(1); }
    Value getNewSum() { return getResult(2); }
    /// True for the buffer form (memref operands, no results).
    bool isBufferForm() { return hasPureBufferSemantics(); }
    /// True when the key and value are page pools read through `pages`.
    bool isPaged() { return getPages() != nullptr; }
  }];
  let hasVerifier = 1;
}

def Attn_GatedDeltaChunkOp : Attn_Op<"gated_delta_chunk", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<TilingInterface,
        ["getIterationDomain", "getLoopIteratorTypes",
         "getTiledImplementation", "getResultTilePosition"]>]> {
  let summary = "advance one value head's gated-delta state over one chunk";
  let description = [{
    The tiled form of `attn.gated_delta_rule` for one (batch, value head):
    the `n` tokens of one chunk (`query`, `key` `[n, d_k]`, `value`
    `[n, d_v]`, `gate`, `beta` `[n]`) advance the state `[d_k, d_v]` and
    write their outputs `[n, d_v]`, with the recurrence of
    `attn.gated_delta_rule` (`o_t = Sᵀ(scale · q_t)` after the update).
    `n` may be dynamic (the last chunk of a sequence is short). A gate
    `[n, d_k]` is a per-channel decay (KDA, see `attn.gated_delta_rule`):
    for now in the recurrent form only (the CPU kernel refuses the chunked
    form of it). With `no_delta` the update has no delta correction (Mamba2's
    SSD, see `attn.gated_delta_rule`).

    Two forms compute the same thing:
    - chunked (the default): the WY/UT form of flash-linear-attention and
      transformers' `torch_chunk_gated_delta_rule`. With `c` the gate's
      prefix sum and `Γ[i,j] = exp(c_i − c_j)` for `j ≤ i` (0 above the
      diagonal): `T = (I + strict_lower(diag(β)·K·Kᵀ ⊙ Γ))⁻¹` by forward
      substitution, `U = T·diag(β)·V`, `W = T·diag(β·exp(c))·K`,
      `V' = U − W·S`, `O = diag(exp(c))·Q·S + (Q·Kᵀ ⊙ Γ)·V'`,
      `S ← exp(c_n)·S + (diag(exp(c_n − c))·K)ᵀ·V'` (Q already scaled);
      with `no_delta`, `T = I` and `W = 0`: `V' = diag(β)·V` (the chunked
      SSD of Mamba2);
    - `recurrent`: token by token (decode and short chunks), as the
      definition reads.

    Destination-passing style with `out` and `state` as destinations: on
    tensors it returns the outputs and the new state (`state`'s value is
    the state before the chunk; `out`'s is not read); on buffers it writes
    both in place and returns nothing. The CPU micro-kernel lowers the
    buffer form.

    With `initial_state` (`[d_k, d_v]`), the state before the chunk is read
    from it and `state`'s value is not read (its destination is only
    written): a decode step reads the caller's state and writes the new one
    in one pass over the state, with no copy into the destination first.
    On buffers, `initial_state` may be `state` itself (in place).

    On tensors the op implements `TilingInterface` over `[n, d_v]`: the
    tokens are a reduction (a loop over token tiles that carries the state
    is the chunked recurrence; `attn-tile-gated-delta` builds its chunk
    loop so, with `scf::tileUsingSCF`), the value dims parallel (each
    column of the state evolves on its own), tiled by a static size that
    divides `d_v`. With `initial_state` only the value dims are tiled (its
    state is the first token's only).

    ```mlir
    %o, %s = attn.gated_delta_chunk %q, %k, %v, %g, %b, %oi, %si
        {scale = 0.088388347648318433 : f64}
        : (tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>,
           tensor<?xf32>, tensor<?xf32>, tensor<?x128xf32>,
           tensor<128x128xf32>) -> (tensor<?x128xf32>, tensor<128x128xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatShaped:$query, Attn_FloatShaped:$key,
                       Attn_FloatShaped:$value, Attn_FloatShaped:$gate,
                       Attn_FloatShaped:$beta, Attn_FloatShaped:$out,
                       Attn_FloatShaped:$state,
                       Optional<Attn_FloatShaped>:$initial_state,
                       F64Attr:$scale, UnitAttr:$recurrent,
                       UnitAttr:$no_delta);
  let results = (outs Variadic<Attn_FloatTensor>:$results);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $gate `,` $beta `,` $out `,` $state
    (`initial_state` `(` $initial_state^ `:` type($initial_state) `)`)?
    attr-dict `:` `(` type($query) `,` type($key) `,` type($value) `,`
    type($gate) `,` type($beta) `,` type($out) `,` type($state) `)`
    (`->` `(` type($results)^ `)`)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(), /*start=*/5, /*length=*/2);
    }
    /// True for the buffer form (memref operands, no results).
    bool isBufferForm() { return hasPureBufferSemantics(); }
    /// A per-channel decay (KDA): gate [n, d_k].
    bool hasChannelGate() {
      return cast<ShapedType>(getGate().getType()).getRank() == 2;
    }
  }];
  let hasVerifier = 1;
}

def Attn_OnlineFinalizeOp : Attn_Op<"online_finalize", [Pure,
    DestinationStyleOpInterface]> {
  let summary = "normalize an online-softmax accumulator";
  let description = [{
    `out = acc / sum` per row, and 0 where `sum == 0` (a row that saw no
    visible key), never NaN, written into the destination `outs(%init)`.
    `acc` is `[..., M, dv]`, `sum` `[..., M]`; the result has the shape of
    `acc` and may have a narrower element type.

    ```mlir
    %o = attn.online_finalize %acc, %sum outs(%init : tensor<4x64x128xf32>)
        : (tensor<4x64x128xf32>, tensor<4x64xf32>) -> tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$acc, Attn_FloatTensor:$sum,
                       Attn_FloatTensor:$init);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $acc `,` $sum `outs` `(` $init `:` type($init) `)` attr-dict `:` `(`
    type($acc) `,` type($sum) `)` `->` type($result)
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
  let hasVerifier = 1;
}

#endif // ATTN_OPS_TD
