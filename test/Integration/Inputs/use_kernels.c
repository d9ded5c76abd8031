/* Calls a kernel of a library built with attn-compile --emit=shared (or an
 * object built with --emit=obj) through its generated header, fused and
 * reference, and prints the largest difference. */
#include KERNELS_HEADER
#include "kernel_views.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  enum { B = 1, HQ = 32, HKV = 8, SQ = 7, SKV = 19, D = 128 };
  static float q[B * HQ * SQ * D], k[B * HKV * SKV * D], v[B * HKV * SKV * D];
  unsigned seed = 1;
  for (int i = 0; i < B * HQ * SQ * D; ++i)
    q[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
  for (int i = 0; i < B * HKV * SKV * D; ++i) {
    k[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
    v[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
  }
  int64_t lens[B] = {SKV};
  attn_rt_memref_f32_4 mq = view(q, B, HQ, SQ, D), mk = view(k, B, HKV, SKV, D),
                       mv = view(v, B, HKV, SKV, D);
  attn_rt_memref_i64_1 ml = {lens, lens, 0, {B}, {1}};
  static float fo[B * HQ * SQ * D], ro[B * HQ * SQ * D];
  attn_rt_memref_f32_4 fused = view(fo, B, HQ, SQ, D),
                       ref = view(ro, B, HQ, SQ, D);
  _mlir_ciface_full_attention_sdpa(&fused, &mq, &mk, &mv, &ml);
  _mlir_ciface_full_attention_sdpa_reference(&ref, &mq, &mk, &mv, &ml);
  double maxDiff = 0;
  for (int i = 0; i < B * HQ * SQ * D; ++i)
    maxDiff = fmax(maxDiff, fabs(fused.aligned[i] - ref.aligned[i]));
  printf("out [%ld, %ld, %ld, %ld] max_diff %.3e\n", (long)fused.sizes[0],
         (long)fused.sizes[1], (long)fused.sizes[2], (long)fused.sizes[3],
         maxDiff);
  return maxDiff < 1e-5 ? 0 : 1;
}
