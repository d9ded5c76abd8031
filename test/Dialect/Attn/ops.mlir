// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s

// Every attn op, printed and re-parsed twice (custom and generic forms).

// CHECK-LABEL: func.func @graph
func.func @graph(%x: tensor<?x?x64xf32>, %ln_w: tensor<64xf32>, %ln_b: tensor<64xf32>,
                 %wq: tensor<64x64xf32>, %bq: tensor<64xf32>, %wk: tensor<16x64xf32>,
                 %wv: tensor<16x64xf32>, %wo: tensor<64x64xf32>,
                 %qn: tensor<16xf32>, %pos: tensor<?x?xi64>, %lens: tensor<?xi32>,
                 %table: tensor<32x4xf32>, %wt: tensor<64x48xf32>)
    -> tensor<?x?x64xf32> {
  // CHECK: %[[N:.*]] = attn.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64, unit_offset} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %n = attn.rms_norm %x, %ln_w {epsilon = 1.0e-6 : f64, unit_offset} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CHECK: attn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %n2 = attn.layer_norm %x, %ln_w, %ln_b {epsilon = 1.0e-5 : f64} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CHECK: attn.layer_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %n3 = attn.layer_norm %n2, %ln_w {epsilon = 1.0e-5 : f64} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CHECK: %[[Q:.*]] = attn.linear %[[N]], %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %q = attn.linear %n, %wq, %bq : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CHECK: attn.linear %[[N]], %{{.*}} : (tensor<?x?x64xf32>, tensor<16x64xf32>) -> tensor<?x?x16xf32>
  %k = attn.linear %n, %wk : (tensor<?x?x64xf32>, tensor<16x64xf32>) -> tensor<?x?x16xf32>
  %v = attn.linear %n3, %wv : (tensor<?x?x64xf32>, tensor<16x64xf32>) -> tensor<?x?x16xf32>
  // CHECK: attn.split_heads %[[Q]] : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
  %qh = attn.split_heads %q : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
  %kh = attn.split_heads %k : tensor<?x?x16xf32> -> tensor<?x1x?x16xf32>
  %vh = attn.split_heads %v : tensor<?x?x16xf32> -> tensor<?x1x?x16xf32>
  // CHECK: attn.rms_norm {{.*}} {epsilon = 9.9999999999999995E-7 : f64} : (tensor<?x4x?x16xf32>, tensor<16xf32>)
  %qnorm = attn.rms_norm %qh, %qn {epsilon = 1.0e-6 : f64} : (tensor<?x4x?x16xf32>, tensor<16xf32>) -> tensor<?x4x?x16xf32>
  // CHECK: attn.rope %{{.*}}, %{{.*}} {rotary_dim = 16 : i64, theta = 1.000000e+04 : f64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  %qr = attn.rope %qnorm, %pos {theta = 1.0e4 : f64, rotary_dim = 16 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  // CHECK: attn.rope %{{.*}}, %{{.*}} {attention_factor = 1.250000e+00 : f64, interleaved, inv_freq = array<f64: 1.000000e+00, 1.000000e-01, 1.000000e-02, 1.000000e-03>, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64}
  %kr = attn.rope %kh, %pos {theta = 1.0e4 : f64, rotary_dim = 8 : i64, interleaved, attention_factor = 1.25 : f64, inv_freq = array<f64: 1.0, 0.1, 0.01, 0.001>} : (tensor<?x1x?x16xf32>, tensor<?x?xi64>) -> tensor<?x1x?x16xf32>
  // CHECK: attn.rope %{{.*}}, %{{.*}} {inv_freq = array<f64: 1.000000e+00, 1.000000e-01>, long_after = 4096 : i64, long_inv_freq = array<f64: 1.000000e+00, 1.000000e-02>, rotary_dim = 4 : i64, theta = 1.000000e+04 : f64}
  %kl = attn.rope %kh, %pos {theta = 1.0e4 : f64, rotary_dim = 4 : i64, inv_freq = array<f64: 1.0, 0.1>, long_inv_freq = array<f64: 1.0, 0.01>, long_after = 4096 : i64} : (tensor<?x1x?x16xf32>, tensor<?x?xi64>) -> tensor<?x1x?x16xf32>
  // CHECK: %[[S:.*]] = attn.qk %{{.*}}, %{{.*}} : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x?xf32>
  %s = attn.qk %qr, %kr : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x?xf32>
  // CHECK: attn.scale %[[S]] {scale = 2.500000e-01 : f64} : tensor<?x4x?x?xf32>
  %ss = attn.scale %s {scale = 0.25 : f64} : tensor<?x4x?x?xf32>
  // CHECK: attn.softcap %{{.*}} {cap = 5.000000e+01 : f64} : tensor<?x4x?x?xf32>
  %sc = attn.softcap %ss {cap = 50.0 : f64} : tensor<?x4x?x?xf32>
  // CHECK: attn.mask %{{.*}} {kind = #attn.mask<causal>} : tensor<?x4x?x?xf32>
  %m1 = attn.mask %sc {kind = #attn.mask<causal>} : tensor<?x4x?x?xf32>
  // CHECK: attn.mask %{{.*}} {align = #attn.align<top_left>, kind = #attn.mask<sliding_window>, window = 4 : i64} : tensor<?x4x?x?xf32>
  %m2 = attn.mask %m1 {kind = #attn.mask<sliding_window>, window = 4 : i64, align = #attn.align<top_left>} : tensor<?x4x?x?xf32>
  // CHECK: attn.mask %{{.*}} kv_lengths(%{{.*}} : tensor<?xi32>) {kind = #attn.mask<none>} : tensor<?x4x?x?xf32>
  %m3 = attn.mask %m2 kv_lengths(%lens : tensor<?xi32>) {kind = #attn.mask<none>} : tensor<?x4x?x?xf32>
  // CHECK: attn.relative_position_bias %{{.*}}, %{{.*}} {bidirectional, max_distance = 128 : i64, num_buckets = 32 : i64} : tensor<?x4x?x?xf32>, tensor<32x4xf32>
  %rb = attn.relative_position_bias %m3, %table {num_buckets = 32 : i64, max_distance = 128 : i64, bidirectional} : tensor<?x4x?x?xf32>, tensor<32x4xf32>
  // CHECK: %[[P:.*]] = attn.softmax %{{.*}} : tensor<?x4x?x?xf32>
  %p = attn.softmax %rb : tensor<?x4x?x?xf32>
  // CHECK: attn.pv %[[P]], %{{.*}} : (tensor<?x4x?x?xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %o = attn.pv %p, %vh : (tensor<?x4x?x?xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  // CHECK: attn.sigmoid_gate %{{.*}}, %{{.*}} : tensor<?x4x?x16xf32>
  %og = attn.sigmoid_gate %o, %qh : tensor<?x4x?x16xf32>
  // CHECK: attn.merge_heads %{{.*}} : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  %om = attn.merge_heads %og : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  // CHECK: attn.linear %{{.*}}, %{{.*}} {transpose_weight} : (tensor<?x?x64xf32>, tensor<64x48xf32>) -> tensor<?x?x48xf32>
  %t = attn.linear %om, %wt {transpose_weight} : (tensor<?x?x64xf32>, tensor<64x48xf32>) -> tensor<?x?x48xf32>
  %y = attn.linear %om, %wo : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  // CHECK: attn.add %{{.*}}, %{{.*}} : tensor<?x?x64xf32>
  %r = attn.add %x, %y : tensor<?x?x64xf32>
  return %r : tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @fused
func.func @fused(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>,
                 %v: tensor<?x8x?x128xbf16>, %lens: tensor<?xi64>)
    -> (tensor<?x32x?x128xbf16>, tensor<?x32x?x128xbf16>, tensor<?x32x?x128xbf16>) {
  // CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} outs({{[^)]*}}) {mask = #attn.mask<causal>, scale = 0.08837890625 : f64} : (tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>) -> tensor<?x32x?x128xbf16>
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<?x32x?x128xbf16>) {mask = #attn.mask<causal>, scale = 0.08837890625 : f64}
      : (tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>) -> tensor<?x32x?x128xbf16>
  // CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} kv_lengths(%{{.*}} : tensor<?xi64>) outs({{[^)]*}}) {align = #attn.align<top_left>, mask = #attn.mask<sliding_window>, scale = 6.250000e-02 : f64, softcap = 5.000000e+01 : f64, window = 4096 : i64}
  %1 = attn.sdpa %q, %k, %v kv_lengths(%lens : tensor<?xi64>) outs(%q : tensor<?x32x?x128xbf16>) {mask = #attn.mask<sliding_window>, window = 4096 : i64, softcap = 50.0 : f64, scale = 0.0625 : f64, align = #attn.align<top_left>}
      : (tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>) -> tensor<?x32x?x128xbf16>
  // CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} outs({{[^)]*}}) {scale = 1.000000e+00 : f64}
  %2 = attn.sdpa %q, %k, %v outs(%q : tensor<?x32x?x128xbf16>) {scale = 1.0 : f64}
      : (tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>) -> tensor<?x32x?x128xbf16>
  return %0, %1, %2 : tensor<?x32x?x128xbf16>, tensor<?x32x?x128xbf16>, tensor<?x32x?x128xbf16>
}

// Different q/k and v head dims (MLA-style), cross attention shapes.
// CHECK-LABEL: func.func @fused_dv
func.func @fused_dv(%q: tensor<2x4x3x40xf32>, %k: tensor<2x2x17x40xf32>, %v: tensor<2x2x17x24xf32>) -> tensor<2x4x3x24xf32> {
  // CHECK: attn.sdpa {{.*}} : (tensor<2x4x3x40xf32>, tensor<2x2x17x40xf32>, tensor<2x2x17x24xf32>) -> tensor<2x4x3x24xf32>
  %init = tensor.empty() : tensor<2x4x3x24xf32>
  %0 = attn.sdpa %q, %k, %v outs(%init : tensor<2x4x3x24xf32>) {scale = 0.158 : f64} : (tensor<2x4x3x40xf32>, tensor<2x2x17x40xf32>, tensor<2x2x17x24xf32>) -> tensor<2x4x3x24xf32>
  return %0 : tensor<2x4x3x24xf32>
}

// CHECK-LABEL: func.func @tiled
func.func @tiled(%q: tensor<4x64x128xf32>, %k: tensor<32x128xf32>, %v: tensor<32x128xf32>,
                 %acc: tensor<4x64x128xf32>, %max: tensor<4x64xf32>, %sum: tensor<4x64xf32>,
                 %qpos: index, %kvpos: index, %limit: index) -> tensor<4x64x128xf32> {
  // CHECK: %{{.*}} = attn.online_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {mask = #attn.mask<causal>, scale = 1.250000e-01 : f64} : (tensor<4x64x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>) -> (tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
  %a, %m, %l = attn.online_attention %q, %k, %v, %acc, %max, %sum, %qpos, %kvpos
      {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<4x64x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
      -> (tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
  // CHECK: attn.online_attention {{.*}} {mask = #attn.mask<sliding_window>, scale = 1.250000e-01 : f64, softcap = 3.000000e+01 : f64, window = 128 : i64}
  %a2, %m2, %l2 = attn.online_attention %q, %k, %v, %a, %m, %l, %qpos, %kvpos
      {mask = #attn.mask<sliding_window>, window = 128 : i64, softcap = 30.0 : f64, scale = 0.125 : f64}
      : (tensor<4x64x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
      -> (tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
  // CHECK: attn.online_finalize %{{.*}}, %{{.*}} outs({{[^)]*}}) : (tensor<4x64x128xf32>, tensor<4x64xf32>) -> tensor<4x64x128xf32>
  %o = attn.online_finalize %a2, %l2 outs(%a2 : tensor<4x64x128xf32>) : (tensor<4x64x128xf32>, tensor<4x64xf32>) -> tensor<4x64x128xf32>
  return %o : tensor<4x64x128xf32>
}

// CHECK-LABEL: func.func @relative_bias
func.func @relative_bias(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>,
                         %table: tensor<32x8xf32>, %qt: tensor<8x16x64xf32>, %kt: tensor<32x64xf32>,
                         %acc: tensor<8x16x64xf32>, %mx: tensor<8x16xf32>, %i: index)
    -> (tensor<?x8x?x64xf32>, tensor<8x16x64xf32>) {
  // CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} bias_table(%{{.*}} : tensor<32x8xf32>) outs({{[^)]*}}) {mask = #attn.mask<causal>, relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = false>, scale = 1.000000e+00 : f64}
  %0 = attn.sdpa %q, %k, %v bias_table(%table : tensor<32x8xf32>)
 outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 1.0 : f64,
       relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = false>}
      : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  // CHECK: attn.online_attention {{.*}} bias_table(%{{.*}} : tensor<32x8xf32>, %{{.*}}) {relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = true>, scale = 1.000000e+00 : f64}
  %a, %m, %l = attn.online_attention %qt, %kt, %kt, %acc, %mx, %mx, %i, %i bias_table(%table : tensor<32x8xf32>, %i)
      {scale = 1.0 : f64, relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = true>}
      : (tensor<8x16x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<8x16x64xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
      -> (tensor<8x16x64xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return %0, %a : tensor<?x8x?x64xf32>, tensor<8x16x64xf32>
}

// CHECK-LABEL: func.func @mask_construction
func.func @mask_construction(%s: tensor<?x8x?x?xf32>) -> (tensor<?x8x?x?xf32>, tensor<?x8x?x?xi1>) {
  // CHECK: attn.mask_bias %{{.*}} {kind = #attn.mask<causal>} : tensor<?x8x?x?xf32>
  %b = attn.mask_bias %s {kind = #attn.mask<causal>} : tensor<?x8x?x?xf32>
  // CHECK: attn.mask_cond %{{.*}} {align = #attn.align<top_left>, kind = #attn.mask<sliding_window>, window = 16 : i64} : tensor<?x8x?x?xf32> -> tensor<?x8x?x?xi1>
  %c = attn.mask_cond %s {kind = #attn.mask<sliding_window>, window = 16 : i64, align = #attn.align<top_left>} : tensor<?x8x?x?xf32> -> tensor<?x8x?x?xi1>
  return %b, %c : tensor<?x8x?x?xf32>, tensor<?x8x?x?xi1>
}

// Destination-passing style: a tile of a longer query keeps its rows'
// positions (q_pos) on sdpa and on the chain's mask and bias; the tiled
// step also exists on buffers (no results, state updated in place).
// CHECK-LABEL: func.func @positions_and_buffers(
// CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} q_pos(%{{.*}}) outs(%{{.*}} : tensor<1x4x3x8xf32>) {mask = #attn.mask<causal>, scale = 2.500000e-01 : f64}
// CHECK: attn.mask %{{.*}} q_pos(%{{.*}}) {kind = #attn.mask<causal>} : tensor<1x4x3x5xf32>
// CHECK: attn.relative_position_bias %{{.*}}, %{{.*}} q_pos(%{{.*}}) {max_distance = 128 : i64, num_buckets = 32 : i64} : tensor<1x4x3x5xf32>, tensor<32x4xf32>
// CHECK: attn.online_attention {{.*}} : (memref<4x8x16xf32>, memref<32x16xf32>, memref<32x16xf32>, memref<4x8x16xf32>, memref<4x8xf32>, memref<4x8xf32>){{$}}
func.func @positions_and_buffers(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>,
                                 %s: tensor<1x4x3x5xf32>, %t: tensor<32x4xf32>, %p: index,
                                 %bq: memref<4x8x16xf32>, %bk: memref<32x16xf32>, %bv: memref<32x16xf32>,
                                 %ba: memref<4x8x16xf32>, %bm: memref<4x8xf32>, %bs: memref<4x8xf32>)
    -> (tensor<1x4x3x8xf32>, tensor<1x4x3x5xf32>) {
  %0 = attn.sdpa %q, %k, %v q_pos(%p) outs(%q : tensor<1x4x3x8xf32>) {mask = #attn.mask<causal>, scale = 0.25 : f64}
      : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32>
  %1 = attn.mask %s q_pos(%p) {kind = #attn.mask<causal>} : tensor<1x4x3x5xf32>
  %2 = attn.relative_position_bias %1, %t q_pos(%p) {num_buckets = 32 : i64, max_distance = 128 : i64} : tensor<1x4x3x5xf32>, tensor<32x4xf32>
  attn.online_attention %bq, %bk, %bv, %ba, %bm, %bs, %p, %p {scale = 0.25 : f64}
      : (memref<4x8x16xf32>, memref<32x16xf32>, memref<32x16xf32>, memref<4x8x16xf32>, memref<4x8xf32>, memref<4x8xf32>)
  return %0, %2 : tensor<1x4x3x8xf32>, tensor<1x4x3x5xf32>
}

// Gated DeltaNet's recurrence: 2 value heads per query/key head, d_k ≠ d_v,
// with and without an initial state, with per-sequence lengths.
// CHECK-LABEL: func.func @gated_delta_rule
func.func @gated_delta_rule(%q: tensor<?x2x?x64xf32>, %k: tensor<?x2x?x64xf32>,
                            %v: tensor<?x4x?x32xf32>, %g: tensor<?x4x?xf32>,
                            %b: tensor<?x4x?xf32>, %s0: tensor<?x4x64x32xf32>,
                            %oi: tensor<?x4x?x32xf32>, %lens: tensor<?xi64>)
    -> (tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>) {
  // CHECK: attn.gated_delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} outs(%{{.*}}, %{{.*}} : tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>) {scale = 1.250000e-01 : f64} : (tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>)
  %o0, %st0 = attn.gated_delta_rule %q, %k, %v, %g, %b outs(%oi, %s0 : tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>) {scale = 0.125 : f64}
      : (tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>)
  // CHECK: attn.gated_delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} initial_state(%{{.*}} : tensor<?x4x64x32xf32>) outs(
  %o1, %st1 = attn.gated_delta_rule %q, %k, %v, %g, %b initial_state(%st0 : tensor<?x4x64x32xf32>) outs(%oi, %s0 : tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>) {scale = 0.125 : f64}
      : (tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>)
  // CHECK: attn.gated_delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} initial_state(%{{.*}} : tensor<?x4x64x32xf32>) lengths(%{{.*}} : tensor<?xi64>) outs(
  %o2, %st2 = attn.gated_delta_rule %q, %k, %v, %g, %b initial_state(%st1 : tensor<?x4x64x32xf32>) lengths(%lens : tensor<?xi64>) outs(%oi, %s0 : tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>) {scale = 0.125 : f64}
      : (tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>)
  // Without the delta correction (Mamba2's SSD).
  // CHECK: attn.gated_delta_rule {{.*}} {no_delta, scale = 1.000000e+00 : f64}
  %o3, %st3 = attn.gated_delta_rule %q, %k, %v, %g, %b initial_state(%st2 : tensor<?x4x64x32xf32>) outs(%oi, %s0 : tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>) {no_delta, scale = 1.0 : f64}
      : (tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>)
  return %o3, %st3 : tensor<?x4x?x32xf32>, tensor<?x4x64x32xf32>
}

// The tiled form of the gated delta rule, on tensors (outputs and state
// returned) and on buffers (updated in place, no results), chunked and
// recurrent.
// CHECK-LABEL: func.func @gated_delta_chunk
func.func @gated_delta_chunk(%q: tensor<?x64xf32>, %v: tensor<?x32xf32>,
                             %g: tensor<?xf32>, %s: tensor<64x32xf32>,
                             %qm: memref<?x64xf32>, %vm: memref<?x32xf32>,
                             %gm: memref<?xf32>, %sm: memref<64x32xf32>)
    -> (tensor<?x32xf32>, tensor<64x32xf32>) {
  // CHECK: attn.gated_delta_chunk %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64} : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x32xf32>, tensor<64x32xf32>) -> (tensor<?x32xf32>, tensor<64x32xf32>)
  %o, %st = attn.gated_delta_chunk %q, %q, %v, %g, %g, %v, %s {scale = 0.125 : f64}
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x32xf32>, tensor<64x32xf32>) -> (tensor<?x32xf32>, tensor<64x32xf32>)
  // CHECK: attn.gated_delta_chunk {{.*}} {recurrent, scale = 1.250000e-01 : f64} : (memref<?x64xf32>, memref<?x64xf32>, memref<?x32xf32>, memref<?xf32>, memref<?xf32>, memref<?x32xf32>, memref<64x32xf32>){{$}}
  attn.gated_delta_chunk %qm, %qm, %vm, %gm, %gm, %vm, %sm {recurrent, scale = 0.125 : f64}
      : (memref<?x64xf32>, memref<?x64xf32>, memref<?x32xf32>, memref<?xf32>, memref<?xf32>, memref<?x32xf32>, memref<64x32xf32>)
  // The state before the chunk read from initial_state (here the state
  // itself: in place).
  // CHECK: attn.gated_delta_chunk {{.*}}, %[[SM:.*]] initial_state(%[[SM]] : memref<64x32xf32>) {recurrent, scale = 1.250000e-01 : f64}
  attn.gated_delta_chunk %qm, %qm, %vm, %gm, %gm, %vm, %sm initial_state(%sm : memref<64x32xf32>) {recurrent, scale = 0.125 : f64}
      : (memref<?x64xf32>, memref<?x64xf32>, memref<?x32xf32>, memref<?xf32>, memref<?xf32>, memref<?x32xf32>, memref<64x32xf32>)
  // CHECK: attn.gated_delta_chunk {{.*}} {no_delta, scale = 1.000000e+00 : f64}
  attn.gated_delta_chunk %qm, %qm, %vm, %gm, %gm, %vm, %sm {no_delta, scale = 1.0 : f64}
      : (memref<?x64xf32>, memref<?x64xf32>, memref<?x32xf32>, memref<?xf32>, memref<?xf32>, memref<?x32xf32>, memref<64x32xf32>)
  return %o, %st : tensor<?x32xf32>, tensor<64x32xf32>
}

// Gated DeltaNet's graph ops: the short causal convolution with its state,
// L2 norm, the decay gate and beta, the gated RMSNorm.
// CHECK-LABEL: func.func @gated_delta_graph
func.func @gated_delta_graph(%x: tensor<?x?x96xf32>, %w: tensor<96x4xf32>,
                             %s0: tensor<?x96x3xf32>, %q: tensor<?x2x?x16xf32>,
                             %a: tensor<?x?x4xf32>, %hv: tensor<4xf32>,
                             %o: tensor<?x?x4x8xf32>, %nw: tensor<8xf32>)
    -> (tensor<?x?x96xf32>, tensor<?x96x3xf32>, tensor<?x2x?x16xf32>,
        tensor<?x4x?xf32>, tensor<?x4x?xf32>, tensor<?x?x4x8xf32>) {
  // CHECK: attn.causal_conv1d %{{.*}}, %{{.*}} : (tensor<?x?x96xf32>, tensor<96x4xf32>) -> (tensor<?x?x96xf32>, tensor<?x96x3xf32>)
  %y0, %st0 = attn.causal_conv1d %x, %w : (tensor<?x?x96xf32>, tensor<96x4xf32>) -> (tensor<?x?x96xf32>, tensor<?x96x3xf32>)
  // CHECK: attn.causal_conv1d %{{.*}}, %{{.*}} state(%{{.*}} : tensor<?x96x3xf32>)
  %y, %st = attn.causal_conv1d %y0, %w state(%s0 : tensor<?x96x3xf32>) : (tensor<?x?x96xf32>, tensor<96x4xf32>) -> (tensor<?x?x96xf32>, tensor<?x96x3xf32>)
  // CHECK: attn.l2_norm %{{.*}} {epsilon = 9.9999999999999995E-7 : f64} : tensor<?x2x?x16xf32>
  %qn = attn.l2_norm %q {epsilon = 1.0e-06 : f64} : tensor<?x2x?x16xf32>
  // CHECK: attn.gated_delta_gates %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x?xf32>, tensor<?x4x?xf32>)
  %g, %beta = attn.gated_delta_gates %a, %a, %hv, %hv : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x?xf32>, tensor<?x4x?xf32>)
  // CHECK: attn.gated_rms_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64}
  %n = attn.gated_rms_norm %o, %o, %nw {epsilon = 1.0e-06 : f64} : (tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<8xf32>) -> tensor<?x?x4x8xf32>
  return %y, %st, %qn, %g, %beta, %n : tensor<?x?x96xf32>, tensor<?x96x3xf32>, tensor<?x2x?x16xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>, tensor<?x?x4x8xf32>
}

// Mamba2's: the convolution with its bias, dt as beta, the D skip, the
// gated RMSNorm with the gate first.
// CHECK-LABEL: func.func @mamba_graph
func.func @mamba_graph(%x: tensor<?x?x96xf32>, %w: tensor<96x4xf32>,
                       %cb: tensor<96xf32>, %s0: tensor<?x96x3xf32>,
                       %dt: tensor<?x?x4xf32>, %hv: tensor<4xf32>,
                       %o: tensor<?x4x?x8xf32>, %m: tensor<?x?x32xf32>,
                       %nw: tensor<32xf32>) {
  // CHECK: attn.causal_conv1d %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<96xf32>) state(%{{.*}} : tensor<?x96x3xf32>)
  %y, %st = attn.causal_conv1d %x, %w bias(%cb : tensor<96xf32>) state(%s0 : tensor<?x96x3xf32>) : (tensor<?x?x96xf32>, tensor<96x4xf32>) -> (tensor<?x?x96xf32>, tensor<?x96x3xf32>)
  // CHECK: attn.gated_delta_gates {{.*}} {beta_is_dt}
  %g, %beta = attn.gated_delta_gates %dt, %dt, %hv, %hv {beta_is_dt} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x?xf32>, tensor<?x4x?xf32>)
  // CHECK: attn.skip_add %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4xf32>) -> tensor<?x4x?x8xf32>
  %d = attn.skip_add %o, %o, %hv : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4xf32>) -> tensor<?x4x?x8xf32>
  // CHECK: attn.gated_rms_norm {{.*}} {epsilon = 9.9999999999999995E-7 : f64, gate_first}
  %n = attn.gated_rms_norm %m, %m, %nw {epsilon = 1.0e-06 : f64, gate_first} : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return
}

// attn.paged_sdpa: K/V in page pools [num_pages, Hkv, page_size, d], an i32
// block table, a causal sliding window and a softcap.
// CHECK-LABEL: func.func @paged
func.func @paged(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x32xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x8x?x32xf32>) -> tensor<?x8x?x32xf32> {
  // CHECK: attn.paged_sdpa %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} outs(%{{.*}} : tensor<?x8x?x32xf32>) {mask = #attn.mask<sliding_window>, scale = 1.250000e-01 : f64, softcap = 5.000000e+01 : f64, window = 128 : i64} : (tensor<?x8x?x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x32xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x32xf32>
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x8x?x32xf32>) {mask = #attn.mask<sliding_window>, window = 128 : i64, softcap = 50.0 : f64, scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x32xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x32xf32>
  return %0 : tensor<?x8x?x32xf32>
}

// The partial form (context parallelism): each row's query position q_pos
// and the row statistics (max, sum) as a second destination and result.
// CHECK-LABEL: func.func @paged_part
func.func @paged_part(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x16x64xbf16>, %vc: tensor<?x2x16x32xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %pos: tensor<?xi64>, %init: tensor<?x8x?x32xf32>, %sinit: tensor<?x8x?x2xf32>) -> (tensor<?x8x?x32xf32>, tensor<?x8x?x2xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = attn.paged_sdpa %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} q_pos(%{{.*}} : tensor<?xi64>) outs(%{{.*}} : tensor<?x8x?x32xf32>, %{{.*}} : tensor<?x8x?x2xf32>) {mask = #attn.mask<causal>, scale = 1.250000e-01 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x16x64xbf16>, tensor<?x2x16x32xbf16>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x32xf32>, tensor<?x8x?x2xf32>
  %o, %st = attn.paged_sdpa %q, %kc, %vc, %table, %lens q_pos(%pos : tensor<?xi64>) outs(%init : tensor<?x8x?x32xf32>, %sinit : tensor<?x8x?x2xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x16x64xbf16>, tensor<?x2x16x32xbf16>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x32xf32>, tensor<?x8x?x2xf32>
  return %o, %st : tensor<?x8x?x32xf32>, tensor<?x8x?x2xf32>
}

// A shard that starts at token range_start[b] of its sequence (chunked).
// CHECK-LABEL: func.func @paged_part_range_start
func.func @paged_part_range_start(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %pos: tensor<?xi64>, %start: tensor<?xi64>, %init: tensor<?x8x?x64xf32>, %sinit: tensor<?x8x?x2xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>) {
  // CHECK: attn.paged_sdpa %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} q_pos(%{{.*}} : tensor<?xi64>) range_start(%{{.*}} : tensor<?xi64>) outs(
  %o, %st = attn.paged_sdpa %q, %kc, %vc, %table, %lens q_pos(%pos : tensor<?xi64>) range_start(%start : tensor<?xi64>) outs(%init : tensor<?x8x?x64xf32>, %sinit : tensor<?x8x?x2xf32>) {mask = #attn.mask<chunked>, window = 40 : i64, scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>
  return %o, %st : tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>
}

// attn.online_attention over bf16 key/value tiles with an f32 query and
// state (a narrow KV cache).
// CHECK-LABEL: func.func @online_bf16
func.func @online_bf16(%q: tensor<4x8x64xf32>, %k: tensor<16x64xbf16>, %v: tensor<16x64xbf16>, %a: tensor<4x8x64xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index) -> tensor<4x8x64xf32> {
  // CHECK: attn.online_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64} : (tensor<4x8x64xf32>, tensor<16x64xbf16>, tensor<16x64xbf16>, tensor<4x8x64xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x64xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %0:3 = attn.online_attention %q, %k, %v, %a, %m, %s, %i, %i {scale = 0.125 : f64} : (tensor<4x8x64xf32>, tensor<16x64xbf16>, tensor<16x64xbf16>, tensor<4x8x64xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x64xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return %0#0 : tensor<4x8x64xf32>
}

// A tile over pages of a paged cache: one KV head's pools [pages, P, d],
// the pages from the one holding kv_pos on, and the tile's number of keys.
// CHECK-LABEL: func.func @online_pages
func.func @online_pages(%q: tensor<4x8x64xf32>, %kp: tensor<?x16x64xbf16>, %vp: tensor<?x16x32xbf16>, %pages: tensor<?xi32>, %a: tensor<4x8x32xf32>, %m: tensor<4x8xf32>, %s: tensor<4x8xf32>, %i: index, %n: index) -> tensor<4x8x32xf32> {
  // CHECK: attn.online_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} pages(%{{.*}} : tensor<?xi32>, %{{.*}}) {mask = #attn.mask<causal>, scale = 1.250000e-01 : f64} : (tensor<4x8x64xf32>, tensor<?x16x64xbf16>, tensor<?x16x32xbf16>, tensor<4x8x32xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x32xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %0:3 = attn.online_attention %q, %kp, %vp, %a, %m, %s, %i, %i pages(%pages : tensor<?xi32>, %n) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<4x8x64xf32>, tensor<?x16x64xbf16>, tensor<?x16x32xbf16>, tensor<4x8x32xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x32xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return %0#0 : tensor<4x8x32xf32>
}

// CHECK-LABEL: func.func @feed_forward
func.func @feed_forward(%x: tensor<?x?x64xf32>, %wg: tensor<96x64xf32>, %wu: tensor<96x64xf32>, %wd: tensor<64x96xf32>, %w1t: tensor<64x96xf32>, %b1: tensor<96xf32>, %w2t: tensor<96x64xf32>, %b2: tensor<64xf32>) -> tensor<?x?x64xf32> {
  // CHECK: attn.gated_mlp <silu> %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<96x64xf32>, tensor<96x64xf32>, tensor<64x96xf32>) -> tensor<?x?x64xf32>
  %0 = attn.gated_mlp <silu> %x, %wg, %wu, %wd : (tensor<?x?x64xf32>, tensor<96x64xf32>, tensor<96x64xf32>, tensor<64x96xf32>) -> tensor<?x?x64xf32>
  // CHECK: attn.mlp <gelu_tanh> %{{.*}}, %{{.*}} bias(%{{.*}}), %{{.*}} bias(%{{.*}}) {transpose_weight} : (tensor<?x?x64xf32>, tensor<64x96xf32>, tensor<96xf32>, tensor<96x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %1 = attn.mlp <gelu_tanh> %0, %w1t bias(%b1), %w2t bias(%b2) {transpose_weight} : (tensor<?x?x64xf32>, tensor<64x96xf32>, tensor<96xf32>, tensor<96x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CHECK: attn.mlp <relu> %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) : (tensor<?x?x64xf32>, tensor<96x64xf32>, tensor<64x96xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %2 = attn.mlp <relu> %1, %wu, %wd bias(%b2) : (tensor<?x?x64xf32>, tensor<96x64xf32>, tensor<64x96xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CHECK: attn.mlp <gelu> %{{.*}}, %{{.*}} bias(%{{.*}}), %{{.*}} :
  %3 = attn.mlp <gelu> %2, %wu bias(%b1), %wd : (tensor<?x?x64xf32>, tensor<96x64xf32>, tensor<96xf32>, tensor<64x96xf32>) -> tensor<?x?x64xf32>
  return %3 : tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<?x?x64xf32>, %r: tensor<8x64xf32>, %g: tensor<8x32x64xf32>, %u: tensor<8x32x64xf32>, %d: tensor<8x64x32xf32>, %sg: tensor<48x64xf32>, %su: tensor<48x64xf32>, %sd: tensor<64x48xf32>, %gate: tensor<1x64xf32>) -> tensor<?x?x64xf32> {
  // CHECK: attn.moe <silu> %{{.*}}, %{{.*}} experts(%{{.*}}, %{{.*}}, %{{.*}}) shared(%{{.*}}, %{{.*}}, %{{.*}}) shared_gate(%{{.*}}) {norm_topk_prob, top_k = 2 : i64} :
  %0 = attn.moe <silu> %x, %r experts(%g, %u, %d) shared(%sg, %su, %sd) shared_gate(%gate) {top_k = 2 : i64, norm_topk_prob} : (tensor<?x?x64xf32>, tensor<8x64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>, tensor<8x64x32xf32>, tensor<48x64xf32>, tensor<48x64xf32>, tensor<64x48xf32>, tensor<1x64xf32>) -> tensor<?x?x64xf32>
  // CHECK: attn.moe <gelu_tanh> %{{.*}}, %{{.*}} experts(%{{.*}}, %{{.*}}, %{{.*}}) {top_k = 1 : i64} :
  %1 = attn.moe <gelu_tanh> %0, %r experts(%g, %u, %d) {top_k = 1 : i64} : (tensor<?x?x64xf32>, tensor<8x64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>, tensor<8x64x32xf32>) -> tensor<?x?x64xf32>
  return %1 : tensor<?x?x64xf32>
}

// Nemotron-H's: plain relu2 experts and shared expert (up, down), the
// groups not kept out of the running.
// CHECK-LABEL: func.func @moe_plain
// CHECK: attn.moe <relu2> %{{.*}}, %{{.*}} score_bias(%{{.*}}) experts(%{{.*}}, %{{.*}}) shared(%{{.*}}, %{{.*}}) {exclude_other_groups, group_score = #attn.group_score<top2_sum>, num_groups = 2 : i64, scoring = #attn.scoring<sigmoid>, top_k = 2 : i64} :
func.func @moe_plain(%x: tensor<?x?x64xf32>, %r: tensor<8x64xf32>, %bias: tensor<8xf32>, %u: tensor<8x32x64xf32>, %d: tensor<8x64x32xf32>, %su: tensor<48x64xf32>, %sd: tensor<64x48xf32>) -> tensor<?x?x64xf32> {
  %0 = attn.moe <relu2> %x, %r score_bias(%bias) experts(%u, %d) shared(%su, %sd) {top_k = 2 : i64, scoring = #attn.scoring<sigmoid>, num_groups = 2 : i64, group_score = #attn.group_score<top2_sum>, exclude_other_groups} : (tensor<?x?x64xf32>, tensor<8x64xf32>, tensor<8xf32>, tensor<8x32x64xf32>, tensor<8x64x32xf32>, tensor<48x64xf32>, tensor<64x48xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// Mamba2's grouped gated norm: a weight [groups, n].
// CHECK-LABEL: func.func @gated_rms_norm_groups
// CHECK: attn.gated_rms_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64, gate_first} : (tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4x8xf32>
func.func @gated_rms_norm_groups(%x: tensor<?x?x4x8xf32>, %w: tensor<4x8xf32>) -> tensor<?x?x4x8xf32> {
  %0 = attn.gated_rms_norm %x, %x, %w {epsilon = 1.0e-06 : f64, gate_first} : (tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4x8xf32>
  return %0 : tensor<?x?x4x8xf32>
}

// Llama 4's: top-1 sigmoid scores scaling each expert's input.
// CHECK-LABEL: func.func @moe_scale_input
// CHECK: attn.moe <silu> %{{.*}}, %{{.*}} experts(%{{.*}}, %{{.*}}, %{{.*}}) shared(%{{.*}}, %{{.*}}, %{{.*}}) {scale_input, scoring = #attn.scoring<sigmoid>, top_k = 1 : i64} :
func.func @moe_scale_input(%x: tensor<?x?x64xf32>, %r: tensor<8x64xf32>, %g: tensor<8x32x64xf32>, %u: tensor<8x32x64xf32>, %d: tensor<8x64x32xf32>, %sg: tensor<32x64xf32>, %su: tensor<32x64xf32>, %sd: tensor<64x32xf32>) -> tensor<?x?x64xf32> {
  %0 = attn.moe <silu> %x, %r experts(%g, %u, %d) shared(%sg, %su, %sd) {top_k = 1 : i64, scoring = #attn.scoring<sigmoid>, scale_input} : (tensor<?x?x64xf32>, tensor<8x64xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>, tensor<8x64x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// DeepSeek-V3's routing: sigmoid scores, a selection bias, groups, scaling,
// an ungated shared expert.
// CHECK-LABEL: func.func @moe_routing
func.func @moe_routing(%x: tensor<?x?x64xf32>, %r: tensor<8x64xf32>, %bias: tensor<8xf32>, %g: tensor<8x32x64xf32>, %u: tensor<8x32x64xf32>, %d: tensor<8x64x32xf32>, %sg: tensor<48x64xf32>, %su: tensor<48x64xf32>, %sd: tensor<64x48xf32>) -> tensor<?x?x64xf32> {
  // CHECK: attn.moe <silu> %{{.*}}, %{{.*}} score_bias(%{{.*}}) experts(%{{.*}}, %{{.*}}, %{{.*}}) shared(%{{.*}}, %{{.*}}, %{{.*}}) {group_score = #attn.group_score<top2_sum>, norm_topk_epsilon = 9.9999999999999995E-21 : f64, norm_topk_prob, num_groups = 4 : i64, routed_scaling_factor = 2.500000e+00 : f64, scoring = #attn.scoring<sigmoid>, top_k = 3 : i64, topk_groups = 2 : i64} :
  %0 = attn.moe <silu> %x, %r score_bias(%bias) experts(%g, %u, %d) shared(%sg, %su, %sd) {top_k = 3 : i64, norm_topk_prob, norm_topk_epsilon = 1.0e-20 : f64, scoring = #attn.scoring<sigmoid>, num_groups = 4 : i64, topk_groups = 2 : i64, group_score = #attn.group_score<top2_sum>, routed_scaling_factor = 2.5 : f64} : (tensor<?x?x64xf32>, tensor<8x64xf32>, tensor<8xf32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>, tensor<8x64x32xf32>, tensor<48x64xf32>, tensor<48x64xf32>, tensor<64x48xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// Multi-head latent attention over a cache of latent rows (bf16 cache).
// CHECK-LABEL: func.func @latent_attention
func.func @latent_attention(%qn: tensor<?x128x?x128xf32>, %qr: tensor<?x128x?x64xf32>, %c: tensor<?x?x576xbf16>, %w: tensor<32768x512xf32>, %l: tensor<?xi64>) -> tensor<?x128x?x128xf32> {
  // CHECK: attn.latent_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} kv_lengths(%{{.*}} : tensor<?xi64>) {mask = #attn.mask<causal>, scale = 0.13523377886088009 : f64} : (tensor<?x128x?x128xf32>, tensor<?x128x?x64xf32>, tensor<?x?x576xbf16>, tensor<32768x512xf32>) -> tensor<?x128x?x128xf32>
  %0 = attn.latent_attention %qn, %qr, %c, %w kv_lengths(%l : tensor<?xi64>) {mask = #attn.mask<causal>, scale = 0.1352337788608801 : f64} : (tensor<?x128x?x128xf32>, tensor<?x128x?x64xf32>, tensor<?x?x576xbf16>, tensor<32768x512xf32>) -> tensor<?x128x?x128xf32>
  return %0 : tensor<?x128x?x128xf32>
}

// Attention sinks: the graph op, and the fused op's sinks operand.
// CHECK-LABEL: func.func @sinks
func.func @sinks(%s: tensor<?x8x?x?xf32>, %sinks: tensor<8xf32>, %q: tensor<?x8x?x16xf32>, %k: tensor<?x2x?x16xf32>, %init: tensor<?x8x?x16xf32>) -> (tensor<?x8x?x?xf32>, tensor<?x8x?x16xf32>) {
  // CHECK: attn.sink_softmax %{{.*}}, %{{.*}} : (tensor<?x8x?x?xf32>, tensor<8xf32>) -> tensor<?x8x?x?xf32>
  %p = attn.sink_softmax %s, %sinks : (tensor<?x8x?x?xf32>, tensor<8xf32>) -> tensor<?x8x?x?xf32>
  // CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} sinks(%{{.*}} : tensor<8xf32>) outs(%{{.*}} : tensor<?x8x?x16xf32>) {mask = #attn.mask<causal>, scale = 2.500000e-01 : f64}
  %o = attn.sdpa %q, %k, %k sinks(%sinks : tensor<8xf32>) outs(%init : tensor<?x8x?x16xf32>) {mask = #attn.mask<causal>, scale = 0.25 : f64} : (tensor<?x8x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x8x?x16xf32>
  return %p, %o : tensor<?x8x?x?xf32>, tensor<?x8x?x16xf32>
}

// Llama 4: chunked local attention and the attention temperature.
// CHECK-LABEL: func.func @llama4
func.func @llama4(%q: tensor<?x8x?x16xf32>, %k: tensor<?x2x?x16xf32>, %p: tensor<?x?xi64>, %init: tensor<?x8x?x16xf32>) -> tensor<?x8x?x16xf32> {
  // CHECK: attn.temperature_scale %{{.*}}, %{{.*}} {attn_scale = 1.000000e-01 : f64, floor_scale = 8192 : i64}
  %t = attn.temperature_scale %q, %p {floor_scale = 8192 : i64, attn_scale = 0.1 : f64} : (tensor<?x8x?x16xf32>, tensor<?x?xi64>) -> tensor<?x8x?x16xf32>
  // CHECK: attn.sdpa {{.*}} {mask = #attn.mask<chunked>, scale = 2.500000e-01 : f64, window = 8 : i64}
  %o = attn.sdpa %t, %k, %k outs(%init : tensor<?x8x?x16xf32>) {mask = #attn.mask<chunked>, window = 8 : i64, scale = 0.25 : f64} : (tensor<?x8x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x8x?x16xf32>
  return %o : tensor<?x8x?x16xf32>
}
