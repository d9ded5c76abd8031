// The paged decode tile touches (a volatile one-byte load) the first row of
// each page of the next chunk of keys, K and V, once per chunk, before
// prefetching it: software prefetches alone left decode over pages of 16
// tokens waiting on memory (MicroKernel.cpp, fillRowTables). The contiguous
// kernel (touching measured within the noise there) and the paged prefill
// tile (rows in the lanes, compute-bound) do not touch.
// RUN: attn-opt %s -attn-pipeline='stop-after=llvm-dialect reference=false' | FileCheck %s

// CHECK-LABEL: llvm.func internal @paged_tile(
// CHECK-COUNT-2: llvm.load volatile {{.*}} {alignment = 1 : i64} : !llvm.ptr -> i8
// CHECK-NOT: llvm.load volatile
// CHECK-LABEL: llvm.func internal @paged_tile_0(
// CHECK-COUNT-2: llvm.load volatile {{.*}} {alignment = 1 : i64} : !llvm.ptr -> i8
// CHECK-NOT: llvm.load volatile
// CHECK-LABEL: llvm.func internal @contig_tile(
// CHECK-NOT: llvm.load volatile
// CHECK-LABEL: llvm.func internal @prefill_tile(
// CHECK-NOT: llvm.load volatile

func.func @paged(%q: tensor<2x4x1x16xf32>, %kc: tensor<64x2x5x16xf32>, %vc: tensor<64x2x5x16xf32>, %table: tensor<2x30xi32>, %lens: tensor<2xi64>, %init: tensor<2x4x1x16xf32>) -> tensor<2x4x1x16xf32> {
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<2x4x1x16xf32>) {mask = #attn.mask<causal>, scale = 0.25 : f64} : (tensor<2x4x1x16xf32>, tensor<64x2x5x16xf32>, tensor<64x2x5x16xf32>, tensor<2x30xi32>, tensor<2xi64>) -> tensor<2x4x1x16xf32>
  return %0 : tensor<2x4x1x16xf32>
}
func.func @contig(%q: tensor<2x4x1x16xf32>, %k: tensor<2x2x150x16xf32>, %v: tensor<2x2x150x16xf32>, %init: tensor<2x4x1x16xf32>) -> tensor<2x4x1x16xf32> {
  %0 = attn.sdpa %q, %k, %v outs(%init : tensor<2x4x1x16xf32>) {mask = #attn.mask<causal>, scale = 0.25 : f64} : (tensor<2x4x1x16xf32>, tensor<2x2x150x16xf32>, tensor<2x2x150x16xf32>) -> tensor<2x4x1x16xf32>
  return %0 : tensor<2x4x1x16xf32>
}
func.func @prefill(%q: tensor<2x4x64x16xf32>, %kc: tensor<64x2x5x16xf32>, %vc: tensor<64x2x5x16xf32>, %table: tensor<2x30xi32>, %lens: tensor<2xi64>, %init: tensor<2x4x64x16xf32>) -> tensor<2x4x64x16xf32> {
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<2x4x64x16xf32>) {mask = #attn.mask<causal>, scale = 0.25 : f64} : (tensor<2x4x64x16xf32>, tensor<64x2x5x16xf32>, tensor<64x2x5x16xf32>, tensor<2x30xi32>, tensor<2xi64>) -> tensor<2x4x64x16xf32>
  return %0 : tensor<2x4x64x16xf32>
}
