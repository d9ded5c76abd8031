// The CPU kernel of attn.gated_delta_chunk: bufferization gives the op's
// buffer form (output and state updated in place), which
// attn-cpu-micro-kernel turns into scratch allocated before the parallel
// iteration and a call of a no-inline tile function (one per distinct op)
// holding the vector code: register-tiled GEMMs (vector.fma on W lanes),
// the decay's exp, the forward substitution.
// RUN: attn-opt %s -split-input-file -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel | FileCheck %s
// RUN: attn-opt %s -split-input-file -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel=lanes=8 | FileCheck %s --check-prefix=AVX2
// RUN: attn-opt %s -split-input-file -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUFFER

// BUFFER-LABEL: func.func @chunks(
// The output destination is not read: no copy of its old value.
// BUFFER-NOT: memref.copy
// BUFFER: attn.gated_delta_chunk {{.*}} {scale = 1.250000e-01 : f64} : (memref<?x64xf32>, memref<?x64xf32>, memref<?x32xf32>, memref<?xf32>, memref<?xf32>, memref<?x32xf32>, memref<64x32xf32>){{$}}
// BUFFER: attn.gated_delta_chunk {{.*}} {recurrent, scale = 1.250000e-01 : f64}

// CHECK-LABEL: func.func @chunks(
// The scratch: chunk buffers of 64 tokens (d_k 64, d_v 32), a padded state,
// the gate's prefix sum (hi and lo) and beta.
// CHECK-COUNT-4: memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<64x32xf32>
// CHECK: call @chunks_tile(
// CHECK: call @chunks_tile_0(
// CHECK: func.func private @chunks_tile({{.*}}) attributes {attn.no_inline, llvm.linkage = #llvm.linkage<internal>}
// Kᵀ for the GEMMs by 16×16 shuffle transposes of the chunk's key rows
// (a scalar store per element became a scatter).
// CHECK: vector.shuffle {{.*}} [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xf32>, vector<16xf32>
// CHECK: vector.fma {{.*}} : vector<16xf32>
// CHECK: math.exp {{.*}} : vector<16xf32>
// CHECK: func.func private @chunks_tile_0(
// AVX2: vector.fma {{.*}} : vector<8xf32>
// AVX2-NOT: vector<16xf32>
func.func @chunks(%q: tensor<?x64xf32>, %v: tensor<?x32xf32>, %g: tensor<?xf32>, %s: tensor<64x32xf32>) -> (tensor<?x32xf32>, tensor<64x32xf32>) {
  %o, %st = attn.gated_delta_chunk %q, %q, %v, %g, %g, %v, %s {scale = 0.125 : f64}
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x32xf32>, tensor<64x32xf32>) -> (tensor<?x32xf32>, tensor<64x32xf32>)
  %o2, %st2 = attn.gated_delta_chunk %q, %q, %v, %g, %g, %o, %st {recurrent, scale = 0.125 : f64}
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x32xf32>, tensor<64x32xf32>) -> (tensor<?x32xf32>, tensor<64x32xf32>)
  return %o2, %st2 : tensor<?x32xf32>, tensor<64x32xf32>
}

// -----

// A d_k and d_v that are not multiples of the lanes are padded in the
// scratch (d_k 40 -> 48, d_v 24 -> 32): the state is copied into a padded
// buffer and back with masked transfers.
// CHECK-LABEL: func.func @padded(
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<64x48xf32>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<48x32xf32>
// CHECK: func.func private @padded_tile(
// CHECK: vector.transfer_read {{.*}} : memref<40x24xf32{{.*}}>, vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>, memref<40x24xf32{{.*}}>
func.func @padded(%q: tensor<?x40xf32>, %v: tensor<?x24xf32>, %g: tensor<?xf32>, %s: tensor<40x24xf32>) -> (tensor<?x24xf32>, tensor<40x24xf32>) {
  %o, %st = attn.gated_delta_chunk %q, %q, %v, %g, %g, %v, %s {scale = 0.125 : f64}
      : (tensor<?x40xf32>, tensor<?x40xf32>, tensor<?x24xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x24xf32>, tensor<40x24xf32>) -> (tensor<?x24xf32>, tensor<40x24xf32>)
  return %o, %st : tensor<?x24xf32>, tensor<40x24xf32>
}
