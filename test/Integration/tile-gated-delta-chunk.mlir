// attn.gated_delta_chunk implements TilingInterface over [n tokens, d_v]:
// the tokens a reduction (a loop over token tiles carrying the state is
// the chunked recurrence), the value dims parallel (each column of the
// state evolves on its own). Upstream tiling (tile_using_for) builds the
// loops; through the rest of the pipeline (the CPU micro-kernel on each
// tile, LLVM) and run by mlir-runner, the outputs and the final state match
// a float64 recurrence written from the definition: tiled by tokens, by
// value dims, by both, and not at all. A d_v tile that does not divide d_v
// is refused.
// REQUIRES: mlir-runner
// RUN: rm -rf %t && split-file %s %t
// RUN: attn-opt %t/gdn.mlir -transform-preload-library=transform-library-paths=%t/both.mlir -transform-interpreter | FileCheck %s --check-prefix=TILED
// RUN: attn-opt %t/gdn.mlir -transform-preload-library=transform-library-paths=%t/both.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/gdn_chunk_ref.py | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/gdn.mlir -transform-preload-library=transform-library-paths=%t/tokens.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/gdn_chunk_ref.py | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/gdn.mlir -transform-preload-library=transform-library-paths=%t/values.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/gdn_chunk_ref.py | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/gdn.mlir -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/gdn_chunk_ref.py | FileCheck %s --check-prefix=OK
// RUN: not attn-opt %t/gdn.mlir -transform-preload-library=transform-library-paths=%t/bad.mlir -transform-interpreter 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not attn-opt %t/buffers.mlir -transform-preload-library=transform-library-paths=%t/tokens.mlir -transform-interpreter 2>&1 | FileCheck %s --check-prefix=BUFFERS
// With initial_state, the value dims are tiled (each tile reads its
// columns of the initial state) and the tokens refused:
// RUN: attn-opt %t/init.mlir -transform-preload-library=transform-library-paths=%t/values.mlir -transform-interpreter | FileCheck %s --check-prefix=INIT
// RUN: not attn-opt %t/init.mlir -transform-preload-library=transform-library-paths=%t/tokens.mlir -transform-interpreter 2>&1 | FileCheck %s --check-prefix=INIT-TOKENS

// OK: OK

// Tokens by 8 (the last tile of 4), value dims by 8: the state's columns
// of the tile carried through the token loop.
// TILED-LABEL: func.func @gdn(
// TILED: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[O:.*]] = %{{.*}}, %[[S:.*]] = %{{.*}})
// TILED: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[O2:.*]] = %[[O]], %[[S2:.*]] = %[[S]])
// TILED: %[[N:.*]] = affine.min #{{.*}}(%[[T]])
// TILED-DAG: tensor.extract_slice %{{.*}}[%[[T]], 0] [%[[N]], 8] [1, 1] : tensor<20x8xf32> to tensor<?x8xf32>
// TILED-DAG: tensor.extract_slice %{{.*}}[%[[T]], %[[J]]] [%[[N]], 8] [1, 1] : tensor<20x16xf32> to tensor<?x8xf32>
// TILED-DAG: %[[ST:.*]] = tensor.extract_slice %[[S2]][0, %[[J]]] [8, 8] [1, 1] : tensor<8x16xf32> to tensor<8x8xf32>
// TILED: attn.gated_delta_chunk {{.*}}, %[[ST]] {scale = 3.500000e-01 : f64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>, tensor<8x8xf32>) -> (tensor<?x8xf32>, tensor<8x8xf32>)

// BAD: error: 'attn.gated_delta_chunk' op tiles d_v = 16 by a static size that divides it
// BUFFERS: error: 'attn.gated_delta_chunk' op is tiled on tensors (before bufferization) only
// INIT: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[S:.*]] = %{{.*}})
// INIT-DAG: %[[ST:.*]] = tensor.extract_slice %[[S]][0, %[[J]]] [8, 8] [1, 1] : tensor<8x16xf32> to tensor<8x8xf32>
// INIT-DAG: %[[S0:.*]] = tensor.extract_slice %{{.*}}[0, %[[J]]] [8, 8] [1, 1] : tensor<8x16xf32> to tensor<8x8xf32>
// INIT: attn.gated_delta_chunk {{.*}}, %[[ST]] initial_state(%[[S0]] : tensor<8x8xf32>) {recurrent,
// INIT-TOKENS: error: 'attn.gated_delta_chunk' op with initial_state tiles its value dims only

//--- both.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.gated_delta_chunk"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loop0, %loop1 = transform.structured.tile_using_for %op tile_sizes [8, 8]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- tokens.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.gated_delta_chunk"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loop0 = transform.structured.tile_using_for %op tile_sizes [8, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- values.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.gated_delta_chunk"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loop0 = transform.structured.tile_using_for %op tile_sizes [0, 8]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- bad.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.gated_delta_chunk"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loop0 = transform.structured.tile_using_for %op tile_sizes [0, 5]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- init.mlir
func.func @init(%q: tensor<20x8xf32>, %v: tensor<20x16xf32>, %g: tensor<20xf32>, %s0: tensor<8x16xf32>) -> (tensor<20x16xf32>, tensor<8x16xf32>) {
  %si = tensor.empty() : tensor<8x16xf32>
  %oi = tensor.empty() : tensor<20x16xf32>
  %o, %s = attn.gated_delta_chunk %q, %q, %v, %g, %g, %oi, %si initial_state(%s0 : tensor<8x16xf32>) {recurrent, scale = 0.35 : f64}
      : (tensor<20x8xf32>, tensor<20x8xf32>, tensor<20x16xf32>, tensor<20xf32>, tensor<20xf32>,
         tensor<20x16xf32>, tensor<8x16xf32>) -> (tensor<20x16xf32>, tensor<8x16xf32>)
  return %o, %s : tensor<20x16xf32>, tensor<8x16xf32>
}
//--- gdn.mlir
func.func @gdn(%q: tensor<20x8xf32>, %k: tensor<20x8xf32>, %v: tensor<20x16xf32>, %g: tensor<20xf32>,
               %beta: tensor<20xf32>) -> (tensor<20x16xf32>, tensor<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %oi = tensor.empty() : tensor<20x16xf32>
  %o, %s = attn.gated_delta_chunk %q, %k, %v, %g, %beta, %oi, %s0 {scale = 0.35 : f64}
      : (tensor<20x8xf32>, tensor<20x8xf32>, tensor<20x16xf32>, tensor<20xf32>, tensor<20xf32>,
         tensor<20x16xf32>, tensor<8x16xf32>) -> (tensor<20x16xf32>, tensor<8x16xf32>)
  return %o, %s : tensor<20x16xf32>, tensor<8x16xf32>
}
func.func @main() {
  %c0_37 = arith.constant 0.37 : f64
  %c0_1 = arith.constant 0.1 : f64
  %c0_23 = arith.constant 0.23 : f64
  %c0_2 = arith.constant 0.2 : f64
  %c0_11 = arith.constant 0.11 : f64
  %c0_5 = arith.constant 0.5 : f64
  %c0_7 = arith.constant 0.7 : f64
  %c0_3 = arith.constant 0.3 : f64
  %c0_4 = arith.constant 0.4 : f64
  %cm0_1 = arith.constant -0.1 : f64
  %c0_0 = arith.constant 0.0 : f64
  %c1_0 = arith.constant 1.0 : f64
  %c2_0 = arith.constant 2.0 : f64
  %c1_25 = arith.constant 1.25 : f64
  %q = tensor.generate {
  ^bb0(%i0: index, %i1: index):
    %n = affine.apply affine_map<(d0, d1) -> (d0 * 8 + d1)>(%i0, %i1)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_37 : f64
    %y = arith.addf %x, %c0_1 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<20x8xf32>
  %k = tensor.generate {
  ^bb0(%i0: index, %i1: index):
    %n = affine.apply affine_map<(d0, d1) -> (d0 * 8 + d1)>(%i0, %i1)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_23 : f64
    %y = arith.addf %x, %c0_2 : f64
    %s = math.cos %y : f64
    %m = arith.mulf %s, %c0_3 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<20x8xf32>
  %v = tensor.generate {
  ^bb0(%i0: index, %i1: index):
    %n = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1)>(%i0, %i1)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_11 : f64
    %y = arith.addf %x, %c0_5 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c2_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<20x16xf32>
  %g = tensor.generate {
  ^bb0(%i0: index):
    %ni = arith.index_cast %i0 : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_7 : f64
    %y = arith.addf %x, %c0_0 : f64
    %s = math.sin %y : f64
    %p = arith.addf %s, %c1_0 : f64
    %m = arith.mulf %p, %cm0_1 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<20xf32>
  %beta = tensor.generate {
  ^bb0(%i0: index):
    %ni = arith.index_cast %i0 : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_3 : f64
    %y = arith.addf %x, %c0_0 : f64
    %s = math.sin %y : f64
    %p = arith.addf %s, %c1_25 : f64
    %m = arith.mulf %p, %c0_4 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<20xf32>
  %o, %s = func.call @gdn(%q, %k, %v, %g, %beta) : (tensor<20x8xf32>, tensor<20x8xf32>, tensor<20x16xf32>, tensor<20xf32>, tensor<20xf32>) -> (tensor<20x16xf32>, tensor<8x16xf32>)
  %ob = bufferization.to_buffer %o : tensor<20x16xf32> to memref<20x16xf32>
  %ou = memref.cast %ob : memref<20x16xf32> to memref<*xf32>
  func.call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  %sb = bufferization.to_buffer %s : tensor<8x16xf32> to memref<8x16xf32>
  %su = memref.cast %sb : memref<8x16xf32> to memref<*xf32>
  func.call @printMemrefF32(%su) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
//--- buffers.mlir
func.func @buffers(%q: memref<20x8xf32>, %k: memref<20x8xf32>, %v: memref<20x16xf32>, %g: memref<20xf32>,
                   %beta: memref<20xf32>, %o: memref<20x16xf32>, %s: memref<8x16xf32>) {
  attn.gated_delta_chunk %q, %k, %v, %g, %beta, %o, %s {scale = 0.35 : f64}
      : (memref<20x8xf32>, memref<20x8xf32>, memref<20x16xf32>, memref<20xf32>, memref<20xf32>,
         memref<20x16xf32>, memref<8x16xf32>)
  return
}
