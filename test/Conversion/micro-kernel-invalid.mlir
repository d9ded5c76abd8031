// RUN: not attn-opt %s -split-input-file -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel 2>&1 | FileCheck %s --check-prefix=ELIGIBLE
// RUN: not attn-opt %s -split-input-file -attn-cpu-select-kernels -convert-attn-to-linalg -one-shot-bufferize="bufferize-function-boundaries" -attn-cpu-micro-kernel 2>&1 | FileCheck %s --check-prefix=STRIDE
// RUN: not attn-opt %s -split-input-file -attn-cpu-micro-kernel=lanes=12 2>&1 | FileCheck %s --check-prefix=LANES

// A tile the micro-kernel does not take (a T5 bias table) reaching it on
// buffers, without convert-attn-to-linalg, says what to run.
// ELIGIBLE: error: 'attn.online_attention' op on buffers is lowered by the CPU micro-kernel only, which needs f32 operands, static head dims and no relative bias table; lower this op with convert-attn-to-linalg before bufferization
// LANES: attn-cpu-micro-kernel: lanes must be 4, 8 or 16, not 12
func.func @t5(%q: tensor<2x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>,
              %acc: tensor<2x?x64xf32>, %m: tensor<2x?xf32>, %l: tensor<2x?xf32>,
              %qp: index, %kp: index, %tab: tensor<32x8xf32>, %h: index)
    -> (tensor<2x?x64xf32>, tensor<2x?xf32>, tensor<2x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      bias_table(%tab : tensor<32x8xf32>, %h)
      {relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = true>,
       scale = 1.0 : f64}
      : (tensor<2x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>,
         tensor<2x?x64xf32>, tensor<2x?xf32>, tensor<2x?xf32>)
        -> (tensor<2x?x64xf32>, tensor<2x?xf32>, tensor<2x?xf32>)
  return %a, %mx, %s : tensor<2x?x64xf32>, tensor<2x?xf32>, tensor<2x?xf32>
}

// -----

// Function arguments with fully dynamic layouts: the innermost stride is not
// known to be 1, so vector loads would be wrong; the op says so.
// STRIDE: error: 'attn.online_attention' op the CPU micro-kernel needs operands whose innermost dim is contiguous
func.func @strided(%q: tensor<4x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>,
                   %acc: tensor<4x?x64xf32>, %m: tensor<4x?xf32>, %l: tensor<4x?xf32>,
                   %qp: index, %kp: index)
    -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      {scale = 0.125 : f64}
      : (tensor<4x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>,
         tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
        -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
  return %a, %mx, %s : tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>
}
