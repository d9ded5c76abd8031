// Mamba2's SSD on the GPU (attn.gated_delta_rule with no_delta, the
// granitemoehybrid shape: d_state 128, head_dim 64, one group shared by the
// heads): the gated-delta kernel computes no Sᵀk (δ = β·v), so a token
// takes two barriers instead of three (one after staging q and k, one
// before combining the output's parts); through the whole CUDA pipeline to
// PTX, which ptxas accepts for sm_90 and sm_80.
// RUN: attn-opt %s -attn-tile-gated-delta -convert-attn-to-gpu | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-opt %s -attn-gpu-pipeline=stop-after=ptx -o %t/ssd.sm90.mlir
// RUN: attn-opt %s -attn-gpu-pipeline='stop-after=ptx arch=sm_80' -o %t/ssd.sm80.mlir
// RUN: %python %S/Inputs/binary_ptx.py %t/ssd.sm90.mlir > %t/ssd.sm90.ptx
// RUN: %python %S/Inputs/binary_ptx.py %t/ssd.sm80.mlir > %t/ssd.sm80.ptx
// RUN: %ptxas -arch=sm_90 %t/ssd.sm90.ptx -o %t/ssd.sm90.cubin
// RUN: %ptxas -arch=sm_80 %t/ssd.sm80.ptx -o %t/ssd.sm80.cubin
// RUN: FileCheck %s --input-file=%t/ssd.sm90.ptx --check-prefix=PTX
// REQUIRES: ptxas
// CHECK: gpu.launch
// CHECK: scf.for {{.*}} iter_args
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx"
// CHECK-NEXT: %[[B:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x8x?xf32>
// CHECK-NEXT: %[[V:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x8x?x64xf32>
// CHECK-NEXT: arith.mulf %[[B]], %[[V]] : f32
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
// PTX: .entry
// PTX: ex2.approx
func.func @entry(%out: memref<?x8x?x64xf32>, %st: memref<?x8x128x64xf32>,
                 %q: tensor<?x1x?x128xf32>, %k: tensor<?x1x?x128xf32>, %v: tensor<?x8x?x64xf32>,
                 %g: tensor<?x8x?xf32>, %beta: tensor<?x8x?xf32>, %s0: tensor<?x8x128x64xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %v, %c0 : tensor<?x8x?x64xf32>
  %n = tensor.dim %v, %c2 : tensor<?x8x?x64xf32>
  %oi = tensor.empty(%b, %n) : tensor<?x8x?x64xf32>
  %si = tensor.empty(%b) : tensor<?x8x128x64xf32>
  %o, %s = attn.gated_delta_rule %q, %k, %v, %g, %beta initial_state(%s0 : tensor<?x8x128x64xf32>)
      outs(%oi, %si : tensor<?x8x?x64xf32>, tensor<?x8x128x64xf32>) {no_delta, scale = 1.0 : f64}
      : (tensor<?x1x?x128xf32>, tensor<?x1x?x128xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?xf32>, tensor<?x8x?xf32>)
      -> (tensor<?x8x?x64xf32>, tensor<?x8x128x64xf32>)
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %st
      : (tensor<?x8x128x64xf32>, memref<?x8x128x64xf32>) -> ()
  return
}
