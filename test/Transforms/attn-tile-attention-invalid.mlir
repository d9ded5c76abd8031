// RUN: not attn-opt %s -attn-tile-attention=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not attn-opt %s -attn-tile-attention=q-block=-4 2>&1 | FileCheck %s --check-prefix=SIZE
// TARGET: for the --target option: Cannot find option named 'tpu'!
// SIZE: error: attn-tile-attention: tile sizes must be positive, got q-block=-4 kv-block=64
func.func @f() {
  return
}
// RUN: not attn-opt %s -attn-tile-attention=split-min-keys=0 2>&1 | FileCheck %s --check-prefix=SPLITMIN
// SPLITMIN: error: attn-tile-attention: tile sizes must be positive, got q-block=64 kv-block=64 decode-kv-block=1024 split-min-keys=0 (split-target 16: 0 or more)
