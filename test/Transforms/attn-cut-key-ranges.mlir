// attn-cut-key-ranges: a masked attn.online_attention becomes the pieces of
// its keys its rows can see, each the op's tile of those keys (its
// TilingInterface), the keys every row sees unmasked.
// RUN: attn-opt %s -split-input-file -attn-cut-key-ranges -canonicalize -cse | FileCheck %s

// Causal, rows at positions [qp, qp + M), keys at [kp, kp + N): keys every
// row sees end at fullHi = clamp(qp + 1, kp, hi), the diagonal at
// hi = clamp(qp + M, kp, kp + N); keys past hi are dropped.
// CHECK-LABEL: func.func @causal(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<4x?x64xf32>, %[[K:[^:]*]]: tensor<?x64xf32>, %[[V:[^:]*]]: tensor<?x64xf32>, %[[ACC:[^:]*]]: tensor<4x?x64xf32>, %[[M:[^:]*]]: tensor<4x?xf32>, %[[L:[^:]*]]: tensor<4x?xf32>, %[[QP:[^:]*]]: index, %[[KP:[^:]*]]: index)
// CHECK-DAG: %[[N:.*]] = tensor.dim %[[K]], %c0
// CHECK-DAG: %[[ROWS:.*]] = tensor.dim %[[Q]], %c1
// CHECK-DAG: %[[END:.*]] = arith.addi %[[KP]], %[[N]]
// CHECK: %[[LAST:.*]] = arith.addi %[[QP]], %[[ROWS]]
// CHECK: %[[H1:.*]] = arith.maxsi %[[LAST]], %[[KP]]
// CHECK: %[[HI:.*]] = arith.minsi %[[H1]], %[[END]]
// CHECK: %[[FIRST:.*]] = arith.addi %[[QP]], %c1
// CHECK: %[[F1:.*]] = arith.maxsi %[[FIRST]], %[[KP]]
// CHECK: %[[FULLHI:.*]] = arith.minsi %[[F1]], %[[HI]]
// CHECK: %[[N0:.*]] = arith.subi %[[FULLHI]], %[[KP]]
// CHECK: %[[K0:.*]] = tensor.extract_slice %[[K]][0, 0] [%[[N0]], 64]
// CHECK: %[[V0:.*]] = tensor.extract_slice %[[V]][0, 0] [%[[N0]], 64]
// CHECK: %[[A0:.*]]:3 = attn.online_attention %{{.*}}, %[[K0]], %[[V0]], %[[ACC]], %[[M]], %[[L]], %[[QP]], %[[KP]] {scale = 1.250000e-01 : f64}
// CHECK: %[[N1:.*]] = arith.subi %[[HI]], %[[FULLHI]]
// CHECK: %[[K1:.*]] = tensor.extract_slice %[[K]][%[[N0]], 0] [%[[N1]], 64]
// CHECK: %[[A1:.*]]:3 = attn.online_attention %{{.*}}, %[[K1]], %{{.*}}, %[[A0]]#0, %[[A0]]#1, %[[A0]]#2, %[[QP]], %{{.*}} {mask = #attn.mask<causal>, scale = 1.250000e-01 : f64}
// CHECK: return %[[A1]]#0, %[[A1]]#1, %[[A1]]#2
func.func @causal(%q: tensor<4x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>, %acc: tensor<4x?x64xf32>, %m: tensor<4x?xf32>, %l: tensor<4x?xf32>, %qp: index, %kp: index) -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) {
  %a:3 = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<4x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
  return %a#0, %a#1, %a#2 : tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>
}

// -----

// Sliding window of 16: the window's edge [lo, fullLo) with
// lo = clamp(qp - 15, kp, hi) and fullLo = clamp(qp + M - 16, lo, hi)
// masked, then [fullLo, fullHi) unmasked, then the diagonal masked.
// CHECK-LABEL: func.func @window(
// CHECK-SAME: %[[QP:[^:]*]]: index, %[[KP:[^:]*]]: index)
// CHECK-DAG: %[[CM15:.*]] = arith.constant -15 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[HI:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
// CHECK: %[[E:.*]] = arith.addi %[[QP]], %[[CM15]]
// CHECK: %[[E1:.*]] = arith.maxsi %[[E]], %[[KP]]
// CHECK: %[[LO:.*]] = arith.minsi %[[E1]], %[[HI]]
// CHECK: %[[S:.*]] = arith.subi %{{.*}}, %[[C16]]
// CHECK: %[[S1:.*]] = arith.maxsi %[[S]], %[[LO]]
// CHECK: %[[FULLLO:.*]] = arith.minsi %[[S1]], %[[HI]]
// CHECK: attn.online_attention {{.*}} {mask = #attn.mask<sliding_window>, scale = 1.250000e-01 : f64, window = 16 : i64}
// CHECK: attn.online_attention {{.*}} {scale = 1.250000e-01 : f64}
// CHECK: attn.online_attention {{.*}} {mask = #attn.mask<sliding_window>, scale = 1.250000e-01 : f64, window = 16 : i64}
// CHECK-NOT: attn.online_attention
func.func @window(%q: tensor<4x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>, %acc: tensor<4x?x64xf32>, %m: tensor<4x?xf32>, %l: tensor<4x?xf32>, %qp: index, %kp: index) -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) {
  %a:3 = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp {mask = #attn.mask<sliding_window>, window = 16 : i64, scale = 0.125 : f64}
      : (tensor<4x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
  return %a#0, %a#1, %a#2 : tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>
}

// -----

// Chunks of 8 from the sequence's token range_start: the keys from the
// first row's chunk start; unmasked up to the first row only when every
// row is in one chunk. The unmasked piece drops the window and range_start.
// CHECK-LABEL: func.func @chunked(
// CHECK: arith.remsi
// CHECK: %[[ONE:.*]] = arith.cmpi eq
// CHECK: arith.select %[[ONE]]
// CHECK: attn.online_attention {{.*}} range_start(%{{.*}}) {mask = #attn.mask<chunked>
// CHECK: attn.online_attention
// CHECK-NOT: range_start
// CHECK-SAME: {scale = 2.500000e-01 : f64}
// CHECK: attn.online_attention {{.*}} range_start(%{{.*}}) {mask = #attn.mask<chunked>
func.func @chunked(%q: tensor<2x?x16xf32>, %k: tensor<?x16xf32>, %v: tensor<?x16xf32>, %acc: tensor<2x?x16xf32>, %m: tensor<2x?xf32>, %l: tensor<2x?xf32>, %qp: index, %kp: index, %origin: index) -> (tensor<2x?x16xf32>, tensor<2x?xf32>, tensor<2x?xf32>) {
  %a:3 = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp range_start(%origin) {mask = #attn.mask<chunked>, window = 8 : i64, scale = 0.25 : f64}
      : (tensor<2x?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<2x?x16xf32>, tensor<2x?xf32>, tensor<2x?xf32>) -> (tensor<2x?x16xf32>, tensor<2x?xf32>, tensor<2x?xf32>)
  return %a#0, %a#1, %a#2 : tensor<2x?x16xf32>, tensor<2x?xf32>, tensor<2x?xf32>
}

// -----

// Unmasked: nothing to cut.
// CHECK-LABEL: func.func @unmasked(
// CHECK: %[[A:.*]]:3 = attn.online_attention %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7 {scale = 1.250000e-01 : f64}
// CHECK-NOT: attn.online_attention
func.func @unmasked(%q: tensor<4x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>, %acc: tensor<4x?x64xf32>, %m: tensor<4x?xf32>, %l: tensor<4x?xf32>, %qp: index, %kp: index) -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) {
  %a:3 = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp {scale = 0.125 : f64}
      : (tensor<4x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
  return %a#0, %a#1, %a#2 : tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>
}
