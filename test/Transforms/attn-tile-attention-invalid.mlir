// RUN: not attn-opt %s -attn-tile-attention=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not attn-opt %s -attn-tile-attention=q-block=-4 2>&1 | FileCheck %s --check-prefix=SIZE
// TARGET: for the --target option: Cannot find option named 'tpu'!
// SIZE: error: attn-tile-attention: tile sizes must be positive, got q-block=-4 kv-block=64
func.func @f() {
  return
}
// RUN: not attn-opt %s -attn-tile-attention=split-min-keys=0 2>&1 | FileCheck %s --check-prefix=SPLITMIN
// SPLITMIN: error: attn-tile-attention: tile sizes must be positive, got q-block=64 kv-block=64 decode-kv-block=64 split-min-keys=0 (split-target 16: 0 or more)
// The CPU's tile choice refuses what it cannot choose (#attn.tiles with
// sizes that are not positive is refused where the IR is read:
// test/Dialect/Attn/invalid.mlir).
// RUN: not attn-opt %s -attn-cpu-select-tiles=kv-block=-1 2>&1 | FileCheck %s --check-prefix=SELECT
// SELECT: error: attn-cpu-select-tiles: q-block 0, kv-block -1 and decode-kv-block 0 must be 0 (the CPU's choice) or positive, split-target 16 0 or more, split-min-keys 512 positive
