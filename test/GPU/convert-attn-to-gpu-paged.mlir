// A paged KV cache's tiles (attn.online_attention with pages(...)) have no
// GPU kernel yet: the lowering refuses them with a message, never a wrong
// kernel.
// RUN: not attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu 2>&1 | FileCheck %s
// CHECK: error: 'attn.online_attention' op a paged KV cache is not supported by the GPU backend yet; compile for the CPU
func.func @entry(%out: memref<?x8x?x64xf32>, %q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x?x64xf32>, %vc: tensor<?x2x?x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>) {
  %o = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32>) -> ()
  return
}
