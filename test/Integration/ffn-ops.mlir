// The feed-forward ops lowered by the pipeline (convert-attn-to-linalg,
// bufferization, LLVM) and run by mlir-runner, against a float64 NumPy
// reference written from transformers' definitions (Inputs/ffn_ref.py):
// SwiGLU (silu) and GeGLU (tanh GELU) gated networks, GPT-2's Conv1D MLP
// ([in, out] weights, biases, tanh GELU), BERT/Whisper's exact-GELU MLP with
// biases and T5's ReLU MLP without biases; x [2, 3, 8], intermediate 12.
// The mixture of experts (4 experts of intermediate 6, top 2): with its
// shared expert and renormalized weights, and with a zero router (every
// token ties; the first two experts take every token, the others none);
// DeepSeek-V3's and V2's routing on 8 experts (sigmoid scores, selection
// bias, groups, scaling, ungated shared expert).
// REQUIRES: mlir-runner
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/ffn_ref.py | FileCheck %s
// CHECK: OK gated silu
// CHECK: OK gated gelu_tanh
// CHECK: OK mlp gelu_tanh transposed bias
// CHECK: OK mlp gelu bias
// CHECK: OK mlp relu
// CHECK: OK moe shared norm_topk
// CHECK: OK moe zero router
// CHECK: OK moe sigmoid bias groups top2_sum scaled
// CHECK: OK moe softmax groups max scaled

// s · sin(a·n + c), n the row-major index, computed in f64, stored as f32.
func.func @gen3(%a: f64, %c: f64, %s: f64) -> tensor<2x3x8xf32> {
  %t = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %n = affine.apply affine_map<(d0, d1, d2) -> (d0 * 24 + d1 * 8 + d2)>(%i0, %i1, %i2)
    %v = func.call @wave(%n, %a, %c, %s) : (index, f64, f64, f64) -> f32
    tensor.yield %v : f32
  } : tensor<2x3x8xf32>
  return %t : tensor<2x3x8xf32>
}
func.func @gen2(%rows: index, %cols: index, %a: f64, %c: f64, %s: f64) -> tensor<?x?xf32> {
  %t = tensor.generate %rows, %cols {
  ^bb0(%i0: index, %i1: index):
    %n = affine.apply affine_map<(d0, d1)[s0] -> (d0 * s0 + d1)>(%i0, %i1)[%cols]
    %v = func.call @wave(%n, %a, %c, %s) : (index, f64, f64, f64) -> f32
    tensor.yield %v : f32
  } : tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}
func.func @gen3d(%d0: index, %d1: index, %d2: index, %a: f64, %c: f64, %s: f64) -> tensor<?x?x?xf32> {
  %t = tensor.generate %d0, %d1, %d2 {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %n = affine.apply affine_map<(d0, d1, d2)[s0, s1] -> (d0 * s0 * s1 + d1 * s1 + d2)>(%i0, %i1, %i2)[%d1, %d2]
    %v = func.call @wave(%n, %a, %c, %s) : (index, f64, f64, f64) -> f32
    tensor.yield %v : f32
  } : tensor<?x?x?xf32>
  return %t : tensor<?x?x?xf32>
}
func.func @gen1(%len: index, %a: f64, %c: f64, %s: f64) -> tensor<?xf32> {
  %t = tensor.generate %len {
  ^bb0(%i0: index):
    %v = func.call @wave(%i0, %a, %c, %s) : (index, f64, f64, f64) -> f32
    tensor.yield %v : f32
  } : tensor<?xf32>
  return %t : tensor<?xf32>
}
func.func @wave(%n: index, %a: f64, %c: f64, %s: f64) -> f32 {
  %ni = arith.index_cast %n : index to i64
  %nf = arith.sitofp %ni : i64 to f64
  %x = arith.mulf %nf, %a : f64
  %y = arith.addf %x, %c : f64
  %w = math.sin %y : f64
  %m = arith.mulf %w, %s : f64
  %t = arith.truncf %m : f64 to f32
  return %t : f32
}
func.func @print(%t: tensor<2x3x8xf32>) {
  %buf = bufferization.to_buffer %t : tensor<2x3x8xf32> to memref<2x3x8xf32>
  %u = memref.cast %buf : memref<2x3x8xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %c8 = arith.constant 8 : index
  %c12 = arith.constant 12 : index
  %a1 = arith.constant 0.7 : f64
  %a2 = arith.constant 0.37 : f64
  %a3 = arith.constant 0.23 : f64
  %a4 = arith.constant 0.11 : f64
  %a5 = arith.constant 0.3 : f64
  %c1 = arith.constant 0.1 : f64
  %c2 = arith.constant 0.2 : f64
  %c3 = arith.constant 0.5 : f64
  %s2 = arith.constant 2.0 : f64
  %s1 = arith.constant 0.5 : f64
  %s3 = arith.constant 0.1 : f64
  // x = 2 sin(0.7 n); first weight 0.5 sin(0.37 n + 0.1), second
  // 0.5 sin(0.23 n + 0.2), third 0.5 sin(0.11 n + 0.5); biases
  // 0.1 sin(0.3 n + 0.1) and 0.1 sin(0.3 n + 0.2).
  %x = func.call @gen3(%a1, %c1, %s2) : (f64, f64, f64) -> tensor<2x3x8xf32>
  %w1d = func.call @gen2(%c12, %c8, %a2, %c1, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %w2d = func.call @gen2(%c12, %c8, %a3, %c2, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %w3d = func.call @gen2(%c8, %c12, %a4, %c3, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %w1td = func.call @gen2(%c8, %c12, %a2, %c1, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %w3td = func.call @gen2(%c12, %c8, %a4, %c3, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %b1d = func.call @gen1(%c12, %a5, %c1, %s3) : (index, f64, f64, f64) -> tensor<?xf32>
  %b2d = func.call @gen1(%c8, %a5, %c2, %s3) : (index, f64, f64, f64) -> tensor<?xf32>
  %w1 = tensor.cast %w1d : tensor<?x?xf32> to tensor<12x8xf32>
  %w2 = tensor.cast %w2d : tensor<?x?xf32> to tensor<12x8xf32>
  %w3 = tensor.cast %w3d : tensor<?x?xf32> to tensor<8x12xf32>
  %w1t = tensor.cast %w1td : tensor<?x?xf32> to tensor<8x12xf32>
  %w3t = tensor.cast %w3td : tensor<?x?xf32> to tensor<12x8xf32>
  %b1 = tensor.cast %b1d : tensor<?xf32> to tensor<12xf32>
  %b2 = tensor.cast %b2d : tensor<?xf32> to tensor<8xf32>
  %y1 = attn.gated_mlp <silu> %x, %w1, %w2, %w3 : (tensor<2x3x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<8x12xf32>) -> tensor<2x3x8xf32>
  func.call @print(%y1) : (tensor<2x3x8xf32>) -> ()
  %y2 = attn.gated_mlp <gelu_tanh> %x, %w1, %w2, %w3 : (tensor<2x3x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<8x12xf32>) -> tensor<2x3x8xf32>
  func.call @print(%y2) : (tensor<2x3x8xf32>) -> ()
  %y3 = attn.mlp <gelu_tanh> %x, %w1t bias(%b1), %w3t bias(%b2) {transpose_weight} : (tensor<2x3x8xf32>, tensor<8x12xf32>, tensor<12xf32>, tensor<12x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  func.call @print(%y3) : (tensor<2x3x8xf32>) -> ()
  %y4 = attn.mlp <gelu> %x, %w1 bias(%b1), %w3 bias(%b2) : (tensor<2x3x8xf32>, tensor<12x8xf32>, tensor<12xf32>, tensor<8x12xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  func.call @print(%y4) : (tensor<2x3x8xf32>) -> ()
  %y5 = attn.mlp <relu> %x, %w1, %w3 : (tensor<2x3x8xf32>, tensor<12x8xf32>, tensor<8x12xf32>) -> tensor<2x3x8xf32>
  func.call @print(%y5) : (tensor<2x3x8xf32>) -> ()
  // Mixture of experts: router 0.5 sin(0.9 n + 0.3); experts' gate, up,
  // down 0.5 sin(a n + c) with (0.37, 0.1), (0.23, 0.2), (0.11, 0.5);
  // shared expert (intermediate 5) (0.41, 0.3), (0.29, 0.4), (0.13, 0.6);
  // its gate 0.5 sin(0.7 n + 0.9).
  %n1 = arith.constant 1 : index
  %n4 = arith.constant 4 : index
  %n5 = arith.constant 5 : index
  %n6 = arith.constant 6 : index
  %a6 = arith.constant 0.9 : f64
  %c03 = arith.constant 0.3 : f64
  %a7 = arith.constant 0.41 : f64
  %a8 = arith.constant 0.29 : f64
  %a9 = arith.constant 0.13 : f64
  %c04 = arith.constant 0.4 : f64
  %c06 = arith.constant 0.6 : f64
  %c09 = arith.constant 0.9 : f64
  %zero = arith.constant 0.0 : f64
  %rd = func.call @gen2(%n4, %c8, %a6, %c03, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %router = tensor.cast %rd : tensor<?x?xf32> to tensor<4x8xf32>
  %egd = func.call @gen3d(%n4, %n6, %c8, %a2, %c1, %s1) : (index, index, index, f64, f64, f64) -> tensor<?x?x?xf32>
  %eud = func.call @gen3d(%n4, %n6, %c8, %a3, %c2, %s1) : (index, index, index, f64, f64, f64) -> tensor<?x?x?xf32>
  %edd = func.call @gen3d(%n4, %c8, %n6, %a4, %c3, %s1) : (index, index, index, f64, f64, f64) -> tensor<?x?x?xf32>
  %eg = tensor.cast %egd : tensor<?x?x?xf32> to tensor<4x6x8xf32>
  %eu = tensor.cast %eud : tensor<?x?x?xf32> to tensor<4x6x8xf32>
  %ed = tensor.cast %edd : tensor<?x?x?xf32> to tensor<4x8x6xf32>
  %sgd = func.call @gen2(%n5, %c8, %a7, %c03, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %sud = func.call @gen2(%n5, %c8, %a8, %c04, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %sdd = func.call @gen2(%c8, %n5, %a9, %c06, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %sgated = func.call @gen2(%n1, %c8, %a1, %c09, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %sg = tensor.cast %sgd : tensor<?x?xf32> to tensor<5x8xf32>
  %su = tensor.cast %sud : tensor<?x?xf32> to tensor<5x8xf32>
  %sd = tensor.cast %sdd : tensor<?x?xf32> to tensor<8x5xf32>
  %sgate = tensor.cast %sgated : tensor<?x?xf32> to tensor<1x8xf32>
  %y6 = attn.moe <silu> %x, %router experts(%eg, %eu, %ed) shared(%sg, %su, %sd) shared_gate(%sgate) {top_k = 2 : i64, norm_topk_prob} : (tensor<2x3x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<5x8xf32>, tensor<5x8xf32>, tensor<8x5xf32>, tensor<1x8xf32>) -> tensor<2x3x8xf32>
  func.call @print(%y6) : (tensor<2x3x8xf32>) -> ()
  %zd = func.call @gen2(%n4, %c8, %a6, %c03, %zero) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %zrouter = tensor.cast %zd : tensor<?x?xf32> to tensor<4x8xf32>
  %y7 = attn.moe <silu> %x, %zrouter experts(%eg, %eu, %ed) {top_k = 2 : i64} : (tensor<2x3x8xf32>, tensor<4x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<2x3x8xf32>
  func.call @print(%y7) : (tensor<2x3x8xf32>) -> ()
  // DeepSeek-V3's routing (8 experts in 4 groups of 2): sigmoid scores, a
  // selection bias 0.2 sin(0.5 n + 0.1), groups scored by their best two,
  // 2 kept, top 3, renormalized (+1e-20), scaled by 2.5, the shared
  // expert added ungated; DeepSeek-V2's (softmax, groups by their best,
  // 2 kept, top 3, scaled by 1.5, no renormalization).
  %n8 = arith.constant 8 : index
  %a05 = arith.constant 0.5 : f64
  %s02 = arith.constant 0.2 : f64
  %r8d = func.call @gen2(%n8, %c8, %a6, %c03, %s1) : (index, index, f64, f64, f64) -> tensor<?x?xf32>
  %router8 = tensor.cast %r8d : tensor<?x?xf32> to tensor<8x8xf32>
  %bias8 = func.call @gen1(%n8, %a05, %c1, %s02) : (index, f64, f64, f64) -> tensor<?xf32>
  %bias = tensor.cast %bias8 : tensor<?xf32> to tensor<8xf32>
  %eg8d = func.call @gen3d(%n8, %n6, %c8, %a2, %c1, %s1) : (index, index, index, f64, f64, f64) -> tensor<?x?x?xf32>
  %eu8d = func.call @gen3d(%n8, %n6, %c8, %a3, %c2, %s1) : (index, index, index, f64, f64, f64) -> tensor<?x?x?xf32>
  %ed8d = func.call @gen3d(%n8, %c8, %n6, %a4, %c3, %s1) : (index, index, index, f64, f64, f64) -> tensor<?x?x?xf32>
  %eg8 = tensor.cast %eg8d : tensor<?x?x?xf32> to tensor<8x6x8xf32>
  %eu8 = tensor.cast %eu8d : tensor<?x?x?xf32> to tensor<8x6x8xf32>
  %ed8 = tensor.cast %ed8d : tensor<?x?x?xf32> to tensor<8x8x6xf32>
  %y8 = attn.moe <silu> %x, %router8 score_bias(%bias) experts(%eg8, %eu8, %ed8) shared(%sg, %su, %sd) {top_k = 3 : i64, norm_topk_prob, norm_topk_epsilon = 1.0e-20 : f64, scoring = #attn.scoring<sigmoid>, num_groups = 4 : i64, topk_groups = 2 : i64, group_score = #attn.group_score<top2_sum>, routed_scaling_factor = 2.5 : f64} : (tensor<2x3x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x6x8xf32>, tensor<8x6x8xf32>, tensor<8x8x6xf32>, tensor<5x8xf32>, tensor<5x8xf32>, tensor<8x5xf32>) -> tensor<2x3x8xf32>
  func.call @print(%y8) : (tensor<2x3x8xf32>) -> ()
  %y9 = attn.moe <silu> %x, %router8 experts(%eg8, %eu8, %ed8) shared(%sg, %su, %sd) {top_k = 3 : i64, num_groups = 4 : i64, topk_groups = 2 : i64, routed_scaling_factor = 1.5 : f64} : (tensor<2x3x8xf32>, tensor<8x8xf32>, tensor<8x6x8xf32>, tensor<8x6x8xf32>, tensor<8x8x6xf32>, tensor<5x8xf32>, tensor<5x8xf32>, tensor<8x5xf32>) -> tensor<2x3x8xf32>
  func.call @print(%y9) : (tensor<2x3x8xf32>) -> ()
  return
}
