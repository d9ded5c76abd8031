// A paged KV cache's tiles (attn.online_attention with pages(...)) on the
// GPU: the same kernel as the contiguous one, whose K and V staging reads
// key `key` of the block's batch row from row key % page_size of page
// table[b, key / page_size] of the pools [num_pages, Hkv, page_size, D]
// (HND). The padding past the tile's keys reads the block's last key
// (kt < hi), never a page past the sequence's; its scores are masked.
// RUN: attn-opt %s -attn-tile-attention=target=gpu\ split-target=0\ block-rows=32 -convert-attn-to-gpu | FileCheck %s
// CHECK-LABEL: func.func @entry
// CHECK: gpu.launch blocks(%{{[a-z0-9]+}}, %[[G:[a-z0-9]+]], %[[B:[a-z0-9]+]]) in
// CHECK-SAME: threads(%[[T:[a-z0-9]+]], %{{[a-z0-9]+}}, %{{[a-z0-9]+}}) in
// CHECK: scf.for %[[KT:.*]] = %{{.*}} to %[[HI:.*]] step %{{.*}} iter_args
// CHECK: scf.for %[[IDX:.*]] = %[[T]] to
// CHECK: %[[J:.*]] = arith.divui %[[IDX]]
// CHECK: %[[COL:.*]] = arith.remui %[[IDX]]
// CHECK: %[[KEY0:.*]] = arith.addi %[[KT]], %[[J]] : index
// CHECK: %[[LAST:.*]] = arith.subi %[[HI]], %{{.*}} : index
// CHECK: %[[KEY:.*]] = arith.minsi %[[KEY0]], %[[LAST]] : index
// CHECK: %[[P:.*]] = memref.dim %[[KPOOL:.*]], %c{{.*}} : memref<?x2x?x64xf32>
// CHECK: %[[SLOT:.*]] = arith.divui %[[KEY]], %[[P]] : index
// CHECK: %[[ENTRY:.*]] = memref.load %{{.*}}[%[[B]], %[[SLOT]]] : memref<?x?xi32>
// CHECK: %[[PAGE:.*]] = arith.index_cast %[[ENTRY]] : i32 to index
// CHECK: %[[ROW:.*]] = arith.remui %[[KEY]], %[[P]] : index
// CHECK: memref.load %[[KPOOL]][%[[PAGE]], %[[G]], %[[ROW]], %[[COL]]] : memref<?x2x?x64xf32>
// CHECK: memref.store %{{.*}} : memref<{{[0-9]+}}x64xf32, #gpu.address_space<workgroup>>
// The V pool the same way.
// CHECK: memref.load %{{.*}}[%[[B]], %{{.*}}] : memref<?x?xi32>
// CHECK: gpu.barrier
// CHECK-NOT: attn.online_attention

// Split-K of a paged cache: the parts from the capacity of the block table
// (its pages x the page size: the lengths are on the device), at least 512
// keys each; split-blocks=0 never splits (no workspace, no merge).
// RUN: attn-opt %s -attn-tile-attention=target=gpu\ split-target=0\ block-rows=32 -convert-attn-to-gpu | FileCheck %s --check-prefix=SPLITK
// SPLITK-DAG: %[[PSIZE:.*]] = memref.dim %{{.*}}, %c2{{.*}} : memref<?x2x?x64xf32>
// SPLITK-DAG: %[[PAGES:.*]] = memref.dim %{{.*}}, %c1{{.*}} : memref<?x?xi32>
// SPLITK: %[[CAP:.*]] = arith.muli %[[PAGES]], %[[PSIZE]]
// SPLITK: arith.divui %[[CAP]], %c512
// SPLITK: gpu.alloc async
// SPLITK: gpu.launch
// SPLITK: gpu.launch
// SPLITK: gpu.dealloc async
// RUN: attn-opt %s -attn-tile-attention=target=gpu\ split-target=0\ block-rows=32 -convert-attn-to-gpu=split-blocks=0 | FileCheck %s --check-prefix=NOSPLIT
// NOSPLIT-NOT: gpu.alloc
// NOSPLIT: gpu.launch
// NOSPLIT-NOT: gpu.launch
// NOSPLIT-NOT: gpu.alloc
func.func @entry(%out: memref<?x8x?x64xf32>, %q: tensor<?x8x?x64xf32>, %kc: tensor<?x2x?x64xf32>, %vc: tensor<?x2x?x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi64>) {
  %o = attn.paged_sdpa %q, %kc, %vc, %table, %lens outs(%q : tensor<?x8x?x64xf32>) {mask = #attn.mask<causal>, scale = 0.125 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x?xi32>, tensor<?xi64>) -> tensor<?x8x?x64xf32>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32>) -> ()
  return
}
