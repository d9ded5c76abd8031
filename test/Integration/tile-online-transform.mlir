// attn.online_attention implements TilingInterface over [lead..., M, N]
// (the query's leading dims and rows parallel, the keys a reduction):
// upstream tiling (transform.structured.tile_using_for) builds the loops,
// the key loop carrying acc, max and sum, which is the online softmax
// itself. Each tile's rows start at q_pos + m0 and its keys at kv_pos + n0;
// a paged tile keeps the pools, starts its page list at the page of its
// first key and counts its own keys. The tiled function, through the rest
// of the pipeline (the CPU micro-kernel on each tile, LLVM) and run by
// mlir-runner, matches a float64 NumPy reference written from the
// definitions; so does the untiled one.
// REQUIRES: mlir-runner
// RUN: rm -rf %t && split-file %s %t
// RUN: attn-opt %t/online.mlir -transform-preload-library=transform-library-paths=%t/schedule.mlir -transform-interpreter | FileCheck %s --check-prefix=TILED
// RUN: attn-opt %t/online.mlir -transform-preload-library=transform-library-paths=%t/keys.mlir -transform-interpreter | FileCheck %s --check-prefix=KEYS
// RUN: attn-opt %t/online.mlir -transform-preload-library=transform-library-paths=%t/schedule.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/tiled_sdpa_ref.py --shape 1,2,1,17,23,8,8 --scale 0.35 --causal --window 9 | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/online.mlir -transform-preload-library=transform-library-paths=%t/keys.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/tiled_sdpa_ref.py --shape 1,2,1,17,23,8,8 --scale 0.35 --causal --window 9 | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/online.mlir -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/tiled_sdpa_ref.py --shape 1,2,1,17,23,8,8 --scale 0.35 --causal --window 9 | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/paged.mlir -transform-preload-library=transform-library-paths=%t/keys.mlir -transform-interpreter | FileCheck %s --check-prefix=PAGED
// RUN: attn-opt %t/paged-run.mlir -transform-preload-library=transform-library-paths=%t/keys.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/paged_online_ref.py | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/paged-run.mlir -transform-preload-library=transform-library-paths=%t/schedule.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/paged_online_ref.py | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/paged-run.mlir -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/paged_online_ref.py | FileCheck %s --check-prefix=OK
//
// Split-K through the op's PartialReductionOpInterface (attn-split-keys:
// upstream tileUsingSCF, outer-parallel partial reduction): 3 parts of the
// 23 keys, 4 parts of the 37 paged keys (each part starting its page list
// at its own first key's page), 2 parts of each of two ops over keys
// [0, 10) and [10, 23) (the second merge folding the first op's state),
// then the log-sum-exp merge.
// RUN: attn-opt %t/online.mlir -attn-split-keys=splits=3 | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %t/online.mlir -attn-split-keys=splits=3 -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/tiled_sdpa_ref.py --shape 1,2,1,17,23,8,8 --scale 0.35 --causal --window 9 | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/paged-run.mlir -attn-split-keys=splits=4 -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/paged_online_ref.py | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/chain.mlir -attn-split-keys=splits=2 -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/tiled_sdpa_ref.py --shape 1,2,1,17,23,8,8 --scale 0.35 --causal --window 9 | FileCheck %s --check-prefix=OK
// RUN: not attn-opt %t/online.mlir -attn-split-keys=splits=1 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not attn-opt %t/buffers.mlir -transform-preload-library=transform-library-paths=%t/keys.mlir -transform-interpreter 2>&1 | FileCheck %s --check-prefix=BUFFERS

// OK: OK

// Rows by 5 (the last tile of 2), the leading dim by 1, keys by 4.
// TILED-LABEL: func.func @attn(
// TILED: scf.for %[[H:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// TILED: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// TILED: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %{{.*}}, %[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}})
// TILED-DAG: tensor.extract_slice %{{.*}}[%[[H]], %[[I]], 0] [1, %{{.*}}, 8] [1, 1, 1] : tensor<2x17x8xf32> to tensor<1x?x8xf32>
// TILED-DAG: tensor.extract_slice %{{.*}}[%[[J]], 0] [%{{.*}}, 8] [1, 1] : tensor<23x8xf32> to tensor<?x8xf32>
// TILED-DAG: %[[QP:.*]] = affine.apply #{{.*}}(%[[I]])
// TILED: attn.online_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[QP]], %[[J]] {mask = #attn.mask<sliding_window>, scale = 3.500000e-01 : f64, window = 9 : i64} : (tensor<1x?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<1x?x8xf32>, tensor<1x?xf32>, tensor<1x?xf32>)
// TILED: tensor.insert_slice
// TILED: attn.online_finalize

// Keys alone: one loop of key tiles carrying the whole state.
// KEYS-LABEL: func.func @attn(
// KEYS: %[[R:.*]]:3 = scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %{{.*}}, %[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}}) -> (tensor<2x17x8xf32>, tensor<2x17xf32>, tensor<2x17xf32>)
// KEYS: attn.online_attention {{.*}}, %[[J]] {{.*}} -> (tensor<2x17x8xf32>, tensor<2x17xf32>, tensor<2x17xf32>)
// KEYS: attn.online_finalize %[[R]]#0, %[[R]]#2

// A paged tile of 4 keys from position kv_pos + j: the pools whole, the
// page list from the page of that key, num_keys the tile's.
// PAGED-LABEL: func.func @paged(
// PAGED-SAME: %[[POOLK:[^:]*]]: tensor<10x16x8xf32>, %[[POOLV:[^:]*]]: tensor<10x16x8xf32>, %[[PAGES:[^:]*]]: tensor<?xi32>
// PAGED-SAME: %[[KVPOS:[^:]*]]: index, %[[N:[^:]*]]: index)
// PAGED: scf.for %[[J:.*]] = %{{.*}} to %[[N]] step %{{.*}} iter_args
// PAGED: %[[NK:.*]] = affine.min
// PAGED: %[[POS:.*]] = affine.apply #{{.*}}(%[[J]])[%[[KVPOS]]]
// PAGED: %[[P1:.*]] = arith.divsi %[[POS]], %{{.*}}
// PAGED: %[[P0:.*]] = arith.divsi %[[KVPOS]], %{{.*}}
// PAGED: %[[FIRST:.*]] = arith.subi %[[P1]], %[[P0]]
// PAGED: %[[LIST:.*]] = tensor.extract_slice %[[PAGES]][%[[FIRST]]]
// PAGED: attn.online_attention %{{.*}}, %[[POOLK]], %[[POOLV]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[POS]] pages(%[[LIST]] : tensor<?xi32>, %[[NK]])

// Each part's state [2, 17, (8)] starts from the identity and lands in
// its row of the partial states (the part first: each part contiguous); the merge takes the parts' largest max
// with the op's own, then weighs every state by e^(max - M) (0 for -inf).
// SPLIT-LABEL: func.func @attn(
// SPLIT: %[[PACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x2x17x8xf32>)
// SPLIT: %[[PMAX:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x2x17xf32>)
// SPLIT: %[[PARTS:.*]]:3 = scf.forall (%[[S:.*]]) in (3) shared_outs(%{{.*}} = %[[PACC]], %{{.*}} = %[[PMAX]], %{{.*}} = %{{.*}})
// SPLIT: attn.online_attention {{.*}} : (tensor<2x17x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<2x17x8xf32>, tensor<2x17xf32>, tensor<2x17xf32>)
// SPLIT: tensor.parallel_insert_slice %{{.*}}#0 into %{{.*}}[%[[S]], 0, 0, 0] [1, 2, 17, 8]
// SPLIT: %[[M:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[PARTS]]#1 : tensor<3x2x17xf32>)
// SPLIT: arith.maximumf
// SPLIT: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[PARTS]]#0, %[[PARTS]]#1, %[[M]] :
// SPLIT: attn.online_finalize
// ONE: error: attn-split-keys: splits must be 2 or more, got 1

// BUFFERS: error: 'attn.online_attention' op is tiled on tensors (before bufferization) only

//--- schedule.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.online_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loops:3 = transform.structured.tile_using_for %op tile_sizes [1, 5, 4]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- keys.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.online_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_for %op tile_sizes [0, 0, 4]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- online.mlir
func.func @attn(%q4: tensor<1x2x17x8xf32>, %k4: tensor<1x1x23x8xf32>, %v4: tensor<1x1x23x8xf32>) -> tensor<1x2x17x8xf32> {
  %q = tensor.collapse_shape %q4 [[0, 1], [2], [3]] : tensor<1x2x17x8xf32> into tensor<2x17x8xf32>
  %k = tensor.collapse_shape %k4 [[0, 1, 2], [3]] : tensor<1x1x23x8xf32> into tensor<23x8xf32>
  %v = tensor.collapse_shape %v4 [[0, 1, 2], [3]] : tensor<1x1x23x8xf32> into tensor<23x8xf32>
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e3 = tensor.empty() : tensor<2x17x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x17x8xf32>) -> tensor<2x17x8xf32>
  %e2 = tensor.empty() : tensor<2x17xf32>
  %max = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<2x17xf32>) -> tensor<2x17xf32>
  %sum = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x17xf32>) -> tensor<2x17xf32>
  // Bottom-right: query row 0 at key 23 - 17.
  %qpos = arith.constant 6 : index
  %kvpos = arith.constant 0 : index
  %a, %m, %l = attn.online_attention %q, %k, %v, %acc, %max, %sum, %qpos, %kvpos
      {mask = #attn.mask<sliding_window>, window = 9 : i64, scale = 0.35 : f64}
      : (tensor<2x17x8xf32>, tensor<23x8xf32>, tensor<23x8xf32>, tensor<2x17x8xf32>, tensor<2x17xf32>, tensor<2x17xf32>)
      -> (tensor<2x17x8xf32>, tensor<2x17xf32>, tensor<2x17xf32>)
  %o = attn.online_finalize %a, %l outs(%e3 : tensor<2x17x8xf32>) : (tensor<2x17x8xf32>, tensor<2x17xf32>) -> tensor<2x17x8xf32>
  %o4 = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [1, 2, 17, 8] : tensor<2x17x8xf32> into tensor<1x2x17x8xf32>
  return %o4 : tensor<1x2x17x8xf32>
}
func.func @main() {
  %c0_37 = arith.constant 0.37 : f64
  %c0_1 = arith.constant 0.1 : f64
  %c0_23 = arith.constant 0.23 : f64
  %c0_2 = arith.constant 0.2 : f64
  %c0_11 = arith.constant 0.11 : f64
  %c0_5 = arith.constant 0.5 : f64
  %c0_7 = arith.constant 0.7 : f64
  %c0_0 = arith.constant 0.0 : f64
  %c1_0 = arith.constant 1.0 : f64
  %c2_0 = arith.constant 2.0 : f64
  %q = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 272 + d1 * 136 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_37 : f64
    %y = arith.addf %x, %c0_1 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<1x2x17x8xf32>
  %k = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 184 + d1 * 184 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_23 : f64
    %y = arith.addf %x, %c0_2 : f64
    %s = math.cos %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<1x1x23x8xf32>
  %v = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 184 + d1 * 184 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_11 : f64
    %y = arith.addf %x, %c0_5 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c2_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<1x1x23x8xf32>
  %o = func.call @attn(%q, %k, %v) : (tensor<1x2x17x8xf32>, tensor<1x1x23x8xf32>, tensor<1x1x23x8xf32>) -> tensor<1x2x17x8xf32>
  %buf = bufferization.to_buffer %o : tensor<1x2x17x8xf32> to memref<1x2x17x8xf32>
  %u = memref.cast %buf : memref<1x2x17x8xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
//--- chain.mlir
// The same attention as two ops: the second one's merge folds the
// first one's state (not the identity) in.
func.func @attn(%q4: tensor<1x2x17x8xf32>, %k4: tensor<1x1x23x8xf32>, %v4: tensor<1x1x23x8xf32>) -> tensor<1x2x17x8xf32> {
  %q = tensor.collapse_shape %q4 [[0, 1], [2], [3]] : tensor<1x2x17x8xf32> into tensor<2x17x8xf32>
  %k = tensor.collapse_shape %k4 [[0, 1, 2], [3]] : tensor<1x1x23x8xf32> into tensor<23x8xf32>
  %v = tensor.collapse_shape %v4 [[0, 1, 2], [3]] : tensor<1x1x23x8xf32> into tensor<23x8xf32>
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e3 = tensor.empty() : tensor<2x17x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x17x8xf32>) -> tensor<2x17x8xf32>
  %e2 = tensor.empty() : tensor<2x17xf32>
  %max = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<2x17xf32>) -> tensor<2x17xf32>
  %sum = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x17xf32>) -> tensor<2x17xf32>
  // Bottom-right: query row 0 at key 23 - 17.
  %qpos = arith.constant 6 : index
  %kvpos = arith.constant 0 : index
  // Keys [0, 10), then [10, 23) folded into that state.
  %k1 = tensor.extract_slice %k[0, 0] [10, 8] [1, 1] : tensor<23x8xf32> to tensor<10x8xf32>
  %v1 = tensor.extract_slice %v[0, 0] [10, 8] [1, 1] : tensor<23x8xf32> to tensor<10x8xf32>
  %k2 = tensor.extract_slice %k[10, 0] [13, 8] [1, 1] : tensor<23x8xf32> to tensor<13x8xf32>
  %v2 = tensor.extract_slice %v[10, 0] [13, 8] [1, 1] : tensor<23x8xf32> to tensor<13x8xf32>
  %c10 = arith.constant 10 : index
  %a1, %m1, %l1 = attn.online_attention %q, %k1, %v1, %acc, %max, %sum, %qpos, %kvpos
      {mask = #attn.mask<sliding_window>, window = 9 : i64, scale = 0.35 : f64}
      : (tensor<2x17x8xf32>, tensor<10x8xf32>, tensor<10x8xf32>, tensor<2x17x8xf32>, tensor<2x17xf32>, tensor<2x17xf32>)
      -> (tensor<2x17x8xf32>, tensor<2x17xf32>, tensor<2x17xf32>)
  %a, %m, %l = attn.online_attention %q, %k2, %v2, %a1, %m1, %l1, %qpos, %c10
      {mask = #attn.mask<sliding_window>, window = 9 : i64, scale = 0.35 : f64}
      : (tensor<2x17x8xf32>, tensor<13x8xf32>, tensor<13x8xf32>, tensor<2x17x8xf32>, tensor<2x17xf32>, tensor<2x17xf32>)
      -> (tensor<2x17x8xf32>, tensor<2x17xf32>, tensor<2x17xf32>)
  %o = attn.online_finalize %a, %l outs(%e3 : tensor<2x17x8xf32>) : (tensor<2x17x8xf32>, tensor<2x17xf32>) -> tensor<2x17x8xf32>
  %o4 = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [1, 2, 17, 8] : tensor<2x17x8xf32> into tensor<1x2x17x8xf32>
  return %o4 : tensor<1x2x17x8xf32>
}
func.func @main() {
  %c0_37 = arith.constant 0.37 : f64
  %c0_1 = arith.constant 0.1 : f64
  %c0_23 = arith.constant 0.23 : f64
  %c0_2 = arith.constant 0.2 : f64
  %c0_11 = arith.constant 0.11 : f64
  %c0_5 = arith.constant 0.5 : f64
  %c0_7 = arith.constant 0.7 : f64
  %c0_0 = arith.constant 0.0 : f64
  %c1_0 = arith.constant 1.0 : f64
  %c2_0 = arith.constant 2.0 : f64
  %q = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 272 + d1 * 136 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_37 : f64
    %y = arith.addf %x, %c0_1 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<1x2x17x8xf32>
  %k = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 184 + d1 * 184 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_23 : f64
    %y = arith.addf %x, %c0_2 : f64
    %s = math.cos %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<1x1x23x8xf32>
  %v = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 184 + d1 * 184 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_11 : f64
    %y = arith.addf %x, %c0_5 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c2_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<1x1x23x8xf32>
  %o = func.call @attn(%q, %k, %v) : (tensor<1x2x17x8xf32>, tensor<1x1x23x8xf32>, tensor<1x1x23x8xf32>) -> tensor<1x2x17x8xf32>
  %buf = bufferization.to_buffer %o : tensor<1x2x17x8xf32> to memref<1x2x17x8xf32>
  %u = memref.cast %buf : memref<1x2x17x8xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
//--- paged.mlir
func.func @paged(%q: tensor<4x3x8xf32>, %kp: tensor<10x16x8xf32>, %vp: tensor<10x16x8xf32>,
                  %pages: tensor<?xi32>, %acc: tensor<4x3x8xf32>, %max: tensor<4x3xf32>,
                  %sum: tensor<4x3xf32>, %qpos: index, %kvpos: index, %n: index)
    -> (tensor<4x3x8xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %a, %m, %l = attn.online_attention %q, %kp, %vp, %acc, %max, %sum, %qpos, %kvpos
      pages(%pages : tensor<?xi32>, %n) {mask = #attn.mask<causal>, scale = 0.35 : f64}
      : (tensor<4x3x8xf32>, tensor<10x16x8xf32>, tensor<10x16x8xf32>, tensor<4x3x8xf32>, tensor<4x3xf32>, tensor<4x3xf32>)
      -> (tensor<4x3x8xf32>, tensor<4x3xf32>, tensor<4x3xf32>)
  return %a, %m, %l : tensor<4x3x8xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}
//--- paged-run.mlir
// 37 keys from position 5 in pages [7, 2, 9] of 16 (the first one partial),
// query rows at positions 40..42, causal.
func.func @paged(%q: tensor<2x3x8xf32>, %kp: tensor<10x16x8xf32>, %vp: tensor<10x16x8xf32>,
                 %pages: tensor<?xi32>) -> tensor<2x3x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e3 = tensor.empty() : tensor<2x3x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %max = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %sum = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %qpos = arith.constant 40 : index
  %kvpos = arith.constant 5 : index
  %n = arith.constant 37 : index
  %a, %m, %l = attn.online_attention %q, %kp, %vp, %acc, %max, %sum, %qpos, %kvpos
      pages(%pages : tensor<?xi32>, %n) {mask = #attn.mask<causal>, scale = 0.35 : f64}
      : (tensor<2x3x8xf32>, tensor<10x16x8xf32>, tensor<10x16x8xf32>, tensor<2x3x8xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
      -> (tensor<2x3x8xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  %o = attn.online_finalize %a, %l outs(%e3 : tensor<2x3x8xf32>) : (tensor<2x3x8xf32>, tensor<2x3xf32>) -> tensor<2x3x8xf32>
  return %o : tensor<2x3x8xf32>
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
  ^bb0(%i0: index, %i1: index, %i2: index):
    %n = affine.apply affine_map<(d0, d1, d2) -> (d0 * 24 + d1 * 8 + d2)>(%i0, %i1, %i2)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_37 : f64
    %y = arith.addf %x, %c0_1 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x3x8xf32>
  %kp = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %n = affine.apply affine_map<(d0, d1, d2) -> (d0 * 128 + d1 * 8 + d2)>(%i0, %i1, %i2)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_23 : f64
    %y = arith.addf %x, %c0_2 : f64
    %s = math.cos %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<10x16x8xf32>
  %vp = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %n = affine.apply affine_map<(d0, d1, d2) -> (d0 * 128 + d1 * 8 + d2)>(%i0, %i1, %i2)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_11 : f64
    %y = arith.addf %x, %c0_5 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c2_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<10x16x8xf32>
  %list = arith.constant dense<[7, 2, 9]> : tensor<3xi32>
  %pages = tensor.cast %list : tensor<3xi32> to tensor<?xi32>
  %o = func.call @paged(%q, %kp, %vp, %pages) : (tensor<2x3x8xf32>, tensor<10x16x8xf32>, tensor<10x16x8xf32>, tensor<?xi32>) -> tensor<2x3x8xf32>
  %buf = bufferization.to_buffer %o : tensor<2x3x8xf32> to memref<2x3x8xf32>
  %u = memref.cast %buf : memref<2x3x8xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
//--- buffers.mlir
func.func @buffers(%q: memref<2x3x8xf32>, %k: memref<5x8xf32>, %v: memref<5x8xf32>, %acc: memref<2x3x8xf32>,
                   %max: memref<2x3xf32>, %sum: memref<2x3xf32>, %qpos: index, %kvpos: index) {
  attn.online_attention %q, %k, %v, %acc, %max, %sum, %qpos, %kvpos {scale = 0.35 : f64}
      : (memref<2x3x8xf32>, memref<5x8xf32>, memref<5x8xf32>, memref<2x3x8xf32>, memref<2x3xf32>, memref<2x3xf32>)
  return
}
