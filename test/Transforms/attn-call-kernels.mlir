// RUN: attn-opt %s -split-input-file -attn-call-kernels | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-call-kernels | FileCheck %s --check-prefix=BIAS
// RUN: attn-opt %s -split-input-file -attn-call-kernels | FileCheck %s --check-prefix=GDN

// @k_sdpa is a kernel entry (one attn.sdpa of its arguments into its memref
// argument). The block's sdpa with the same attributes and types becomes a
// call of it on a fresh buffer, with every batch row's full key length; the
// one with another scale, and the reference function, keep their ops.

// CHECK-LABEL: func.func @k_sdpa(
// CHECK: attn.sdpa
func.func @k_sdpa(%out: memref<?x8x?x64xf32>, %q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>,
                  %v: tensor<?x2x?x64xf32>, %lens: tensor<?xi64>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x?x64xf32>
  %s = tensor.dim %q, %c2 : tensor<?x8x?x64xf32>
  %e = tensor.empty(%b, %s) : tensor<?x8x?x64xf32>
  %r = attn.sdpa %q, %k, %v kv_lengths(%lens : tensor<?xi64>) outs(%e : tensor<?x8x?x64xf32>)
      {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32>
  bufferization.materialize_in_destination %r in restrict writable %out
      : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @k_block(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x8x?x64xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x?x64xf32>, %[[V:[a-z0-9]+]]: tensor<?x2x?x64xf32>
// CHECK: %[[KEYS:.*]] = tensor.dim %[[K]], %c2
// CHECK: %[[LEN:.*]] = arith.index_cast %[[KEYS]] : index to i64
// CHECK: %[[BATCH:.*]] = tensor.dim %[[Q]], %c0
// CHECK: %[[LENS:.*]] = tensor.splat %[[LEN]][%[[BATCH]]] : tensor<?xi64>
// CHECK: %[[BUF:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {alignment = 64 : i64} : memref<?x8x?x64xf32>
// CHECK: call @k_sdpa(%[[BUF]], %[[Q]], %[[K]], %[[V]], %[[LENS]])
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[BUF]] restrict writable
// CHECK: attn.sdpa {{.*}}scale = 2.500000e-01
// CHECK: return %[[T]], %{{.*}}
func.func @k_block(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x64xf32>)
    -> (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x?x64xf32>
  %s = tensor.dim %q, %c2 : tensor<?x8x?x64xf32>
  %e = tensor.empty(%b, %s) : tensor<?x8x?x64xf32>
  %r = attn.sdpa %q, %k, %v outs(%e : tensor<?x8x?x64xf32>)
      {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32>
  %o = attn.sdpa %q, %k, %v outs(%e : tensor<?x8x?x64xf32>)
      {mask = #attn.mask<causal>, scale = 0.25 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %r, %o : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>
}

// CHECK-LABEL: func.func @k_block_reference(
// CHECK-NOT: call
// CHECK: attn.sdpa
func.func @k_block_reference(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x64xf32>)
    -> tensor<?x8x?x64xf32> attributes {attn.reference} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x?x64xf32>
  %s = tensor.dim %q, %c2 : tensor<?x8x?x64xf32>
  %e = tensor.empty(%b, %s) : tensor<?x8x?x64xf32>
  %r = attn.sdpa %q, %k, %v outs(%e : tensor<?x8x?x64xf32>)
      {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %r : tensor<?x8x?x64xf32>
}

// -----

// A kernel with kv_lengths and a relative-bias table: an op with the table
// but no kv_lengths still matches it (operands compared by name, not by
// position in lists of different lengths), and is called with full lengths.
// BIAS-LABEL: func.func @t_block(
// BIAS: %[[LENS:.*]] = tensor.splat
// BIAS: call @t_sdpa(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LENS]], %{{.*}})
// BIAS-NOT: attn.sdpa
func.func @t_sdpa(%out: memref<?x8x?x64xf32>, %q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>,
                  %v: tensor<?x8x?x64xf32>, %lens: tensor<?xi64>, %t: tensor<32x8xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x?x64xf32>
  %s = tensor.dim %q, %c2 : tensor<?x8x?x64xf32>
  %e = tensor.empty(%b, %s) : tensor<?x8x?x64xf32>
  %r = attn.sdpa %q, %k, %v kv_lengths(%lens : tensor<?xi64>) bias_table(%t : tensor<32x8xf32>) outs(%e : tensor<?x8x?x64xf32>)
      {relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = true>, scale = 1.0 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  bufferization.materialize_in_destination %r in restrict writable %out
      : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32>) -> ()
  return
}
func.func @t_block(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>,
                   %t: tensor<32x8xf32>) -> tensor<?x8x?x64xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x?x64xf32>
  %s = tensor.dim %q, %c2 : tensor<?x8x?x64xf32>
  %e = tensor.empty(%b, %s) : tensor<?x8x?x64xf32>
  %r = attn.sdpa %q, %k, %v bias_table(%t : tensor<32x8xf32>) outs(%e : tensor<?x8x?x64xf32>)
      {relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = true>, scale = 1.0 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %r : tensor<?x8x?x64xf32>
}

// -----

// A Gated DeltaNet kernel entry (two results into two memref arguments):
// the block's gated_delta_rule with the same scale and operand types becomes
// a call on two fresh buffers; one with another scale keeps its op.
// GDN-LABEL: func.func @g_block(
// GDN-SAME: %[[Q:[a-z0-9]+]]: tensor<?x2x?x16xf32>, %[[V:[a-z0-9]+]]: tensor<?x4x?x8xf32>, %[[G:[a-z0-9]+]]: tensor<?x4x?xf32>, %[[S0:[a-z0-9]+]]: tensor<?x4x16x8xf32>
// GDN: %[[OUT:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {alignment = 64 : i64} : memref<?x4x?x8xf32>
// GDN: %[[ST:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x4x16x8xf32>
// GDN: call @g_gdn(%[[OUT]], %[[ST]], %[[Q]], %[[Q]], %[[V]], %[[G]], %[[G]], %[[S0]])
// GDN: %[[O:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// GDN: %[[S:.*]] = bufferization.to_tensor %[[ST]] restrict writable
// GDN: attn.gated_delta_rule {{.*}}scale = 5.000000e-01
// GDN: return %[[O]], %[[S]]
func.func @g_gdn(%out: memref<?x4x?x8xf32>, %st: memref<?x4x16x8xf32>, %q: tensor<?x2x?x16xf32>,
                 %k: tensor<?x2x?x16xf32>, %v: tensor<?x4x?x8xf32>, %g: tensor<?x4x?xf32>,
                 %beta: tensor<?x4x?xf32>, %s0: tensor<?x4x16x8xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %v, %c0 : tensor<?x4x?x8xf32>
  %s = tensor.dim %v, %c2 : tensor<?x4x?x8xf32>
  %oi = tensor.empty(%b, %s) : tensor<?x4x?x8xf32>
  %si = tensor.empty(%b) : tensor<?x4x16x8xf32>
  %o, %f = attn.gated_delta_rule %q, %k, %v, %g, %beta initial_state(%s0 : tensor<?x4x16x8xf32>) outs(%oi, %si : tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>) {scale = 0.25 : f64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>)
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<?x4x?x8xf32>, memref<?x4x?x8xf32>) -> ()
  bufferization.materialize_in_destination %f in restrict writable %st : (tensor<?x4x16x8xf32>, memref<?x4x16x8xf32>) -> ()
  return
}
func.func @g_block(%q: tensor<?x2x?x16xf32>, %v: tensor<?x4x?x8xf32>, %g: tensor<?x4x?xf32>, %s0: tensor<?x4x16x8xf32>)
    -> (tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>, tensor<?x4x?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %v, %c0 : tensor<?x4x?x8xf32>
  %s = tensor.dim %v, %c2 : tensor<?x4x?x8xf32>
  %oi = tensor.empty(%b, %s) : tensor<?x4x?x8xf32>
  %si = tensor.empty(%b) : tensor<?x4x16x8xf32>
  %o, %f = attn.gated_delta_rule %q, %q, %v, %g, %g initial_state(%s0 : tensor<?x4x16x8xf32>) outs(%oi, %si : tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>) {scale = 0.25 : f64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>)
  %o2, %f2 = attn.gated_delta_rule %q, %q, %v, %g, %g initial_state(%s0 : tensor<?x4x16x8xf32>) outs(%oi, %si : tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>) {scale = 0.5 : f64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>)
  return %o, %f, %o2 : tensor<?x4x?x8xf32>, tensor<?x4x16x8xf32>, tensor<?x4x?x8xf32>
}
