// The named pipeline attn-opt exposes is the one attn-compile runs.
// RUN: attn-opt %s -attn-pipeline | FileCheck %s
// RUN: attn-opt %s -attn-pipeline=stop-after=fused | FileCheck %s --check-prefix=FUSED

// CHECK-LABEL: func.func @f(
// CHECK: scf.forall
// CHECK: attn.online_attention
// CHECK-LABEL: func.func @f_reference(
// CHECK: attn.softmax
// FUSED-LABEL: func.func @f(
// FUSED: attn.sdpa
// FUSED-NOT: scf.forall
func.func @f(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %s = attn.qk %q, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %p = attn.softmax %s : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}
