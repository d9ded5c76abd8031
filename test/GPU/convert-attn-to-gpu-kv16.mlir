// A 16-bit K/V cache at the pass level: the fp32 kernel takes a bf16 cache
// (widened as it stages its f32 tiles), the bf16 tensor-core kernel copies
// it into bf16 tiles, the f16 one refuses it rather than round it to f16.
// RUN: attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu | FileCheck %s --check-prefix=FP32
// RUN: attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: not attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu=precision=f16 2>&1 | FileCheck %s --check-prefix=F16
// FP32: gpu.launch
// FP32: memref.load %{{.*}}[{{.*}}] : memref<?x2x?x64xbf16>
// FP32-NEXT: arith.extf %{{.*}} : bf16 to f32
// BF16: gpu.launch
// BF16: %[[K:.*]] = memref.load %{{.*}}[{{.*}}] : memref<?x2x?x64xbf16>
// BF16: %[[S:.*]] = arith.select %{{.*}}, %[[K]], %{{.*}} : bf16
// BF16-NEXT: memref.store %[[S]], %{{.*}} : memref<{{[0-9]+}}x64xbf16, #gpu.address_space<workgroup>>
// F16: error: 'attn.online_attention' op the f16 tensor-core kernel would round a bf16 K/V cache to f16: compile with precision=bf16 or fp32
func.func @entry(%out: memref<?x8x?x64xf32>, %q: tensor<?x8x?x64xf32>,
                 %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32>) -> ()
  return
}
