// RUN: attn-opt %s -convert-attn-to-linalg | FileCheck %s

// One online-softmax step: QKᵀ (reduction over d), the causal mask from
// linalg.index against the query and key positions, the new row max, exp of
// the shifted scores, and acc·alpha + P·V; the -inf guard keeps rows that saw
// no key at 0 instead of NaN.
// CHECK-LABEL: func.func @step(
// CHECK-NOT: attn.online_attention
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: linalg.index 1
// CHECK: linalg.index 2
// CHECK: arith.cmpi sle
// CHECK: arith.select {{.*}} : f32
// CHECK: arith.maximumf
// CHECK: arith.cmpf oeq, {{.*}}, %cst
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "parallel"]
// CHECK-NOT: attn.online_finalize
// CHECK: arith.divf
func.func @step(%q: tensor<4x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>,
                %acc: tensor<4x?x64xf32>, %m: tensor<4x?xf32>, %l: tensor<4x?xf32>,
                %qp: index, %kp: index) -> tensor<4x?x64xf32> {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<4x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
      -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
  %o = attn.online_finalize %a, %s outs(%a : tensor<4x?x64xf32>) : (tensor<4x?x64xf32>, tensor<4x?xf32>) -> tensor<4x?x64xf32>
  return %o : tensor<4x?x64xf32>
}
