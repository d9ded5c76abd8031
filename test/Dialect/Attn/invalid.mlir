// RUN: attn-opt %s -split-input-file -verify-diagnostics

// One case per verifier diagnostic of the attn ops (and a few ODS type
// constraints), in the order of AttnOps.cpp.

func.func @f0(%x: tensor<f32>, %w: tensor<4x4xf32>) {
  // expected-error @+1 {{expects an input of rank >= 1}}
  %0 = attn.linear %x, %w : (tensor<f32>, tensor<4x4xf32>) -> tensor<f32>
  return
}

// -----

func.func @moe_top_k(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %g: tensor<4x6x8xf32>, %d: tensor<4x8x6xf32>) {
  // expected-error @+1 {{expects top_k in [1, experts = 4], got 5}}
  %0 = attn.moe <silu> %x, %r experts(%g, %g, %d) {top_k = 5 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_one_expert_weight(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %d: tensor<4x8x6xf32>) {
  // expected-error @+1 {{expects (gate, up, down) or (up, down), got 1 operands}}
  %0 = attn.moe <silu> %x, %r experts(%d) {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4x8x6xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_plain_swiglu(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %u: tensor<4x6x8xf32>, %d: tensor<4x8x6xf32>) {
  // expected-error @+1 {{expects gated experts (gate, up, down) with expert_biases or swiglu_limit}}
  %0 = attn.moe <silu> %x, %r experts(%u, %d) {top_k = 2 : i64, swiglu_limit = 7.0 : f64} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_plain_shared(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %u: tensor<4x6x8xf32>, %d: tensor<4x8x6xf32>, %su: tensor<5x8xf32>, %sd: tensor<8x4xf32>) {
  // expected-error @+1 {{down_weight intermediate dim (4) does not match shared_up_weight intermediate dim (5)}}
  %0 = attn.moe <relu2> %x, %r experts(%u, %d) shared(%su, %sd) {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<5x8xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_shared_gate_alone(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %u: tensor<4x6x8xf32>, %d: tensor<4x8x6xf32>, %sg: tensor<5x8xf32>) {
  // expected-error @+1 {{expects shared_up_weight and shared_down_weight with shared_gate_weight}}
  %0 = "attn.moe"(%x, %r, %u, %d, %sg) <{activation = #attn.activation<silu>, top_k = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0>}> : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<5x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_shared_up_alone(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %u: tensor<4x6x8xf32>, %d: tensor<4x8x6xf32>, %su: tensor<5x8xf32>) {
  // expected-error @+1 {{expects shared_up_weight and shared_down_weight together}}
  %0 = "attn.moe"(%x, %r, %u, %d, %su) <{activation = #attn.activation<silu>, top_k = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0>}> : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<5x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @gated_rms_norm_groups_rank(%x: tensor<8xf32>, %w: tensor<2x4xf32>) {
  // expected-error @+1 {{expects an input of rank >= 2 with a weight [groups, n]}}
  %y = attn.gated_rms_norm %x, %x, %w {epsilon = 1.0e-06 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<2x4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @moe_experts(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %g: tensor<3x6x8xf32>, %u: tensor<4x6x8xf32>, %d: tensor<4x8x6xf32>) {
  // expected-error @+1 {{expert_gate_weight experts (3) does not match router_weight experts (4)}}
  %0 = attn.moe <silu> %x, %r experts(%g, %u, %d) {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<3x6x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_down(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %g: tensor<4x6x8xf32>, %d: tensor<4x8x5xf32>) {
  // expected-error @+1 {{expert_down_weight intermediate dim (5) does not match expert_gate_weight intermediate dim (6)}}
  %0 = attn.moe <silu> %x, %r experts(%g, %g, %d) {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x8x5xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_shared_gate(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %g: tensor<4x6x8xf32>, %d: tensor<4x8x6xf32>, %sg: tensor<5x8xf32>, %sd: tensor<8x5xf32>, %gate: tensor<2x8xf32>) {
  // expected-error @+1 {{expects shared_expert_gate_weight = [1, 8], got}}
  %0 = attn.moe <silu> %x, %r experts(%g, %g, %d) shared(%sg, %sg, %sd) shared_gate(%gate) {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<5x8xf32>, tensor<5x8xf32>, tensor<8x5xf32>, tensor<2x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @ffn_rank(%x: tensor<f32>, %w: tensor<4x4xf32>) {
  // expected-error @+1 {{expects an input of rank >= 1}}
  %0 = attn.gated_mlp <silu> %x, %w, %w, %w : (tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<f32>
  return
}

// -----

func.func @ffn_result(%x: tensor<?x8xf32>, %w: tensor<12x8xf32>, %d: tensor<8x12xf32>) {
  // expected-error @+1 {{expects the result type to equal the input type}}
  %0 = attn.gated_mlp <silu> %x, %w, %w, %d : (tensor<?x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<8x12xf32>) -> tensor<?x12xf32>
  return
}

// -----

func.func @ffn_weight_rank(%x: tensor<?x8xf32>, %w: tensor<12x8xf32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{expects down_weight of rank 2, got rank 1}}
  %0 = attn.mlp <relu> %x, %w, %d : (tensor<?x8xf32>, tensor<12x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @ffn_hidden(%x: tensor<?x8xf32>, %w: tensor<12x6xf32>, %d: tensor<8x12xf32>) {
  // expected-error @+1 {{gate_weight hidden dim (6) does not match the input's last dim (8)}}
  %0 = attn.gated_mlp <silu> %x, %w, %w, %d : (tensor<?x8xf32>, tensor<12x6xf32>, tensor<12x6xf32>, tensor<8x12xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @ffn_intermediate(%x: tensor<?x8xf32>, %g: tensor<12x8xf32>, %u: tensor<10x8xf32>, %d: tensor<8x12xf32>) {
  // expected-error @+1 {{up_weight intermediate dim (10) does not match gate_weight intermediate dim (12)}}
  %0 = attn.gated_mlp <gelu_tanh> %x, %g, %u, %d : (tensor<?x8xf32>, tensor<12x8xf32>, tensor<10x8xf32>, tensor<8x12xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @ffn_transposed(%x: tensor<?x8xf32>, %w: tensor<12x8xf32>, %d: tensor<8x12xf32>) {
  // expected-error @+1 {{up_weight hidden dim (12) does not match the input's last dim (8)}}
  %0 = attn.mlp <gelu> %x, %w, %d {transpose_weight} : (tensor<?x8xf32>, tensor<12x8xf32>, tensor<8x12xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @ffn_bias(%x: tensor<?x8xf32>, %w: tensor<12x8xf32>, %b: tensor<8xf32>, %d: tensor<8x12xf32>) {
  // expected-error @+1 {{bias size (8) does not match up_weight output size (12)}}
  %0 = attn.mlp <gelu> %x, %w bias(%b), %d : (tensor<?x8xf32>, tensor<12x8xf32>, tensor<8xf32>, tensor<8x12xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @ffn_activation(%x: tensor<?x8xf32>, %w: tensor<12x8xf32>, %d: tensor<8x12xf32>) {
  // expected-error @+2 {{expected ::mlir::attn::Activation to be one of: silu, gelu, gelu_tanh, relu}}
  // expected-error @+1 {{failed to parse Attn_ActivationAttr parameter 'value'}}
  %0 = attn.mlp <swish> %x, %w, %d : (tensor<?x8xf32>, tensor<12x8xf32>, tensor<8x12xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f1(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expects a weight of rank 2 ([out_features, in_features]), got rank 1}}
  %0 = attn.linear %x, %w : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f2(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{expects the result rank (1) to equal the input rank (2)}}
  %0 = attn.linear %x, %w : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f3(%x: tensor<?x8xf32>, %w: tensor<4x6xf32>) {
  // expected-error @+1 {{weight in_features (6) does not match the input's last dim (8)}}
  %0 = attn.linear %x, %w : (tensor<?x8xf32>, tensor<4x6xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f4(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{weight out_features (4) does not match the result's last dim (5)}}
  %0 = attn.linear %x, %w : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x5xf32>
  return
}

// -----

func.func @f5(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{input dim 0 (3) does not match result dim 0 (2)}}
  %0 = attn.linear %x, %w : (tensor<3x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f6(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+1 {{expects a bias of rank 1, got rank 2}}
  %0 = attn.linear %x, %w, %b : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f7(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias size (8) does not match weight out_features (4)}}
  %0 = attn.linear %x, %w, %b : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f8(%x: tensor<?x8xi32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = attn.linear %x, %w : (tensor<?x8xi32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f9(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expects the result type to equal the input type}}
  %0 = attn.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf16>
  return
}

// -----

func.func @f10(%x: tensor<f32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expects an input of rank >= 1}}
  %0 = attn.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : (tensor<f32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @f11(%x: tensor<?x8xf32>, %w: tensor<1x8xf32>) {
  // expected-error @+1 {{expects a weight of rank 1, got rank 2}}
  %0 = attn.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : (tensor<?x8xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f12(%x: tensor<?x8xf32>, %w: tensor<6xf32>) {
  // expected-error @+1 {{weight size (6) does not match the input's last dim (8)}}
  %0 = attn.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : (tensor<?x8xf32>, tensor<6xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f13(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expects a positive finite epsilon, got 0}}
  %0 = attn.rms_norm %x, %w {epsilon = 0.0 : f64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f14(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expects the result type to equal the input type}}
  %0 = attn.layer_norm %x, %w {epsilon = 1.0e-5 : f64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f15(%x: tensor<?x8xf32>, %w: tensor<8xf32>, %b: tensor<7xf32>) {
  // expected-error @+1 {{bias size (7) does not match the input's last dim (8)}}
  %0 = attn.layer_norm %x, %w, %b {epsilon = 1.0e-5 : f64} : (tensor<?x8xf32>, tensor<8xf32>, tensor<7xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f16(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expects a positive finite epsilon, got -1}}
  %0 = attn.layer_norm %x, %w {epsilon = -1.0 : f64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f17(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects the result type to equal the input type}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 16 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf16>
  return
}

// -----

func.func @f18(%x: tensor<?x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects an input [batch, heads, seq, head_dim] of rank 4, got rank 3}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 16 : i64} : (tensor<?x?x16xf32>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f19(%x: tensor<?x4x?x?xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects a static head_dim (dim 3), got '?'}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 16 : i64} : (tensor<?x4x?x?xf32>, tensor<?x?xi64>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f20(%x: tensor<?x4x?x16xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{expects positions [batch, seq] of rank 2, got rank 1}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 16 : i64} : (tensor<?x4x?x16xf32>, tensor<?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f21(%x: tensor<2x4x?x16xf32>, %p: tensor<3x?xi64>) {
  // expected-error @+1 {{positions batch (3) does not match input batch (2)}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 16 : i64} : (tensor<2x4x?x16xf32>, tensor<3x?xi64>) -> tensor<2x4x?x16xf32>
  return
}

// -----

func.func @f22(%x: tensor<?x4x5x16xf32>, %p: tensor<?x6xi64>) {
  // expected-error @+1 {{positions seq (6) does not match input seq (5)}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 16 : i64} : (tensor<?x4x5x16xf32>, tensor<?x6xi64>) -> tensor<?x4x5x16xf32>
  return
}

// -----

func.func @f23(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects an even rotary_dim in [2, head_dim = 16], got 7}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 7 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f24(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects an even rotary_dim in [2, head_dim = 16], got 32}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 32 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f25(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects a positive finite theta, got 0}}
  %0 = attn.rope %x, %p {theta = 0.0 : f64, rotary_dim = 16 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f26(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects a positive finite attention_factor, got -2}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 16 : i64, attention_factor = -2.0 : f64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f27(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects inv_freq to list rotary_dim / 2 = 2 frequencies, got 1}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 4 : i64, inv_freq = array<f64: 1.0>} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f28(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects positive finite inv_freq entries, got -0.5}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 4 : i64, inv_freq = array<f64: 1.0, -0.5>} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f29(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of signless integer or index values}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 16 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f30(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{expects the input to be [batch, seq, heads*head_dim], got rank 2}}
  %0 = attn.split_heads %x : tensor<?x64xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f31(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{expects the result to be [batch, heads, seq, head_dim], got rank 3}}
  %0 = attn.split_heads %x : tensor<?x?x64xf32> -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f32(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{expects a static head count (dim 1), got '?'}}
  %0 = attn.split_heads %x : tensor<?x?x64xf32> -> tensor<?x?x?x16xf32>
  return
}

// -----

func.func @f33(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{expects a static head_dim (dim 3), got '?'}}
  %0 = attn.split_heads %x : tensor<?x?x64xf32> -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f34(%x: tensor<2x?x64xf32>) {
  // expected-error @+1 {{input batch (2) does not match result batch (3)}}
  %0 = attn.split_heads %x : tensor<2x?x64xf32> -> tensor<3x4x?x16xf32>
  return
}

// -----

func.func @f35(%x: tensor<?x5x64xf32>) {
  // expected-error @+1 {{input seq (5) does not match result seq (6)}}
  %0 = attn.split_heads %x : tensor<?x5x64xf32> -> tensor<?x4x6x16xf32>
  return
}

// -----

func.func @f36(%x: tensor<?x?x60xf32>) {
  // expected-error @+1 {{expects the input last dim (60) to equal heads * head_dim = 4 * 16 = 64}}
  %0 = attn.split_heads %x : tensor<?x?x60xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f37(%x: tensor<?x?x64xf16>) {
  // expected-error @+1 {{expects input and result element types to match}}
  %0 = attn.split_heads %x : tensor<?x?x64xf16> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f38(%x: tensor<?x4x?x16xf32>) {
  // expected-error @+1 {{expects the result last dim (32) to equal heads * head_dim = 4 * 16 = 64}}
  %0 = attn.merge_heads %x : tensor<?x4x?x16xf32> -> tensor<?x?x32xf32>
  return
}

// -----

func.func @f39(%q: tensor<?x?x16xf32>, %k: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a query [batch, Hq, q_len, head_dim] of rank 4, got rank 3}}
  %0 = attn.qk %q, %k : (tensor<?x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f40(%q: tensor<?x4x?x16xf32>, %k: tensor<?x16xf32>) {
  // expected-error @+1 {{expects a key [batch, Hkv, kv_len, head_dim] of rank 4, got rank 2}}
  %0 = attn.qk %q, %k : (tensor<?x4x?x16xf32>, tensor<?x16xf32>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f41(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a result [batch, Hq, q_len, kv_len] of rank 4, got rank 3}}
  %0 = attn.qk %q, %k : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?xf32>
  return
}

// -----

func.func @f42(%q: tensor<?x?x?x16xf32>, %k: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a static query head count (dim 1), got '?'}}
  %0 = attn.qk %q, %k : (tensor<?x?x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f43(%q: tensor<?x4x?x16xf32>, %k: tensor<?x?x?x16xf32>) {
  // expected-error @+1 {{expects a static key head count (dim 1), got '?'}}
  %0 = attn.qk %q, %k : (tensor<?x4x?x16xf32>, tensor<?x?x?x16xf32>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f44(%q: tensor<?x0x?x16xf32>, %k: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects positive head counts, got 0 query heads and 2 key heads}}
  %0 = attn.qk %q, %k : (tensor<?x0x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x0x?x?xf32>
  return
}

// -----

func.func @f45(%q: tensor<?x6x?x16xf32>, %k: tensor<?x4x?x16xf32>) {
  // expected-error @+1 {{expects the query head count (6) to be a multiple of the key head count (4) for grouped-query attention}}
  %0 = attn.qk %q, %k : (tensor<?x6x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x6x?x?xf32>
  return
}

// -----

func.func @f46(%q: tensor<1x4x?x16xf32>, %k: tensor<2x2x?x16xf32>) {
  // expected-error @+1 {{query batch (1) does not match key batch (2)}}
  %0 = attn.qk %q, %k : (tensor<1x4x?x16xf32>, tensor<2x2x?x16xf32>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f47(%q: tensor<?x4x?x?xf32>, %k: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a static query head_dim (dim 3), got '?'}}
  %0 = attn.qk %q, %k : (tensor<?x4x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f48(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x?xf32>) {
  // expected-error @+1 {{expects a static key head_dim (dim 3), got '?'}}
  %0 = attn.qk %q, %k : (tensor<?x4x?x16xf32>, tensor<?x2x?x?xf32>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f49(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{query head_dim (16) does not match key head_dim (8)}}
  %0 = attn.qk %q, %k : (tensor<?x4x?x16xf32>, tensor<?x2x?x8xf32>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f50(%q: tensor<?x4x?x16xbf16>, %k: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects the key no wider than the query (a bf16/f16 cache, fp32 arithmetic), got 'f32' for a 'bf16' query}}
  %0 = attn.qk %q, %k : (tensor<?x4x?x16xbf16>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x?xbf16>
  return
}

// -----

func.func @f51(%q: tensor<?x4x3x16xf32>, %k: tensor<?x2x5x16xf32>) {
  // expected-error @+1 {{expects a result of shape [batch, Hq, q_len, kv_len] = [?, 4, 3, 5], got 'tensor<?x4x3x3xf32>'}}
  %0 = attn.qk %q, %k : (tensor<?x4x3x16xf32>, tensor<?x2x5x16xf32>) -> tensor<?x4x3x3xf32>
  return
}

// -----

func.func @f52(%s: tensor<?x4x?x?xf32>) {
  // expected-error @+1 {{expects a finite non-zero scale, got 0}}
  %0 = attn.scale %s {scale = 0.0 : f64} : tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f53(%s: tensor<?x4x?x?xf32>) {
  // expected-error @+1 {{expects a positive finite cap, got -5}}
  %0 = attn.softcap %s {cap = -5.0 : f64} : tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f54(%s: tensor<f32>) {
  // expected-error @+1 {{expects an input of rank >= 1}}
  %0 = attn.softmax %s : tensor<f32>
  return
}

// -----

func.func @f55(%s: tensor<?x?x?xf32>) {
  // expected-error @+1 {{expects scores [batch, heads, q_len, kv_len] of rank 4, got rank 3}}
  %0 = attn.mask %s {kind = #attn.mask<causal>} : tensor<?x?x?xf32>
  return
}

// -----

func.func @f56(%s: tensor<?x4x?x?xf32>) {
  // expected-error @+1 {{expects a 'window' attribute with a sliding_window mask}}
  %0 = attn.mask %s {kind = #attn.mask<sliding_window>} : tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f57(%s: tensor<?x4x?x?xf32>) {
  // expected-error @+1 {{has a 'window' attribute but mask kind 'causal'; only sliding_window and chunked take a window}}
  %0 = attn.mask %s {kind = #attn.mask<causal>, window = 8 : i64} : tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f58(%s: tensor<?x4x?x?xf32>) {
  // expected-error @+1 {{expects a positive window, got 0}}
  %0 = attn.mask %s {kind = #attn.mask<sliding_window>, window = 0 : i64} : tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f59(%s: tensor<?x4x?x?xf32>, %l: tensor<?x?xi32>) {
  // expected-error @+1 {{expects kv_lengths of rank 1 ([batch]), got rank 2}}
  %0 = attn.mask %s kv_lengths(%l : tensor<?x?xi32>) {kind = #attn.mask<none>} : tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f60(%s: tensor<2x4x?x?xf32>, %l: tensor<3xi32>) {
  // expected-error @+1 {{kv_lengths size (3) does not match batch (2)}}
  %0 = attn.mask %s kv_lengths(%l : tensor<3xi32>) {kind = #attn.mask<none>} : tensor<2x4x?x?xf32>
  return
}

// -----

func.func @f61(%s: tensor<?x4x?x?xf32>) {
  // expected-error @+2 {{expected ::mlir::attn::MaskKind to be one of: none, causal, sliding_window}}
  // expected-error @+1 {{failed to parse Attn_MaskKindAttr parameter 'value'}}
  %0 = attn.mask %s {kind = #attn.mask<diagonal>} : tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f62(%p: tensor<?x?x?xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects probabilities [batch, Hq, q_len, kv_len] of rank 4, got rank 3}}
  %0 = attn.pv %p, %v : (tensor<?x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f63(%p: tensor<?x4x?x?xf32>, %v: tensor<?x?x16xf32>) {
  // expected-error @+1 {{expects a value [batch, Hkv, kv_len, head_dim_v] of rank 4, got rank 3}}
  %0 = attn.pv %p, %v : (tensor<?x4x?x?xf32>, tensor<?x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f64(%p: tensor<?x4x?x?xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a result [batch, Hq, q_len, head_dim_v] of rank 4, got rank 3}}
  %0 = attn.pv %p, %v : (tensor<?x4x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?xf32>
  return
}

// -----

func.func @f65(%p: tensor<?x4x?x?xf32>, %v: tensor<?x3x?x16xf32>) {
  // expected-error @+1 {{expects the probabilities head count (4) to be a multiple of the value head count (3) for grouped-query attention}}
  %0 = attn.pv %p, %v : (tensor<?x4x?x?xf32>, tensor<?x3x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f66(%p: tensor<?x4x?x?xf32>, %v: tensor<?x2x?x?xf32>) {
  // expected-error @+1 {{expects a static value head_dim (dim 3), got '?'}}
  %0 = attn.pv %p, %v : (tensor<?x4x?x?xf32>, tensor<?x2x?x?xf32>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f67(%p: tensor<?x4x?x7xf32>, %v: tensor<?x2x8x16xf32>) {
  // expected-error @+1 {{probabilities kv_len (7) does not match value kv_len (8)}}
  %0 = attn.pv %p, %v : (tensor<?x4x?x7xf32>, tensor<?x2x8x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f68(%p: tensor<?x4x?x?xf32>, %v: tensor<?x2x?x16xf16>) {
  // expected-error @+1 {{expects probabilities and result to have the same element type, got 'f32' and 'f16'}}
  %0 = attn.pv %p, %v : (tensor<?x4x?x?xf32>, tensor<?x2x?x16xf16>) -> tensor<?x4x?x16xf16>
  return
}

// -----

func.func @f69(%p: tensor<?x4x?x?xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a result of shape [batch, Hq, q_len, head_dim_v] = [?, 4, ?, 16], got 'tensor<?x4x?x8xf32>'}}
  %0 = attn.pv %p, %v : (tensor<?x4x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @f70(%q: tensor<?x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a query [batch, Hq, q_len, head_dim] of rank 4, got rank 3}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f71(%q: tensor<?x4x?x16xf32>, %k: tensor<?x16xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a key [batch, Hkv, kv_len, head_dim] of rank 4, got rank 2}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f72(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x16xf32>) {
  // expected-error @+1 {{expects a value [batch, Hkv, kv_len, head_dim_v] of rank 4, got rank 2}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f72_zero_head_dim(%q: tensor<1x4x8x0xf32>, %k: tensor<1x2x8x0xf32>, %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) {
  // A head dim of 0 is refused where it stands (the tiler's slices of it
  // were out of bounds, an error that named neither the dim nor the op).
  // expected-error @+1 {{expects a positive query head_dim (dim 3), got 0}}
  %0 = attn.sdpa %q, %k, %v outs(%o : tensor<1x4x8x16xf32>) {scale = 0.25 : f64} : (tensor<1x4x8x0xf32>, tensor<1x2x8x0xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @f73(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a result [batch, Hq, q_len, head_dim_v] of rank 4, got rank 3}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f74(%q: tensor<?x4x?x16xf32>, %k: tensor<?x3x?x16xf32>, %v: tensor<?x3x?x16xf32>) {
  // expected-error @+1 {{expects the query head count (4) to be a multiple of the key head count (3) for grouped-query attention}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x3x?x16xf32>, tensor<?x3x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f75(%q: tensor<?x4x?x?xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a static query head_dim (dim 3), got '?'}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x?xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x?xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f76(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x?xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a static key head_dim (dim 3), got '?'}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f77(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x?x?x16xf32>) {
  // expected-error @+1 {{expects a static value head count (dim 1), got '?'}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f78(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x?xf32>) {
  // expected-error @+1 {{expects a static value head_dim (dim 3), got '?'}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x?xf32>) -> tensor<?x4x?x?xf32>
  return
}

// -----

func.func @f79(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{query head_dim (16) does not match key head_dim (8)}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f80(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x1x?x16xf32>) {
  // expected-error @+1 {{key head count (2) does not match value head count (1)}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f81(%q: tensor<?x4x?x16xf32>, %k: tensor<2x2x?x16xf32>, %v: tensor<3x2x?x16xf32>) {
  // expected-error @+1 {{key batch (2) does not match value batch (3)}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<2x2x?x16xf32>, tensor<3x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f82(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x9x16xf32>, %v: tensor<?x2x10x16xf32>) {
  // expected-error @+1 {{key kv_len (9) does not match value kv_len (10)}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x9x16xf32>, tensor<?x2x10x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f83(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xbf16>) {
  // expected-error @+1 {{expects key and value to have the same element type, got 'f32' and 'bf16'}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xbf16>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f84(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects query and result to have the same element type, got 'f32' and 'bf16'}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xbf16>
  return
}

// -----

func.func @f85(%q: tensor<?x4x5x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a result of shape [batch, Hq, q_len, head_dim_v] = [?, 4, 5, 16], got 'tensor<?x4x6x16xf32>'}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x5x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x5x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x6x16xf32>
  return
}

// -----

func.func @f86(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a positive finite scale, got -0.25}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = -0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f87(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a 'window' attribute with a sliding_window mask}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64, mask = #attn.mask<sliding_window>} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f88(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{has a 'window' attribute but mask kind 'none'; only sliding_window and chunked take a window}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64, window = 16 : i64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f89(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) {
  // expected-error @+1 {{expects a positive finite softcap, got 0}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64, softcap = 0.0 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f90(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>, %l: tensor<?x?xi32>) {
  // expected-error @+1 {{expects kv_lengths of rank 1 ([batch]), got rank 2}}
  %0 = attn.sdpa %q, %k, %v kv_lengths(%l : tensor<?x?xi32>) outs(%q : tensor<?x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f91(%q: tensor<2x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>, %l: tensor<5xi32>) {
  // expected-error @+1 {{kv_lengths size (5) does not match batch (2)}}
  %0 = attn.sdpa %q, %k, %v kv_lengths(%l : tensor<5xi32>) outs(%q : tensor<2x4x?x16xf32>) {scale = 0.25 : f64} : (tensor<2x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @f92(%q: tensor<16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects a query [..., M, head_dim] of rank >= 2, got rank 1}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f93(%q: tensor<4x8x16xf32>, %k: tensor<1x32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects a key tile [N, head_dim] of rank 2, got rank 3}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<1x32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f94(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects a value tile [N, head_dim_v] of rank 2, got rank 1}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f95(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects an accumulator [..., M, head_dim_v] (query rank) of rank 3, got rank 2}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f96(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects a running max [..., M] (query rank - 1) of rank 2, got rank 1}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f97(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<8xf32>, %i: index) {
  // expected-error @+1 {{expects a running sum [..., M] (query rank - 1) of rank 2, got rank 1}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f98(%q: tensor<4x8x16xf32>, %k: tensor<32x8xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{query head_dim (16) does not match key head_dim (8)}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x8xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f99(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<16x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{key tile rows (32) does not match value tile rows (16)}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<16x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f100(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x8xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{accumulator head_dim_v (16) does not match value head_dim_v (8)}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x8xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f101(%q: tensor<4x8x16xf32>, %k: tensor<32x16xbf16>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects key and value to have the same element type, got 'bf16' and 'f32'}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xbf16>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f102(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf16>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects accumulator and max to have the same element type, got 'f32' and 'f16'}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf16>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf16>, tensor<4x8xf32>)
  return
}

// -----

func.func @f103(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<2x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{query dim 0 (4) does not match accumulator dim 0 (2)}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<2x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<2x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f104(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x9xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{query dim 1 (8) does not match max dim 1 (9)}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x9xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x9xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f105(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<3x8xf32>, %i: index) {
  // expected-error @+1 {{query dim 0 (4) does not match sum dim 0 (3)}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<3x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<3x8xf32>)
  return
}

// -----

func.func @f106(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects a positive finite scale, got 0}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.0 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f107(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects a 'window' attribute with a sliding_window mask}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64, mask = #attn.mask<sliding_window>} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f108(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects a positive finite softcap, got -1}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64, softcap = -1.0 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f109(%a: tensor<16xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expects an accumulator [..., M, head_dim_v] of rank >= 2, got rank 1}}
  %0 = attn.online_finalize %a, %s outs(%a : tensor<16xf32>) : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  return
}

// -----

func.func @f110(%a: tensor<4x8x16xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{expects a sum [..., M] (accumulator rank - 1) of rank 2, got rank 1}}
  %0 = attn.online_finalize %a, %s outs(%a : tensor<4x8x16xf32>) : (tensor<4x8x16xf32>, tensor<8xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @f111(%a: tensor<4x8x16xf32>, %s: tensor<4x8xbf16>) {
  // expected-error @+1 {{expects accumulator and sum to have the same element type, got 'f32' and 'bf16'}}
  %0 = attn.online_finalize %a, %s outs(%a : tensor<4x8x16xf32>) : (tensor<4x8x16xf32>, tensor<4x8xbf16>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @f112(%a: tensor<4x8x16xf32>, %s: tensor<4x7xf32>) {
  // expected-error @+1 {{accumulator dim 1 (8) does not match sum dim 1 (7)}}
  %0 = attn.online_finalize %a, %s outs(%a : tensor<4x8x16xf32>) : (tensor<4x8x16xf32>, tensor<4x7xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @f113(%a: tensor<4x8x16xf32>, %s: tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<32x16xf32>
  // expected-error @+1 {{expects the result to have the accumulator's rank 3, got rank 2}}
  %0 = attn.online_finalize %a, %s outs(%e : tensor<32x16xf32>) : (tensor<4x8x16xf32>, tensor<4x8xf32>) -> tensor<32x16xf32>
  return
}

// -----

func.func @f114(%a: tensor<4x8x16xf32>, %s: tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8x12xbf16>
  // expected-error @+1 {{accumulator dim 2 (16) does not match result dim 2 (12)}}
  %0 = attn.online_finalize %a, %s outs(%e : tensor<4x8x12xbf16>) : (tensor<4x8x16xf32>, tensor<4x8xf32>) -> tensor<4x8x12xbf16>
  return
}

// -----

func.func @tw(%x: tensor<?x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{weight in_features (4) does not match the input's last dim (8)}}
  %0 = attn.linear %x, %w : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @tw2(%x: tensor<?x8xf32>, %w: tensor<8x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias size (8) does not match weight out_features (4)}}
  %0 = attn.linear %x, %w, %b {transpose_weight} : (tensor<?x8xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @rpb0(%s: tensor<?x?x?xf32>, %t: tensor<32x4xf32>) {
  // expected-error @+1 {{expects scores [batch, heads, q_len, kv_len] of rank 4, got rank 3}}
  %0 = attn.relative_position_bias %s, %t {num_buckets = 32 : i64, max_distance = 128 : i64} : tensor<?x?x?xf32>, tensor<32x4xf32>
  return
}

// -----

func.func @rpb1(%s: tensor<?x4x?x?xf32>, %t: tensor<32xf32>) {
  // expected-error @+1 {{expects a table [num_buckets, heads] of rank 2, got rank 1}}
  %0 = attn.relative_position_bias %s, %t {num_buckets = 32 : i64, max_distance = 128 : i64} : tensor<?x4x?x?xf32>, tensor<32xf32>
  return
}

// -----

func.func @rpb2(%s: tensor<?x4x?x?xf32>, %t: tensor<2x4xf32>) {
  // expected-error @+1 {{expects num_buckets >= 2 (>= 4 when bidirectional), got 2}}
  %0 = attn.relative_position_bias %s, %t {num_buckets = 2 : i64, max_distance = 128 : i64, bidirectional} : tensor<?x4x?x?xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @rpb3(%s: tensor<?x4x?x?xf32>, %t: tensor<32x4xf32>) {
  // expected-error @+1 {{expects a positive max_distance, got 0}}
  %0 = attn.relative_position_bias %s, %t {num_buckets = 32 : i64, max_distance = 0 : i64} : tensor<?x4x?x?xf32>, tensor<32x4xf32>
  return
}

// -----

func.func @rpb4(%s: tensor<?x4x?x?xf32>, %t: tensor<16x4xf32>) {
  // expected-error @+1 {{expects a table with num_buckets = 32 rows, got 16}}
  %0 = attn.relative_position_bias %s, %t {num_buckets = 32 : i64, max_distance = 128 : i64} : tensor<?x4x?x?xf32>, tensor<16x4xf32>
  return
}

// -----

func.func @rpb5(%s: tensor<?x4x?x?xf32>, %t: tensor<32x8xf32>) {
  // expected-error @+1 {{table heads (8) does not match score heads (4)}}
  %0 = attn.relative_position_bias %s, %t {num_buckets = 32 : i64, max_distance = 128 : i64} : tensor<?x4x?x?xf32>, tensor<32x8xf32>
  return
}

// -----

func.func @sdpa_bias1(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %t: tensor<32x4xf32>) {
  // expected-error @+1 {{expects 'relative_bias' and a bias_table operand together}}
  %0 = attn.sdpa %q, %k, %k bias_table(%t : tensor<32x4xf32>) outs(%q : tensor<?x4x?x16xf32>) {scale = 1.0 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @sdpa_bias2(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %t: tensor<32x2xf32>) {
  // expected-error @+1 {{expects a bias_table with one column per query head (4), got 2}}
  %0 = attn.sdpa %q, %k, %k bias_table(%t : tensor<32x2xf32>) outs(%q : tensor<?x4x?x16xf32>) {scale = 1.0 : f64, relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = true>} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @sdpa_bias3(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %t: tensor<16x4xf32>) {
  // expected-error @+1 {{expects a bias_table with num_buckets = 32 rows, got 16}}
  %0 = attn.sdpa %q, %k, %k bias_table(%t : tensor<16x4xf32>) outs(%q : tensor<?x4x?x16xf32>) {scale = 1.0 : f64, relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = true>} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @sdpa_bias4(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %t: tensor<3x4xf32>) {
  // expected-error @+1 {{expects num_buckets >= 2 (>= 4 when bidirectional), got 3}}
  %0 = attn.sdpa %q, %k, %k bias_table(%t : tensor<3x4xf32>) outs(%q : tensor<?x4x?x16xf32>) {scale = 1.0 : f64, relative_bias = #attn.relative_bias<num_buckets = 3, max_distance = 128, bidirectional = true>} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @sdpa_bias5(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %t: tensor<32x4xf32>) {
  // expected-error @+1 {{expects a positive max_distance, got 0}}
  %0 = attn.sdpa %q, %k, %k bias_table(%t : tensor<32x4xf32>) outs(%q : tensor<?x4x?x16xf32>) {scale = 1.0 : f64, relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 0, bidirectional = true>} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @sdpa_bias6(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %t: tensor<32xf32>) {
  // expected-error @+1 {{expects a bias_table [num_buckets, heads] of rank 2, got rank 1}}
  %0 = attn.sdpa %q, %k, %k bias_table(%t : tensor<32xf32>) outs(%q : tensor<?x4x?x16xf32>) {scale = 1.0 : f64, relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 8, bidirectional = true>} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @oa_bias(%q: tensor<16x64xf32>, %k: tensor<32x64xf32>, %m: tensor<16xf32>, %t: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{expects a head_offset and a query [heads, M, head_dim] with a bias_table}}
  %0:3 = attn.online_attention %q, %k, %k, %q, %m, %m, %i, %i bias_table(%t : tensor<32x8xf32>, %i) {scale = 1.0 : f64, relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 8, bidirectional = true>} : (tensor<16x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @mask_bias0(%s: tensor<?x4x?xf32>) {
  // expected-error @+1 {{expects scores [batch, heads, q_len, kv_len] of rank 4, got rank 3}}
  %0 = attn.mask_bias %s {kind = #attn.mask<causal>} : tensor<?x4x?xf32>
  return
}

// -----

func.func @mask_bias1(%s: tensor<?x4x?x?xf32>) {
  // expected-error @+1 {{expects a causal or sliding_window mask kind; a 'none' mask masks nothing}}
  %0 = attn.mask_bias %s {kind = #attn.mask<none>} : tensor<?x4x?x?xf32>
  return
}

// -----

func.func @mask_cond0(%s: tensor<?x4x?x?xf32>) {
  // expected-error @+1 {{expects the result to have the shape of the scores}}
  %0 = attn.mask_cond %s {kind = #attn.mask<causal>} : tensor<?x4x?x?xf32> -> tensor<?x4x?xi1>
  return
}

// -----

func.func @mask_cond1(%s: tensor<?x4x?x?xf32>) {
  // expected-error @+1 {{expects a 'window' attribute with a sliding_window mask}}
  %0 = attn.mask_cond %s {kind = #attn.mask<sliding_window>} : tensor<?x4x?x?xf32> -> tensor<?x4x?x?xi1>
  return
}

// -----

func.func @sdpa_outs(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>, %init: tensor<1x4x3x4xf32>) {
  // expected-error @+1 {{expects the destination (outs) to have the result type 'tensor<1x4x3x8xf32>', got 'tensor<1x4x3x4xf32>'}}
  %0 = attn.sdpa %q, %k, %v outs(%init : tensor<1x4x3x4xf32>) {scale = 0.25 : f64} : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32>
  return
}

// -----

func.func @online_mixed(%q: memref<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects all its operands to be tensors or all to be buffers}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (memref<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @online_tensor_no_results(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{on tensors expects three results of the types of acc, max and sum}}
  attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @online_buffer_results(%q: memref<4x8x16xf32>, %k: memref<32x16xf32>, %v: memref<32x16xf32>, %a: memref<4x8x16xf32>, %m: memref<4x8xf32>, %s: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{on buffers updates acc, max and sum in place and has no results}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.25 : f64} : (memref<4x8x16xf32>, memref<32x16xf32>, memref<32x16xf32>, memref<4x8x16xf32>, memref<4x8xf32>, memref<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @gdr_heads(%q: tensor<1x3x8x16xf32>, %v: tensor<1x4x8x16xf32>, %g: tensor<1x4x8xf32>, %s: tensor<1x4x16x16xf32>) {
  // expected-error @+1 {{expects the value head count (4) to be a multiple of the key head count (3) for grouped-query attention}}
  %o, %f = attn.gated_delta_rule %q, %q, %v, %g, %g outs(%v, %s : tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>) {scale = 0.25 : f64} : (tensor<1x3x8x16xf32>, tensor<1x3x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>)
  return
}

// -----

func.func @gdr_seq(%k: tensor<1x2x8x16xf32>, %v: tensor<1x4x9x16xf32>, %g: tensor<1x4x9xf32>, %s: tensor<1x4x16x16xf32>) {
  // expected-error @+1 {{expects the key and value seq lengths to agree, got 8 and 9}}
  %o, %f = attn.gated_delta_rule %k, %k, %v, %g, %g outs(%v, %s : tensor<1x4x9x16xf32>, tensor<1x4x16x16xf32>) {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x9x16xf32>, tensor<1x4x9xf32>, tensor<1x4x9xf32>) -> (tensor<1x4x9x16xf32>, tensor<1x4x16x16xf32>)
  return
}

// -----

func.func @gdr_query(%q: tensor<1x2x8x32xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x4x8x16xf32>, %g: tensor<1x4x8xf32>, %s: tensor<1x4x16x16xf32>) {
  // expected-error @+1 {{expects a query [batch, Hk, seq, d_k] = [1, 2, 8, 16], got 'tensor<1x2x8x32xf32>'}}
  %o, %f = attn.gated_delta_rule %q, %k, %v, %g, %g outs(%v, %s : tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>) {scale = 0.25 : f64} : (tensor<1x2x8x32xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>)
  return
}

// -----

func.func @gdr_gate(%k: tensor<1x2x8x16xf32>, %v: tensor<1x4x8x16xf32>, %g: tensor<1x2x8xf32>, %b: tensor<1x4x8xf32>, %s: tensor<1x4x16x16xf32>) {
  // expected-error @+1 {{expects a gate [batch, Hv, seq] (or [batch, Hv, seq, d_k] per channel) = [1, 4, 8], got 'tensor<1x2x8xf32>'}}
  %o, %f = attn.gated_delta_rule %k, %k, %v, %g, %b outs(%v, %s : tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>) {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x2x8xf32>, tensor<1x4x8xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>)
  return
}

// -----

func.func @gdr_state(%k: tensor<1x2x8x16xf32>, %v: tensor<1x4x8x16xf32>, %g: tensor<1x4x8xf32>, %s: tensor<1x4x16x16xf32>, %s0: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{expects an initial state [batch, Hv, d_k, d_v] = [1, 4, 16, 16], got 'tensor<1x4x16x8xf32>'}}
  %o, %f = attn.gated_delta_rule %k, %k, %v, %g, %g initial_state(%s0 : tensor<1x4x16x8xf32>) outs(%v, %s : tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>) {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>)
  return
}

// -----

func.func @gdr_scale(%k: tensor<1x2x8x16xf32>, %v: tensor<1x4x8x16xf32>, %g: tensor<1x4x8xf32>, %s: tensor<1x4x16x16xf32>) {
  // expected-error @+1 {{expects a positive finite scale}}
  %o, %f = attn.gated_delta_rule %k, %k, %v, %g, %g outs(%v, %s : tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>) {scale = 0.0 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>)
  return
}

// -----

func.func @gdr_lengths_size(%k: tensor<1x2x8x16xf32>, %v: tensor<1x4x8x16xf32>, %g: tensor<1x4x8xf32>, %s: tensor<1x4x16x16xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{expects lengths of size batch (1), got 2}}
  %o, %f = attn.gated_delta_rule %k, %k, %v, %g, %g lengths(%l : tensor<2xi64>) outs(%v, %s : tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>) {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>)
  return
}

// -----

func.func @gdr_lengths_rank(%k: tensor<1x2x8x16xf32>, %v: tensor<1x4x8x16xf32>, %g: tensor<1x4x8xf32>, %s: tensor<1x4x16x16xf32>, %l: tensor<1x1xi64>) {
  // expected-error @+1 {{expects lengths of rank 1 ([batch]), got rank 2}}
  %o, %f = attn.gated_delta_rule %k, %k, %v, %g, %g lengths(%l : tensor<1x1xi64>) outs(%v, %s : tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>) {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x16x16xf32>)
  return
}

// -----

func.func @gdc_mixed(%q: tensor<8x16xf32>, %g: tensor<8xf32>, %s: memref<16x16xf32>) {
  // expected-error @+1 {{expects all its operands to be tensors or all to be buffers}}
  attn.gated_delta_chunk %q, %q, %q, %g, %g, %q, %s {scale = 0.25 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>, memref<16x16xf32>)
  return
}

// -----

func.func @gdc_results(%q: memref<8x16xf32>, %g: memref<8xf32>, %s: memref<16x16xf32>) {
  // expected-error @+1 {{on buffers updates out and state in place and has no results}}
  %o = attn.gated_delta_chunk %q, %q, %q, %g, %g, %q, %s {scale = 0.25 : f64} : (memref<8x16xf32>, memref<8x16xf32>, memref<8x16xf32>, memref<8xf32>, memref<8xf32>, memref<8x16xf32>, memref<16x16xf32>) -> (tensor<8x16xf32>)
  return
}

// -----

func.func @gdc_tokens(%q: tensor<8x16xf32>, %v: tensor<9x16xf32>, %g: tensor<8xf32>, %s: tensor<16x16xf32>) {
  // expected-error @+1 {{expects the query and value chunks to have the same number of tokens, got 'tensor<8x16xf32>' and 'tensor<9x16xf32>'}}
  %o, %t = attn.gated_delta_chunk %q, %q, %v, %g, %g, %v, %s {scale = 0.25 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<9x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<9x16xf32>, tensor<16x16xf32>) -> (tensor<9x16xf32>, tensor<16x16xf32>)
  return
}

// -----

func.func @gdc_channel_gate(%q: tensor<8x16xf32>, %v: tensor<8x32xf32>, %g: tensor<8x32xf32>, %b: tensor<8xf32>, %s: tensor<16x32xf32>) {
  // expected-error @+1 {{expects a per-channel gate [n, d_k] = [8, 16], got 'tensor<8x32xf32>'}}
  %o, %t = attn.gated_delta_chunk %q, %q, %v, %g, %b, %v, %s {recurrent, scale = 0.25 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8x32xf32>, tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<16x32xf32>)
  return
}

// -----

func.func @gdc_initial_state(%q: tensor<8x16xf32>, %v: tensor<8x32xf32>, %g: tensor<8xf32>, %s: tensor<16x32xf32>, %s0: tensor<32x16xf32>) {
  // expected-error @+1 {{expects an initial state [d_k, d_v] = [16, 32], got 'tensor<32x16xf32>'}}
  %o, %t = attn.gated_delta_chunk %q, %q, %v, %g, %g, %v, %s initial_state(%s0 : tensor<32x16xf32>) {scale = 0.25 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x32xf32>, tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<16x32xf32>)
  return
}

// -----

func.func @gdc_state(%q: tensor<8x16xf32>, %v: tensor<8x32xf32>, %g: tensor<8xf32>, %s: tensor<16x16xf32>) {
  // expected-error @+1 {{expects a state [d_k, d_v] = [16, 32], got 'tensor<16x16xf32>'}}
  %o, %t = attn.gated_delta_chunk %q, %q, %v, %g, %g, %v, %s {scale = 0.25 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x32xf32>, tensor<16x16xf32>) -> (tensor<8x32xf32>, tensor<16x16xf32>)
  return
}

// -----

func.func @gdc_gate(%q: tensor<8x16xf32>, %g: tensor<7xf32>, %s: tensor<16x16xf32>) {
  // expected-error @+1 {{expects a gate [n] (or [n, d_k] per channel) = [8], got 'tensor<7xf32>'}}
  %o, %t = attn.gated_delta_chunk %q, %q, %q, %g, %g, %q, %s {scale = 0.25 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<7xf32>, tensor<7xf32>, tensor<8x16xf32>, tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<16x16xf32>)
  return
}

// -----

func.func @gdc_scale(%q: tensor<8x16xf32>, %g: tensor<8xf32>, %s: tensor<16x16xf32>) {
  // expected-error @+1 {{expects a positive finite scale}}
  %o, %t = attn.gated_delta_chunk %q, %q, %q, %g, %g, %q, %s {scale = 0.0 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<16x16xf32>)
  return
}

// -----

func.func @conv_channels(%x: tensor<1x8x96xf32>, %w: tensor<64x4xf32>) {
  // expected-error @+1 {{weight channels (64) does not match input channels (96)}}
  %y, %s = attn.causal_conv1d %x, %w : (tensor<1x8x96xf32>, tensor<64x4xf32>) -> (tensor<1x8x96xf32>, tensor<1x96x3xf32>)
  return
}

// -----

func.func @conv_state(%x: tensor<1x8x96xf32>, %w: tensor<96x4xf32>, %s0: tensor<1x96x4xf32>) {
  // expected-error @+1 {{expects a state [batch, channels, kernel - 1] = [1, 96, 3], got 'tensor<1x96x4xf32>'}}
  %y, %s = attn.causal_conv1d %x, %w state(%s0 : tensor<1x96x4xf32>) : (tensor<1x8x96xf32>, tensor<96x4xf32>) -> (tensor<1x8x96xf32>, tensor<1x96x3xf32>)
  return
}

// -----

func.func @conv_bias(%x: tensor<1x8x96xf32>, %w: tensor<96x4xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{expects a bias [channels] = [96], got 'tensor<64xf32>'}}
  %y, %s = attn.causal_conv1d %x, %w bias(%b : tensor<64xf32>) : (tensor<1x8x96xf32>, tensor<96x4xf32>) -> (tensor<1x8x96xf32>, tensor<1x96x3xf32>)
  return
}

// -----

func.func @gates_dt_clamp(%a: tensor<1x8x4xf32>, %h: tensor<4xf32>) {
  // expected-error @+1 {{clamps dt (dt_min, dt_max) only with beta_is_dt}}
  %g, %b = attn.gated_delta_gates %a, %a, %h, %h {dt_max = 1.0 : f64} : (tensor<1x8x4xf32>, tensor<1x8x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  return
}

// -----

func.func @gates_dt_order(%a: tensor<1x8x4xf32>, %h: tensor<4xf32>) {
  // expected-error @+1 {{expects dt_min <= dt_max, got 2.000000e+00 and 1.000000e+00}}
  %g, %b = attn.gated_delta_gates %a, %a, %h, %h {beta_is_dt, dt_min = 2.0 : f64, dt_max = 1.0 : f64} : (tensor<1x8x4xf32>, tensor<1x8x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  return
}

// -----

func.func @skip_add_d(%o: tensor<1x4x8x16xf32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{expects d [heads] = [4], got 'tensor<8xf32>'}}
  %y = attn.skip_add %o, %o, %d : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<8xf32>) -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @skip_add_x(%o: tensor<1x4x8x16xf32>, %x: tensor<1x4x8x8xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{expects x and the result of the input's type 'tensor<1x4x8x16xf32>', got 'tensor<1x4x8x8xf32>' and 'tensor<1x4x8x16xf32>'}}
  %y = attn.skip_add %o, %x, %d : (tensor<1x4x8x16xf32>, tensor<1x4x8x8xf32>, tensor<4xf32>) -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @conv_kernel(%x: tensor<1x8x96xf32>, %w: tensor<96x?xf32>) {
  // expected-error @+1 {{expects a weight [channels, kernel] with a static kernel width >= 1, got 'tensor<96x?xf32>'}}
  %y, %s = attn.causal_conv1d %x, %w : (tensor<1x8x96xf32>, tensor<96x?xf32>) -> (tensor<1x8x96xf32>, tensor<1x96x3xf32>)
  return
}

// -----

func.func @gates_layout(%a: tensor<1x8x4xf32>, %h: tensor<4xf32>) {
  // expected-error @+1 {{expects a gate [batch, Hv, seq] = [1, 4, 8], got 'tensor<1x8x4xf32>'}}
  %g, %b = attn.gated_delta_gates %a, %a, %h, %h : (tensor<1x8x4xf32>, tensor<1x8x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x8x4xf32>, tensor<1x4x8xf32>)
  return
}

// -----

func.func @gates_alog(%a: tensor<1x8x4xf32>, %h: tensor<3xf32>, %h4: tensor<4xf32>) {
  // expected-error @+1 {{expects A_log [Hv] = [4], got 'tensor<3xf32>'}}
  %g, %b = attn.gated_delta_gates %a, %a, %h, %h4 : (tensor<1x8x4xf32>, tensor<1x8x4xf32>, tensor<3xf32>, tensor<4xf32>) -> (tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  return
}

// -----

func.func @gated_norm_gate(%x: tensor<1x8x4x8xf32>, %z: tensor<1x8x4x4xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expects a gate of the input's type 'tensor<1x8x4x8xf32>', got 'tensor<1x8x4x4xf32>'}}
  %y = attn.gated_rms_norm %x, %z, %w {epsilon = 1.0e-06 : f64} : (tensor<1x8x4x8xf32>, tensor<1x8x4x4xf32>, tensor<8xf32>) -> tensor<1x8x4x8xf32>
  return
}

// -----

func.func @gated_norm_weight(%x: tensor<1x8x4x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{weight size (4) does not match the input's last dim (8)}}
  %y = attn.gated_rms_norm %x, %x, %w {epsilon = 1.0e-06 : f64} : (tensor<1x8x4x8xf32>, tensor<1x8x4x8xf32>, tensor<4xf32>) -> tensor<1x8x4x8xf32>
  return
}


// -----

func.func @gated_rms_norm_groups(%x: tensor<1x8x4x8xf32>, %w: tensor<2x8xf32>) {
  // expected-error @+1 {{weight groups (2) does not match the input's dim -2 (4)}}
  %y = attn.gated_rms_norm %x, %x, %w {epsilon = 1.0e-06 : f64} : (tensor<1x8x4x8xf32>, tensor<1x8x4x8xf32>, tensor<2x8xf32>) -> tensor<1x8x4x8xf32>
  return
}

// -----

func.func @l2_eps(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{expects a positive finite epsilon, got 0}}
  %y = attn.l2_norm %x {epsilon = 0.0 : f64} : tensor<1x8xf32>
  return
}

// -----

func.func @paged_rank(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x8x?x64xf32>) {
  // expected-error @+1 {{expects a key cache [num_pages, Hkv, page_size, head_dim] of rank 4, got rank 3}}
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x8x?x64xf32>) {scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x16x64xf32>, tensor<?x2x16x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>
  return
}

// -----

func.func @paged_groups(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x3x16x64xf32>, %vc: tensor<?x3x16x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x8x?x64xf32>) {
  // expected-error @+1 {{expects the query head count (8) to be a positive multiple of the key cache head count (3)}}
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x8x?x64xf32>) {scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x3x16x64xf32>, tensor<?x3x16x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>
  return
}

// -----

func.func @paged_page_size(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x8x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x8x?x64xf32>) {
  // expected-error @+1 {{key cache page_size (16) does not match value cache page_size (8)}}
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x8x?x64xf32>) {scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x8x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>
  return
}

// -----

func.func @paged_qpos_batch(%q: tensor<2x8x1x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<2x?xi32>, %lens: tensor<2xi64>, %pos: tensor<3xi64>, %init: tensor<2x8x1x64xf32>) {
  // expected-error @+1 {{q_pos size (3) does not match query batch (2)}}
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens q_pos(%pos : tensor<3xi64>) outs(%init : tensor<2x8x1x64xf32>) {scale = 0.125 : f64} : (tensor<2x8x1x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x64xf32>, tensor<2x?xi32>, tensor<2xi64>) -> tensor<2x8x1x64xf32>
  return
}

// -----

func.func @paged_stats_shape(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x8x?x64xf32>, %sinit: tensor<?x8x?xf32>) {
  // expected-error @+1 {{expects row statistics [batch, Hq, q_len, 2] of rank 4, got rank 3}}
  %0, %1 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x8x?x64xf32>, %sinit : tensor<?x8x?xf32>) {scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>, tensor<?x8x?xf32>
  return
}

// -----

func.func @paged_stats_pair(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x8x?x64xf32>, %sinit: tensor<?x8x?x3xf32>) {
  // expected-error @+1 {{expects row statistics of shape [batch, Hq, q_len, 2] (max, sum)}}
  %0, %1 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x8x?x64xf32>, %sinit : tensor<?x8x?x3xf32>) {scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>, tensor<?x8x?x3xf32>
  return
}

// -----

func.func @paged_table_batch(%q: tensor<2x8x1x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<3x?xi32>, %lens: tensor<2xi64>, %init: tensor<2x8x1x64xf32>) {
  // expected-error @+1 {{block table batch (3) does not match query batch (2)}}
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<2x8x1x64xf32>) {scale = 0.125 : f64} : (tensor<2x8x1x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x64xf32>, tensor<3x?xi32>, tensor<2xi64>) -> tensor<2x8x1x64xf32>
  return
}

// -----

func.func @paged_window(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x8x?x64xf32>) {
  // expected-error @+1 {{expects a 'window' attribute with a sliding_window mask}}
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x8x?x64xf32>) {mask = #attn.mask<sliding_window>, scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>
  return
}

// -----

func.func @paged_wider_cache(%q: tensor<?x8x?x64xbf16>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x8x?x64xbf16>) {
  // expected-error @+1 {{expects the key cache no wider than the query (a bf16/f16 cache, fp32 arithmetic), got 'f32' for a 'bf16' query}}
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x8x?x64xbf16>) {scale = 0.125 : f64} : (tensor<?x8x?x64xbf16>, tensor<?x2x16x64xf32>, tensor<?x2x16x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xbf16>
  return
}

// -----

func.func @online_pages_tile(%q: tensor<4x8x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>, %pages: tensor<?xi32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{expects a key page pool [num_pages, page_size, head_dim] with pages of rank 3, got rank 2}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i pages(%pages : tensor<?xi32>, %i) {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @online_pages_size(%q: tensor<4x8x16xf32>, %k: tensor<?x16x16xf32>, %v: tensor<?x8x16xf32>, %pages: tensor<?xi32>, %a: tensor<4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{key page_size (16) does not match value page_size (8)}}
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i pages(%pages : tensor<?xi32>, %i) {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<?x16x16xf32>, tensor<?x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @moe_groups(%x: tensor<?x8xf32>, %r: tensor<6x8xf32>, %g: tensor<6x4x8xf32>, %d: tensor<6x8x4xf32>) {
  // expected-error @+1 {{expects num_groups to divide the experts (6), got 4}}
  %0 = attn.moe <silu> %x, %r experts(%g, %g, %d) {top_k = 2 : i64, num_groups = 4 : i64} : (tensor<?x8xf32>, tensor<6x8xf32>, tensor<6x4x8xf32>, tensor<6x4x8xf32>, tensor<6x8x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_kept(%x: tensor<?x8xf32>, %r: tensor<8x8xf32>, %g: tensor<8x4x8xf32>, %d: tensor<8x8x4xf32>) {
  // expected-error @+1 {{expects top_k (5) at most the experts of the kept groups (4)}}
  %0 = attn.moe <silu> %x, %r experts(%g, %g, %d) {top_k = 5 : i64, num_groups = 4 : i64, topk_groups = 2 : i64} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8x4x8xf32>, tensor<8x4x8xf32>, tensor<8x8x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_bias(%x: tensor<?x8xf32>, %r: tensor<8x8xf32>, %b: tensor<7xf32>, %g: tensor<8x4x8xf32>, %d: tensor<8x8x4xf32>) {
  // expected-error @+1 {{expects a score_bias [experts] = [8], got 'tensor<7xf32>'}}
  %0 = attn.moe <silu> %x, %r score_bias(%b) experts(%g, %g, %d) {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<7xf32>, tensor<8x4x8xf32>, tensor<8x4x8xf32>, tensor<8x8x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_scale(%x: tensor<?x8xf32>, %r: tensor<8x8xf32>, %g: tensor<8x4x8xf32>, %d: tensor<8x8x4xf32>) {
  // expected-error @+1 {{expects a positive finite routed_scaling_factor, got 0}}
  %0 = attn.moe <silu> %x, %r experts(%g, %g, %d) {top_k = 2 : i64, routed_scaling_factor = 0.0 : f64} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8x4x8xf32>, tensor<8x4x8xf32>, tensor<8x8x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @latent_cache_row(%qn: tensor<?x4x?x16xf32>, %qr: tensor<?x4x?x8xf32>, %c: tensor<?x?x32xf32>, %w: tensor<96x32xf32>) {
  // expected-error @+1 {{expects cache rows of r + dr = 32 + 8 = 40 features (the latent, then the rotary key), got 32}}
  %0 = attn.latent_attention %qn, %qr, %c, %w {scale = 0.2 : f64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x?x32xf32>, tensor<96x32xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @latent_weight_rows(%qn: tensor<?x4x?x16xf32>, %qr: tensor<?x4x?x8xf32>, %c: tensor<?x?x40xf32>, %w: tensor<90x32xf32>) {
  // expected-error @+1 {{expects kv_b_weight rows H·(dn + dv) = 4·(16 + 8) = 96, got 90}}
  %0 = attn.latent_attention %qn, %qr, %c, %w {scale = 0.2 : f64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x?x40xf32>, tensor<90x32xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @latent_rope_heads(%qn: tensor<?x4x?x16xf32>, %qr: tensor<?x2x?x8xf32>, %c: tensor<?x?x40xf32>, %w: tensor<96x32xf32>) {
  // expected-error @+1 {{expects a q_rope [batch, H, q_len, dr] matching q_nope}}
  %0 = attn.latent_attention %qn, %qr, %c, %w {scale = 0.2 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x?x40xf32>, tensor<96x32xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @latent_mask(%qn: tensor<?x4x?x16xf32>, %qr: tensor<?x4x?x8xf32>, %c: tensor<?x?x40xf32>, %w: tensor<96x32xf32>) {
  // expected-error @+1 {{expects mask none or causal, got sliding_window}}
  %0 = attn.latent_attention %qn, %qr, %c, %w {scale = 0.2 : f64, mask = #attn.mask<sliding_window>} : (tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x?x40xf32>, tensor<96x32xf32>) -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @rope_long_alone(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects long_inv_freq and long_after together}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 4 : i64, inv_freq = array<f64: 1.0, 0.1>, long_inv_freq = array<f64: 1.0, 0.01>} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @rope_long_size(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects long_inv_freq to list rotary_dim / 2 = 2 frequencies, got 3}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 4 : i64, inv_freq = array<f64: 1.0, 0.1>, long_inv_freq = array<f64: 1.0, 0.01, 0.001>, long_after = 8 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @rope_long_no_short(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects inv_freq (the short table) with long_inv_freq}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 4 : i64, long_inv_freq = array<f64: 1.0, 0.01>, long_after = 8 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @rope_long_after(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects long_after >= 1, got 0}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 4 : i64, inv_freq = array<f64: 1.0, 0.1>, long_inv_freq = array<f64: 1.0, 0.01>, long_after = 0 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @rope_long_negative(%x: tensor<?x4x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects positive finite long_inv_freq entries, got -1}}
  %0 = attn.rope %x, %p {theta = 1.0e4 : f64, rotary_dim = 4 : i64, inv_freq = array<f64: 1.0, 0.1>, long_inv_freq = array<f64: 1.0, -1.0>, long_after = 8 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @sink_softmax_count(%s: tensor<?x8x?x?xf32>, %sinks: tensor<4xf32>) {
  // expected-error @+1 {{expects one sink per query head (8), got 4}}
  %0 = attn.sink_softmax %s, %sinks : (tensor<?x8x?x?xf32>, tensor<4xf32>) -> tensor<?x8x?x?xf32>
  return
}

// -----

func.func @sink_softmax_rank(%s: tensor<?x8x?x?xf32>, %sinks: tensor<8x1xf32>) {
  // expected-error @+1 {{expects sinks [heads] of rank 1, got rank 2}}
  %0 = attn.sink_softmax %s, %sinks : (tensor<?x8x?x?xf32>, tensor<8x1xf32>) -> tensor<?x8x?x?xf32>
  return
}

// -----

func.func @sdpa_sinks_type(%q: tensor<?x8x?x16xf32>, %k: tensor<?x2x?x16xf32>, %sinks: tensor<8xf16>, %init: tensor<?x8x?x16xf32>) {
  // expected-error @+1 {{expects f32 sinks or sinks of the query's element type 'f32', got 'f16'}}
  %0 = attn.sdpa %q, %k, %k sinks(%sinks : tensor<8xf16>) outs(%init : tensor<?x8x?x16xf32>) {scale = 0.25 : f64} : (tensor<?x8x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x8x?x16xf32>
  return
}

// -----

func.func @chunked_no_window(%q: tensor<?x8x?x16xf32>, %k: tensor<?x2x?x16xf32>, %init: tensor<?x8x?x16xf32>) {
  // expected-error @+1 {{expects a 'window' attribute with a chunked mask (the chunk size)}}
  %0 = attn.sdpa %q, %k, %k outs(%init : tensor<?x8x?x16xf32>) {mask = #attn.mask<chunked>, scale = 0.25 : f64} : (tensor<?x8x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x8x?x16xf32>
  return
}

// -----

func.func @temperature_floor(%q: tensor<?x8x?x16xf32>, %p: tensor<?x?xi64>) {
  // expected-error @+1 {{expects a positive floor_scale, got 0}}
  %0 = attn.temperature_scale %q, %p {floor_scale = 0 : i64, attn_scale = 0.1 : f64} : (tensor<?x8x?x16xf32>, tensor<?x?xi64>) -> tensor<?x8x?x16xf32>
  return
}

// -----

func.func @moe_router_bias(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %rb: tensor<5xf32>, %g: tensor<4x6x8xf32>, %d: tensor<4x8x6xf32>) {
  // expected-error @+1 {{expects a router_bias [experts] = [4], got 'tensor<5xf32>'}}
  %0 = attn.moe <silu> %x, %r router_bias(%rb) experts(%g, %g, %d) {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<5xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_expert_bias(%x: tensor<?x8xf32>, %r: tensor<4x8xf32>, %g: tensor<4x6x8xf32>, %d: tensor<4x8x6xf32>, %bg: tensor<4x6xf32>, %bd: tensor<4x6xf32>) {
  // expected-error @+1 {{expects an expert_down_bias [experts, hidden] = [4, 8], got 'tensor<4x6xf32>'}}
  %0 = attn.moe <silu> %x, %r experts(%g, %g, %d) expert_biases(%bg, %bg, %bd) {top_k = 2 : i64, swiglu_limit = 7.0 : f64} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @paged_range_start_without_qpos(%q: tensor<2x8x1x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<2x?xi32>, %lens: tensor<2xi64>, %start: tensor<2xi64>, %init: tensor<2x8x1x64xf32>) {
  // expected-error @+1 {{expects range_start only with q_pos (the query's position in the range)}}
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens range_start(%start : tensor<2xi64>) outs(%init : tensor<2x8x1x64xf32>) {mask = #attn.mask<chunked>, window = 8 : i64, scale = 0.125 : f64} : (tensor<2x8x1x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x64xf32>, tensor<2x?xi32>, tensor<2xi64>) -> tensor<2x8x1x64xf32>
  return
}

// -----

func.func @paged_range_start_batch(%q: tensor<2x8x1x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<2x?xi32>, %lens: tensor<2xi64>, %pos: tensor<2xi64>, %start: tensor<3xi64>, %init: tensor<2x8x1x64xf32>) {
  // expected-error @+1 {{range_start size (3) does not match query batch (2)}}
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens q_pos(%pos : tensor<2xi64>) range_start(%start : tensor<3xi64>) outs(%init : tensor<2x8x1x64xf32>) {mask = #attn.mask<chunked>, window = 8 : i64, scale = 0.125 : f64} : (tensor<2x8x1x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x64xf32>, tensor<2x?xi32>, tensor<2xi64>) -> tensor<2x8x1x64xf32>
  return
}

// -----

// #attn.tiles: blocks and split_min_keys positive, split_target 0 or more
// (attn-tile-attention refused these while -attn-pipeline took them).
func.func @tiles_negative_split(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{#attn.tiles takes positive q_block, kv_block, decode_kv_block and split_min_keys and a split_target of 0 or more, got q_block = 64, kv_block = 64, decode_kv_block = 1024, split_target = -1, split_min_keys = 512}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<1x4x8x16xf32>) {attn.tiles = #attn.tiles<q_block = 64, kv_block = 64, decode_kv_block = 1024, split_target = -1, split_min_keys = 512>, scale = 0.25 : f64} : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @tiles_zero_block(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{got q_block = 0, kv_block = 64}}
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<1x4x8x16xf32>) {attn.tiles = #attn.tiles<q_block = 0, kv_block = 64, decode_kv_block = 64, split_target = 0, split_min_keys = 512>, scale = 0.25 : f64} : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  return
}
