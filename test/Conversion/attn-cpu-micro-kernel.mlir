// RUN: attn-opt %s -split-input-file -attn-cpu-micro-kernel | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-cpu-micro-kernel=lanes=8 | FileCheck %s --check-prefix=AVX2

// The pass on its own, on the buffer form of attn.online_attention (what
// bufferization gives): the op becomes the Kᵀ pack and register tiles of
// vector FMAs, with scratch allocated outside the key loop; 8 lanes (AVX2)
// use 2×4 tiles of 8-lane vectors.
// CHECK-LABEL: func.func @tile(
// CHECK-NOT: attn.online_attention
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: vector.transpose {{.*}} : vector<16x16xf32> to vector<16x16xf32>
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// CHECK: vector.reduction <maximumf>
// AVX2-LABEL: func.func @tile(
// AVX2-NOT: attn.online_attention
// AVX2: vector.fma {{.*}} : vector<8xf32>
// AVX2-NOT: vector<16xf32>
func.func @tile(%q: memref<4x?x64xf32>, %k: memref<?x64xf32, strided<[64, 1], offset: ?>>,
                %v: memref<?x64xf32, strided<[64, 1], offset: ?>>, %acc: memref<4x?x64xf32>,
                %m: memref<4x?xf32>, %l: memref<4x?xf32>, %qp: index, %kp: index) {
  attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (memref<4x?x64xf32>, memref<?x64xf32, strided<[64, 1], offset: ?>>,
         memref<?x64xf32, strided<[64, 1], offset: ?>>, memref<4x?x64xf32>, memref<4x?xf32>, memref<4x?xf32>)
  return
}
