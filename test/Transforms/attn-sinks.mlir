// Attention sinks through the passes: the eager chain with attn.sink_softmax
// fuses into attn.sdpa's sinks operand, decomposes back to it, and tiles
// into online-softmax loops whose state starts at each head's sink (max =
// sink, sum = 1; 0 for a sink of -inf) in one part of a split key range
// only, so the merge counts it once.
// RUN: attn-opt %s -split-input-file -attn-fuse-attention | FileCheck %s --check-prefix=FUSE
// RUN: attn-opt %s -split-input-file -attn-fuse-attention -attn-decompose-sdpa | FileCheck %s --check-prefix=DECOMPOSE
// RUN: attn-opt %s -split-input-file -attn-fuse-attention -attn-cpu-select-tiles=split-target=0 -attn-tile-attention -cse | FileCheck %s --check-prefix=TILE
// RUN: attn-opt %s -split-input-file -attn-fuse-attention -attn-cpu-select-tiles -attn-tile-attention -cse | FileCheck %s --check-prefix=SPLIT

// FUSE-LABEL: func.func @sinks(
// FUSE-SAME: %[[S:[^:]*]]: tensor<8xf32>
// FUSE: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} sinks(%[[S]] : tensor<8xf32>) outs({{.*}}) {mask = #attn.mask<causal>, scale = 2.500000e-01 : f64}
// FUSE-NOT: attn.sink_softmax
// DECOMPOSE-LABEL: func.func @sinks(
// DECOMPOSE-SAME: %[[S:[^:]*]]: tensor<8xf32>
// DECOMPOSE: attn.mask
// DECOMPOSE: attn.sink_softmax %{{.*}}, %[[S]] : (tensor<?x8x?x?xf32>, tensor<8xf32>) -> tensor<?x8x?x?xf32>
// DECOMPOSE-NOT: attn.softmax
// TILE-LABEL: func.func @sinks(
// TILE-SAME: %[[S:[^:]*]]: tensor<8xf32>
// TILE: scf.forall (%{{.*}}, %[[G:.*]], %{{.*}}) in
// TILE: %[[H0:.*]] = affine.apply #{{.*}}(%[[G]])
// TILE: %[[GS:.*]] = tensor.extract_slice %[[S]][%[[H0]]] [4] [1] : tensor<8xf32> to tensor<4xf32>
// The initial max: the head's sink on every row (without split-K every
// tile counts its sinks: the select on that folds).
// TILE: linalg.generic {{.*}} ins(%[[GS]] : tensor<4xf32>) outs(%{{.*}} : tensor<4x?xf32>)
// TILE: ^bb0(%[[SV:.*]]: f32, %[[OUT:.*]]: f32):
// TILE-NEXT: linalg.yield %[[SV]]
// The initial sum: 1, or 0 for a sink of -inf.
// TILE: linalg.generic {{.*}} ins(%[[GS]] : tensor<4xf32>)
// TILE: arith.cmpf oeq, %{{.*}}, %cst{{.*}} : f32
// TILE: attn.online_attention
// SPLIT-LABEL: func.func @sinks(
// SPLIT: scf.forall (%{{.*}}, %[[PART:.*]], %{{.*}}, %{{.*}}) in
// SPLIT: %[[FIRST:.*]] = arith.cmpi eq, %[[PART]], %c0 : index
// SPLIT: linalg.generic
// SPLIT: arith.select %[[FIRST]]
// SPLIT: {attn.split_k_merge}
func.func @sinks(%q: tensor<?x8x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>, %sinks: tensor<8xf32>) -> tensor<?x8x?x16xf32> {
  %s = attn.qk %q, %k : (tensor<?x8x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x8x?x?xf32>
  %s1 = attn.scale %s {scale = 0.25 : f64} : tensor<?x8x?x?xf32>
  %s2 = attn.mask %s1 {kind = #attn.mask<causal>} : tensor<?x8x?x?xf32>
  %p = attn.sink_softmax %s2, %sinks : (tensor<?x8x?x?xf32>, tensor<8xf32>) -> tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x8x?x16xf32>
  return %o : tensor<?x8x?x16xf32>
}
