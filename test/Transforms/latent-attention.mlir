// Multi-head latent attention's two forms and the run-time choice
// (attn-expand-latent-attention, attn-absorb-latent-attention,
// attn-lower-latent-attention): H = 4 heads, nope 16, rope 8, latent r = 32,
// dv = 8, the cache rows [B, kv_len, 40].
// RUN: attn-opt %s --attn-expand-latent-attention | FileCheck %s --check-prefix=EXP
// RUN: attn-opt %s --attn-absorb-latent-attention | FileCheck %s --check-prefix=ABS
// RUN: attn-opt %s --attn-lower-latent-attention | FileCheck %s --check-prefix=AUTO
// RUN: attn-opt %s --attn-lower-latent-attention=form=absorbed | FileCheck %s --check-prefix=ABS
// RUN: not attn-opt %s --attn-lower-latent-attention=form=other 2>&1 | FileCheck %s --check-prefix=BAD

func.func @mla(%qn: tensor<?x4x?x16xf32>, %qr: tensor<?x4x?x8xf32>, %cache: tensor<?x?x40xf32>, %w: tensor<96x32xf32>) -> tensor<?x4x?x8xf32> {
  %o = attn.latent_attention %qn, %qr, %cache, %w {mask = #attn.mask<causal>, scale = 0.2 : f64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x?x40xf32>, tensor<96x32xf32>) -> tensor<?x4x?x8xf32>
  return %o : tensor<?x4x?x8xf32>
}

// Expanded: every latent through kv_b_proj, split per head into the key's
// nope part and the value; the key gets the shared rotary key of each row
// (broadcast over the heads); one attn.sdpa with D = 24, Dv = 8.
// EXP-LABEL: func.func @mla(
// EXP-SAME: %[[QN:[a-z0-9]+]]: tensor<?x4x?x16xf32>, %[[QR:[a-z0-9]+]]: tensor<?x4x?x8xf32>, %[[C:[a-z0-9]+]]: tensor<?x?x40xf32>, %[[W:[a-z0-9]+]]: tensor<96x32xf32>
// EXP: %[[LAT:.*]] = tensor.extract_slice %[[C]][0, 0, 0] {{.*}} to tensor<?x?x32xf32>
// EXP: %[[ROPE:.*]] = tensor.extract_slice %[[C]][0, 0, 32] {{.*}} to tensor<?x?x8xf32>
// EXP: %[[KV:.*]] = attn.linear %[[LAT]], %[[W]] : (tensor<?x?x32xf32>, tensor<96x32xf32>) -> tensor<?x?x96xf32>
// EXP: %[[KVH:.*]] = attn.split_heads %[[KV]] : tensor<?x?x96xf32> -> tensor<?x4x?x24xf32>
// EXP: %[[KN:.*]] = tensor.extract_slice %[[KVH]][0, 0, 0, 0] {{.*}} to tensor<?x4x?x16xf32>
// EXP: %[[V:.*]] = tensor.extract_slice %[[KVH]][0, 0, 0, 16] {{.*}} to tensor<?x4x?x8xf32>
// EXP: linalg.broadcast ins(%[[ROPE]] : tensor<?x?x8xf32>) outs({{.*}} : tensor<?x4x?x8xf32>) dimensions = [1]
// EXP: %[[K:.*]] = tensor.insert_slice {{.*}}[0, 0, 0, 16] {{.*}} into tensor<?x4x?x24xf32>
// EXP: %[[Q:.*]] = tensor.insert_slice %[[QR]] into {{.*}}[0, 0, 0, 16] {{.*}} into tensor<?x4x?x24xf32>
// EXP: attn.sdpa %[[Q]], %[[K]], %[[V]] outs({{.*}}) {mask = #attn.mask<causal>, scale = 2.000000e-01 : f64} : (tensor<?x4x?x24xf32>, tensor<?x4x?x24xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// EXP-NOT: attn.latent_attention

// Absorbed: per head, q_nope · W_UK[h] (rows h·24 .. h·24 + 16 of kv_b_proj,
// [in, out]) into the latent space; every head over the cache rows as one
// KV head (D = 40), the values the same rows' first 32 features (a slice,
// no copy); per head the result · W_UV[h]ᵀ (rows h·24 + 16 .. h·24 + 24).
// ABS-LABEL: func.func @mla(
// ABS-SAME: %[[QN:[a-z0-9]+]]: tensor<?x4x?x16xf32>, %[[QR:[a-z0-9]+]]: tensor<?x4x?x8xf32>, %[[C:[a-z0-9]+]]: tensor<?x?x40xf32>, %[[W:[a-z0-9]+]]: tensor<96x32xf32>
// ABS: linalg.transpose ins(%[[QN]] : tensor<?x4x?x16xf32>) {{.*}} permutation = [1, 0, 2, 3]
// ABS: scf.for %[[H:.*]] = %{{.*}} to %{{.*}} step
// ABS: %[[ROW0:.*]] = arith.muli %[[H]], %c24
// ABS: %[[WUK:.*]] = tensor.extract_slice %[[W]][%[[ROW0]], 0] [16, 32] [1, 1] : tensor<96x32xf32> to tensor<16x32xf32>
// ABS: attn.linear {{.*}}, %[[WUK]] {transpose_weight} : (tensor<?x16xf32>, tensor<16x32xf32>) -> tensor<?x32xf32>
// ABS: %[[Q:.*]] = tensor.insert_slice %[[QR]] into {{.*}}[0, 0, 0, 32] {{.*}} into tensor<?x4x?x40xf32>
// ABS: %[[K:.*]] = tensor.expand_shape %[[C]] {{\[}}[0, 1], [2], [3]] {{.*}} into tensor<?x1x?x40xf32>
// ABS: %[[V:.*]] = tensor.extract_slice %[[K]][0, 0, 0, 0] {{.*}} to tensor<?x1x?x32xf32>
// ABS: attn.sdpa %[[Q]], %[[K]], %[[V]] outs({{.*}}) {mask = #attn.mask<causal>, scale = 2.000000e-01 : f64} : (tensor<?x4x?x40xf32>, tensor<?x1x?x40xf32>, tensor<?x1x?x32xf32>) -> tensor<?x4x?x32xf32>
// ABS: scf.for %[[H2:.*]] = %{{.*}} to %{{.*}} step
// ABS: %[[ROW1:.*]] = arith.addi {{.*}}, %c16
// ABS: %[[WUV:.*]] = tensor.extract_slice %[[W]][%[[ROW1]], 0] [8, 32] [1, 1] : tensor<96x32xf32> to tensor<8x32xf32>
// ABS: attn.linear {{.*}}, %[[WUV]] : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
// ABS-NOT: attn.latent_attention

// The choice at run time: q_len·(r·(dn + dv) + kv_len·(2r − dn − dv)) <
// kv_len·r·(dn + dv), here r·(dn + dv) = 768 and 2r − dn − dv = 40.
// AUTO-LABEL: func.func @mla(
// AUTO-DAG: %[[A:.*]] = arith.constant 7.680000e+02 : f64
// AUTO-DAG: %[[CC:.*]] = arith.constant 4.000000e+01 : f64
// AUTO: %[[PERKEY:.*]] = arith.mulf %[[SKV:.*]], %[[CC]] : f64
// AUTO: %[[PERROW:.*]] = arith.addf %[[A]], %[[PERKEY]] : f64
// AUTO: %[[LHS:.*]] = arith.mulf %[[SQ:.*]], %[[PERROW]] : f64
// AUTO: %[[RHS:.*]] = arith.mulf %[[SKV]], %[[A]] : f64
// AUTO: %[[CHEAPER:.*]] = arith.cmpf olt, %[[LHS]], %[[RHS]] : f64
// AUTO: scf.if %[[CHEAPER]] -> (tensor<?x4x?x8xf32>) {
// AUTO: attn.sdpa {{.*}} : (tensor<?x4x?x40xf32>, tensor<?x1x?x40xf32>, tensor<?x1x?x32xf32>) -> tensor<?x4x?x32xf32>
// AUTO: } else {
// AUTO: attn.sdpa {{.*}} : (tensor<?x4x?x24xf32>, tensor<?x4x?x24xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
// AUTO-NOT: attn.latent_attention

// BAD: attn-lower-latent-attention: unknown form 'other'; accepted: auto, expanded, absorbed
