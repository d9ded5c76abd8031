// RUN: attn-opt %s -split-input-file -attn-call-kernels | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-call-kernels | FileCheck %s --check-prefix=BIAS
// RUN: attn-opt %s -split-input-file -attn-call-kernels | FileCheck %s --check-prefix=GDN
// RUN: attn-opt %s -split-input-file -attn-call-kernels | FileCheck %s --check-prefix=LATENT

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
// BIAS: return
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

// -----

// A latent kernel (DeepSeek's absorbed form): keys and values are views of
// one latent cache argument, a reshape to one KV head and its first 512
// channels. The block's sdpa on the same views of its latent tensor calls it
// with that tensor; one whose values are a slice of fewer keys than the
// latent holds keeps its op.
// LATENT-LABEL: func.func @m_block(
// LATENT-SAME: %[[Q:[a-z0-9]+]]: tensor<?x4x?x576xf32>, %[[C:[a-z0-9]+]]: tensor<?x?x576xf32>
// LATENT: %[[LENS:.*]] = tensor.splat
// LATENT: call @m_mla(%{{.*}}, %[[Q]], %[[C]], %[[LENS]])
// LATENT-LABEL: func.func @m_fewer_keys(
// LATENT-NOT: call
// LATENT: attn.sdpa
func.func @m_mla(%out: memref<?x4x?x512xf32>, %q: tensor<?x4x?x576xf32>, %c: tensor<?x?x576xf32>,
                 %lens: tensor<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %c, %c0 : tensor<?x?x576xf32>
  %n = tensor.dim %c, %c1 : tensor<?x?x576xf32>
  %k = tensor.expand_shape %c [[0, 1], [2], [3]] output_shape [%b, 1, %n, 576]
      : tensor<?x?x576xf32> into tensor<?x1x?x576xf32>
  %v = tensor.extract_slice %k[0, 0, 0, 0] [%b, 1, %n, 512] [1, 1, 1, 1]
      : tensor<?x1x?x576xf32> to tensor<?x1x?x512xf32>
  %qb = tensor.dim %q, %c0 : tensor<?x4x?x576xf32>
  %s = tensor.dim %q, %c2 : tensor<?x4x?x576xf32>
  %e = tensor.empty(%qb, %s) : tensor<?x4x?x512xf32>
  %r = attn.sdpa %q, %k, %v kv_lengths(%lens : tensor<?xi64>) outs(%e : tensor<?x4x?x512xf32>)
      {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x4x?x576xf32>, tensor<?x1x?x576xf32>, tensor<?x1x?x512xf32>) -> tensor<?x4x?x512xf32>
  bufferization.materialize_in_destination %r in restrict writable %out
      : (tensor<?x4x?x512xf32>, memref<?x4x?x512xf32>) -> ()
  return
}
func.func @m_block(%q: tensor<?x4x?x576xf32>, %c: tensor<?x?x576xf32>) -> tensor<?x4x?x512xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %c, %c0 : tensor<?x?x576xf32>
  %n = tensor.dim %c, %c1 : tensor<?x?x576xf32>
  %k = tensor.expand_shape %c [[0, 1], [2], [3]] output_shape [%b, 1, %n, 576]
      : tensor<?x?x576xf32> into tensor<?x1x?x576xf32>
  %kb = tensor.dim %k, %c0 : tensor<?x1x?x576xf32>
  %kn = tensor.dim %k, %c2 : tensor<?x1x?x576xf32>
  %v = tensor.extract_slice %k[0, 0, 0, 0] [%kb, 1, %kn, 512] [1, 1, 1, 1]
      : tensor<?x1x?x576xf32> to tensor<?x1x?x512xf32>
  %qb = tensor.dim %q, %c0 : tensor<?x4x?x576xf32>
  %s = tensor.dim %q, %c2 : tensor<?x4x?x576xf32>
  %e = tensor.empty(%qb, %s) : tensor<?x4x?x512xf32>
  %r = attn.sdpa %q, %k, %v outs(%e : tensor<?x4x?x512xf32>)
      {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x4x?x576xf32>, tensor<?x1x?x576xf32>, tensor<?x1x?x512xf32>) -> tensor<?x4x?x512xf32>
  return %r : tensor<?x4x?x512xf32>
}
func.func @m_fewer_keys(%q: tensor<?x4x?x576xf32>, %c: tensor<?x?x576xf32>, %m: index)
    -> tensor<?x4x?x512xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %c, %c0 : tensor<?x?x576xf32>
  %n = tensor.dim %c, %c1 : tensor<?x?x576xf32>
  %k = tensor.expand_shape %c [[0, 1], [2], [3]] output_shape [%b, 1, %n, 576]
      : tensor<?x?x576xf32> into tensor<?x1x?x576xf32>
  %v = tensor.extract_slice %k[0, 0, 0, 0] [%b, 1, %m, 512] [1, 1, 1, 1]
      : tensor<?x1x?x576xf32> to tensor<?x1x?x512xf32>
  %qb = tensor.dim %q, %c0 : tensor<?x4x?x576xf32>
  %s = tensor.dim %q, %c2 : tensor<?x4x?x576xf32>
  %e = tensor.empty(%qb, %s) : tensor<?x4x?x512xf32>
  %r = attn.sdpa %q, %k, %v outs(%e : tensor<?x4x?x512xf32>)
      {mask = #attn.mask<causal>, scale = 0.125 : f64}
      : (tensor<?x4x?x576xf32>, tensor<?x1x?x576xf32>, tensor<?x1x?x512xf32>) -> tensor<?x4x?x512xf32>
  return %r : tensor<?x4x?x512xf32>
}
