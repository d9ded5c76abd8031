// convert-attn-to-linalg is a dialect conversion in which every attn op is
// illegal: an op without a lowering is an error at that op, never left
// behind for a later stage to trip on.
// RUN: attn-opt %s -split-input-file -verify-diagnostics -convert-attn-to-linalg

func.func @mask_bias(%s: tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32> {
  // expected-error @+1 {{failed to legalize operation 'attn.mask_bias' that was explicitly marked illegal}}
  %b = attn.mask_bias %s {kind = #attn.mask<causal>} : tensor<1x2x3x5xf32>
  return %b : tensor<1x2x3x5xf32>
}

// -----

func.func @mask_cond(%s: tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xi1> {
  // expected-error @+1 {{failed to legalize operation 'attn.mask_cond' that was explicitly marked illegal}}
  %c = attn.mask_cond %s {kind = #attn.mask<causal>} : tensor<1x2x3x5xf32> -> tensor<1x2x3x5xi1>
  return %c : tensor<1x2x3x5xi1>
}

// -----

// An untiled sdpa: attn-tile-attention (or attn-decompose-sdpa) must run first.
func.func @sdpa(%q: tensor<1x2x3x8xf32>, %k: tensor<1x1x5x8xf32>, %v: tensor<1x1x5x8xf32>) -> tensor<1x2x3x8xf32> {
  // expected-error @+1 {{failed to legalize operation 'attn.sdpa' that was explicitly marked illegal}}
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<1x2x3x8xf32>) {scale = 0.25 : f64} : (tensor<1x2x3x8xf32>, tensor<1x1x5x8xf32>, tensor<1x1x5x8xf32>) -> tensor<1x2x3x8xf32>
  return %o : tensor<1x2x3x8xf32>
}

// -----

func.func @softmax_rank3(%s: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  // expected-error @+2 {{convert-attn-to-linalg: softmax of rank 3 is not lowered yet}}
  // expected-error @+1 {{failed to legalize operation 'attn.softmax' that was explicitly marked illegal}}
  %p = attn.softmax %s : tensor<2x3x5xf32>
  return %p : tensor<2x3x5xf32>
}

// -----

// The tiled gated-delta chunk has no linalg lowering: only the CPU kernel
// (chosen by attn-cpu-select-kernels, after bufferization) takes it.
func.func @gated_delta_chunk(%q: tensor<8x16xf32>, %g: tensor<8xf32>, %s: tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<16x16xf32>) {
  // expected-error @+1 {{failed to legalize operation 'attn.gated_delta_chunk' that was explicitly marked illegal}}
  %o, %t = attn.gated_delta_chunk %q, %q, %q, %g, %g, %q, %s {scale = 0.25 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<16x16xf32>)
  return %o, %t : tensor<8x16xf32>, tensor<16x16xf32>
}
