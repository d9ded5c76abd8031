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


// The gated delta rule's eager chunked algorithm (the reference path,
// transformers' torch_chunk_gated_delta_rule op by op): a loop over chunks of
// 64 tokens carrying the state [B, Hv, d_k, d_v] and the outputs; the gates'
// running sum in f64; k·kᵀ per query/key head [B, 2, n, n], read by value
// head h as head h floordiv 2 (no copy); the forward substitution as a loop
// over rows; T·(βv), T·(βe^γk), U − W·S, the inter- and intra-chunk outputs
// and the state update as products whose innermost loop is contiguous.
// GDR-DAG: #[[KEY:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 2, d2, d3)>
// GDR-LABEL: func.func @gated_delta_rule(
// GDR-SAME: %[[Q:[a-z0-9]+]]: tensor<?x2x?x16xf32>, %[[V:[a-z0-9]+]]: tensor<?x4x?x8xf32>, %[[G:[a-z0-9]+]]: tensor<?x4x?xf32>, %[[S0:[a-z0-9]+]]: tensor<?x4x16x8xf32>, %[[OI:[a-z0-9]+]]: tensor<?x4x?x8xf32>
// GDR: %[[SEQ:.+]] = tensor.dim %[[V]], %c2
// GDR: scf.for %[[C:[a-z0-9]+]] = %{{.+}} to %[[SEQ]] step %c64 iter_args(%[[S:[a-z0-9]+]] = %[[S0]], %[[O:[a-z0-9]+]] = %[[OI]])
// GDR: %[[GC:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.+}} : tensor<?x4x?xf32>) outs(%{{.+}} : tensor<?x4x?xf64>)
// GDR: arith.extf
// GDR: %[[KK:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<?x2x?x?xf32>)
// GDR: %[[A:.+]] = linalg.generic {indexing_maps = [#[[KEY]], {{.+}}]{{.*}} ins(%[[KK]], %[[GC]], %[[GC]]
// GDR: arith.truncf
// GDR: math.exp
// GDR: %[[T:.+]] = scf.for %{{.+}} = %c1 to %{{.+}} step %c1 iter_args(%[[AI:.+]] = %[[A]])
// GDR: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%{{.+}}, %[[AI]] :
// GDR: tensor.insert_slice
// GDR: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[T]], %{{.+}} : tensor<?x4x?x?xf32>, tensor<?x4x?x8xf32>)
// GDR: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[T]], %{{.+}} : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>)
// GDR: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%{{.+}}, %[[S]] : tensor<?x4x?x16xf32>, tensor<?x4x16x8xf32>)
// GDR: arith.subf
// GDR: tensor.insert_slice %{{.+}} into %[[O]][0, 0, %[[C]], 0]
// GDR: scf.yield
// GDR-NOT: attn.gated_delta_rule
func.func @gated_delta_rule(%q: tensor<?x2x?x16xf32>, %v: tensor<?x4x?x8xf32>, %g: tensor<?x4x?xf32>, %s0: tensor<?x4x16x8xf32>, %oi: tensor<?x4x?x8xf32>, %si: tensor<?x4x16x8xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>) {
  %o, %s = attn.gated_delta_rule %q, %q, %v, %g, %g initial_state(%s0 : tensor<?x4x16x8xf32>) outs(%oi, %si : tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>) {scale = 0.25 : f64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>)
  return %o, %s : tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>
}
