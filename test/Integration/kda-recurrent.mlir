// Kimi Delta Attention's recurrence (a per-channel decay: attn.gated_delta_rule
// with a gate [batch, Hv, seq, d_k]) through the whole CPU pipeline
// (attn-tile-gated-delta's recurrent form up to 16 tokens, the CPU kernel's
// per-row decay; 16 and 8 lanes pad d_v = 36 into the scratch state, 4 lanes
// work on the state in place in two blocks of columns, and its decode step
// takes the streaming stores when the state is aligned), run by mlir-runner
// and checked against a
// float64 recurrence written from fla's naive_recurrent_kda
// (Inputs/kda_ref.py): B = 2, H_k = 1 shared by H_v = 2, d_k = 16 != d_v = 36,
// an initial state, decays near 0 and very negative (g = -40 on some
// channels), one call over 7 tokens, prefill of 6 then a decode step (= the
// one call), and a batch of lengths 0 and 3 (padding leaves the state alone,
// its outputs are 0).
// REQUIRES: mlir-runner
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/kda_ref.py | FileCheck %s
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false vector-lanes=8' | %mlir_runner | %python %S/Inputs/kda_ref.py | FileCheck %s
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false vector-lanes=4' | %mlir_runner | %python %S/Inputs/kda_ref.py | FileCheck %s
// The chunked form (recurrent-max=0: every row, even of 3 or 7 tokens, in
// one chunk of 64 padded past its length; the bands past row 16 are only
// padding here: the executables' check, kimi-linear.test, runs them):
// RUN: attn-opt %s -attn-tile-gated-delta=recurrent-max=0 -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/kda_ref.py | FileCheck %s
// RUN: attn-opt %s -attn-tile-gated-delta=recurrent-max=0 -attn-pipeline='stop-after=llvm-dialect reference=false vector-lanes=8' | %mlir_runner | %python %S/Inputs/kda_ref.py | FileCheck %s
// RUN: attn-opt %s -attn-tile-gated-delta=recurrent-max=0 -attn-pipeline='stop-after=llvm-dialect reference=false vector-lanes=4' | %mlir_runner | %python %S/Inputs/kda_ref.py | FileCheck %s
// The tiled form, as Gated DeltaNet's: per (batch, value head), up to 16
// tokens one recurrent chunk op (its gate the head's [seq, d_k] rows), past
// that chunks of 64 tokens (their gates [64, d_k]) passing the state on.
// RUN: attn-opt %s -attn-tile-gated-delta | FileCheck %s --check-prefix=TILED
// CHECK: OK
// TILED-LABEL: func.func @kda(
// TILED: scf.forall
// TILED: scf.if
// TILED: tensor.extract_slice %arg3[%{{.+}}, %{{.+}}, %{{.+}}, 0] [1, 1, %{{.+}}, 16] [1, 1, 1, 1] : tensor<2x2x?x16xf32> to tensor<?x16xf32>
// TILED: attn.gated_delta_chunk {{.*}} initial_state({{.*}}) {recurrent, scale = 2.500000e-01 : f64} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x36xf32>, tensor<?x16xf32>, tensor<?xf32>, tensor<?x36xf32>, tensor<16x36xf32>)
// TILED: } else {
// TILED: scf.for {{.*}} step %c64
// TILED: tensor.extract_slice %arg3[%{{.+}}, %{{.+}}, %{{.+}}, 0] [1, 1, %{{.+}}, 16] [1, 1, 1, 1] : tensor<2x2x?x16xf32> to tensor<?x16xf32>
// TILED: attn.gated_delta_chunk {{.*}} {scale = 2.500000e-01 : f64}
// TILED-LABEL: func.func @kda_len(

func.func @kda(%q: tensor<2x1x?x16xf32>, %k: tensor<2x1x?x16xf32>, %v: tensor<2x2x?x36xf32>, %g: tensor<2x2x?x16xf32>,
    %beta: tensor<2x2x?xf32>, %s0: tensor<2x2x16x36xf32>) -> (tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>) {
  %c2 = arith.constant 2 : index
  %n = tensor.dim %v, %c2 : tensor<2x2x?x36xf32>
  %oi = tensor.empty(%n) : tensor<2x2x?x36xf32>
  %si = tensor.empty() : tensor<2x2x16x36xf32>
  %o, %s = attn.gated_delta_rule %q, %k, %v, %g, %beta initial_state(%s0 : tensor<2x2x16x36xf32>)
      outs(%oi, %si : tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>) {scale = 0.25 : f64}
      : (tensor<2x1x?x16xf32>, tensor<2x1x?x16xf32>, tensor<2x2x?x36xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?xf32>)
      -> (tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>)
  return %o, %s : tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>
}
func.func @kda_len(%q: tensor<2x1x?x16xf32>, %k: tensor<2x1x?x16xf32>, %v: tensor<2x2x?x36xf32>, %g: tensor<2x2x?x16xf32>,
    %beta: tensor<2x2x?xf32>, %s0: tensor<2x2x16x36xf32>, %len: tensor<2xi64>) -> (tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>) {
  %c2 = arith.constant 2 : index
  %n = tensor.dim %v, %c2 : tensor<2x2x?x36xf32>
  %oi = tensor.empty(%n) : tensor<2x2x?x36xf32>
  %si = tensor.empty() : tensor<2x2x16x36xf32>
  %o, %s = attn.gated_delta_rule %q, %k, %v, %g, %beta initial_state(%s0 : tensor<2x2x16x36xf32>) lengths(%len : tensor<2xi64>)
      outs(%oi, %si : tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>) {scale = 0.25 : f64}
      : (tensor<2x1x?x16xf32>, tensor<2x1x?x16xf32>, tensor<2x2x?x36xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?xf32>)
      -> (tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>)
  return %o, %s : tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>
}
func.func @main() {
  %q = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 112 + d1 * 112 + d2 * 16 + d3)>(%i0, %i1, %i2, %i3)
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
  } : tensor<2x1x7x16xf32>
  %k = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 112 + d1 * 112 + d2 * 16 + d3)>(%i0, %i1, %i2, %i3)
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
  } : tensor<2x1x7x16xf32>
  %v = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 504 + d1 * 252 + d2 * 36 + d3)>(%i0, %i1, %i2, %i3)
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
  } : tensor<2x2x7x36xf32>
  %g = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 224 + d1 * 112 + d2 * 16 + d3)>(%i0, %i1, %i2, %i3)
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
  } : tensor<2x2x7x16xf32>
  %beta = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %n = affine.apply affine_map<(d0, d1, d2) -> (d0 * 14 + d1 * 7 + d2)>(%i0, %i1, %i2)
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
  } : tensor<2x2x7xf32>
  %s0 = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 1152 + d1 * 576 + d2 * 36 + d3)>(%i0, %i1, %i2, %i3)
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
  } : tensor<2x2x16x36xf32>

  %q_all_s = tensor.extract_slice %q[0, 0, 0, 0] [2, 1, 7, 16] [1, 1, 1, 1] : tensor<2x1x7x16xf32> to tensor<2x1x7x16xf32>
  %q_all = tensor.cast %q_all_s : tensor<2x1x7x16xf32> to tensor<2x1x?x16xf32>
  %q_pre_s = tensor.extract_slice %q[0, 0, 0, 0] [2, 1, 6, 16] [1, 1, 1, 1] : tensor<2x1x7x16xf32> to tensor<2x1x6x16xf32>
  %q_pre = tensor.cast %q_pre_s : tensor<2x1x6x16xf32> to tensor<2x1x?x16xf32>
  %q_dec_s = tensor.extract_slice %q[0, 0, 6, 0] [2, 1, 1, 16] [1, 1, 1, 1] : tensor<2x1x7x16xf32> to tensor<2x1x1x16xf32>
  %q_dec = tensor.cast %q_dec_s : tensor<2x1x1x16xf32> to tensor<2x1x?x16xf32>
  %k_all_s = tensor.extract_slice %k[0, 0, 0, 0] [2, 1, 7, 16] [1, 1, 1, 1] : tensor<2x1x7x16xf32> to tensor<2x1x7x16xf32>
  %k_all = tensor.cast %k_all_s : tensor<2x1x7x16xf32> to tensor<2x1x?x16xf32>
  %k_pre_s = tensor.extract_slice %k[0, 0, 0, 0] [2, 1, 6, 16] [1, 1, 1, 1] : tensor<2x1x7x16xf32> to tensor<2x1x6x16xf32>
  %k_pre = tensor.cast %k_pre_s : tensor<2x1x6x16xf32> to tensor<2x1x?x16xf32>
  %k_dec_s = tensor.extract_slice %k[0, 0, 6, 0] [2, 1, 1, 16] [1, 1, 1, 1] : tensor<2x1x7x16xf32> to tensor<2x1x1x16xf32>
  %k_dec = tensor.cast %k_dec_s : tensor<2x1x1x16xf32> to tensor<2x1x?x16xf32>
  %v_all_s = tensor.extract_slice %v[0, 0, 0, 0] [2, 2, 7, 36] [1, 1, 1, 1] : tensor<2x2x7x36xf32> to tensor<2x2x7x36xf32>
  %v_all = tensor.cast %v_all_s : tensor<2x2x7x36xf32> to tensor<2x2x?x36xf32>
  %v_pre_s = tensor.extract_slice %v[0, 0, 0, 0] [2, 2, 6, 36] [1, 1, 1, 1] : tensor<2x2x7x36xf32> to tensor<2x2x6x36xf32>
  %v_pre = tensor.cast %v_pre_s : tensor<2x2x6x36xf32> to tensor<2x2x?x36xf32>
  %v_dec_s = tensor.extract_slice %v[0, 0, 6, 0] [2, 2, 1, 36] [1, 1, 1, 1] : tensor<2x2x7x36xf32> to tensor<2x2x1x36xf32>
  %v_dec = tensor.cast %v_dec_s : tensor<2x2x1x36xf32> to tensor<2x2x?x36xf32>
  %g_all_s = tensor.extract_slice %g[0, 0, 0, 0] [2, 2, 7, 16] [1, 1, 1, 1] : tensor<2x2x7x16xf32> to tensor<2x2x7x16xf32>
  %g_all = tensor.cast %g_all_s : tensor<2x2x7x16xf32> to tensor<2x2x?x16xf32>
  %g_pre_s = tensor.extract_slice %g[0, 0, 0, 0] [2, 2, 6, 16] [1, 1, 1, 1] : tensor<2x2x7x16xf32> to tensor<2x2x6x16xf32>
  %g_pre = tensor.cast %g_pre_s : tensor<2x2x6x16xf32> to tensor<2x2x?x16xf32>
  %g_dec_s = tensor.extract_slice %g[0, 0, 6, 0] [2, 2, 1, 16] [1, 1, 1, 1] : tensor<2x2x7x16xf32> to tensor<2x2x1x16xf32>
  %g_dec = tensor.cast %g_dec_s : tensor<2x2x1x16xf32> to tensor<2x2x?x16xf32>
  %beta_all_s = tensor.extract_slice %beta[0, 0, 0] [2, 2, 7] [1, 1, 1] : tensor<2x2x7xf32> to tensor<2x2x7xf32>
  %beta_all = tensor.cast %beta_all_s : tensor<2x2x7xf32> to tensor<2x2x?xf32>
  %beta_pre_s = tensor.extract_slice %beta[0, 0, 0] [2, 2, 6] [1, 1, 1] : tensor<2x2x7xf32> to tensor<2x2x6xf32>
  %beta_pre = tensor.cast %beta_pre_s : tensor<2x2x6xf32> to tensor<2x2x?xf32>
  %beta_dec_s = tensor.extract_slice %beta[0, 0, 6] [2, 2, 1] [1, 1, 1] : tensor<2x2x7xf32> to tensor<2x2x1xf32>
  %beta_dec = tensor.cast %beta_dec_s : tensor<2x2x1xf32> to tensor<2x2x?xf32>
  // One call over the 7 tokens.
  %o1, %s1 = func.call @kda(%q_all, %k_all, %v_all, %g_all, %beta_all, %s0) : (tensor<2x1x?x16xf32>, tensor<2x1x?x16xf32>, tensor<2x2x?x36xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?xf32>, tensor<2x2x16x36xf32>) -> (tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>)
  // Prefill of 6, then one decode step from its state.
  %oa, %sa = func.call @kda(%q_pre, %k_pre, %v_pre, %g_pre, %beta_pre, %s0) : (tensor<2x1x?x16xf32>, tensor<2x1x?x16xf32>, tensor<2x2x?x36xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?xf32>, tensor<2x2x16x36xf32>) -> (tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>)
  %ob, %sb = func.call @kda(%q_dec, %k_dec, %v_dec, %g_dec, %beta_dec, %sa) : (tensor<2x1x?x16xf32>, tensor<2x1x?x16xf32>, tensor<2x2x?x36xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?xf32>, tensor<2x2x16x36xf32>) -> (tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>)
  // Lengths 0 (the state stays the initial one) and 3.
  %len = arith.constant dense<[0, 3]> : tensor<2xi64>
  %o3, %s3 = func.call @kda_len(%q_all, %k_all, %v_all, %g_all, %beta_all, %s0, %len) : (tensor<2x1x?x16xf32>, tensor<2x1x?x16xf32>, tensor<2x2x?x36xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?xf32>, tensor<2x2x16x36xf32>, tensor<2xi64>) -> (tensor<2x2x?x36xf32>, tensor<2x2x16x36xf32>)
  %o1_b = bufferization.to_buffer %o1 : tensor<2x2x?x36xf32> to memref<2x2x?x36xf32>
  %o1_u = memref.cast %o1_b : memref<2x2x?x36xf32> to memref<*xf32>
  func.call @printMemrefF32(%o1_u) : (memref<*xf32>) -> ()
  %s1_b = bufferization.to_buffer %s1 : tensor<2x2x16x36xf32> to memref<2x2x16x36xf32>
  %s1_u = memref.cast %s1_b : memref<2x2x16x36xf32> to memref<*xf32>
  func.call @printMemrefF32(%s1_u) : (memref<*xf32>) -> ()
  %oa_b = bufferization.to_buffer %oa : tensor<2x2x?x36xf32> to memref<2x2x?x36xf32>
  %oa_u = memref.cast %oa_b : memref<2x2x?x36xf32> to memref<*xf32>
  func.call @printMemrefF32(%oa_u) : (memref<*xf32>) -> ()
  %ob_b = bufferization.to_buffer %ob : tensor<2x2x?x36xf32> to memref<2x2x?x36xf32>
  %ob_u = memref.cast %ob_b : memref<2x2x?x36xf32> to memref<*xf32>
  func.call @printMemrefF32(%ob_u) : (memref<*xf32>) -> ()
  %sb_b = bufferization.to_buffer %sb : tensor<2x2x16x36xf32> to memref<2x2x16x36xf32>
  %sb_u = memref.cast %sb_b : memref<2x2x16x36xf32> to memref<*xf32>
  func.call @printMemrefF32(%sb_u) : (memref<*xf32>) -> ()
  %o3_b = bufferization.to_buffer %o3 : tensor<2x2x?x36xf32> to memref<2x2x?x36xf32>
  %o3_u = memref.cast %o3_b : memref<2x2x?x36xf32> to memref<*xf32>
  func.call @printMemrefF32(%o3_u) : (memref<*xf32>) -> ()
  %s3_b = bufferization.to_buffer %s3 : tensor<2x2x16x36xf32> to memref<2x2x16x36xf32>
  %s3_u = memref.cast %s3_b : memref<2x2x16x36xf32> to memref<*xf32>
  func.call @printMemrefF32(%s3_u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
