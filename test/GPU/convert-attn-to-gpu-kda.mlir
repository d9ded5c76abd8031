// Kimi Delta Attention's recurrence on the GPU (a per-channel gate
// [batch, Hv, seq, d_k]): the gated-delta kernel stages each key channel's
// decay e^{g_t[i]} next to q_t and k_t (a third row of its shared q/k
// buffer) and decays each state row by its own factor; through the whole
// CUDA pipeline to PTX, which ptxas accepts for sm_90 and sm_80.
// RUN: attn-opt %s -attn-tile-gated-delta -convert-attn-to-gpu | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-opt %s -attn-gpu-pipeline=stop-after=ptx -o %t/kda.sm90.mlir
// RUN: attn-opt %s -attn-gpu-pipeline='stop-after=ptx arch=sm_80' -o %t/kda.sm80.mlir
// RUN: %python %S/Inputs/binary_ptx.py %t/kda.sm90.mlir > %t/kda.sm90.ptx
// RUN: %python %S/Inputs/binary_ptx.py %t/kda.sm80.mlir > %t/kda.sm80.ptx
// RUN: %ptxas -arch=sm_90 %t/kda.sm90.ptx -o %t/kda.sm90.cubin
// RUN: %ptxas -arch=sm_80 %t/kda.sm80.ptx -o %t/kda.sm80.cubin
// RUN: FileCheck %s --input-file=%t/kda.sm90.ptx --check-prefix=PTX
// REQUIRES: ptxas
// CHECK: gpu.launch
// CHECK-SAME: workgroup(%[[QK:.*]] : memref<3x32xf32, #gpu.address_space<workgroup>>
// CHECK: %[[G:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x4x?x32xf32>
// CHECK: %[[L:.*]] = arith.mulf %[[G]], %{{.*}} : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx"
// CHECK: memref.store %{{.*}}, %[[QK]][%c2{{.*}}, %{{.*}}] : memref<3x32xf32, #gpu.address_space<workgroup>>
// PTX: .entry
// PTX: ex2.approx
func.func @entry(%out: memref<?x4x?x16xf32>, %st: memref<?x4x32x16xf32>,
                 %q: tensor<?x2x?x32xf32>, %k: tensor<?x2x?x32xf32>, %v: tensor<?x4x?x16xf32>,
                 %g: tensor<?x4x?x32xf32>, %beta: tensor<?x4x?xf32>, %s0: tensor<?x4x32x16xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %v, %c0 : tensor<?x4x?x16xf32>
  %n = tensor.dim %v, %c2 : tensor<?x4x?x16xf32>
  %oi = tensor.empty(%b, %n) : tensor<?x4x?x16xf32>
  %si = tensor.empty(%b) : tensor<?x4x32x16xf32>
  %o, %s = attn.gated_delta_rule %q, %k, %v, %g, %beta initial_state(%s0 : tensor<?x4x32x16xf32>)
      outs(%oi, %si : tensor<?x4x?x16xf32>, tensor<?x4x32x16xf32>) {scale = 0.17677669529663687 : f64}
      : (tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?xf32>)
      -> (tensor<?x4x?x16xf32>, tensor<?x4x32x16xf32>)
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x4x?x16xf32>, memref<?x4x?x16xf32>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %st
      : (tensor<?x4x32x16xf32>, memref<?x4x32x16xf32>) -> ()
  return
}
