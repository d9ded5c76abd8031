// Chunked local attention over a sequence range (range_start: a
// context-parallel shard's chunks counted from its sequence's token 0) is
// the CPU's; convert-attn-to-gpu refuses it by name (the GPU kernels take
// chunks from key position 0, test/Frontend/llama4.test).
// RUN: not attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu 2>&1 | FileCheck %s
// CHECK: error: 'attn.online_attention' op chunked local attention over a sequence range (range_start) is not supported by the GPU backend; compile for the CPU
func.func @rs(%out: memref<?x8x?x64xf32>, %q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x16x64xf32>, %vc: tensor<?x2x16x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %pos: tensor<?xi64>, %start: tensor<?xi64>, %init: tensor<?x8x?x64xf32>, %sinit: tensor<?x8x?x2xf32>) {
  %o, %st = attn.paged_sdpa %q, %kc, %vc, %table, %lens q_pos(%pos : tensor<?xi64>) range_start(%start : tensor<?xi64>) outs(%init : tensor<?x8x?x64xf32>, %sinit : tensor<?x8x?x2xf32>) {mask = #attn.mask<chunked>, window = 40 : i64, scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x16x64xf32>, tensor<?x2x16x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32>) -> ()
  return
}
