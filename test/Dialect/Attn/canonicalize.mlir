// RUN: attn-opt %s -split-input-file -canonicalize | FileCheck %s

// A scale of one is its input; a scale of a scale is one scale (and both
// vanish when the product is one). The front end, attn-decompose-sdpa and
// the lowering rely on this instead of special cases.
// CHECK-LABEL: func.func @scale_one(
// CHECK-SAME: %[[X:.*]]: tensor<?x4x?x?xf32>
// CHECK-NOT: attn.scale
// CHECK: return %[[X]]
func.func @scale_one(%x: tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32> {
  %0 = attn.scale %x {scale = 1.0 : f64} : tensor<?x4x?x?xf32>
  return %0 : tensor<?x4x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @scale_scale(
// CHECK-SAME: %[[X:.*]]: tensor<?x4x?x?xf32>
// CHECK: %[[S:.*]] = attn.scale %[[X]] {scale = 1.250000e-01 : f64}
// CHECK-NEXT: return %[[S]]
func.func @scale_scale(%x: tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32> {
  %0 = attn.scale %x {scale = 0.25 : f64} : tensor<?x4x?x?xf32>
  %1 = attn.scale %0 {scale = 0.5 : f64} : tensor<?x4x?x?xf32>
  return %1 : tensor<?x4x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @scale_inverse(
// CHECK-SAME: %[[X:.*]]: tensor<?x4x?x?xf32>
// CHECK-NOT: attn.scale
// CHECK: return %[[X]]
func.func @scale_inverse(%x: tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32> {
  %0 = attn.scale %x {scale = 4.0 : f64} : tensor<?x4x?x?xf32>
  %1 = attn.scale %0 {scale = 0.25 : f64} : tensor<?x4x?x?xf32>
  return %1 : tensor<?x4x?x?xf32>
}
