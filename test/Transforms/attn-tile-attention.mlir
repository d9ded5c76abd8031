// The tiling itself with the CPU's tile choice (attn-cpu-select-tiles:
// #attn.tiles on each op), without split-K and decode's longer key tiles:
// RUN: attn-opt %s -split-input-file -attn-cpu-select-tiles=split-target=0\ decode-kv-block=64 -attn-tile-attention -cse | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-tile-attention=q-block=32\ kv-block=16\ decode-kv-block=16\ split-target=0 -cse | FileCheck %s --check-prefix=SIZES
// The GPU's tiling: 32 rows per block over the group (q-block 32 / 4 = 8),
// recorded on the forall for convert-attn-to-gpu, and the forall mapped to
// the grid (batch, KV head, query block) -> blocks (z, y, x):
// RUN: attn-opt %s -split-input-file -attn-tile-attention=target=gpu\ block-rows=32\ split-target=0 -cse | FileCheck %s --check-prefix=GPU
// GPU-LABEL: func.func @causal_gqa(
// GPU: arith.ceildivsi %{{.*}}, %c8
// GPU: } {attn.tiles = #attn.tiles<q_block = 8, kv_block = 64, decode_kv_block = 64, split_target = 0, split_min_keys = 512>, mapping = [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]}
// The CPU's defaults (split-K, decode tiles of 1024 keys):
// RUN: attn-opt %s -split-input-file -attn-cpu-select-tiles -attn-tile-attention -cse | FileCheck %s --check-prefix=SPLIT

// GQA, causal: one forall point per (batch, KV head, query block); the query
// tile holds the 4 query heads of the group; each K and V tile is extracted
// once per key block (for the whole group), never broadcast to 32 heads.
// Keys visible to every row of the block take the unmasked loop; the
// diagonal block takes the masked loop; keys past the diagonal are never
// visited (the loop ends at hi).
// CHECK-DAG: #[[H0MAP:.*]] = affine_map<(d0) -> (d0 * 4)>
// CHECK-DAG: #[[POSMAP:.*]] = affine_map<(d0)[s0, s1] -> (d0 + s0 - s1)>
// CHECK-LABEL: func.func @causal_gqa(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<?x32x?x128xf32>, %[[K:[^:]*]]: tensor<?x8x?x128xf32>, %[[V:[^:]*]]: tensor<?x8x?x128xf32>
// CHECK-DAG: %[[QLEN:.*]] = tensor.dim %[[Q]], %c2
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[NQB:.*]] = arith.ceildivsi %[[QLEN]], %[[C64]]
// CHECK: scf.forall (%[[B:.*]], %[[G:.*]], %[[QB:.*]]) in (%{{.*}}, 8, %[[NQB]])
// CHECK: %[[Q0:.*]] = arith.muli %[[QB]], %[[C64]]
// CHECK: %[[QN:.*]] = arith.minsi %{{.*}}, %[[C64]]
// CHECK: %[[H0:.*]] = affine.apply #[[H0MAP]](%[[G]])
// The tile's first row sits at q0 + kv_len - q_len (bottom-right causal):
// CHECK: %[[KVLEN:.*]] = tensor.dim %[[K]], %c2
// CHECK: %[[QPOS:.*]] = affine.apply #[[POSMAP]](%[[Q0]])[%[[KVLEN]], %[[QLEN]]]
// CHECK: %[[QT:.*]] = tensor.extract_slice %[[Q]][%[[B]], %[[H0]], %[[Q0]], 0] [1, 4, %[[QN]], 128] [1, 1, 1, 1] : tensor<?x32x?x128xf32> to tensor<4x?x128xf32>
// The key range is cut into one attn.online_attention per part (keys seen
// by every row, then the diagonal), whose keys upstream tiling (its
// TilingInterface) cuts into a loop over [0, end - start) carrying the
// state; a tile's keys start at start + kb.
// On the CPU the unmasked piece is a multiple of the 64 keys per tile (64
// when the block has 17 rows or more, else 1: decode's tiles of 1024): its
// remainder goes to the diagonal's piece, and no tile holds one key.
// CHECK: %[[ALIGN:.*]] = arith.select %{{.*}}, %c1, %[[C64]] : index
// CHECK: %[[HI:.*]] = arith.minsi %{{.*}}, %[[KVLEN]] : index
// CHECK: %[[VIS:.*]] = arith.minsi %{{.*}}, %[[HI]] : index
// CHECK: %[[WHOLE:.*]] = arith.divsi %[[VIS]], %[[ALIGN]]
// CHECK: %[[FULLHI:.*]] = arith.muli %[[WHOLE]], %[[ALIGN]] : index
// CHECK: %[[R0:.*]]:3 = scf.for %[[KB:.*]] = %c0 to %[[FULLHI]] step %[[C64]] iter_args
// CHECK: %[[KN:.*]] = affine.min #{{.*}}(%[[KB]])[%[[FULLHI]]]
// CHECK: %[[KT:.*]] = tensor.extract_slice %[[K]][%[[B]], %[[G]], %[[KB]], 0] [1, 1, %[[KN]], 128] [1, 1, 1, 1] : tensor<?x8x?x128xf32> to tensor<?x128xf32>
// CHECK: %[[VT:.*]] = tensor.extract_slice %[[V]][%[[B]], %[[G]], %[[KB]], 0]
// CHECK-NOT: tensor.extract_slice %[[K]]
// CHECK: attn.online_attention %[[QT]], %[[KT]], %[[VT]], {{.*}}, %[[QPOS]], %[[KB]] {scale = 0.088388347648318{{[0-9]*}} : f64} : (tensor<4x?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>, tensor<4x?x128xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
// CHECK: %[[N1:.*]] = arith.subi %[[HI]], %[[FULLHI]]
// CHECK: %[[R1:.*]]:3 = scf.for %[[KB1:.*]] = %c0 to %[[N1]] step %[[C64]] iter_args({{.*}} = %[[R0]]#0, {{.*}} = %[[R0]]#1, {{.*}} = %[[R0]]#2)
// CHECK: %[[KP1:.*]] = affine.apply #{{.*}}(%[[FULLHI]], %[[KB1]])
// CHECK: attn.online_attention %[[QT]], {{.*}}, %[[KP1]] {mask = #attn.mask<causal>, scale = 0.088388347648318{{[0-9]*}} : f64}
// CHECK: %[[OT:.*]] = attn.online_finalize %[[R1]]#0, %[[R1]]#2 outs(%{{.*}} : tensor<4x?x128xf32>) : (tensor<4x?x128xf32>, tensor<4x?xf32>) -> tensor<4x?x128xf32>
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[OT]] into %{{.*}}[%[[B]], %[[H0]], %[[Q0]], 0] [1, 4, %[[QN]], 128]
// No q_len x kv_len value, no broadcast of K/V to the 32 query heads:
// CHECK-NOT: tensor<?x32x?x?xf32>
// CHECK-NOT: tensor<?x32x?x128xf32> to tensor
// CHECK-NOT: attn.sdpa
// Split-K (flash-decoding): a query of one block (q_len <= 64) whose
// batch x 8 KV heads is below 16 gets parts = min(ceil(16 / (B*8)),
// kv_len / 512); the forall gains a part dim, each part folds keys
// [lo + s*per, lo + (s+1)*per) of the block's range into its state and
// writes it to the workspace (the output write has 0 rows then), and a merge
// loop (0 iterations without split) combines the parts by log-sum-exp. Tiles
// of at most 16 rows (all heads of the group) take 1024 keys.
// SPLIT-LABEL: func.func @causal_gqa(
// SPLIT-DAG: %[[QLEN:.*]] = tensor.dim %{{.*}}, %c2 : tensor<?x32x?x128xf32>
// SPLIT-DAG: %[[KVLEN:.*]] = tensor.dim %{{.*}}, %c2 : tensor<?x8x?x128xf32>
// SPLIT: %[[ITEMS:.*]] = arith.muli %{{.*}}, %c8
// SPLIT: %[[IT1:.*]] = arith.maxsi %[[ITEMS]], %c1
// SPLIT: %[[WANT1:.*]] = arith.ceildivsi %c16, %[[IT1]]
// SPLIT: %[[WANT2:.*]] = arith.divsi %[[KVLEN]], %c512
// SPLIT: %[[WANT:.*]] = arith.minsi %[[WANT1]], %[[WANT2]]
// SPLIT: %[[ONEB:.*]] = arith.cmpi sle, %[[QLEN]], %c64
// SPLIT: %[[WORTH:.*]] = arith.cmpi sgt, %[[WANT]], %c1
// SPLIT: %[[SPLIT:.*]] = arith.andi %[[ONEB]], %[[WORTH]]
// SPLIT: %[[NS:.*]] = arith.select %[[SPLIT]], %[[WANT]], %c1
// SPLIT: scf.forall (%[[B:.*]], %[[S:.*]], %[[G:.*]], %{{.*}}) in (%{{.*}}, %[[NS]], 8, %{{.*}}) shared_outs({{.*}}) -> (tensor<?x32x?x128xf32>, tensor<?x8x?x4x?x128xf32>, tensor<?x8x?x4x?xf32>, tensor<?x8x?x4x?xf32>)
// SPLIT: %[[FEW:.*]] = arith.cmpi slt, %{{.*}}, %c17
// SPLIT: arith.select %[[FEW]], %c1, %c64
// SPLIT: %[[PER:.*]] = arith.ceildivsi %{{.*}}, %[[NS]]
// SPLIT: arith.muli %[[S]], %[[PER]]
// SPLIT: %[[STEP:.*]] = arith.select %[[FEW]], %c1024, %c64
// SPLIT: scf.for {{.*}} step %[[STEP]]
// SPLIT: attn.online_attention
// SPLIT: %[[OUTROWS:.*]] = arith.select %[[SPLIT]], %c0, %{{.*}}
// SPLIT: scf.forall.in_parallel
// SPLIT-NEXT: tensor.parallel_insert_slice {{.*}} [1, 4, %[[OUTROWS]], 128]
// SPLIT-NEXT: tensor.parallel_insert_slice {{.*}}[%[[B]], %[[G]], %[[S]], 0, 0, 0]
// SPLIT-NEXT: tensor.parallel_insert_slice {{.*}}[%[[B]], %[[G]], %[[S]], 0, 0]
// SPLIT-NEXT: tensor.parallel_insert_slice {{.*}}[%[[B]], %[[G]], %[[S]], 0, 0]
// SPLIT: } {attn.tiles = #attn.tiles<q_block = 64, kv_block = 64, decode_kv_block = 1024, split_target = 16, split_min_keys = 512>}
// SPLIT: %[[MB:.*]] = arith.select %[[SPLIT]], %{{.*}}, %c0
// SPLIT: scf.forall ({{.*}}) in (%[[MB]], 8)
// SPLIT: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]
// SPLIT: arith.maximumf
// SPLIT: linalg.generic
// SPLIT: math.exp
// SPLIT: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel", "parallel"]
// SPLIT: math.exp
// SPLIT: attn.online_finalize
// SPLIT: } {attn.split_k_merge}
// SIZES-LABEL: func.func @causal_gqa(
// SIZES: arith.ceildivsi %{{.*}}, %c32
// SIZES: scf.for {{.*}} step %c16
func.func @causal_gqa(%q: tensor<?x32x?x128xf32>, %k: tensor<?x8x?x128xf32>, %v: tensor<?x8x?x128xf32>) -> tensor<?x32x?x128xf32> {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x32x?x128xf32>) {mask = #attn.mask<causal>, scale = 0.088388347648318433 : f64}
      : (tensor<?x32x?x128xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>) -> tensor<?x32x?x128xf32>
  return %o : tensor<?x32x?x128xf32>
}

// -----

// The loop bounds skip masked blocks: with the block's first row at
// p = q0 + kv_len - q_len, hi = clamp(p + qn, 0, kv_len) ends the key range
// at the diagonal, fullHi = clamp(p + 1, 0, hi) ends the unmasked range.
// CHECK-LABEL: func.func @causal_bounds(
// CHECK: scf.forall
// CHECK: %[[Q0:.*]] = arith.muli
// CHECK: %[[QN:.*]] = arith.minsi
// CHECK: %[[KVLEN:.*]] = tensor.dim %{{.*}}, %c2 : tensor<1x2x?x16xf32>
// CHECK: %[[P:.*]] = affine.apply #{{.*}}(%[[Q0]])[%[[KVLEN]], %{{.*}}]
// CHECK: %[[E:.*]] = arith.addi %[[P]], %[[QN]]
// CHECK: %[[E3:.*]] = arith.maxsi %[[E]], %c0
// CHECK: %[[HI:.*]] = arith.minsi %[[E3]], %[[KVLEN]]
// CHECK: %[[F:.*]] = arith.addi %[[P]], %c1
// CHECK: %[[F3:.*]] = arith.maxsi %[[F]], %c0
// CHECK: %[[F4:.*]] = arith.minsi %[[F3]], %[[HI]]
// CHECK: %[[W:.*]] = arith.divsi %[[F4]], %[[AL:.*]] : index
// CHECK: %[[FH:.*]] = arith.muli %[[W]], %[[AL]] : index
// CHECK: scf.for %{{.*}} = %c0 to %[[FH]]
// CHECK: %[[N1:.*]] = arith.subi %[[HI]], %[[FH]]
// CHECK: scf.for %{{.*}} = %c0 to %[[N1]]
func.func @causal_bounds(%q: tensor<1x2x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32> {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<1x2x?x16xf32>) {mask = #attn.mask<causal>, scale = 0.25 : f64}
      : (tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32>
  return %o : tensor<1x2x?x16xf32>
}

// -----

// Sliding window: three loops, the window's lower edge and the diagonal
// masked, the middle unmasked; keys before lo are never visited.
// CHECK-LABEL: func.func @sliding(
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step
// CHECK: attn.online_attention {{.*}} {mask = #attn.mask<sliding_window>, scale = 1.250000e-01 : f64, window = 4096 : i64}
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step
// CHECK: attn.online_attention {{.*}} {scale = 1.250000e-01 : f64}
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step
// CHECK: attn.online_attention {{.*}} {mask = #attn.mask<sliding_window>, scale = 1.250000e-01 : f64, window = 4096 : i64}
func.func @sliding(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<sliding_window>, window = 4096 : i64, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// Bidirectional cross attention, q_len != kv_len, different v head dim, key
// padding: one unmasked loop whose end is min(kv_lengths[b], kv_len); no
// causal offset.
// CHECK-LABEL: func.func @cross_padding(
// CHECK-SAME: %[[L:[^:]*]]: tensor<?xi32>
// CHECK-NOT: arith.subi %{{.*}}, %{{.*}} : index
// CHECK: scf.forall (%[[B:.*]], %{{.*}}, %{{.*}}) in
// CHECK: %[[LEN:.*]] = tensor.extract %[[L]][%[[B]]] : tensor<?xi32>
// CHECK: %[[LENI:.*]] = arith.index_cast %[[LEN]] : i32 to index
// CHECK: %[[M:.*]] = arith.maxsi %[[LENI]], %c0
// CHECK: %[[LIM:.*]] = arith.minsi %[[M]], %{{.*}}
// CHECK: scf.for %{{.*}} = %c0 to %[[LIM]] step
// CHECK: attn.online_attention {{.*}} {scale = 1.250000e-01 : f64} : (tensor<1x?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<1x?x32xf32>
// CHECK-NOT: scf.for
// CHECK: attn.online_finalize
func.func @cross_padding(%q: tensor<?x12x?x64xf32>, %k: tensor<?x12x?x64xf32>, %v: tensor<?x12x?x32xf32>, %lens: tensor<?xi32>, %init: tensor<?x12x?x32xf32>) -> tensor<?x12x?x32xf32> {
  %o = attn.sdpa %q, %k, %v kv_lengths(%lens : tensor<?xi32>) outs(%init : tensor<?x12x?x32xf32>) {scale = 0.125 : f64}
      : (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x32xf32>) -> tensor<?x12x?x32xf32>
  return %o : tensor<?x12x?x32xf32>
}

// -----

// Top-left alignment: no kv_len - q_len offset.
// CHECK-LABEL: func.func @top_left(
// CHECK-NOT: arith.subi %{{.*}}, %{{.*}} : index
// CHECK: scf.forall
func.func @top_left(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, align = #attn.align<top_left>, scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// Softcap and T5's relative bias travel to every tile; the bias table is
// the group's heads' columns [g * G, g * G + G).
// CHECK-LABEL: func.func @softcap_bias(
// CHECK-SAME: %[[T:[^:]*]]: tensor<32x8xf32>
// CHECK: scf.forall (%{{.*}}, %[[G:.*]], %{{.*}}) in
// CHECK: %[[H0:.*]] = affine.apply #{{.*}}(%[[G]])
// CHECK: %[[TT:.*]] = tensor.extract_slice %[[T]][0, %[[H0]]] [32, 2] [1, 1] : tensor<32x8xf32> to tensor<32x2xf32>
// CHECK: attn.online_attention {{.*}} bias_table(%[[TT]] : tensor<32x2xf32>, %c0) {relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = false>, scale = 1.000000e+00 : f64, softcap = 3.000000e+01 : f64}
func.func @softcap_bias(%q: tensor<?x8x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>, %t: tensor<32x8xf32>) -> tensor<?x8x?x64xf32> {
  %o = attn.sdpa %q, %k, %v bias_table(%t : tensor<32x8xf32>) outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 1.0 : f64, softcap = 30.0 : f64,
       relative_bias = #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = false>}
      : (tensor<?x8x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// bf16 inputs accumulate in f32; the result is bf16.
// CHECK-LABEL: func.func @bf16(
// CHECK: tensor.splat %{{.*}}[%{{.*}}] : tensor<2x?x128xf32>
// CHECK: attn.online_attention {{.*}} : (tensor<2x?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<2x?x128xf32>, tensor<2x?xf32>, tensor<2x?xf32>)
// CHECK: attn.online_finalize {{.*}} : (tensor<2x?x128xf32>, tensor<2x?xf32>) -> tensor<2x?x128xbf16>
func.func @bf16(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x4x?x128xbf16> {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x4x?x128xbf16>) {scale = 0.088 : f64}
      : (tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>) -> tensor<?x4x?x128xbf16>
  return %o : tensor<?x4x?x128xbf16>
}

// -----

// Reference functions are left unfused.
// CHECK-LABEL: func.func @kept_reference(
// CHECK: attn.sdpa
// CHECK-NOT: scf.forall
func.func @kept_reference(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> attributes {attn.reference} {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x8x?x64xf32>) {scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// attn.paged_sdpa: the same loop nest; each row's query sits at its own
// kv_lengths[b] - q_len (the query is the row's last tokens; the tile's
// q_pos, from the op's TilingInterface), the rows' key limit is its length,
// and each key loop runs over tiles of keys like the contiguous one: the
// row's op lists its pages up to ceil(limit / P), and each tile (tiling
// shifts the list) reads the KV head's page pools from the page of its own
// first key kb / P: a tile spans pages, and the pages past it are there to
// prefetch from.
// CHECK-LABEL: func.func @paged(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<?x8x?x64xf32>, %[[KC:[^:]*]]: tensor<?x2x?x64xf32>, %[[VC:[^:]*]]: tensor<?x2x?x64xf32>, %[[T:[^:]*]]: tensor<?x?xi32>, %[[L:[^:]*]]: tensor<?xi64>
// CHECK-DAG: %[[QLEN:.*]] = tensor.dim %[[Q]], %c2
// CHECK-DAG: %[[P:.*]] = tensor.dim %[[KC]], %c2
// CHECK: scf.forall (%[[B:.*]], %[[G:.*]], %{{.*}}) in (%{{.*}}, 2, %{{.*}})
// CHECK: %[[Q0:.*]] = arith.muli
// CHECK: %[[SHIFT:.*]] = arith.subi %[[Q0]], %[[QLEN]] : index
// CHECK: %[[LEN:.*]] = tensor.extract %[[L]][%[[B]]] : tensor<?xi64>
// CHECK: %[[LENI:.*]] = arith.index_cast %[[LEN]] : i64 to index
// CHECK: %[[LIM:.*]] = arith.minsi %{{.*}}, %{{.*}}
// CHECK: %[[QP:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[KP:.*]] = tensor.extract_slice %[[KC]][0, %[[G]], 0, 0] [%{{.*}}, 1, %[[P]], 64] [1, 1, 1, 1] : tensor<?x2x?x64xf32> to tensor<?x?x64xf32>
// CHECK: %[[VP:.*]] = tensor.extract_slice %[[VC]][0, %[[G]], 0, 0] [%{{.*}}, 1, %{{.*}}, 64] [1, 1, 1, 1] : tensor<?x2x?x64xf32> to tensor<?x?x64xf32>
// CHECK: %[[PEND:.*]] = arith.ceildivsi %[[LIM]], %[[P]] : index
// CHECK: %[[NUM:.*]] = arith.subi %[[PEND]], %{{.*}} : index
// CHECK: scf.for %[[KB:.*]] = %c0 to %{{.*}} step %c64
// CHECK: %[[KN:.*]] = affine.min #{{.*}}(%[[KB]])
// CHECK: %[[FIRST:.*]] = arith.divsi %[[KB]], %[[P]] : index
// CHECK: %[[SKIP:.*]] = arith.subi %[[FIRST]], %{{.*}} : index
// CHECK: %[[LEFT:.*]] = arith.subi %[[NUM]], %[[SKIP]] : index
// CHECK: %[[AT:.*]] = affine.apply #{{.*}}()[%[[SKIP]], %{{.*}}]
// CHECK: %[[PAGES:.*]] = tensor.extract_slice %[[T]][%[[B]], %[[AT]]] [1, %[[LEFT]]] [1, 1] : tensor<?x?xi32> to tensor<?xi32>
// CHECK: attn.online_attention %{{.*}}, %[[KP]], %[[VP]], {{.*}}, %[[QP]], %[[KB]] pages(%[[PAGES]] : tensor<?xi32>, %[[KN]]) {scale = 1.250000e-01 : f64} : (tensor<4x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>,
// CHECK: scf.for
// CHECK: attn.online_attention {{.*}} pages({{.*}}) {mask = #attn.mask<causal>, scale = 1.250000e-01 : f64}
// CHECK: attn.online_finalize
func.func @paged(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x?x64xf32>, %vc: tensor<?x2x?x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>
  return %0 : tensor<?x8x?x64xf32>
}

// -----

// The partial form: the row's offset is q_pos[b] (not its length - q_len),
// and each row's max and sum go to the stats destination [B, Hq, Sq, 2]
// next to the normalized block; with split-K the merge writes the merged
// max and sum.
// CHECK-LABEL: func.func @paged_part(
// CHECK-SAME: %[[POS:[^:]*]]: tensor<?xi64>, %[[INIT:[^:]*]]: tensor<?x8x?x64xf32>, %[[SINIT:[^:]*]]: tensor<?x8x?x2xf32>
// CHECK: %[[R:.*]]:2 = scf.forall (%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}}, 2, %{{.*}}) shared_outs(%[[O:.*]] = %[[INIT]], %[[S:.*]] = %[[SINIT]])
// CHECK: %[[P:.*]] = tensor.extract %[[POS]][%[[B]]] : tensor<?xi64>
// CHECK: arith.index_cast %[[P]] : i64 to index
// CHECK: %[[F:.*]] = attn.online_finalize %[[ST:[^#]*]]#0, %[[ST]]#2
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[F]] into %[[O]]
// CHECK-NEXT: tensor.parallel_insert_slice %[[ST]]#1 into %[[S]][%[[B]], %{{.*}}, %{{.*}}, 0] [1, 4, %{{.*}}, 1] [1, 1, 1, 1] : tensor<4x?xf32> into tensor<?x8x?x2xf32>
// CHECK-NEXT: tensor.parallel_insert_slice %[[ST]]#2 into %[[S]][%[[B]], %{{.*}}, %{{.*}}, 1] [1, 4, %{{.*}}, 1] [1, 1, 1, 1] : tensor<4x?xf32> into tensor<?x8x?x2xf32>
// CHECK: return %[[R]]#0, %[[R]]#1
// SPLIT-LABEL: func.func @paged_part(
// SPLIT: scf.forall {{.*}} -> (tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>, tensor<?x2x?x4x?x64xf32>, tensor<?x2x?x4x?xf32>, tensor<?x2x?x4x?xf32>)
// SPLIT: %[[M:.*]]:2 = scf.forall (%{{.*}}, %{{.*}}) in (%{{.*}}, 2) shared_outs(%{{.*}} = %{{.*}}#0, %[[MS:.*]] = %{{.*}}#1)
// SPLIT: %[[MX:.*]] = linalg.generic
// SPLIT: arith.maximumf
// SPLIT: %[[L:.*]] = linalg.generic
// SPLIT: attn.online_finalize
// SPLIT: tensor.parallel_insert_slice %[[MX]] into %[[MS]][{{.*}}, 0] [1, 4, %{{.*}}, 1]
// SPLIT-NEXT: tensor.parallel_insert_slice %[[L]] into %[[MS]][{{.*}}, 1] [1, 4, %{{.*}}, 1]
// SPLIT: return %[[M]]#0, %[[M]]#1
func.func @paged_part(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x?x64xf32>, %vc: tensor<?x2x?x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %pos: tensor<?xi64>, %init: tensor<?x8x?x64xf32>, %sinit: tensor<?x8x?x2xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>) {
  %0, %1 = attn.paged_sdpa %q, %kc, %vc, %table, %lens q_pos(%pos : tensor<?xi64>) outs(%init : tensor<?x8x?x64xf32>, %sinit : tensor<?x8x?x2xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>
  return %0, %1 : tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>
}

// -----

// A bf16 paged cache with an f32 query: bf16 K/V tiles, f32 state.
// CHECK-LABEL: func.func @paged_bf16(
// CHECK: tensor.extract_slice %{{.*}} : tensor<?x2x?x64xbf16> to tensor<?x?x64xbf16>
// CHECK: attn.online_attention {{.*}} : (tensor<4x?x64xf32>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<4x?x64xf32>, tensor<4x?xf32>, tensor<4x?xf32>)
func.func @paged_bf16(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x?x64xbf16>, %vc: tensor<?x2x?x64xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %init: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %0 = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%init : tensor<?x8x?x64xf32>) {scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>
  return %0 : tensor<?x8x?x64xf32>
}

// -----

// Chunked attention over a range that starts at token range_start[b] of its
// sequence: the chunk of a row at range position p starts at p - ((p +
// range_start) mod 40), and the masked tiles carry range_start to the
// micro-kernel's per-key test; the unmasked ones need none.
// CHECK-LABEL: func.func @paged_part_chunked(
// CHECK-SAME: %[[START:[^:]*]]: tensor<?xi64>, %{{[^:]*}}: tensor<?x8x?x64xf32>, %{{[^:]*}}: tensor<?x8x?x2xf32>
// CHECK: scf.forall (%[[B:[^,]*]],
// CHECK: %[[RS:.*]] = tensor.extract %[[START]][%[[B]]] : tensor<?xi64>
// CHECK: %[[ORIGIN:.*]] = arith.index_cast %[[RS]] : i64 to index
// CHECK: %[[ABS:.*]] = arith.addi %[[FIRST:.*]], %[[ORIGIN]] : index
// CHECK: %[[REM:.*]] = arith.remsi %[[ABS]], %c40 : index
// CHECK: attn.online_attention {{.*}} range_start(%[[ORIGIN]]) {mask = #attn.mask<chunked>, scale = 1.250000e-01 : f64, window = 40 : i64}
// CHECK: attn.online_attention {{.*}} pages({{[^)]*}}) {scale = 1.250000e-01 : f64}
func.func @paged_part_chunked(%q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x?x64xf32>, %vc: tensor<?x2x?x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>, %pos: tensor<?xi64>, %start: tensor<?xi64>, %init: tensor<?x8x?x64xf32>, %sinit: tensor<?x8x?x2xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>) {
  %0, %1 = attn.paged_sdpa %q, %kc, %vc, %table, %lens q_pos(%pos : tensor<?xi64>) range_start(%start : tensor<?xi64>) outs(%init : tensor<?x8x?x64xf32>, %sinit : tensor<?x8x?x2xf32>) {mask = #attn.mask<chunked>, window = 40 : i64, scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>
  return %0, %1 : tensor<?x8x?x64xf32>, tensor<?x8x?x2xf32>
}
