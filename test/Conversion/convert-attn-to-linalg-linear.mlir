// RUN: attn-opt %s -convert-attn-to-linalg | FileCheck %s

// The graph ops of a Gated DeltaNet layer as linalg on tensors.

// The convolution pads the input with the state's K - 1 columns (transposed
// to rows), reads token s + j of the padded input for tap j (no copy per
// tap), applies SiLU, and keeps the padded input's last K - 1 rows as the
// new state.
// CHECK-DAG: #[[TR:.+]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG: #[[TAP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 + d3, d2)>
// CHECK-DAG: #[[HEAD1:.+]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-LABEL: func.func @conv(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x96xf32>, %[[WT:[a-z0-9]+]]: tensor<96x4xf32>, %[[S0:[a-z0-9]+]]: tensor<?x96x3xf32>
// CHECK: %[[SEQ:.+]] = tensor.dim %[[X]], %c1
// CHECK: %[[HEAD:.+]] = linalg.generic {indexing_maps = [#[[TR]], {{.+}}]{{.*}} ins(%[[S0]] : tensor<?x96x3xf32>)
// CHECK: %[[P0:.+]] = tensor.insert_slice %[[HEAD]] into %{{.+}}[0, 0, 0]
// CHECK: %[[P:.+]] = tensor.insert_slice %[[X]] into %[[P0]][0, 3, 0]
// CHECK: %[[ACC:.+]] = linalg.generic {indexing_maps = [#[[TAP]], #[[W]], {{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[P]], %[[WT]] :
// CHECK: %[[Y:.+]] = linalg.generic {{.+}} ins(%[[ACC]] :
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: %[[TAIL:.+]] = tensor.extract_slice %[[P]][0, %[[SEQ]], 0] [%{{.+}}, 3, 96]
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[TR]], {{.+}}]{{.*}} ins(%[[TAIL]] : tensor<?x3x96xf32>)
// CHECK: return %[[Y]], %[[S]]
func.func @conv(%x: tensor<?x?x96xf32>, %w: tensor<96x4xf32>, %s0: tensor<?x96x3xf32>) -> (tensor<?x?x96xf32>, tensor<?x96x3xf32>) {
  %y, %s = attn.causal_conv1d %x, %w state(%s0 : tensor<?x96x3xf32>) : (tensor<?x?x96xf32>, tensor<96x4xf32>) -> (tensor<?x?x96xf32>, tensor<?x96x3xf32>)
  return %y, %s : tensor<?x?x96xf32>, tensor<?x96x3xf32>
}

// Without a state the padding is zeros.
// CHECK-LABEL: func.func @conv_fresh(
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x3x8xf32>)
// CHECK: tensor.insert_slice %[[Z]] into
func.func @conv_fresh(%x: tensor<?x?x8xf32>, %w: tensor<8x4xf32>) -> (tensor<?x?x8xf32>, tensor<?x8x3xf32>) {
  %y, %s = attn.causal_conv1d %x, %w : (tensor<?x?x8xf32>, tensor<8x4xf32>) -> (tensor<?x?x8xf32>, tensor<?x8x3xf32>)
  return %y, %s : tensor<?x?x8xf32>, tensor<?x8x3xf32>
}

// g = -exp(A_log) * softplus(a + dt_bias) (x itself past 20, as torch) and
// beta = sigmoid(b), both read [B, S, Hv] and written [B, Hv, S].
// CHECK-LABEL: func.func @gates(
// CHECK: linalg.generic {indexing_maps = [#[[TR]], #[[HEAD1]], #[[HEAD1]], {{.+}}]
// CHECK: %[[X1:.+]] = arith.addf
// CHECK: %[[E:.+]] = math.exp %[[X1]]
// CHECK: %[[L:.+]] = math.log1p %[[E]]
// CHECK: %[[C20:.+]] = arith.constant 2.000000e+01
// CHECK: %[[BIG:.+]] = arith.cmpf ogt, %[[X1]], %[[C20]]
// CHECK: %[[SP:.+]] = arith.select %[[BIG]], %[[X1]], %[[L]]
// CHECK: %[[DECAY:.+]] = math.exp
// CHECK: %[[M:.+]] = arith.mulf %[[DECAY]], %[[SP]]
// CHECK: arith.negf %[[M]]
// CHECK: linalg.generic {indexing_maps = [#[[TR]], {{.+}}]
// CHECK: math.exp
// CHECK: arith.divf
func.func @gates(%a: tensor<?x?x4xf32>, %b: tensor<?x?x4xf32>, %al: tensor<4xf32>, %dt: tensor<4xf32>) -> (tensor<?x4x?xf32>, tensor<?x4x?xf32>) {
  %g, %beta = attn.gated_delta_gates %a, %b, %al, %dt : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x?xf32>, tensor<?x4x?xf32>)
  return %g, %beta : tensor<?x4x?xf32>, tensor<?x4x?xf32>
}

// l2_norm: x * rsqrt(sum x^2 + eps) (no mean); gated_rms_norm: x *
// rsqrt(mean x^2 + eps) * w * silu(z).
// CHECK-LABEL: func.func @norms(
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-NOT: arith.divf
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.constant 8.000000e+00
// CHECK: math.rsqrt
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK-NOT: attn.
func.func @norms(%q: tensor<?x2x?x16xf32>, %o: tensor<?x?x4x8xf32>, %z: tensor<?x?x4x8xf32>, %w: tensor<8xf32>) -> (tensor<?x2x?x16xf32>, tensor<?x?x4x8xf32>) {
  %l = attn.l2_norm %q {epsilon = 1.0e-06 : f64} : tensor<?x2x?x16xf32>
  %n = attn.gated_rms_norm %o, %z, %w {epsilon = 1.0e-06 : f64} : (tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<8xf32>) -> tensor<?x?x4x8xf32>
  return %l, %n : tensor<?x2x?x16xf32>, tensor<?x?x4x8xf32>
}

// The eager chunked algorithm with lengths: a row's tokens at or past its
// length take gate and beta 0 before the chunk loop (they add nothing to
// the state) and their outputs are set to 0 after it.
// CHECK-LABEL: func.func @gdr_lengths(
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<?x2x?xf32>, %[[L:[a-z0-9]+]]: tensor<?xi64>
// CHECK: %[[GM:.+]] = linalg.generic {{.+}} ins(%[[G]], %[[L]] : tensor<?x2x?xf32>, tensor<?xi64>)
// CHECK: %[[T:.+]] = linalg.index 2 : index
// CHECK: %[[TI:.+]] = arith.index_cast %[[T]] : index to i64
// CHECK: %[[IN:.+]] = arith.cmpi slt, %[[TI]], %{{.+}} : i64
// CHECK: arith.select %[[IN]]
// CHECK: %[[BM:.+]] = linalg.generic {{.+}} ins(%[[G]], %[[L]] : tensor<?x2x?xf32>, tensor<?xi64>)
// CHECK: %[[LOOP:.+]]:2 = scf.for
// CHECK: tensor.extract_slice %[[GM]]
// CHECK: tensor.extract_slice %[[BM]]
// CHECK: scf.yield
// CHECK: linalg.generic {{.+}} ins(%[[LOOP]]#1, %[[L]] : tensor<?x2x?x8xf32>, tensor<?xi64>)
func.func @gdr_lengths(%q: tensor<?x1x?x16xf32>, %v: tensor<?x2x?x8xf32>, %g: tensor<?x2x?xf32>, %l: tensor<?xi64>, %oi: tensor<?x2x?x8xf32>, %si: tensor<?x2x16x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x16x8xf32>) {
  %o, %s = attn.gated_delta_rule %q, %q, %v, %g, %g lengths(%l : tensor<?xi64>) outs(%oi, %si : tensor<?x2x?x8xf32>, tensor<?x2x16x8xf32>) {scale = 0.25 : f64} : (tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?xf32>, tensor<?x2x?xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x16x8xf32>)
  return %o, %s : tensor<?x2x?x8xf32>, tensor<?x2x16x8xf32>
}
