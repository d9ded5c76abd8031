// Chunked local attention tiled: a query block sees keys from its first
// row's chunk start (q - q mod chunk); within one chunk the keys up to the
// first row are unmasked and the rest masked, a block that spans a chunk
// boundary masks its whole key range; keys of earlier chunks are never
// visited.
// RUN: attn-opt %s -attn-cpu-select-tiles=split-target=0 -attn-tile-attention -cse | FileCheck %s
// CHECK-LABEL: func.func @chunked(
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: scf.forall
// CHECK: %[[REM:.*]] = arith.remsi %{{.*}}, %[[C8]] : index
// CHECK: arith.cmpi slt, %[[REM]],
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK: arith.select %[[SAME]]
// CHECK: scf.for
// CHECK: attn.online_attention {{.*}} {scale = 2.500000e-01 : f64}
// CHECK: scf.for
// CHECK: attn.online_attention {{.*}} {mask = #attn.mask<chunked>, scale = 2.500000e-01 : f64, window = 8 : i64}
func.func @chunked(%q: tensor<?x8x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) -> tensor<?x8x?x16xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x?x16xf32>
  %s = tensor.dim %q, %c2 : tensor<?x8x?x16xf32>
  %init = tensor.empty(%b, %s) : tensor<?x8x?x16xf32>
  %o = attn.sdpa %q, %k, %v outs(%init : tensor<?x8x?x16xf32>) {mask = #attn.mask<chunked>, window = 8 : i64, scale = 0.25 : f64} : (tensor<?x8x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x8x?x16xf32>
  return %o : tensor<?x8x?x16xf32>
}
