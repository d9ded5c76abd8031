// convert-attn-to-gpu lowers the tiled form of kernel entries; what it does
// not take is an error naming what to do instead.
// RUN: not attn-opt %s -split-input-file -convert-attn-to-gpu 2>&1 | FileCheck %s --check-prefix=UNTILED
// RUN: not attn-opt %s -split-input-file -attn-tile-attention=target=gpu -convert-attn-to-gpu 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not attn-opt %s -split-input-file -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=bf16\ kv-block=24 2>&1 | FileCheck %s --check-prefix=BF16TILE
// RUN: not attn-opt %s -split-input-file -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=kv-block=1024 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not attn-opt %s -split-input-file -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=fp8 2>&1 | FileCheck %s --check-prefix=PRECISION
// RUN: not attn-opt %s -split-input-file -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=split-min-keys=0 2>&1 | FileCheck %s --check-prefix=SPLITKEYS
// RUN: not attn-opt %s -split-input-file -attn-tile-attention=target=cpu\ split-target=0 -convert-attn-to-gpu 2>&1 | FileCheck %s --check-prefix=UNMAPPED
// RUN: not attn-opt %s -split-input-file -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu="precision=bf16 wgmma=true wgmma-products=both" 2>&1 | FileCheck %s --check-prefix=PRODUCTS
// RUN: not attn-opt %s -split-input-file -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu 2>&1 | FileCheck %s --check-prefix=QO
// QO: error: 'attn.online_attention' op the GPU kernels take q and the output in f32 or in the K/V cache's 16-bit type; got q 'f16', output 'f16', K/V 'bf16'
// UNMAPPED: error: 'scf.forall' op expects the tiled forall mapped to the grid (mapping = [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]: batch, KV head, query block), as attn-tile-attention{target=gpu} makes it
// UNTILED: error: 'attn.sdpa' op convert-attn-to-gpu lowers the tiled form: run attn-tile-attention (target=gpu, split-target=0) first
// SPLIT: error: 'scf.forall' op the tiler's split-K parts are not lowered to the GPU: tile with split-target=0 (convert-attn-to-gpu splits a short grid's keys itself: split-blocks)
// BF16TILE: error: 'attn.online_attention' op the bf16 kernel's kv-block must be a multiple of 16, got 24
// SMEM: error: 'attn.online_attention' op kv-block 1024 needs 524288 bytes of shared memory (K, V tiles); at most 49152
// PRECISION: for the --precision option: Cannot find option named 'fp8'!
// PRODUCTS: error: 'attn.online_attention' op wgmma-products takes all, qk, pv or none; got 'both'
// SPLITKEYS: error: 'attn.online_attention' op split-blocks must be 0 or more and split-min-keys positive, got 264 and 0
func.func @entry(%out: memref<?x8x?x64xf32>, %q: tensor<?x8x?x64xf32>,
                 %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x64xf32>) {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32>) -> ()
  return
}

// -----

// A 16-bit q (--qo-dtype) of another type than the cache's.
func.func @qo_mixed(%out: memref<?x8x?x64xf16>, %q: tensor<?x8x?x64xf16>,
                    %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x8x?x64xf16>) {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x8x?x64xf16>, memref<?x8x?x64xf16>) -> ()
  return
}
