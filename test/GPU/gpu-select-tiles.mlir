// The CUDA target's tile choice on each attention op: block-rows query
// rows per thread block over the GQA group (q_block = block-rows / G per
// head), 64 keys, no split-K; the tiled loop nest carries it for
// convert-attn-to-gpu.
// RUN: attn-opt %s -attn-gpu-select-tiles=block-rows=64 | FileCheck %s
// RUN: attn-opt %s -attn-gpu-select-tiles=block-rows=64 -attn-tile-attention=target=gpu\ split-target=0 | FileCheck %s --check-prefix=TILED
// RUN: not attn-opt %s -attn-gpu-select-tiles=block-rows=0 2>&1 | FileCheck %s --check-prefix=BAD
// CHECK-LABEL: func.func @gqa(
// CHECK: attn.sdpa {{.*}}attn.tiles = #attn.tiles<q_block = 16, kv_block = 64, decode_kv_block = 64, split_target = 0, split_min_keys = 512>
// TILED: } {attn.tiles = #attn.tiles<q_block = 16, kv_block = 64, decode_kv_block = 64, split_target = 0, split_min_keys = 512>, mapping = [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]}
// BAD: error: attn-gpu-select-tiles: q-block 0 and kv-block 0 must be 0 (the GPU's choice) or positive, block-rows 0 positive
func.func @gqa(%q: tensor<1x32x?x128xf32>, %k: tensor<1x8x?x128xf32>, %v: tensor<1x8x?x128xf32>, %o: tensor<1x32x?x128xf32>) -> tensor<1x32x?x128xf32> {
  %0 = attn.sdpa %q, %k, %v outs(%o : tensor<1x32x?x128xf32>) {mask = #attn.mask<causal>, scale = 0.088 : f64} : (tensor<1x32x?x128xf32>, tensor<1x8x?x128xf32>, tensor<1x8x?x128xf32>) -> tensor<1x32x?x128xf32>
  return %0 : tensor<1x32x?x128xf32>
}
