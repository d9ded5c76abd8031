// RUN: attn-opt %s -split-input-file -attn-cpu-select-kernels -convert-attn-to-linalg -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel=amx=true | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-cpu-select-kernels -convert-attn-to-linalg -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel | FileCheck %s --check-prefix=OFF

// A group of 16 query heads per KV head over a bf16 cache, with amx=true
// (attn-compile sets it when the target CPU has amx-tile and amx-bf16):
// the tile function asks the OS for the tile state once per process
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) as a syscall,
// remembered in a module global), then at most 16 rows take the tile
// path, else (more rows, or the OS refused) the AVX-512 dot products.
// Per chunk of 32 keys, Sᵀ = K·Qᵀ: the A tiles are 16 K rows × 32 of d
// loaded in place (at K's row stride) for a full chunk, from a zero-padded
// copy otherwise; the B tiles the scaled query rows in three bf16 parts
// (packed once per call); four chains of products (two C tiles of 16 keys
// × the even and the odd d blocks). Then O += P · V with four column tiles
// per step, each over the three parts of P.
// CHECK: memref.global "private" @attn_amx_state : memref<i32> = dense<0>
// CHECK-LABEL: func.func @group16_bf16(
// CHECK-COUNT-10: memref.alloc() {alignment = 64 : i64} : memref<{{[0-9]+}}xi8>
// CHECK-LABEL: func.func private @group16_bf16_tile(
// 9 to 16 rows: 8 (a group of 8 in decode) keep the dot products.
// CHECK: %[[LE:.*]] = arith.cmpi sle, %[[T:.*]], %c16
// CHECK: %[[GT:.*]] = arith.cmpi sgt, %[[T]], %c8
// CHECK: arith.andi %[[LE]], %[[GT]]
// CHECK: memref.get_global @attn_amx_state
// CHECK: llvm.inline_asm has_side_effects "syscall"
// CHECK: memref.view {{.*}} to memref<96x32xbf16>
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK: amx.tile_load %arg1[{{.*}}], %{{.*}} : memref<?x64xbf16> into !amx.tile<16x32xbf16>
// CHECK-COUNT-12: amx.tile_mulf
// CHECK: amx.tile_store
// CHECK-COUNT-12: amx.tile_mulf
// CHECK-COUNT-12: amx.tile_mulf
// CHECK-NOT: amx.tile_mulf
// The fallback: decode's blocks of 8 rows.
// CHECK: scf.for {{.*}} step %c8
// OFF-NOT: amx.
// OFF-NOT: attn_amx_state
func.func @group16_bf16(%q: tensor<16x?x64xf32>, %k: tensor<?x64xbf16>, %v: tensor<?x64xbf16>,
                        %acc: tensor<16x?x64xf32>, %m: tensor<16x?xf32>, %l: tensor<16x?xf32>,
                        %qp: index, %kp: index)
    -> (tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      {scale = 0.125 : f64}
      : (tensor<16x?x64xf32>, tensor<?x64xbf16>, tensor<?x64xbf16>,
         tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>)
        -> (tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>)
  return %a, %mx, %s : tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>
}

// -----

// An f32 cache, or a group of 4: no tile path.
// CHECK-LABEL: func.func @group16_f32(
// CHECK-NOT: amx.
// CHECK-LABEL: func.func @group4_bf16(
// CHECK-NOT: amx.
func.func @group16_f32(%q: tensor<16x?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>,
                       %acc: tensor<16x?x64xf32>, %m: tensor<16x?xf32>, %l: tensor<16x?xf32>,
                       %qp: index, %kp: index)
    -> (tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      {scale = 0.125 : f64}
      : (tensor<16x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>,
         tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>)
        -> (tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>)
  return %a, %mx, %s : tensor<16x?x64xf32>, tensor<16x?xf32>, tensor<16x?xf32>
}
func.func @group4_bf16(%q: tensor<4x?x64xf32>, %k: tensor<?x64xbf16>, %v: tensor<?x64xbf16>,
                       %acc: tensor<4x?x64xf32>, %m: tensor<4x?xf32>, %l: tensor<4x?xf32>,
                       %qp: index, %kp: index)
    -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      {scale = 0.125 : f64}
      : (tensor<4x?x64xf32>, tensor<?x64xbf16>, tensor<?x64xbf16>,
         tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
        -> (tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
  return %a, %mx, %s : tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>
}
