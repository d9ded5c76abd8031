// RUN: attn-opt %s -split-input-file -attn-cpu-micro-kernel | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-cpu-micro-kernel=lanes=8 | FileCheck %s --check-prefix=AVX2

// The pass on its own, on the buffer form of attn.online_attention (what
// bufferization gives): the scratch is allocated in the caller, outside the
// key loop, and the op becomes a call of a private no-inline tile function
// holding the Q pack and register tiles of vector FMAs; 8 lanes (AVX2)
// use 2×4 tiles of 8-lane vectors.
// CHECK-LABEL: func.func @tile(
// CHECK-NOT: attn.online_attention
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<4x64xf32>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: call @tile_tile(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7,
// CHECK: func.func private @tile_tile({{.*}}) attributes {attn.no_inline, llvm.linkage = #llvm.linkage<internal>}
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// CHECK: vector.reduction <maximumf>
// CHECK: vector.shuffle {{.*}} [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xf32>, vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27] : vector<16xf32>, vector<16xf32>
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// AVX2-LABEL: func.func @tile(
// AVX2: memref.alloc() {alignment = 64 : i64} : memref<2x32xf32>
// AVX2: func.func private @tile_tile(
// AVX2-NOT: attn.online_attention
// AVX2: vector.fma {{.*}} : vector<8xf32>
// AVX2: vector.shuffle {{.*}} [0, 8, 1, 9, 4, 12, 5, 13] : vector<8xf32>, vector<8xf32>
// AVX2: vector.shuffle {{.*}} [0, 1, 2, 3, 8, 9, 10, 11] : vector<8xf32>, vector<8xf32>
// AVX2-NOT: vector<16xf32>
func.func @tile(%q: memref<4x?x64xf32>, %k: memref<?x64xf32, strided<[64, 1], offset: ?>>,
                %v: memref<?x64xf32, strided<[64, 1], offset: ?>>, %acc: memref<4x?x64xf32>,
                %m: memref<4x?xf32>, %l: memref<4x?xf32>, %qp: index, %kp: index) {
  attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (memref<4x?x64xf32>, memref<?x64xf32, strided<[64, 1], offset: ?>>,
         memref<?x64xf32, strided<[64, 1], offset: ?>>, memref<4x?x64xf32>, memref<4x?xf32>, memref<4x?xf32>)
  return
}

// -----

// One tile function per distinct tile: the two causal loops share one, the
// unmasked loop has its own. The three read the same query rows with the
// same scale: one scratch (and one query pack) for all; the fourth scales
// them otherwise and has its own. dv = 160 (10 vectors) is a loop over two
// groups of 4 vectors, then the 2 left.
// CHECK-LABEL: func.func @shared(
// CHECK: %[[TAG:.*]] = memref.alloc() {{.*}} : memref<2xindex>
// CHECK-NOT: memref.alloc
// CHECK: call @shared_tile({{.*}}, %[[TAG]])
// CHECK-NOT: memref.alloc
// CHECK: call @shared_tile_0({{.*}}, %[[TAG]])
// CHECK-NOT: memref.alloc
// CHECK: call @shared_tile({{.*}}, %[[TAG]])
// CHECK: %[[TAG2:.*]] = memref.alloc() {{.*}} : memref<2xindex>
// CHECK: call @shared_tile_1({{.*}}, %[[TAG2]])
// CHECK-NOT: call
// CHECK: func.func private @shared_tile(
// CHECK-SAME: memref<?x160xf32
// CHECK: arith.cmpi sle, {{.*}} : vector<16xi32>
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c64
// CHECK: vector.fma
// CHECK: func.func private @shared_tile_0(
// CHECK-NOT: arith.cmpi sle, {{.*}} : vector<16xi32>
// CHECK: return
func.func @shared(%q: memref<4x?x64xf32>, %k: memref<?x64xf32>, %v: memref<?x160xf32>,
                  %acc: memref<4x?x160xf32>, %m: memref<4x?xf32>, %l: memref<4x?xf32>,
                  %qp: index, %kp: index, %kp2: index) {
  attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (memref<4x?x64xf32>, memref<?x64xf32>, memref<?x160xf32>, memref<4x?x160xf32>, memref<4x?xf32>, memref<4x?xf32>)
  attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp2 {scale = 0.125 : f64}
      : (memref<4x?x64xf32>, memref<?x64xf32>, memref<?x160xf32>, memref<4x?x160xf32>, memref<4x?xf32>, memref<4x?xf32>)
  attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp2 {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (memref<4x?x64xf32>, memref<?x64xf32>, memref<?x160xf32>, memref<4x?x160xf32>, memref<4x?xf32>, memref<4x?xf32>)
  attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp2 {mask = #attn.mask<causal>, scale = 0.25 : f64}
      : (memref<4x?x64xf32>, memref<?x64xf32>, memref<?x160xf32>, memref<4x?x160xf32>, memref<4x?xf32>, memref<4x?xf32>)
  return
}
