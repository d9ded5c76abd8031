// The bundled example parses, verifies and round-trips.
// RUN: attn-opt %attn_src_root/examples/seed-gqa-sdpa.mlir | attn-opt | FileCheck %s
// CHECK: attn.sdpa {{.*}} outs(
