// The CPU's tile choice on each attention op: 64 rows per head, raised to
// 256 rows over the GQA group, lowered (not below that) so that the group's
// rows keep within 512 KiB; 64 keys per tile, 1024 in decode; options
// replace the heuristics. Reference functions keep their untiled ops.
// RUN: attn-opt %s -split-input-file -attn-cpu-select-tiles | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-cpu-select-tiles=q-block=32\ kv-block=128\ decode-kv-block=256\ split-target=0\ split-min-keys=64 | FileCheck %s --check-prefix=OPTS

// MHA (G = 1), d = 64: 256 rows.
// CHECK-LABEL: func.func @mha(
// CHECK: attn.sdpa {{.*}}attn.tiles = #attn.tiles<q_block = 256, kv_block = 64, decode_kv_block = 1024, split_target = 16, split_min_keys = 512>
// OPTS-LABEL: func.func @mha(
// OPTS: attn.tiles = #attn.tiles<q_block = 32, kv_block = 128, decode_kv_block = 256, split_target = 0, split_min_keys = 64>
func.func @mha(%q: tensor<1x8x?x64xf32>, %k: tensor<1x8x?x64xf32>, %v: tensor<1x8x?x64xf32>, %o: tensor<1x8x?x64xf32>) -> tensor<1x8x?x64xf32> {
  %0 = attn.sdpa %q, %k, %v outs(%o : tensor<1x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<1x8x?x64xf32>, tensor<1x8x?x64xf32>, tensor<1x8x?x64xf32>) -> tensor<1x8x?x64xf32>
  return %0 : tensor<1x8x?x64xf32>
}

// -----

// GQA, G = 4, d = 128: 64 rows (256 over the group).
// CHECK-LABEL: func.func @gqa(
// CHECK: attn.tiles = #attn.tiles<q_block = 64,
func.func @gqa(%q: tensor<1x32x?x128xf32>, %k: tensor<1x8x?x128xf32>, %v: tensor<1x8x?x128xf32>, %o: tensor<1x32x?x128xf32>) -> tensor<1x32x?x128xf32> {
  %0 = attn.sdpa %q, %k, %v outs(%o : tensor<1x32x?x128xf32>) {mask = #attn.mask<causal>, scale = 0.088 : f64} : (tensor<1x32x?x128xf32>, tensor<1x8x?x128xf32>, tensor<1x8x?x128xf32>) -> tensor<1x32x?x128xf32>
  return %0 : tensor<1x32x?x128xf32>
}

// -----

// G = 16, d = dv = 256: 16 rows (16 x 16 x 512 x 4 bytes = 512 KiB).
// CHECK-LABEL: func.func @wide(
// CHECK: attn.tiles = #attn.tiles<q_block = 16,
func.func @wide(%q: tensor<1x64x?x256xf32>, %k: tensor<1x4x?x256xf32>, %v: tensor<1x4x?x256xf32>, %o: tensor<1x64x?x256xf32>) -> tensor<1x64x?x256xf32> {
  %0 = attn.sdpa %q, %k, %v outs(%o : tensor<1x64x?x256xf32>) {mask = #attn.mask<causal>, scale = 0.0625 : f64} : (tensor<1x64x?x256xf32>, tensor<1x4x?x256xf32>, tensor<1x4x?x256xf32>) -> tensor<1x64x?x256xf32>
  return %0 : tensor<1x64x?x256xf32>
}

// -----

// A paged op, and a reference function, which keeps its op untouched.
// CHECK-LABEL: func.func @paged(
// CHECK: attn.paged_sdpa {{.*}}attn.tiles = #attn.tiles<q_block = 128,
// CHECK-LABEL: func.func @paged_reference(
// CHECK-NOT: attn.tiles
func.func @paged(%q: tensor<?x4x?x64xf32>, %kc: tensor<?x2x?x64xf32>, %vc: tensor<?x2x?x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x4x?x64xf32>) -> tensor<?x4x?x64xf32> {
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x4x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<?x4x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x4x?x64xf32>
  return %0 : tensor<?x4x?x64xf32>
}
func.func @paged_reference(%q: tensor<?x4x?x64xf32>, %kc: tensor<?x2x?x64xf32>, %vc: tensor<?x2x?x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x4x?x64xf32>) -> tensor<?x4x?x64xf32> attributes {attn.reference} {
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x4x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<?x4x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x4x?x64xf32>
  return %0 : tensor<?x4x?x64xf32>
}
