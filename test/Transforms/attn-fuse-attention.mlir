// RUN: attn-opt %s -split-input-file -attn-fuse-attention | FileCheck %s

// The chain as Llama's eager code writes it: scores scaled, causal mask,
// softmax, P·V, with GQA (32 query heads, 8 KV heads).
// CHECK-LABEL: func.func @causal_gqa(
// CHECK-SAME: %[[Q:.*]]: tensor<?x32x?x128xf32>, %[[K:.*]]: tensor<?x8x?x128xf32>, %[[V:.*]]: tensor<?x8x?x128xf32>
// CHECK: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] outs({{[^)]*}}) {mask = #attn.mask<causal>, scale = 0.088388347648318{{[0-9]*}} : f64} : (tensor<?x32x?x128xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>) -> tensor<?x32x?x128xf32>
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: attn.qk
// CHECK-NOT: attn.softmax
func.func @causal_gqa(%q: tensor<?x32x?x128xf32>, %k: tensor<?x8x?x128xf32>, %v: tensor<?x8x?x128xf32>) -> tensor<?x32x?x128xf32> {
  %s = attn.qk %q, %k : (tensor<?x32x?x128xf32>, tensor<?x8x?x128xf32>) -> tensor<?x32x?x?xf32>
  %t = attn.scale %s {scale = 0.088388347648318433 : f64} : tensor<?x32x?x?xf32>
  %m = attn.mask %t {kind = #attn.mask<causal>} : tensor<?x32x?x?xf32>
  %p = attn.softmax %m : tensor<?x32x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x32x?x?xf32>, tensor<?x8x?x128xf32>) -> tensor<?x32x?x128xf32>
  return %o : tensor<?x32x?x128xf32>
}

// -----

// Scale folded into Q before QKᵀ (Whisper), and a second scale on the scores:
// the fused scale is their product.
// CHECK-LABEL: func.func @scale_on_query(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<?x6x?x64xf32>
// CHECK: attn.sdpa %[[Q]], {{.*}} outs({{[^)]*}}) {scale = 6.250000e-02 : f64}
// CHECK-NOT: attn.scale
func.func @scale_on_query(%q: tensor<?x6x?x64xf32>, %k: tensor<?x6x?x64xf32>, %v: tensor<?x6x?x64xf32>) -> tensor<?x6x?x64xf32> {
  %qs = attn.scale %q {scale = 0.125 : f64} : tensor<?x6x?x64xf32>
  %s = attn.qk %qs, %k : (tensor<?x6x?x64xf32>, tensor<?x6x?x64xf32>) -> tensor<?x6x?x?xf32>
  %t = attn.scale %s {scale = 0.5 : f64} : tensor<?x6x?x?xf32>
  %p = attn.softmax %t : tensor<?x6x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x6x?x?xf32>, tensor<?x6x?x64xf32>) -> tensor<?x6x?x64xf32>
  return %o : tensor<?x6x?x64xf32>
}

// -----

// Additive mask: scores + (0 / -inf) bias, as `attn_weights + causal_mask`.
// CHECK-LABEL: func.func @additive_mask(
// CHECK: attn.sdpa {{.*}} outs({{[^)]*}}) {mask = #attn.mask<sliding_window>, scale = 1.250000e-01 : f64, window = 4096 : i64}
// CHECK-NOT: arith.addf
// CHECK-NOT: attn.mask_bias
func.func @additive_mask(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %s = attn.qk %q, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %t = attn.scale %s {scale = 0.125 : f64} : tensor<?x8x?x?xf32>
  %b = attn.mask_bias %t {kind = #attn.mask<sliding_window>, window = 4096 : i64} : tensor<?x8x?x?xf32>
  %m = arith.addf %b, %t : tensor<?x8x?x?xf32>
  %p = attn.softmax %m : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// Select mask: torch.where(mask, scores, -inf), with top-left alignment.
// CHECK-LABEL: func.func @select_mask(
// CHECK: attn.sdpa {{.*}} outs({{[^)]*}}) {align = #attn.align<top_left>, mask = #attn.mask<causal>, scale = 1.250000e-01 : f64}
// CHECK-NOT: arith.select
func.func @select_mask(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %ninf = arith.constant 0xFF800000 : f32
  %s = attn.qk %q, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %t = attn.scale %s {scale = 0.125 : f64} : tensor<?x8x?x?xf32>
  %c = attn.mask_cond %t {kind = #attn.mask<causal>, align = #attn.align<top_left>} : tensor<?x8x?x?xf32> -> tensor<?x8x?x?xi1>
  %d0 = tensor.dim %t, %c0 : tensor<?x8x?x?xf32>
  %d2 = tensor.dim %t, %c2 : tensor<?x8x?x?xf32>
  %d3 = tensor.dim %k, %c2 : tensor<?x8x?x64xf32>
  %n = tensor.splat %ninf[%d0, %d2, %d3] : tensor<?x8x?x?xf32>
  %m = arith.select %c, %t, %n : tensor<?x8x?x?xi1>, tensor<?x8x?x?xf32>
  %p = attn.softmax %m : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// Gemma 2: scale, softcap, sliding window; key padding by lengths.
// CHECK-LABEL: func.func @softcap_padding(
// CHECK-SAME: %[[L:[^:]*]]: tensor<?xi64>
// CHECK: attn.sdpa {{.*}} kv_lengths(%[[L]] : tensor<?xi64>) outs({{[^)]*}}) {mask = #attn.mask<sliding_window>, scale = 6.250000e-02 : f64, softcap = 5.000000e+01 : f64, window = 4096 : i64}
func.func @softcap_padding(%q: tensor<?x8x?x256xf32>, %k: tensor<?x4x?x256xf32>, %v: tensor<?x4x?x256xf32>, %lens: tensor<?xi64>) -> tensor<?x8x?x256xf32> {
  %s = attn.qk %q, %k : (tensor<?x8x?x256xf32>, tensor<?x4x?x256xf32>) -> tensor<?x8x?x?xf32>
  %t = attn.scale %s {scale = 0.0625 : f64} : tensor<?x8x?x?xf32>
  %c = attn.softcap %t {cap = 50.0 : f64} : tensor<?x8x?x?xf32>
  %m = attn.mask %c kv_lengths(%lens : tensor<?xi64>) {kind = #attn.mask<sliding_window>, window = 4096 : i64} : tensor<?x8x?x?xf32>
  %p = attn.softmax %m : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x4x?x256xf32>) -> tensor<?x8x?x256xf32>
  return %o : tensor<?x8x?x256xf32>
}

// -----

// T5: no scale, relative-position bias, causal; cross attention (q_len != kv_len, no mask).
// CHECK-LABEL: func.func @t5(
// CHECK-SAME: %[[T:[^:]*]]: tensor<32x8xf32>
// CHECK: attn.sdpa {{.*}} bias_table(%[[T]] : tensor<32x8xf32>) outs({{[^)]*}}) {mask = #attn.mask<causal>, relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = false>, scale = 1.000000e+00 : f64}
// CHECK: attn.sdpa {{.*}} outs({{[^)]*}}) {scale = 1.000000e+00 : f64} : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
func.func @t5(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>, %table: tensor<32x8xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) {
  %s = attn.qk %q, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %b = attn.relative_position_bias %s, %table {num_buckets = 32 : i64, max_distance = 128 : i64} : tensor<?x8x?x?xf32>, tensor<32x8xf32>
  %m = attn.mask %b {kind = #attn.mask<causal>} : tensor<?x8x?x?xf32>
  %p = attn.softmax %m : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  %s2 = attn.qk %o, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %p2 = attn.softmax %s2 : tensor<?x8x?x?xf32>
  %o2 = attn.pv %p2, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o, %o2 : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>
}

// -----

// Not attention: the probabilities are also returned (attention weights
// output), so the softmax must stay.
// CHECK-LABEL: func.func @softmax_used_elsewhere(
// CHECK: attn.qk
// CHECK: attn.softmax
// CHECK: attn.pv
// CHECK-NOT: attn.sdpa
func.func @softmax_used_elsewhere(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?x?xf32>) {
  %s = attn.qk %q, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %p = attn.softmax %s : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o, %p : tensor<?x8x?x64xf32>, tensor<?x8x?x?xf32>
}

// -----

// Not attention: the raw scores are also used elsewhere.
// CHECK-LABEL: func.func @scores_used_elsewhere(
// CHECK-NOT: attn.sdpa
func.func @scores_used_elsewhere(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?x?xf32>) {
  %s = attn.qk %q, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %t = attn.scale %s {scale = 0.125 : f64} : tensor<?x8x?x?xf32>
  %p = attn.softmax %t : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o, %s : tensor<?x8x?x64xf32>, tensor<?x8x?x?xf32>
}

// -----

// Not one of the supported masks: an arbitrary additive bias tensor (ALiBi,
// a user mask) passed as an argument.
// CHECK-LABEL: func.func @arbitrary_bias(
// CHECK: arith.addf
// CHECK-NOT: attn.sdpa
func.func @arbitrary_bias(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>, %bias: tensor<?x8x?x?xf32>) -> tensor<?x8x?x64xf32> {
  %s = attn.qk %q, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %m = arith.addf %s, %bias : tensor<?x8x?x?xf32>
  %p = attn.softmax %m : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// Not the same function: select against finfo.min instead of -inf differs on
// fully masked rows (uniform weights instead of zeros), so it is not fused.
// CHECK-LABEL: func.func @select_finfo_min(
// CHECK: arith.select
// CHECK-NOT: attn.sdpa
func.func @select_finfo_min(%q: tensor<2x8x4x64xf32>, %k: tensor<2x8x4x64xf32>, %v: tensor<2x8x4x64xf32>) -> tensor<2x8x4x64xf32> {
  %min = arith.constant dense<-3.40282347E+38> : tensor<2x8x4x4xf32>
  %s = attn.qk %q, %k : (tensor<2x8x4x64xf32>, tensor<2x8x4x64xf32>) -> tensor<2x8x4x4xf32>
  %c = attn.mask_cond %s {kind = #attn.mask<causal>} : tensor<2x8x4x4xf32> -> tensor<2x8x4x4xi1>
  %m = arith.select %c, %s, %min : tensor<2x8x4x4xi1>, tensor<2x8x4x4xf32>
  %p = attn.softmax %m : tensor<2x8x4x4xf32>
  %o = attn.pv %p, %v : (tensor<2x8x4x4xf32>, tensor<2x8x4x64xf32>) -> tensor<2x8x4x64xf32>
  return %o : tensor<2x8x4x64xf32>
}

// -----

// Not sdpa's order: the scale comes after the softcap (cap·tanh(s/cap)·c is
// not softcap(c·s)), so the chain is left alone.
// CHECK-LABEL: func.func @scale_after_softcap(
// CHECK: attn.softcap
// CHECK-NOT: attn.sdpa
func.func @scale_after_softcap(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %s = attn.qk %q, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %c = attn.softcap %s {cap = 50.0 : f64} : tensor<?x8x?x?xf32>
  %t = attn.scale %c {scale = 0.125 : f64} : tensor<?x8x?x?xf32>
  %p = attn.softmax %t : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// Two masks stacked (causal, then another causal): not a single supported
// mask, left alone.
// CHECK-LABEL: func.func @two_masks(
// CHECK-COUNT-2: attn.mask
// CHECK-NOT: attn.sdpa
func.func @two_masks(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %s = attn.qk %q, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %m = attn.mask %s {kind = #attn.mask<causal>} : tensor<?x8x?x?xf32>
  %m2 = attn.mask %m {kind = #attn.mask<sliding_window>, window = 8 : i64} : tensor<?x8x?x?xf32>
  %p = attn.softmax %m2 : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}
