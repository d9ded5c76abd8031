// attn.paged_sdpa implements TilingInterface over the result's dims, as
// attn.sdpa: upstream tiling (transform.structured.tile_using_forall)
// slices it into smaller paged_sdpa ops, each reading the whole caches
// through its rows of the block table and the KV head of its query heads'
// group; a tile of some of the query rows gets its positions as q_pos
// (kv_lengths - q_len + i0). Through the rest of the pipeline (attn-tile-
// attention inside each tile, the CPU micro-kernel, LLVM) and run by
// mlir-runner, the result matches a float64 reference of paged attention
// written from the definition: tiled by (batch, heads, rows), by (batch,
// heads, value dims), and untiled.
// REQUIRES: mlir-runner
// RUN: rm -rf %t && split-file %s %t
// RUN: attn-opt %t/paged.mlir -transform-preload-library=transform-library-paths=%t/rows.mlir -transform-interpreter | FileCheck %s --check-prefix=TILED
// RUN: attn-opt %t/paged.mlir -transform-preload-library=transform-library-paths=%t/rows.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/paged_sdpa_ref.py | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/paged.mlir -transform-preload-library=transform-library-paths=%t/values.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/paged_sdpa_ref.py | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/paged.mlir -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/paged_sdpa_ref.py | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/stats.mlir -transform-preload-library=transform-library-paths=%t/rows.mlir -transform-interpreter | FileCheck %s --check-prefix=STATS
// RUN: not attn-opt %t/paged.mlir -transform-preload-library=transform-library-paths=%t/straddle.mlir -transform-interpreter 2>&1 | FileCheck %s --check-prefix=STRADDLE

// OK: OK

// TILED-LABEL: func.func @attn(
// TILED-SAME: %[[Q:[^:]*]]: tensor<2x4x3x8xf32>, %[[KC:[^:]*]]: tensor<10x2x16x8xf32>, %[[VC:[^:]*]]: tensor<10x2x16x8xf32>, %[[T:[^:]*]]: tensor<2x3xi32>, %[[L:[^:]*]]: tensor<2xi64>
// TILED: scf.forall (%[[B:.*]], %[[H:.*]], %[[I:.*]]) in (2, 2, 2)
// TILED-DAG: tensor.extract_slice %[[KC]][0, %{{.*}}, 0, 0] [10, 1, 16, 8] [1, 1, 1, 1] : tensor<10x2x16x8xf32> to tensor<10x1x16x8xf32>
// TILED-DAG: %[[TB:.*]] = tensor.extract_slice %[[T]][%[[B]], 0] [1, 3] [1, 1] : tensor<2x3xi32> to tensor<1x3xi32>
// TILED-DAG: %[[LB:.*]] = tensor.extract_slice %[[L]][%[[B]]] [1] [1] : tensor<2xi64> to tensor<1xi64>
// TILED: %[[POS:.*]] = tensor.generate
// TILED: tensor.extract %[[LB]]
// TILED: attn.paged_sdpa {{.*}}, %[[TB]], %[[LB]] q_pos(%[[POS]] : tensor<1xi64>) outs(%{{.*}} : tensor<1x2x?x8xf32>) {mask = #attn.mask<causal>, scale = 3.500000e-01 : f64}

// The row statistics of a tile are its rows' [1, 2, rows, 2].
// STATS-LABEL: func.func @stats(
// STATS: attn.paged_sdpa {{.*}} outs(%{{.*}} : tensor<1x2x?x8xf32>, %{{.*}} : tensor<1x2x?x2xf32>)
// STATS: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, 0] [1, 2, %{{.*}}, 2]

// A head tile that leaves a partial tile (3 of 4 heads) is refused.
// STRADDLE: error: 'attn.paged_sdpa' op tiling the query heads needs a static tile size (one that divides the head count)

//--- rows.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.paged_sdpa"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 2, 2, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- values.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.paged_sdpa"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 4, 0, 4]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- straddle.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.paged_sdpa"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 3, 0, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- stats.mlir
func.func @stats(%q: tensor<2x4x3x8xf32>, %kc: tensor<10x2x16x8xf32>, %vc: tensor<10x2x16x8xf32>,
                 %table: tensor<2x3xi32>, %lens: tensor<2xi64>, %pos: tensor<2xi64>)
    -> (tensor<2x4x3x8xf32>, tensor<2x4x3x2xf32>) {
  %init = tensor.empty() : tensor<2x4x3x8xf32>
  %sinit = tensor.empty() : tensor<2x4x3x2xf32>
  %o, %s = attn.paged_sdpa %q, %kc, %vc, %table, %lens q_pos(%pos : tensor<2xi64>)
      outs(%init : tensor<2x4x3x8xf32>, %sinit : tensor<2x4x3x2xf32>) {mask = #attn.mask<causal>, scale = 0.35 : f64}
      : (tensor<2x4x3x8xf32>, tensor<10x2x16x8xf32>, tensor<10x2x16x8xf32>, tensor<2x3xi32>, tensor<2xi64>)
      -> tensor<2x4x3x8xf32>, tensor<2x4x3x2xf32>
  return %o, %s : tensor<2x4x3x8xf32>, tensor<2x4x3x2xf32>
}
//--- paged.mlir
func.func @attn(%q: tensor<2x4x3x8xf32>, %kc: tensor<10x2x16x8xf32>, %vc: tensor<10x2x16x8xf32>,
                %table: tensor<2x3xi32>, %lens: tensor<2xi64>) -> tensor<2x4x3x8xf32> {
  %init = tensor.empty() : tensor<2x4x3x8xf32>
  %o = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<2x4x3x8xf32>)
      {mask = #attn.mask<causal>, scale = 0.35 : f64}
      : (tensor<2x4x3x8xf32>, tensor<10x2x16x8xf32>, tensor<10x2x16x8xf32>, tensor<2x3xi32>, tensor<2xi64>)
      -> tensor<2x4x3x8xf32>
  return %o : tensor<2x4x3x8xf32>
}
func.func @main() {
  %c0_37 = arith.constant 0.37 : f64
  %c0_1 = arith.constant 0.1 : f64
  %c0_23 = arith.constant 0.23 : f64
  %c0_2 = arith.constant 0.2 : f64
  %c0_11 = arith.constant 0.11 : f64
  %c0_5 = arith.constant 0.5 : f64
  %c1_0 = arith.constant 1.0 : f64
  %c2_0 = arith.constant 2.0 : f64
  %q = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 96 + d1 * 24 + d2 * 8 + d3)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_37 : f64
    %y = arith.addf %x, %c0_1 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x4x3x8xf32>
  %kc = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 256 + d1 * 128 + d2 * 8 + d3)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_23 : f64
    %y = arith.addf %x, %c0_2 : f64
    %s = math.cos %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<10x2x16x8xf32>
  %vc = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 256 + d1 * 128 + d2 * 8 + d3)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_11 : f64
    %y = arith.addf %x, %c0_5 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c2_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<10x2x16x8xf32>
  %table = arith.constant dense<[[7, 2, 9], [4, 0, 5]]> : tensor<2x3xi32>
  %lens = arith.constant dense<[37, 20]> : tensor<2xi64>
  %o = func.call @attn(%q, %kc, %vc, %table, %lens) : (tensor<2x4x3x8xf32>, tensor<10x2x16x8xf32>, tensor<10x2x16x8xf32>, tensor<2x3xi32>, tensor<2xi64>) -> tensor<2x4x3x8xf32>
  %buf = bufferization.to_buffer %o : tensor<2x4x3x8xf32> to memref<2x4x3x8xf32>
  %u = memref.cast %buf : memref<2x4x3x8xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
