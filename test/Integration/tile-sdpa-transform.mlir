// attn.sdpa implements TilingInterface: upstream tiling
// (transform.structured.tile_using_forall) slices it into a forall of
// smaller sdpa ops, each with its query-head group's K/V heads and the key
// position of its first query row (q_pos), and the result of the rest of
// the pipeline (attn-tile-attention inside each tile, bufferization, the
// CPU micro-kernel, LLVM), run by mlir-runner, matches a float64 NumPy
// reference written from the definitions.
// REQUIRES: mlir-runner
// RUN: rm -rf %t && split-file %s %t
// RUN: attn-opt %t/gqa.mlir -transform-preload-library=transform-library-paths=%t/schedule.mlir -transform-interpreter | FileCheck %s --check-prefix=TILED
// RUN: attn-opt %t/gqa.mlir -transform-preload-library=transform-library-paths=%t/schedule.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/tiled_sdpa_ref.py --shape 2,4,2,17,23,8,8 --scale 0.35 --causal --window 9 | FileCheck %s --check-prefix=OK
//
// T5's relative bias with top-left alignment and q_len != kv_len: the tiled
// kernel (attn-tile-attention), the decomposed reference chain and the
// transform-tiled form all place the queries the same way (regression: the
// reference used bottom-right for the bias whatever the alignment).
// RUN: attn-opt %t/t5.mlir -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/tiled_sdpa_ref.py --shape 1,2,2,5,9,8,4 --scale 1.0 --causal --top-left --bias 32,128,0 | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/t5.mlir -attn-decompose-sdpa -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/tiled_sdpa_ref.py --shape 1,2,2,5,9,8,4 --scale 1.0 --causal --top-left --bias 32,128,0 | FileCheck %s --check-prefix=OK
// RUN: attn-opt %t/t5.mlir -transform-preload-library=transform-library-paths=%t/schedule.mlir -transform-interpreter -attn-pipeline='stop-after=llvm-dialect reference=false' | %mlir_runner | %python %S/Inputs/tiled_sdpa_ref.py --shape 1,2,2,5,9,8,4 --scale 1.0 --causal --top-left --bias 32,128,0 | FileCheck %s --check-prefix=OK
//
// Head tiles that straddle GQA groups, or leave a partial tile, are refused
// with a clear error.
// RUN: not attn-opt %t/straddle.mlir -transform-preload-library=transform-library-paths=%t/bad-schedule.mlir -transform-interpreter 2>&1 | FileCheck %s --check-prefix=STRADDLE
// RUN: not attn-opt %t/gqa.mlir -transform-preload-library=transform-library-paths=%t/bad-schedule.mlir -transform-interpreter 2>&1 | FileCheck %s --check-prefix=PARTIAL

// OK: OK
// TILED-LABEL: func.func @attn(
// TILED: scf.forall (%[[B:.*]], %[[H:.*]], %[[I:.*]]) in (2, 2, 4)
// TILED: %[[H0:.*]] = affine.apply #{{.*}}(%[[H]])
// TILED: %[[I0:.*]] = affine.apply #{{.*}}(%[[I]])
// TILED: %[[KH:.*]] = affine.apply #{{.*}}(%[[H0]])
// TILED: tensor.extract_slice %{{.*}}[%[[B]], %[[KH]], 0, 0] [1, 1, 23, 8]
// TILED: %[[QPOS:.*]] = affine.apply #{{.*}}(%[[I0]])
// TILED: attn.sdpa {{.*}} q_pos(%[[QPOS]]) outs({{.*}} : tensor<1x2x?x8xf32>) {mask = #attn.mask<sliding_window>, scale = 3.500000e-01 : f64, window = 9 : i64} : (tensor<1x2x?x8xf32>, tensor<1x1x23x8xf32>, tensor<1x1x23x8xf32>) -> tensor<1x2x?x8xf32>
// TILED: tensor.parallel_insert_slice
// STRADDLE: error: 'attn.sdpa' op a tile of 3 query heads straddles GQA groups of 2; tile the heads by a multiple or a divisor of 2
// PARTIAL: error: 'attn.sdpa' op tiling the query heads needs a static tile size (one that divides the head count)

//--- schedule.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %sdpa = transform.structured.match ops{["attn.sdpa"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %sdpa tile_sizes [1, 2, 5, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- bad-schedule.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %sdpa = transform.structured.match ops{["attn.sdpa"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %sdpa tile_sizes [1, 3, 5, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
//--- gqa.mlir
func.func @attn(%q: tensor<2x4x17x8xf32>, %k: tensor<2x2x23x8xf32>, %v: tensor<2x2x23x8xf32>) -> tensor<2x4x17x8xf32> {
  %init = tensor.empty() : tensor<2x4x17x8xf32>
  %o = attn.sdpa %q, %k, %v outs(%init : tensor<2x4x17x8xf32>) {mask = #attn.mask<sliding_window>, window = 9 : i64, scale = 0.35 : f64}
      : (tensor<2x4x17x8xf32>, tensor<2x2x23x8xf32>, tensor<2x2x23x8xf32>) -> tensor<2x4x17x8xf32>
  return %o : tensor<2x4x17x8xf32>
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
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 544 + d1 * 136 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_37 : f64
    %y = arith.addf %x, %c0_1 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x4x17x8xf32>
  %k = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 368 + d1 * 184 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_23 : f64
    %y = arith.addf %x, %c0_2 : f64
    %s = math.cos %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x2x23x8xf32>
  %v = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 368 + d1 * 184 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_11 : f64
    %y = arith.addf %x, %c0_5 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c2_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<2x2x23x8xf32>
  %o = func.call @attn(%q, %k, %v) : (tensor<2x4x17x8xf32>, tensor<2x2x23x8xf32>, tensor<2x2x23x8xf32>) -> tensor<2x4x17x8xf32>
  %buf = bufferization.to_buffer %o : tensor<2x4x17x8xf32> to memref<2x4x17x8xf32>
  %u = memref.cast %buf : memref<2x4x17x8xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
//--- t5.mlir
func.func @attn(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x9x8xf32>, %v: tensor<1x2x9x4xf32>, %table: tensor<32x2xf32>) -> tensor<1x2x5x4xf32> {
  %init = tensor.empty() : tensor<1x2x5x4xf32>
  %o = attn.sdpa %q, %k, %v bias_table(%table : tensor<32x2xf32>) outs(%init : tensor<1x2x5x4xf32>)
      {mask = #attn.mask<causal>, align = #attn.align<top_left>, scale = 1.0 : f64,
       relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = false>}
      : (tensor<1x2x5x8xf32>, tensor<1x2x9x8xf32>, tensor<1x2x9x4xf32>) -> tensor<1x2x5x4xf32>
  return %o : tensor<1x2x5x4xf32>
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
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 80 + d1 * 40 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_37 : f64
    %y = arith.addf %x, %c0_1 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<1x2x5x8xf32>
  %k = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 144 + d1 * 72 + d2 * 8 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_23 : f64
    %y = arith.addf %x, %c0_2 : f64
    %s = math.cos %y : f64
    %m = arith.mulf %s, %c1_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<1x2x9x8xf32>
  %v = tensor.generate {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %n = affine.apply affine_map<(d0, d1, d2, d3) -> (d0 * 72 + d1 * 36 + d2 * 4 + d3 * 1)>(%i0, %i1, %i2, %i3)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_11 : f64
    %y = arith.addf %x, %c0_5 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c2_0 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<1x2x9x4xf32>
  %table = tensor.generate {
  ^bb0(%i0: index, %i1: index):
    %n = affine.apply affine_map<(d0, d1) -> (d0 * 2 + d1 * 1)>(%i0, %i1)
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f64
    %x = arith.mulf %nf, %c0_7 : f64
    %y = arith.addf %x, %c0_0 : f64
    %s = math.sin %y : f64
    %m = arith.mulf %s, %c0_5 : f64
    %t = arith.truncf %m : f64 to f32
    tensor.yield %t : f32
  } : tensor<32x2xf32>
  %o = func.call @attn(%q, %k, %v, %table) : (tensor<1x2x5x8xf32>, tensor<1x2x9x8xf32>, tensor<1x2x9x4xf32>, tensor<32x2xf32>) -> tensor<1x2x5x4xf32>
  %buf = bufferization.to_buffer %o : tensor<1x2x5x4xf32> to memref<1x2x5x4xf32>
  %u = memref.cast %buf : memref<1x2x5x4xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
//--- straddle.mlir
func.func @attn(%q: tensor<1x6x4x8xf32>, %k: tensor<1x3x4x8xf32>, %v: tensor<1x3x4x8xf32>) -> tensor<1x6x4x8xf32> {
  %init = tensor.empty() : tensor<1x6x4x8xf32>
  %o = attn.sdpa %q, %k, %v outs(%init : tensor<1x6x4x8xf32>) {scale = 0.35 : f64}
      : (tensor<1x6x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>) -> tensor<1x6x4x8xf32>
  return %o : tensor<1x6x4x8xf32>
}
