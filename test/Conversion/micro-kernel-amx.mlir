// RUN: attn-opt %s -split-input-file -attn-cpu-select-kernels -convert-attn-to-linalg -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel="amx=true amx-f32-prefill=true" | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-cpu-select-kernels -convert-attn-to-linalg -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -attn-cpu-micro-kernel=amx=true | FileCheck %s --check-prefix=BF16ONLY
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

// Prefill (more than 16 rows) takes the tiles for a bf16 cache, and with
// amx-f32-prefill for f32 and f16 ones, d and dv multiples of 32: its
// scratch after the decode's (QR, QB, ST, PT, PA, VB, OS, K's parts, the
// pack's tag, then the second block's ST, PT, PA, OS), the tile-state guard,
// and per half chunk of 32 keys a pair of blocks of 16 rows: for an f32 K
// and V in three parts, the scores' 2 × 2 C tiles over the six products of
// K's and the rows' parts per d block of 32 (24 per block: 48 for d 64),
// then O += P · V per 32 columns (24: six pairs of parts × 2 × 2 tiles); a
// last block of at most 16 rows is paired with copies of its last row. A
// bf16 cache (exact) takes K and V in one part: 12 products per d block, 12
// per 32 columns.
// Without amx-f32-prefill, an f32 cache keeps the lanes path.
// BF16ONLY-LABEL: func.func private @group16_f32_tile(
// BF16ONLY-NOT: amx.
// BF16ONLY-LABEL: func.func private @group4_bf16_tile(
// BF16ONLY: amx.tile_mulf
// CHECK-LABEL: func.func @group16_f32(
// CHECK-COUNT-8: memref.alloc() {alignment = 64 : i64} : memref<{{[0-9]+}}xi8>
// CHECK-NEXT: memref.alloc() {alignment = 64 : i64} : memref<2xindex>
// CHECK-COUNT-4: memref.alloc() {alignment = 64 : i64} : memref<{{[0-9]+}}xi8>
// CHECK-LABEL: func.func @group4_bf16(
// CHECK-LABEL: func.func private @group16_f32_tile(
// CHECK: memref.get_global @attn_amx_state
// CHECK: llvm.inline_asm has_side_effects "syscall"
// CHECK: scf.for {{.*}} step %c32
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK-COUNT-48: amx.tile_mulf
// CHECK-COUNT-4: amx.tile_store
// CHECK-NOT: amx.tile_mulf
// CHECK: scf.for {{.*}} step %c32
// CHECK-COUNT-4: amx.tile_load {{.*}} into !amx.tile<16x16xf32>
// CHECK-COUNT-24: amx.tile_mulf
// CHECK-COUNT-4: amx.tile_store
// CHECK-NOT: amx.tile_mulf
// The lanes path where the OS refuses the tile state.
// CHECK: scf.for {{.*}} step %c32
// CHECK-NOT: amx.
// CHECK-LABEL: func.func private @group4_bf16_tile(
// CHECK: memref.get_global @attn_amx_state
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK-COUNT-24: amx.tile_mulf
// CHECK-COUNT-4: amx.tile_store
// CHECK-NOT: amx.tile_mulf
// CHECK: scf.for {{.*}} step %c32
// CHECK-COUNT-12: amx.tile_mulf
// CHECK-NOT: amx.tile_mulf
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
// -----

// A head size that is not a multiple of 32: no tile path.
// CHECK-LABEL: func.func @d40_bf16(
// CHECK-NOT: amx.
func.func @d40_bf16(%q: tensor<16x?x40xf32>, %k: tensor<?x40xbf16>, %v: tensor<?x40xbf16>,
                    %acc: tensor<16x?x40xf32>, %m: tensor<16x?xf32>, %l: tensor<16x?xf32>,
                    %qp: index, %kp: index)
    -> (tensor<16x?x40xf32>, tensor<16x?xf32>, tensor<16x?xf32>) {
  %a, %mx, %s = attn.online_attention %q, %k, %v, %acc, %m, %l, %qp, %kp
      {scale = 0.125 : f64}
      : (tensor<16x?x40xf32>, tensor<?x40xbf16>, tensor<?x40xbf16>,
         tensor<16x?x40xf32>, tensor<16x?xf32>, tensor<16x?xf32>)
        -> (tensor<16x?x40xf32>, tensor<16x?xf32>, tensor<16x?xf32>)
  return %a, %mx, %s : tensor<16x?x40xf32>, tensor<16x?xf32>, tensor<16x?xf32>
}
