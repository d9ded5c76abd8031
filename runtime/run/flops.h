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

/* The same for chunked local attention (causal within chunks of `chunk`
 * positions). O(q_len). */
static inline double attn_rt_visible_pairs_chunked(int64_t q_len,
                                                   int64_t kv_len,
                                                   int64_t chunk) {
  double pairs = 0;
  for (int64_t i = 0; i < q_len; ++i) {
    int64_t pos = i + kv_len - q_len;
    int64_t hi = pos < kv_len - 1 ? pos : kv_len - 1;
    int64_t lo = pos >= 0 ? pos - pos % chunk : 0;
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

/* Gated DeltaNet (linear attention), per value head and chunk of C tokens
 * of the chunkwise-parallel (WY/UT) form: the products over the chunk's
 * triangles counted on the triangles only (the kernel skips the blocks
 * above the diagonal; it still multiplies the zeros inside the diagonal
 * blocks, which are not counted), the triangular solve exactly:
 *   K·Kᵀ (strictly lower)            C·(C − 1)·dk
 *   Q·Kᵀ (with the diagonal)         C·(C + 1)·dk
 *   T (forward substitution)         C³/3
 *   T·(β·V), T·(β·e^c·K) (T strictly lower)  C·(C − 1)·dv, C·(C − 1)·dk
 *   W·S, Q·S, Kᵀ·V'                  2·C·dk·dv each
 *   (Q·Kᵀ⊙Γ)·V'                      C·(C + 1)·dv
 * = C²·(3·dk + 2·dv) − C·dk + 6·C·dk·dv + C³/3, times S / C chunks (a
 * partial chunk counted by its length). The recurrent form does 7·dk·dv
 * per token (decay, Sᵀk, rank-1 update, Sᵀq). */
static inline double attn_rt_gated_delta_flops(int64_t batch, int64_t heads,
                                               int64_t seq, int64_t dk,
                                               int64_t dv, int64_t chunk) {
  double c = (double)chunk, k = (double)dk, v = (double)dv;
  double perChunk =
      c * c * (3.0 * k + 2.0 * v) - c * k + 6.0 * c * k * v + c * c * c / 3.0;
  return (double)batch * (double)heads * perChunk * (double)seq / c;
}

static inline double attn_rt_gated_delta_recurrent_flops(int64_t batch,
                                                         int64_t heads,
                                                         int64_t seq,
                                                         int64_t dk,
                                                         int64_t dv) {
  return 7.0 * (double)batch * (double)heads * (double)seq * (double)dk *
         (double)dv;
}

/* Mamba2's SSD (the gated delta rule without the delta correction), per
 * head and chunk of C tokens of the chunked form: no K·Kᵀ, no solve, no
 * T products and no W·S:
 *   Q·Kᵀ (with the diagonal)         C·(C + 1)·dk
 *   Q·S, Kᵀ·V'                       2·C·dk·dv each
 *   (Q·Kᵀ⊙Γ)·V'                      C·(C + 1)·dv
 * = C·(C + 1)·(dk + dv) + 4·C·dk·dv, times S / C chunks. The recurrent
 * form does 5·dk·dv per token (decay, rank-1 update, Sᵀq). */
static inline double attn_rt_ssd_flops(int64_t batch, int64_t heads,
                                       int64_t seq, int64_t dk, int64_t dv,
                                       int64_t chunk) {
  double c = (double)chunk, k = (double)dk, v = (double)dv;
  double perChunk = c * (c + 1.0) * (k + v) + 4.0 * c * k * v;
  return (double)batch * (double)heads * perChunk * (double)seq / c;
}

static inline double attn_rt_ssd_recurrent_flops(int64_t batch, int64_t heads,
                                                 int64_t seq, int64_t dk,
                                                 int64_t dv) {
  return 5.0 * (double)batch * (double)heads * (double)seq * (double)dk *
         (double)dv;
}

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RT_FLOPS_H */
