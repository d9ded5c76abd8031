// Mamba2's SSD (attn.gated_delta_rule with no_delta: S <- e^g S + k (beta v)^T,
// o = S^T q; k = B, q = C, v = x, beta = dt, g = dt A) through the whole CPU
// pipeline, run by mlir-runner and checked against a float64 recurrence
// written from transformers' Mamba2 (Inputs/ssd_ref.py): B = 2, n_groups
// H_k = 2 shared by H_v = 4 heads, d_state 16 != head_dim 24 (16 lanes pad
// d_v into the scratch, 8 and 4 lanes work in place and decode streams),
// decays near 0 and -40 (a state reset), an initial state. One call over
// 150 tokens (the chunked form: chunks of 64, 64, 22), the eager chunked
// reference (a function marked attn.reference, lowered by
// convert-attn-to-linalg), a prefill of 149 then a decode step (= the one
// call), 7 tokens (the recurrent form), and a batch of lengths 0 and 70
// (padding leaves the state alone, its outputs are 0).
// REQUIRES: mlir-runner
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/ssd_ref.py | FileCheck %s
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false vector-lanes=8' | %mlir_runner | %python %S/Inputs/ssd_ref.py | FileCheck %s
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false vector-lanes=4' | %mlir_runner | %python %S/Inputs/ssd_ref.py | FileCheck %s
// The tiled form: both branches carry no_delta; the CPU kernel has no
// forward substitution (no loop over the rows before i) in it.
// RUN: attn-opt %s -attn-tile-gated-delta | FileCheck %s --check-prefix=TILED
// CHECK: OK
// TILED-LABEL: func.func @ssd(
// TILED: attn.gated_delta_chunk {{.*}} initial_state({{.*}}) {no_delta, recurrent, scale = 1.000000e+00 : f64}
// TILED: attn.gated_delta_chunk {{.*}} {no_delta, scale = 1.000000e+00 : f64}
// TILED-LABEL: func.func @ssd_eager(
// TILED-NOT: attn.gated_delta_chunk
// TILED: attn.gated_delta_rule

func.func @ssd(%q: tensor<2x2x?x16xf32>, %k: tensor<2x2x?x16xf32>, %v: tensor<2x4x?x24xf32>, %g: tensor<2x4x?xf32>,
    %beta: tensor<2x4x?xf32>, %s0: tensor<2x4x16x24xf32>) -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>) {
  %c2 = arith.constant 2 : index
  %n = tensor.dim %v, %c2 : tensor<2x4x?x24xf32>
  %oi = tensor.empty(%n) : tensor<2x4x?x24xf32>
  %si = tensor.empty() : tensor<2x4x16x24xf32>
  %o, %s = attn.gated_delta_rule %q, %k, %v, %g, %beta initial_state(%s0 : tensor<2x4x16x24xf32>)
      outs(%oi, %si : tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>) {no_delta, scale = 1.0 : f64}
      : (tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x4x?x24xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>)
      -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>)
  return %o, %s : tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>
}
func.func @ssd_eager(%q: tensor<2x2x?x16xf32>, %k: tensor<2x2x?x16xf32>, %v: tensor<2x4x?x24xf32>, %g: tensor<2x4x?xf32>,
    %beta: tensor<2x4x?xf32>, %s0: tensor<2x4x16x24xf32>) -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>) attributes {attn.reference} {
  %c2 = arith.constant 2 : index
  %n = tensor.dim %v, %c2 : tensor<2x4x?x24xf32>
  %oi = tensor.empty(%n) : tensor<2x4x?x24xf32>
  %si = tensor.empty() : tensor<2x4x16x24xf32>
  %o, %s = attn.gated_delta_rule %q, %k, %v, %g, %beta initial_state(%s0 : tensor<2x4x16x24xf32>)
      outs(%oi, %si : tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>) {no_delta, scale = 1.0 : f64}
      : (tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x4x?x24xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>)
      -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>)
  return %o, %s : tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>
}
func.func @ssd_len(%q: tensor<2x2x?x16xf32>, %k: tensor<2x2x?x16xf32>, %v: tensor<2x4x?x24xf32>, %g: tensor<2x4x?xf32>,
    %beta: tensor<2x4x?xf32>, %s0: tensor<2x4x16x24xf32>, %len: tensor<2xi64>) -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>) {
  %c2 = arith.constant 2 : index
  %n = tensor.dim %v, %c2 : tensor<2x4x?x24xf32>
  %oi = tensor.empty(%n) : tensor<2x4x?x24xf32>
  %si = tensor.empty() : tensor<2x4x16x24xf32>
  %o, %s = attn.gated_delta_rule %q, %k, %v, %g, %beta initial_state(%s0 : tensor<2x4x16x24xf32>) lengths(%len : tensor<2xi64>)
      outs(%oi, %si : tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>) {no_delta, scale = 1.0 : f64}
      : (tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x4x?x24xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>)
      -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>)
  return %o, %s : tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>
}
func.func @main() {
  %q = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 4800 + d1 * 2400 + d2 * 16 + d3)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %w = arith.constant 0.37 : f64
    %p = arith.constant 0.1 : f64
    %a = arith.constant 1.0 : f64
    %o = arith.constant 0.0 : f64
    %x = arith.mulf %nf, %w : f64
    %y = arith.addf %x, %p : f64
    %s = math.sin %y : f64
    %so = arith.addf %s, %o : f64
    %m = arith.mulf %so, %a : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x2x150x16xf32>
  %k = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 4800 + d1 * 2400 + d2 * 16 + d3)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %w = arith.constant 0.23 : f64
    %p = arith.constant 0.2 : f64
    %a = arith.constant 0.3 : f64
    %o = arith.constant 0.0 : f64
    %x = arith.mulf %nf, %w : f64
    %y = arith.addf %x, %p : f64
    %s = math.cos %y : f64
    %so = arith.addf %s, %o : f64
    %m = arith.mulf %so, %a : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x2x150x16xf32>
  %v = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 14400 + d1 * 3600 + d2 * 24 + d3)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %w = arith.constant 0.11 : f64
    %p = arith.constant 0.5 : f64
    %a = arith.constant 2.0 : f64
    %o = arith.constant 0.0 : f64
    %x = arith.mulf %nf, %w : f64
    %y = arith.addf %x, %p : f64
    %s = math.sin %y : f64
    %so = arith.addf %s, %o : f64
    %m = arith.mulf %so, %a : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x4x150x24xf32>
  %g = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %n = affine.apply affine_map<(d0, d1, d2) -> (d0 * 600 + d1 * 150 + d2)>(%i0, %i1, %i2)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %w = arith.constant 0.7 : f64
    %p = arith.constant 0.0 : f64
    %a = arith.constant -0.05 : f64
    %o = arith.constant 1.0 : f64
    %x = arith.mulf %nf, %w : f64
    %y = arith.addf %x, %p : f64
    %s = math.sin %y : f64
    %so = arith.addf %s, %o : f64
    %m = arith.mulf %so, %a : f64
    %md = arith.constant 13 : i64
    %r = arith.remui %ni, %md : i64
    %z = arith.constant 0 : i64
    %hit = arith.cmpi eq, %r, %z : i64
    %big = arith.constant -40.0 : f64
    %sel = arith.select %hit, %big, %m : f64
    %t = arith.truncf %sel : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x4x150xf32>
  %beta = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %n = affine.apply affine_map<(d0, d1, d2) -> (d0 * 600 + d1 * 150 + d2)>(%i0, %i1, %i2)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %w = arith.constant 0.3 : f64
    %p = arith.constant 0.0 : f64
    %a = arith.constant 0.4 : f64
    %o = arith.constant 1.25 : f64
    %x = arith.mulf %nf, %w : f64
    %y = arith.addf %x, %p : f64
    %s = math.sin %y : f64
    %so = arith.addf %s, %o : f64
    %m = arith.mulf %so, %a : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x4x150xf32>
  %s0 = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 1536 + d1 * 384 + d2 * 24 + d3)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %w = arith.constant 0.13 : f64
    %p = arith.constant 0.3 : f64
    %a = arith.constant 0.5 : f64
    %o = arith.constant 0.0 : f64
    %x = arith.mulf %nf, %w : f64
    %y = arith.addf %x, %p : f64
    %s = math.sin %y : f64
    %so = arith.addf %s, %o : f64
    %m = arith.mulf %so, %a : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x4x16x24xf32>
  %q_all_s = tensor.extract_slice %q[0, 0, 0, 0] [2, 2, 150, 16] [1, 1, 1, 1] : tensor<2x2x150x16xf32> to tensor<2x2x150x16xf32>
  %q_all = tensor.cast %q_all_s : tensor<2x2x150x16xf32> to tensor<2x2x?x16xf32>
  %q_pre_s = tensor.extract_slice %q[0, 0, 0, 0] [2, 2, 149, 16] [1, 1, 1, 1] : tensor<2x2x150x16xf32> to tensor<2x2x149x16xf32>
  %q_pre = tensor.cast %q_pre_s : tensor<2x2x149x16xf32> to tensor<2x2x?x16xf32>
  %q_dec_s = tensor.extract_slice %q[0, 0, 149, 0] [2, 2, 1, 16] [1, 1, 1, 1] : tensor<2x2x150x16xf32> to tensor<2x2x1x16xf32>
  %q_dec = tensor.cast %q_dec_s : tensor<2x2x1x16xf32> to tensor<2x2x?x16xf32>
  %q_short_s = tensor.extract_slice %q[0, 0, 0, 0] [2, 2, 7, 16] [1, 1, 1, 1] : tensor<2x2x150x16xf32> to tensor<2x2x7x16xf32>
  %q_short = tensor.cast %q_short_s : tensor<2x2x7x16xf32> to tensor<2x2x?x16xf32>
  %k_all_s = tensor.extract_slice %k[0, 0, 0, 0] [2, 2, 150, 16] [1, 1, 1, 1] : tensor<2x2x150x16xf32> to tensor<2x2x150x16xf32>
  %k_all = tensor.cast %k_all_s : tensor<2x2x150x16xf32> to tensor<2x2x?x16xf32>
  %k_pre_s = tensor.extract_slice %k[0, 0, 0, 0] [2, 2, 149, 16] [1, 1, 1, 1] : tensor<2x2x150x16xf32> to tensor<2x2x149x16xf32>
  %k_pre = tensor.cast %k_pre_s : tensor<2x2x149x16xf32> to tensor<2x2x?x16xf32>
  %k_dec_s = tensor.extract_slice %k[0, 0, 149, 0] [2, 2, 1, 16] [1, 1, 1, 1] : tensor<2x2x150x16xf32> to tensor<2x2x1x16xf32>
  %k_dec = tensor.cast %k_dec_s : tensor<2x2x1x16xf32> to tensor<2x2x?x16xf32>
  %k_short_s = tensor.extract_slice %k[0, 0, 0, 0] [2, 2, 7, 16] [1, 1, 1, 1] : tensor<2x2x150x16xf32> to tensor<2x2x7x16xf32>
  %k_short = tensor.cast %k_short_s : tensor<2x2x7x16xf32> to tensor<2x2x?x16xf32>
  %v_all_s = tensor.extract_slice %v[0, 0, 0, 0] [2, 4, 150, 24] [1, 1, 1, 1] : tensor<2x4x150x24xf32> to tensor<2x4x150x24xf32>
  %v_all = tensor.cast %v_all_s : tensor<2x4x150x24xf32> to tensor<2x4x?x24xf32>
  %v_pre_s = tensor.extract_slice %v[0, 0, 0, 0] [2, 4, 149, 24] [1, 1, 1, 1] : tensor<2x4x150x24xf32> to tensor<2x4x149x24xf32>
  %v_pre = tensor.cast %v_pre_s : tensor<2x4x149x24xf32> to tensor<2x4x?x24xf32>
  %v_dec_s = tensor.extract_slice %v[0, 0, 149, 0] [2, 4, 1, 24] [1, 1, 1, 1] : tensor<2x4x150x24xf32> to tensor<2x4x1x24xf32>
  %v_dec = tensor.cast %v_dec_s : tensor<2x4x1x24xf32> to tensor<2x4x?x24xf32>
  %v_short_s = tensor.extract_slice %v[0, 0, 0, 0] [2, 4, 7, 24] [1, 1, 1, 1] : tensor<2x4x150x24xf32> to tensor<2x4x7x24xf32>
  %v_short = tensor.cast %v_short_s : tensor<2x4x7x24xf32> to tensor<2x4x?x24xf32>
  %g_all_s = tensor.extract_slice %g[0, 0, 0] [2, 4, 150] [1, 1, 1] : tensor<2x4x150xf32> to tensor<2x4x150xf32>
  %g_all = tensor.cast %g_all_s : tensor<2x4x150xf32> to tensor<2x4x?xf32>
  %g_pre_s = tensor.extract_slice %g[0, 0, 0] [2, 4, 149] [1, 1, 1] : tensor<2x4x150xf32> to tensor<2x4x149xf32>
  %g_pre = tensor.cast %g_pre_s : tensor<2x4x149xf32> to tensor<2x4x?xf32>
  %g_dec_s = tensor.extract_slice %g[0, 0, 149] [2, 4, 1] [1, 1, 1] : tensor<2x4x150xf32> to tensor<2x4x1xf32>
  %g_dec = tensor.cast %g_dec_s : tensor<2x4x1xf32> to tensor<2x4x?xf32>
  %g_short_s = tensor.extract_slice %g[0, 0, 0] [2, 4, 7] [1, 1, 1] : tensor<2x4x150xf32> to tensor<2x4x7xf32>
  %g_short = tensor.cast %g_short_s : tensor<2x4x7xf32> to tensor<2x4x?xf32>
  %beta_all_s = tensor.extract_slice %beta[0, 0, 0] [2, 4, 150] [1, 1, 1] : tensor<2x4x150xf32> to tensor<2x4x150xf32>
  %beta_all = tensor.cast %beta_all_s : tensor<2x4x150xf32> to tensor<2x4x?xf32>
  %beta_pre_s = tensor.extract_slice %beta[0, 0, 0] [2, 4, 149] [1, 1, 1] : tensor<2x4x150xf32> to tensor<2x4x149xf32>
  %beta_pre = tensor.cast %beta_pre_s : tensor<2x4x149xf32> to tensor<2x4x?xf32>
  %beta_dec_s = tensor.extract_slice %beta[0, 0, 149] [2, 4, 1] [1, 1, 1] : tensor<2x4x150xf32> to tensor<2x4x1xf32>
  %beta_dec = tensor.cast %beta_dec_s : tensor<2x4x1xf32> to tensor<2x4x?xf32>
  %beta_short_s = tensor.extract_slice %beta[0, 0, 0] [2, 4, 7] [1, 1, 1] : tensor<2x4x150xf32> to tensor<2x4x7xf32>
  %beta_short = tensor.cast %beta_short_s : tensor<2x4x7xf32> to tensor<2x4x?xf32>
  // One call over the 150 tokens, and the eager reference.
  %o1, %s1 = func.call @ssd(%q_all, %k_all, %v_all, %g_all, %beta_all, %s0) : (tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x4x?x24xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>, tensor<2x4x16x24xf32>) -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>)
  %oe, %se = func.call @ssd_eager(%q_all, %k_all, %v_all, %g_all, %beta_all, %s0) : (tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x4x?x24xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>, tensor<2x4x16x24xf32>) -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>)
  // Prefill of 149, then one decode step from its state.
  %oa, %sa = func.call @ssd(%q_pre, %k_pre, %v_pre, %g_pre, %beta_pre, %s0) : (tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x4x?x24xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>, tensor<2x4x16x24xf32>) -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>)
  %ob, %sb = func.call @ssd(%q_dec, %k_dec, %v_dec, %g_dec, %beta_dec, %sa) : (tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x4x?x24xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>, tensor<2x4x16x24xf32>) -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>)
  // 7 tokens: the recurrent form.
  %o7, %s7 = func.call @ssd(%q_short, %k_short, %v_short, %g_short, %beta_short, %s0) : (tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x4x?x24xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>, tensor<2x4x16x24xf32>) -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>)
  // Lengths 0 (the state stays the initial one) and 70.
  %len = arith.constant dense<[0, 70]> : tensor<2xi64>
  %o3, %s3 = func.call @ssd_len(%q_all, %k_all, %v_all, %g_all, %beta_all, %s0, %len) : (tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x4x?x24xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>, tensor<2x4x16x24xf32>, tensor<2xi64>) -> (tensor<2x4x?x24xf32>, tensor<2x4x16x24xf32>)
  %o1_b = bufferization.to_buffer %o1 : tensor<2x4x?x24xf32> to memref<2x4x?x24xf32>
  %o1_u = memref.cast %o1_b : memref<2x4x?x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%o1_u) : (memref<*xf32>) -> ()
  %s1_b = bufferization.to_buffer %s1 : tensor<2x4x16x24xf32> to memref<2x4x16x24xf32>
  %s1_u = memref.cast %s1_b : memref<2x4x16x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%s1_u) : (memref<*xf32>) -> ()
  %oe_b = bufferization.to_buffer %oe : tensor<2x4x?x24xf32> to memref<2x4x?x24xf32>
  %oe_u = memref.cast %oe_b : memref<2x4x?x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%oe_u) : (memref<*xf32>) -> ()
  %se_b = bufferization.to_buffer %se : tensor<2x4x16x24xf32> to memref<2x4x16x24xf32>
  %se_u = memref.cast %se_b : memref<2x4x16x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%se_u) : (memref<*xf32>) -> ()
  %oa_b = bufferization.to_buffer %oa : tensor<2x4x?x24xf32> to memref<2x4x?x24xf32>
  %oa_u = memref.cast %oa_b : memref<2x4x?x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%oa_u) : (memref<*xf32>) -> ()
  %ob_b = bufferization.to_buffer %ob : tensor<2x4x?x24xf32> to memref<2x4x?x24xf32>
  %ob_u = memref.cast %ob_b : memref<2x4x?x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%ob_u) : (memref<*xf32>) -> ()
  %sb_b = bufferization.to_buffer %sb : tensor<2x4x16x24xf32> to memref<2x4x16x24xf32>
  %sb_u = memref.cast %sb_b : memref<2x4x16x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%sb_u) : (memref<*xf32>) -> ()
  %o7_b = bufferization.to_buffer %o7 : tensor<2x4x?x24xf32> to memref<2x4x?x24xf32>
  %o7_u = memref.cast %o7_b : memref<2x4x?x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%o7_u) : (memref<*xf32>) -> ()
  %s7_b = bufferization.to_buffer %s7 : tensor<2x4x16x24xf32> to memref<2x4x16x24xf32>
  %s7_u = memref.cast %s7_b : memref<2x4x16x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%s7_u) : (memref<*xf32>) -> ()
  %o3_b = bufferization.to_buffer %o3 : tensor<2x4x?x24xf32> to memref<2x4x?x24xf32>
  %o3_u = memref.cast %o3_b : memref<2x4x?x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%o3_u) : (memref<*xf32>) -> ()
  %s3_b = bufferization.to_buffer %s3 : tensor<2x4x16x24xf32> to memref<2x4x16x24xf32>
  %s3_u = memref.cast %s3_b : memref<2x4x16x24xf32> to memref<*xf32>
  func.call @printMemrefF32(%s3_u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
