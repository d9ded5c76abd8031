// RUN: attn-opt %s -attn-make-reference | FileCheck %s
// RUN: attn-opt %s -attn-make-reference -attn-make-reference | FileCheck %s --check-prefix=TWICE

// CHECK-LABEL: func.func @layer(
// CHECK-SAME: attributes {attn.layers = array<i64: 0, 1>}
// CHECK: attn.sdpa
// CHECK-LABEL: func.func @layer_reference(
// CHECK-SAME: attributes {attn.reference}
// CHECK: attn.qk
// CHECK: attn.mask {{.*}} {kind = #attn.mask<causal>}
// CHECK: attn.softmax
// CHECK: attn.pv
// CHECK-NOT: attn.sdpa
// CHECK-LABEL: func.func @no_attention(
// CHECK-NOT: @no_attention_reference
// TWICE-COUNT-1: func.func @layer_reference(
func.func @layer(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> attributes {attn.layers = array<i64: 0, 1>} {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

func.func @no_attention(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
