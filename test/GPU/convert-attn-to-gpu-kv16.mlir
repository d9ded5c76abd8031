// A 16-bit K/V cache at the pass level: the fp32 kernel takes a bf16 cache
// (widened as it stages its f32 tiles), the bf16 tensor-core kernel copies
// it as it is into its bf16 ring by cp.async (16 bytes, zero-filled past the
// block's keys), the f16 one refuses it rather than round it to f16; the
// tensor-core kernel refuses a block of more than 128 rows.
// RUN: attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu | FileCheck %s --check-prefix=FP32
// RUN: attn-opt %s -attn-gpu-select-tiles=block-rows=128 -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: not attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=bf16 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=f16 2>&1 | FileCheck %s --check-prefix=F16
// FP32: gpu.launch
// FP32: memref.load %{{.*}}[{{.*}}] : memref<?x2x?x64xbf16>
// FP32-NEXT: arith.extf %{{.*}} : bf16 to f32
// Q tile 128 x (64 + 8) and two-slot K and V rings 2 x 64 x 72, bf16:
// 18432 + 18432 + 18432 bytes.
// BF16: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256, {{.*}}) dynamic_shared_memory_size %c55296_i32
// BF16: %[[SMEM:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// BF16: memref.view %[[SMEM]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x72xbf16, #gpu.address_space<workgroup>>
// BF16: %[[K:.*]] = memref.view %[[SMEM]][%c18432][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// BF16: %[[V:.*]] = memref.view %[[SMEM]][%c36864][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// BF16: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} : memref<128x72xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// BF16: nvgpu.device_async_copy %{{.*}}[{{.*}}], %[[K]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x2x?x64xbf16> to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// BF16: nvgpu.device_async_copy %{{.*}}[{{.*}}], %[[V]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x2x?x64xbf16> to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// BF16: nvgpu.device_async_create_group
// BF16: scf.for
// BF16: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// BF16: gpu.barrier
// BF16: nvgpu.ldmatrix %[[K]]{{.*}}transpose = false
// BF16: nvvm.mma.sync
// BF16: nvgpu.ldmatrix %[[V]]{{.*}}transpose = true
// BF16: nvvm.mma.sync
// BF16: gpu.barrier
// ROWS: error: 'attn.online_attention' op the bf16 tensor-core kernel holds at most 128 rows per thread block, got 4 heads x q-block 128 = 512: use a q-block of at most 32
// F16: error: 'attn.online_attention' op the f16 tensor-core kernel would round a bf16 K/V cache to f16: compile with precision=bf16 or fp32
func.func @entry(%out: memref<?x8x?x64xf32>, %q: tensor<?x8x?x64xf32>,
                 %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32>) -> ()
  return
}
