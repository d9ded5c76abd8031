/* Calls the fused kernel of an --emit=obj object with a K buffer one key
 * row shorter than its descriptor says: in a sanitizer build the kernels
 * are instrumented, so AddressSanitizer reports the kernel's read past the
 * end (sanitized-kernels.test). */
#include KERNELS_HEADER
#include "kernel_views.h"

#include <stdio.h>
#include <stdlib.h>

int main(void) {
  enum { B = 1, HQ = 32, HKV = 8, SQ = 7, SKV = 19, D = 128 };
  float *q = calloc(B * HQ * SQ * D, sizeof(float));
  float *k = calloc(B * HKV * SKV * D - D, sizeof(float)); /* a row short */
  float *v = calloc(B * HKV * SKV * D, sizeof(float));
  float *o = calloc(B * HQ * SQ * D, sizeof(float));
  int64_t lens[B] = {SKV};
  attn_rt_memref_f32_4 mq = view(q, B, HQ, SQ, D), mk = view(k, B, HKV, SKV, D),
                       mv = view(v, B, HKV, SKV, D), mo = view(o, B, HQ, SQ, D);
  attn_rt_memref_i64_1 ml = {lens, lens, 0, {B}, {1}};
  _mlir_ciface_full_attention_sdpa(&mo, &mq, &mk, &mv, &ml);
  puts("no overrun reported");
  return 0;
}
