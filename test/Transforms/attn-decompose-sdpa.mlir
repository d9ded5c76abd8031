// RUN: attn-opt %s -attn-decompose-sdpa | FileCheck %s
// RUN: attn-opt %s -attn-decompose-sdpa -attn-fuse-attention | FileCheck %s --check-prefix=ROUNDTRIP

// Every attribute of sdpa becomes its step of the chain, in sdpa's order.
// CHECK-LABEL: func.func @all(
// CHECK-SAME: %[[Q:[^:]*]]: {{[^,]*}}, %[[K:[^:]*]]: {{[^,]*}}, %[[V:[^:]*]]: {{[^,]*}}, %[[L:[^:]*]]: tensor<?xi64>, %[[T:[^:]*]]: tensor<32x8xf32>
// CHECK: %[[S:.*]] = attn.qk %[[Q]], %[[K]] : (tensor<?x8x?x64xf32>, tensor<?x4x?x64xf32>) -> tensor<?x8x?x?xf32>
// CHECK: %[[S1:.*]] = attn.scale %[[S]] {scale = 1.250000e-01 : f64}
// CHECK: %[[S2:.*]] = attn.softcap %[[S1]] {cap = 3.000000e+01 : f64}
// CHECK: %[[S3:.*]] = attn.relative_position_bias %[[S2]], %[[T]] {align = #attn.align<top_left>, bidirectional, max_distance = 64 : i64, num_buckets = 32 : i64}
// CHECK: %[[S4:.*]] = attn.mask %[[S3]] kv_lengths(%[[L]] : tensor<?xi64>) {align = #attn.align<top_left>, kind = #attn.mask<sliding_window>, window = 16 : i64}
// CHECK: %[[P:.*]] = attn.softmax %[[S4]]
// CHECK: attn.pv %[[P]], %[[V]]
// CHECK-NOT: attn.sdpa
// ROUNDTRIP: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} kv_lengths(%{{.*}} : tensor<?xi64>) bias_table(%{{.*}} : tensor<32x8xf32>) outs({{[^)]*}}) {align = #attn.align<top_left>, mask = #attn.mask<sliding_window>, relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 64, bidirectional = true>, scale = 1.250000e-01 : f64, softcap = 3.000000e+01 : f64, window = 16 : i64}
func.func @all(%q: tensor<?x8x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>, %lens: tensor<?xi64>, %t: tensor<32x8xf32>) -> tensor<?x8x?x64xf32> {
  %o = attn.sdpa %q, %k, %v kv_lengths(%lens : tensor<?xi64>) bias_table(%t : tensor<32x8xf32>)
 outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<sliding_window>, window = 16 : i64, align = #attn.align<top_left>, scale = 0.125 : f64, softcap = 30.0 : f64,
       relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 64, bidirectional = true>}
      : (tensor<?x8x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}
