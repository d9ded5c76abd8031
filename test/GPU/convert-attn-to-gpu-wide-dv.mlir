// Value head dims past 256 on the tensor-core kernel (the latent's 512, or
// any attention's): its warps form column groups of at most 256 value
// columns each, every group computing its rows' scores, on 16-key tiles.
// Here 4 query heads on one KV head, D = Dv = 512 (V a tensor of its own):
// 2 row warps x 2 column groups (128 threads), the Q tile and two-slot K
// and V rings of 16 keys in 99,840 bytes. What does not fit is an error
// naming the option: a head dim the groups do not split into multiples of
// 16, more rows than the groups' warps hold, the fp32 kernel's wide rows.
// RUN: not attn-opt %s -split-input-file -attn-gpu-select-tiles -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=bf16 2>&1 | FileCheck %s
// RUN: not attn-opt %s -split-input-file -attn-gpu-select-tiles=q-block=128 -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=bf16 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not attn-opt %s -split-input-file -attn-gpu-select-tiles=q-block=64 -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu 2>&1 | FileCheck %s --check-prefix=FP32ROWS
// CHECK-LABEL: func.func @dv512(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}} = %c1{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c128, {{.*}}) dynamic_shared_memory_size %c99840_i32
// CHECK: nvvm.mma.sync
// CHECK: error: 'attn.online_attention' op the bf16 tensor-core kernel splits a value head dim 272 into 2 column groups of warps, which needs a multiple of 32
// ROWS: error: 'attn.online_attention' op the bf16 tensor-core kernel holds at most 64 rows per thread block at this value head dim, got 1 heads x q-block 128 = 128: use a q-block of at most 64
// FP32ROWS: error: 'attn.online_attention' op the fp32 kernel holds at most 32 rows per thread block at head dims 512 and 512, got q-block 64: use a q-block of at most 32
func.func @dv512(%out: memref<?x4x?x512xf32>, %q: tensor<?x4x?x512xf32>,
                 %k: tensor<?x1x?x512xbf16>, %v: tensor<?x1x?x512xbf16>) {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x512xf32>) {mask = #attn.mask<causal>, scale = 0.0625 : f64}
      : (tensor<?x4x?x512xf32>, tensor<?x1x?x512xbf16>, tensor<?x1x?x512xbf16>) -> tensor<?x4x?x512xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x4x?x512xf32>, memref<?x4x?x512xf32>) -> ()
  return
}

// -----

func.func @dv272(%out: memref<?x4x?x272xf32>, %q: tensor<?x4x?x272xf32>,
                 %k: tensor<?x1x?x272xbf16>, %v: tensor<?x1x?x272xbf16>) {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x272xf32>) {mask = #attn.mask<causal>, scale = 0.0625 : f64}
      : (tensor<?x4x?x272xf32>, tensor<?x1x?x272xbf16>, tensor<?x1x?x272xbf16>) -> tensor<?x4x?x272xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x4x?x272xf32>, memref<?x4x?x272xf32>) -> ()
  return
}
