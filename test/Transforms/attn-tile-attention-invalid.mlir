// RUN: not attn-opt %s -attn-tile-attention=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not attn-opt %s -attn-tile-attention=q-block=-4 2>&1 | FileCheck %s --check-prefix=SIZE
// TARGET: for the --target option: Cannot find option named 'tpu'!
// SIZE: error: attn-tile-attention: tile sizes must be positive, got q-block=-4 kv-block=64
func.func @f() {
  return
}
// RUN: not attn-opt %s -attn-tile-attention=split-min-keys=0 2>&1 | FileCheck %s --check-prefix=SPLITMIN
// SPLITMIN: error: attn-tile-attention: tile sizes must be positive, got q-block=64 kv-block=64 decode-kv-block=64 split-min-keys=0 (split-target 16: 0 or more)
// The CPU's tile choice refuses what it cannot choose, and the tiler a
// choice on an op that is not positive.
// RUN: not attn-opt %s -attn-cpu-select-tiles=kv-block=-1 2>&1 | FileCheck %s --check-prefix=SELECT
// SELECT: error: attn-cpu-select-tiles: q-block 0, kv-block -1 and decode-kv-block 0 must be 0 (the CPU's choice) or positive, split-target 16 0 or more, split-min-keys 512 positive
// RUN: not attn-opt %s -split-input-file -attn-tile-attention 2>&1 | FileCheck %s --check-prefix=ATTR

// -----

func.func @bad_tiles(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // ATTR: error: 'attn.sdpa' op has tile sizes (attn.tiles) that are not positive: q-block=0 kv-block=64 decode-kv-block=64 split-min-keys=512 (split-target 0: 0 or more)
  %0 = attn.sdpa %q, %k, %v outs(%q : tensor<1x4x8x16xf32>) {attn.tiles = #attn.tiles<q_block = 0, kv_block = 64, decode_kv_block = 64, split_target = 0, split_min_keys = 512>, scale = 0.25 : f64} : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}
