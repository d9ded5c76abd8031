// RUN: attn-opt %s -convert-attn-to-linalg | FileCheck %s
// RUN: attn-opt %s -convert-attn-to-linalg | FileCheck %s --check-prefix=GDR

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


// The gated delta rule's eager recurrence (the reference path): a loop over
// tokens carrying the state [B, Hv, d_k, d_v] and the outputs; value head h
// reads query/key head h floordiv 2 through the indexing maps (no copy).
// GDR-DAG: #[[KEY:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 2, d2)>
// GDR-LABEL: func.func @gated_delta_rule(
// GDR-SAME: %[[Q:[a-z0-9]+]]: tensor<?x2x?x16xf32>, %[[V:[a-z0-9]+]]: tensor<?x4x?x8xf32>, %[[G:[a-z0-9]+]]: tensor<?x4x?xf32>, %[[S0:[a-z0-9]+]]: tensor<?x4x16x8xf32>, %[[OI:[a-z0-9]+]]: tensor<?x4x?x8xf32>
// GDR: %[[SEQ:.+]] = tensor.dim %[[V]], %c2
// GDR: scf.for %[[T:.+]] = %{{.+}} to %[[SEQ]] step %c1{{.*}} iter_args(%[[S:.+]] = %[[S0]], %[[O:.+]] = %[[OI]])
// GDR: tensor.extract_slice %[[G]][0, 0, %[[T]]]
// S · exp(g):
// GDR: linalg.generic {{.*}} ins(%[[S]], %{{.+}} : tensor<?x4x16x8xf32>, tensor<?x4xf32>)
// GDR: math.exp
// Sᵀk, a reduction over d_k:
// GDR: linalg.generic {indexing_maps = [#{{.+}}, #[[KEY]], #{{.+}}], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// The rank-1 update, then o = Sᵀ(scale · q):
// GDR: linalg.generic
// GDR: arith.subf
// GDR: arith.constant 2.500000e-01
// GDR: linalg.generic {indexing_maps = [#{{.+}}, #[[KEY]], #{{.+}}], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// GDR: tensor.insert_slice %{{.+}} into %[[O]][0, 0, %[[T]], 0]
// GDR: scf.yield
// GDR-NOT: attn.gated_delta_rule
func.func @gated_delta_rule(%q: tensor<?x2x?x16xf32>, %v: tensor<?x4x?x8xf32>, %g: tensor<?x4x?xf32>, %s0: tensor<?x4x16x8xf32>, %oi: tensor<?x4x?x8xf32>, %si: tensor<?x4x16x8xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>) {
  %o, %s = attn.gated_delta_rule %q, %q, %v, %g, %g initial_state(%s0 : tensor<?x4x16x8xf32>) outs(%oi, %si : tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>) {scale = 0.25 : f64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>)
  return %o, %s : tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>
}
