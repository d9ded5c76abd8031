/*===- flops.h - the FLOP count of one attention call ------------*- C -*-===*
 *
 * One rule for every figure this project prints (the executables' `bench`
 * and attn-bench): the convention of FlashAttention, cuDNN and Triton,
 * 2 · (d + dv) FLOPs per visible (query, key) pair and head, where the
 * visible pairs are counted exactly. Causal masks are bottom-right aligned
 * (query row i sits at key position i + kv_len - q_len): a square causal
 * call sees about half the pairs, a decode row sees every key, a sliding
 * window caps the keys of each row.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RT_FLOPS_H
#define ATTN_RT_FLOPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The (query, key) pairs one head sees; window 0 means none (only with
 * causal != 0 does a window apply). O(q_len). */
static inline double attn_rt_visible_pairs(int64_t q_len, int64_t kv_len,
                                           int causal, int64_t window) {
  if (!causal)
    return (double)q_len * (double)kv_len;
  double pairs = 0;
  for (int64_t i = 0; i < q_len; ++i) {
    int64_t pos = i + kv_len - q_len; /* the last key this row sees */
    int64_t hi = pos < kv_len - 1 ? pos : kv_len - 1;
    int64_t lo = window > 0 ? pos - window + 1 : 0;
    if (lo < 0)
      lo = 0;
    if (hi >= lo)
      pairs += (double)(hi - lo + 1);
  }
  return pairs;
}

/* FLOPs of one call: batch · heads query heads of head dims d (Q·Kᵀ) and
 * dv (P·V). */
static inline double attn_rt_attention_flops(int64_t batch, int64_t heads,
                                             int64_t q_len, int64_t kv_len,
                                             int64_t d, int64_t dv, int causal,
                                             int64_t window) {
  return 2.0 * (double)batch * (double)heads * (double)(d + dv) *
         attn_rt_visible_pairs(q_len, kv_len, causal, window);
}

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RT_FLOPS_H */
