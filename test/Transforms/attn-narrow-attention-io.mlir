// RUN: attn-opt %s -split-input-file -attn-narrow-attention-io | FileCheck %s

// A --qo-dtype=bf16 entry's attention: the query's widening and the
// output's rounding become the op's own operand and result types; the
// destination is a bf16 tensor sized from q itself (no fp32 copy of q is
// left).
// CHECK-LABEL: func.func @sdpa_bf16
// CHECK-SAME: (%[[Q:.*]]: tensor<?x4x?x64xbf16>, %[[K:.*]]: tensor<?x2x?x64xbf16>, %[[V:.*]]: tensor<?x2x?x64xbf16>)
// CHECK-NOT: arith.extf
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[Q]], %c0
// CHECK-DAG: %[[S:.*]] = tensor.dim %[[Q]], %c2
// CHECK: %[[INIT:.*]] = tensor.empty(%[[B]], %[[S]]) : tensor<?x4x?x64xbf16>
// CHECK: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] outs(%[[INIT]] : tensor<?x4x?x64xbf16>) {mask = #attn.mask<causal>, scale = 1.250000e-01 : f64} : (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> tensor<?x4x?x64xbf16>
// CHECK-NOT: arith.truncf
// CHECK: return %[[O]]
func.func @sdpa_bf16(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %q32 = arith.extf %q : tensor<?x4x?x64xbf16> to tensor<?x4x?x64xf32>
  %b = tensor.dim %q32, %c0 : tensor<?x4x?x64xf32>
  %s = tensor.dim %q32, %c2 : tensor<?x4x?x64xf32>
  %init = tensor.empty(%b, %s) : tensor<?x4x?x64xf32>
  %o = attn.sdpa %q32, %k, %v outs(%init : tensor<?x4x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<?x4x?x64xf32>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> tensor<?x4x?x64xf32>
  %o16 = arith.truncf %o : tensor<?x4x?x64xf32> to tensor<?x4x?x64xbf16>
  return %o16 : tensor<?x4x?x64xbf16>
}

// -----

// The paged op likewise (f16); its sinks stay f32.
// CHECK-LABEL: func.func @paged_f16
// CHECK: attn.paged_sdpa %arg0, %arg1, %arg2, %arg3, %arg4 sinks(%arg5 : tensor<4xf32>) outs(%{{.*}} : tensor<?x4x?x64xf16>)
// CHECK-SAME: -> tensor<?x4x?x64xf16>
// CHECK-NOT: arith.
func.func @paged_f16(%q: tensor<?x4x?x64xf16>, %kc: tensor<?x2x?x64xf16>, %vc: tensor<?x2x?x64xf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %sinks: tensor<4xf32>) -> tensor<?x4x?x64xf16> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %q32 = arith.extf %q : tensor<?x4x?x64xf16> to tensor<?x4x?x64xf32>
  %b = tensor.dim %q32, %c0 : tensor<?x4x?x64xf32>
  %s = tensor.dim %q32, %c2 : tensor<?x4x?x64xf32>
  %init = tensor.empty(%b, %s) : tensor<?x4x?x64xf32>
  %o = attn.paged_sdpa %q32, %kc, %vc, %table, %lens sinks(%sinks : tensor<4xf32>) outs(%init : tensor<?x4x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<?x4x?x64xf32>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x4x?x64xf32>
  %o16 = arith.truncf %o : tensor<?x4x?x64xf32> to tensor<?x4x?x64xf16>
  return %o16 : tensor<?x4x?x64xf16>
}

// -----

// Left as they are: an fp32 cache (the keys would be wider than a bf16
// query), an output rounded to another type than q's, a result with
// another use besides its rounding.
// CHECK-LABEL: func.func @f32_keys
// CHECK: arith.extf
// CHECK: attn.sdpa {{.*}} -> tensor<?x4x?x64xf32>
// CHECK: arith.truncf
func.func @f32_keys(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xf32>, %init: tensor<?x4x?x64xf32>) -> tensor<?x4x?x64xbf16> {
  %q32 = arith.extf %q : tensor<?x4x?x64xbf16> to tensor<?x4x?x64xf32>
  %o = attn.sdpa %q32, %k, %k outs(%init : tensor<?x4x?x64xf32>) {scale = 0.125 : f64} : (tensor<?x4x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x4x?x64xf32>
  %o16 = arith.truncf %o : tensor<?x4x?x64xf32> to tensor<?x4x?x64xbf16>
  return %o16 : tensor<?x4x?x64xbf16>
}

// CHECK-LABEL: func.func @other_type
// CHECK: arith.extf
// CHECK: attn.sdpa {{.*}} -> tensor<?x4x?x64xf32>
// CHECK: arith.truncf {{.*}} to tensor<?x4x?x64xf16>
func.func @other_type(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %init: tensor<?x4x?x64xf32>) -> tensor<?x4x?x64xf16> {
  %q32 = arith.extf %q : tensor<?x4x?x64xbf16> to tensor<?x4x?x64xf32>
  %o = attn.sdpa %q32, %k, %k outs(%init : tensor<?x4x?x64xf32>) {scale = 0.125 : f64} : (tensor<?x4x?x64xf32>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> tensor<?x4x?x64xf32>
  %o16 = arith.truncf %o : tensor<?x4x?x64xf32> to tensor<?x4x?x64xf16>
  return %o16 : tensor<?x4x?x64xf16>
}

// CHECK-LABEL: func.func @two_uses
// CHECK: arith.extf
// CHECK: attn.sdpa {{.*}} -> tensor<?x4x?x64xf32>
func.func @two_uses(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %init: tensor<?x4x?x64xf32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xf32>) {
  %q32 = arith.extf %q : tensor<?x4x?x64xbf16> to tensor<?x4x?x64xf32>
  %o = attn.sdpa %q32, %k, %k outs(%init : tensor<?x4x?x64xf32>) {scale = 0.125 : f64} : (tensor<?x4x?x64xf32>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> tensor<?x4x?x64xf32>
  %o16 = arith.truncf %o : tensor<?x4x?x64xf32> to tensor<?x4x?x64xbf16>
  return %o16, %o : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xf32>
}
