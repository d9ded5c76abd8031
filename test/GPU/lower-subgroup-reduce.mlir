// RUN: attn-opt %s -attn-gpu-lower-subgroup-reduce | FileCheck %s

// Warp sums (32 lanes: xor 1, 2, 4, 8, 16) and quad reductions (cluster of
// 4: xor 1, 2) become butterfly shuffles.
// CHECK-LABEL: gpu.func @k(
// CHECK-NOT: gpu.subgroup_reduce
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: arith.maximumf
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: arith.maximumf
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return
gpu.module @m {
  gpu.func @k(%x: f32, %out: memref<2xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %s = gpu.subgroup_reduce add %x uniform : (f32) -> f32
    %m = gpu.subgroup_reduce maximumf %s uniform cluster(size = 4) : (f32) -> f32
    memref.store %s, %out[%c0] : memref<2xf32>
    memref.store %m, %out[%c1] : memref<2xf32>
    gpu.return
  }
}
