// attn-tile-gated-delta: one forall point per (batch, value head); value
// head h reads query/key head h / 2 (a slice of the shared head, never a
// copy); the head's state lives in the final-state destination; short
// sequences take one recurrent chunk op that reads the initial state where
// it is (initial_state) and writes the destination, longer ones copy the
// initial state into the destination and loop over chunks of 64 tokens
// carrying outputs and state.
// RUN: attn-opt %s -split-input-file -attn-tile-gated-delta -cse | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-tile-gated-delta=chunk=32\ recurrent-max=4 -cse | FileCheck %s --check-prefix=SIZES
// RUN: not attn-opt %s -split-input-file -attn-tile-gated-delta=chunk=0 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: attn-tile-gated-delta: chunk must be positive and recurrent-max 0 or more, got chunk=0 recurrent-max=16

// CHECK-LABEL: func.func @with_state(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x2x?x128xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x?x128xf32>, %[[V:[a-z0-9]+]]: tensor<?x4x?x64xf32>, %[[G:[a-z0-9]+]]: tensor<?x4x?xf32>, %[[B:[a-z0-9]+]]: tensor<?x4x?xf32>, %[[S0:[a-z0-9]+]]: tensor<?x4x128x64xf32>, %[[OI:[a-z0-9]+]]: tensor<?x4x?x64xf32>, %[[SI:[a-z0-9]+]]: tensor<?x4x128x64xf32>)
// CHECK: %[[BATCH:.+]] = tensor.dim %[[V]], %c0
// CHECK: %[[SEQ:.+]] = tensor.dim %[[V]], %[[C2:.+]] :
// CHECK: scf.forall (%[[BI:.+]], %[[H:.+]]) in (%[[BATCH]], 4) shared_outs(%[[OUT:.+]] = %[[OI]], %[[ST:.+]] = %[[SI]])
// CHECK: %[[HK:.+]] = arith.divui %[[H]], %[[C2]]
// CHECK: %[[MINE:.+]] = tensor.extract_slice %[[ST]][%[[BI]], %[[H]], 0, 0] [1, 1, 128, 64]
// CHECK: %[[INIT:.+]] = tensor.extract_slice %[[S0]][%[[BI]], %[[H]], 0, 0] [1, 1, 128, 64]
// CHECK-NOT: linalg.copy
// CHECK: %[[SHORT:.+]] = arith.cmpi sle, %[[SEQ]], %c16
// CHECK: scf.if %[[SHORT]]
// CHECK: tensor.extract_slice %[[Q]][%[[BI]], %[[HK]], %c0, 0] [1, 1, %[[SEQ]], 128]
// CHECK: attn.gated_delta_chunk {{.*}}, %[[MINE]] initial_state(%[[INIT]] : tensor<128x64xf32>) {recurrent, scale = 0.088388347648318433 : f64}
// CHECK: } else {
// CHECK: %[[STATE:.+]] = linalg.copy ins(%[[INIT]] : tensor<128x64xf32>) outs(%[[MINE]] : tensor<128x64xf32>)
// CHECK: scf.for %[[T:.+]] = %c0 to %[[SEQ]] step %c64 iter_args(%{{.+}} = %{{.+}}, %[[CARRY:.+]] = %[[STATE]])
// CHECK: %[[N:.+]] = affine.min #{{.+}}(%[[T]])[%[[SEQ]]]
// CHECK: tensor.extract_slice %[[Q]][%[[BI]], %[[HK]], %[[T]], 0] [1, 1, %[[N]], 128]
// CHECK: tensor.extract_slice %[[V]][%[[BI]], %[[H]], %[[T]], 0] [1, 1, %[[N]], 64]
// CHECK: tensor.extract_slice %[[G]][%[[BI]], %[[H]], %[[T]]] [1, 1, %[[N]]]
// CHECK: attn.gated_delta_chunk {{.*}}, %[[CARRY]] {scale = 0.088388347648318433 : f64} : (tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x64xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>, tensor<128x64xf32>) -> (tensor<?x64xf32>, tensor<128x64xf32>)
// CHECK: tensor.insert_slice
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[BI]], %[[H]], 0, 0] [1, 1, %[[SEQ]], 64]
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[ST]][%[[BI]], %[[H]], 0, 0] [1, 1, 128, 64]
// CHECK-NOT: attn.gated_delta_rule
// SIZES-LABEL: func.func @with_state(
// SIZES: arith.cmpi sle, %{{.+}}, %c4
// SIZES: scf.for {{.*}} step %c32
func.func @with_state(%q: tensor<?x2x?x128xf32>, %k: tensor<?x2x?x128xf32>, %v: tensor<?x4x?x64xf32>, %g: tensor<?x4x?xf32>, %beta: tensor<?x4x?xf32>, %s0: tensor<?x4x128x64xf32>, %oi: tensor<?x4x?x64xf32>, %si: tensor<?x4x128x64xf32>) -> (tensor<?x4x?x64xf32>, tensor<?x4x128x64xf32>) {
  %o, %s = attn.gated_delta_rule %q, %k, %v, %g, %beta initial_state(%s0 : tensor<?x4x128x64xf32>) outs(%oi, %si : tensor<?x4x?x64xf32>, tensor<?x4x128x64xf32>) {scale = 0.088388347648318433 : f64} : (tensor<?x2x?x128xf32>, tensor<?x2x?x128xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x64xf32>, tensor<?x4x128x64xf32>)
  return %o, %s : tensor<?x4x?x64xf32>, tensor<?x4x128x64xf32>
}

// -----

// Without an initial state the head's state starts at zero.
// CHECK-LABEL: func.func @fresh(
// CHECK: scf.forall
// CHECK: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[Z]] : f32) outs(%{{.+}} : tensor<16x16xf32>)
func.func @fresh(%q: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>, %g: tensor<1x1x8xf32>, %oi: tensor<1x1x8x16xf32>, %si: tensor<1x1x16x16xf32>) -> (tensor<1x1x8x16xf32>, tensor<1x1x16x16xf32>) {
  %o, %s = attn.gated_delta_rule %q, %q, %v, %g, %g outs(%oi, %si : tensor<1x1x8x16xf32>, tensor<1x1x16x16xf32>) {scale = 0.25 : f64} : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8xf32>, tensor<1x1x8xf32>) -> (tensor<1x1x8x16xf32>, tensor<1x1x16x16xf32>)
  return %o, %s : tensor<1x1x8x16xf32>, tensor<1x1x16x16xf32>
}

// -----

// Reference functions keep the op (convert-attn-to-linalg lowers it to its
// eager recurrence).
// CHECK-LABEL: func.func @reference(
// CHECK-NOT: scf.forall
// CHECK: attn.gated_delta_rule
func.func @reference(%q: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>, %g: tensor<1x1x8xf32>, %oi: tensor<1x1x8x16xf32>, %si: tensor<1x1x16x16xf32>) -> (tensor<1x1x8x16xf32>, tensor<1x1x16x16xf32>) attributes {attn.reference} {
  %o, %s = attn.gated_delta_rule %q, %q, %v, %g, %g outs(%oi, %si : tensor<1x1x8x16xf32>, tensor<1x1x16x16xf32>) {scale = 0.25 : f64} : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8xf32>, tensor<1x1x8xf32>) -> (tensor<1x1x8x16xf32>, tensor<1x1x16x16xf32>)
  return %o, %s : tensor<1x1x8x16xf32>, tensor<1x1x16x16xf32>
}

// -----

// With lengths, each head runs its own sequence: the length (clamped to
// [0, seq]) bounds the recurrent case and the chunk loop, and the padding
// rows of the head's output are filled with 0.
// CHECK-LABEL: func.func @lengths(
// CHECK-SAME: %[[L:[a-z0-9]+]]: tensor<?xi64>
// CHECK: %[[SEQ:.+]] = tensor.dim %{{.+}}, %c2
// CHECK: scf.forall (%[[BI:.+]], %[[H:.+]]) in
// CHECK: %[[RAW:.+]] = tensor.extract %[[L]][%[[BI]]] : tensor<?xi64>
// CHECK: %[[IDX:.+]] = arith.index_cast %[[RAW]] : i64 to index
// CHECK: %[[LOW:.+]] = arith.maxsi %[[IDX]], %c0
// CHECK: %[[LEN:.+]] = arith.minsi %[[LOW]], %[[SEQ]]
// CHECK: arith.cmpi sle, %[[LEN]], %c16
// CHECK: tensor.extract_slice %{{.+}}[0, 0] [%[[LEN]], 32] [1, 1]
// CHECK: attn.gated_delta_chunk {{.*}}recurrent
// CHECK: scf.for %{{.+}} = %c0 to %[[LEN]] step %c64
// CHECK: %[[PAD:.+]] = arith.subi %[[SEQ]], %[[LEN]]
// CHECK: %[[ROWS:.+]] = tensor.extract_slice %{{.+}}[%[[LEN]], 0] [%[[PAD]], 32] [1, 1]
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[ROWS]] : tensor<?x32xf32>)
// CHECK: tensor.insert_slice %[[Z]] into %{{.+}}[%[[LEN]], 0] [%[[PAD]], 32]
// CHECK: scf.forall.in_parallel
func.func @lengths(%q: tensor<?x1x?x16xf32>, %v: tensor<?x2x?x32xf32>, %g: tensor<?x2x?xf32>, %l: tensor<?xi64>, %oi: tensor<?x2x?x32xf32>, %si: tensor<?x2x16x32xf32>) -> (tensor<?x2x?x32xf32>, tensor<?x2x16x32xf32>) {
  %o, %s = attn.gated_delta_rule %q, %q, %v, %g, %g lengths(%l : tensor<?xi64>) outs(%oi, %si : tensor<?x2x?x32xf32>, tensor<?x2x16x32xf32>) {scale = 0.25 : f64} : (tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?xf32>, tensor<?x2x?xf32>) -> (tensor<?x2x?x32xf32>, tensor<?x2x16x32xf32>)
  return %o, %s : tensor<?x2x?x32xf32>, tensor<?x2x16x32xf32>
}
