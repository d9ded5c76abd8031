// An attention whose result is not an entry's output buffer (a block, a
// model) stays on the CPU: the GPU lowering says so.
// RUN: not attn-opt %s -attn-tile-attention=target=gpu\ split-target=0 -convert-attn-to-gpu 2>&1 | FileCheck %s
// CHECK: error: 'scf.forall' op the GPU backend compiles attention kernel entries (attn-compile --kernels): the result must be materialized into an output buffer; blocks and models run on the CPU for now
func.func @not_entry(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>,
                     %v: tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %o = attn.sdpa %q, %k, %v outs(%q : tensor<?x8x?x64xf32>) {scale = 0.125 : f64}
      : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}
