// The named pipeline attn-opt exposes is the one attn-compile runs.
// RUN: attn-opt %s -attn-pipeline | FileCheck %s
// RUN: attn-opt %s -attn-pipeline=stop-after=fused | FileCheck %s --check-prefix=FUSED
// A refused option stops attn-opt before any pass runs: exit 1, no output
// (it printed the error, then the module after fusion, and exited 0).
// RUN: not attn-opt %s "-attn-pipeline=latent-form=bogus stop-after=linalg" > %t.out 2> %t.err
// RUN: FileCheck %s --check-prefix=BAD < %t.err
// RUN: not test -s %t.out
// BAD: error: attn-pipeline: latent-form must be auto, expanded or absorbed, got 'bogus'
// RUN: not attn-opt %s "-attn-pipeline=vector-lanes=-4 stop-after=llvm-dialect" 2>&1 | FileCheck %s --check-prefix=LANES
// LANES: error: attn-pipeline: vector-lanes must be 16 (AVX-512), 8 (AVX2), 4 (SSE) or 0 (the tiles through linalg), got -4

// CHECK-LABEL: func.func @f(
// CHECK: scf.forall
// CHECK: attn.online_attention
// CHECK-LABEL: func.func @f_reference(
// CHECK: attn.softmax
// FUSED-LABEL: func.func @f(
// FUSED: attn.sdpa
// FUSED-NOT: scf.forall
func.func @f(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %s = attn.qk %q, %k : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x?xf32>
  %p = attn.softmax %s : tensor<?x8x?x?xf32>
  %o = attn.pv %p, %v : (tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}
