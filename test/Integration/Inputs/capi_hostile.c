/* The C API under hostile sizes and aliasing (issue 42, class 2), on a
 * qwen3-next library (kind 0 Gated DeltaNet Hv 4 / Hk 2, dk 40, dv 24;
 * kind 1 softmax Hq 4 / Hkv 2, D 64): element counts that wrap int64 (or
 * 128 bits), empty tensors with absurd other dims, and an `out` that
 * overlaps kv_lengths: each call returns its error code, nothing crosses
 * the C boundary, and the overlapping call computes with the lengths as
 * they were.
 *
 *   capi_hostile LIBRARY.so */
#include "attn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static attn_tensor t4(void *p, attn_dtype dt, int64_t a, int64_t b, int64_t c,
                      int64_t d) {
  int64_t s[4] = {a, b, c, d};
  return attn_tensor_contiguous(p, dt, 4, s);
}

int main(int argc, char **argv) {
  attn_model *m;
  if (argc < 2 || attn_model_open(argv[1], &m) != ATTN_OK) {
    fprintf(stderr, "open: %s\n", attn_last_error());
    return 1;
  }
  static float buf[1 << 16];
  /* q [2^61, 4, 2^59, 64]: 2^128 elements, 0 in 128 bits. */
  attn_tensor q = t4(buf, ATTN_F32, 1ll << 61, 4, 1ll << 59, 64);
  attn_tensor k = t4(buf, ATTN_F32, 1ll << 61, 2, 1, 64);
  attn_tensor o = t4(buf, ATTN_F32, 1ll << 61, 4, 1ll << 59, 64);
  attn_status s = attn_sdpa(m, 1, &q, &k, &k, NULL, NULL, &o);
  printf("sdpa 2^128 elements: status %d: %s\n", (int)s, attn_last_error());
  /* An empty gated-delta call whose batch is 2^50. */
  attn_tensor gq = t4(buf, ATTN_F32, 1ll << 50, 2, 0, 40);
  attn_tensor gv = t4(buf, ATTN_F32, 1ll << 50, 4, 0, 24);
  int64_t g3[3] = {1ll << 50, 4, 0};
  attn_tensor gg = attn_tensor_contiguous(buf, ATTN_F32, 3, g3);
  attn_tensor go = t4(buf + 100, ATTN_F32, 1ll << 50, 4, 0, 24);
  s = attn_gated_delta(m, 0, &gq, &gq, &gv, &gg, &gg, NULL, NULL, &go, NULL);
  printf("gated_delta batch 2^50 of empty rows, no state: status %d%s%s\n",
         (int)s, s ? ": " : "", s ? attn_last_error() : "");
  /* The same asking for the states: 2^50 of them. */
  int64_t st4[4] = {1ll << 50, 4, 40, 24};
  attn_tensor gs = attn_tensor_contiguous(buf, ATTN_F32, 4, st4);
  s = attn_gated_delta(m, 0, &gq, &gq, &gv, &gg, &gg, NULL, NULL, &go, &gs);
  printf("gated_delta batch 2^50 with states: status %d: %s\n", (int)s,
         attn_last_error());
  /* append_kv with k_new [2^62, 2, 0, 64]. */
  static float kc[4 * 2 * 16 * 64], vc[4 * 2 * 16 * 64];
  attn_tensor tkc = t4(kc, ATTN_F32, 4, 2, 16, 64),
              tvc = t4(vc, ATTN_F32, 4, 2, 16, 64);
  int32_t table[4] = {0, 1, 2, 3};
  int64_t ts[2] = {1, 4};
  attn_tensor tt = attn_tensor_contiguous(table, ATTN_I32, 2, ts);
  attn_tensor kn = t4(buf, ATTN_F32, 1ll << 62, 2, 0, 64);
  int64_t start[1] = {0};
  s = attn_append_kv(m, 1, &tkc, &tvc, &tt, start, NULL, &kn, &kn);
  printf("append_kv k_new [2^62, 2, 0, 64]: status %d: %s\n", (int)s,
         attn_last_error());
  /* An out that overlaps kv_lengths: the lengths are read before the
   * kernel writes. Sequence of 40 keys in pages 0..2, one query. */
  for (int i = 0; i < 4 * 2 * 16 * 64; ++i) {
    kc[i] = (float)sin(0.37 * i);
    vc[i] = (float)cos(0.11 * i);
  }
  static float qd[4 * 64], ref[4 * 64];
  for (int i = 0; i < 4 * 64; ++i)
    qd[i] = (float)sin(1.3 * i);
  attn_tensor tq = t4(qd, ATTN_F32, 1, 4, 1, 64);
  int64_t lens[1] = {40};
  attn_tensor tr = t4(ref, ATTN_F32, 1, 4, 1, 64);
  s = attn_decode_paged(m, 1, &tq, &tkc, &tvc, &tt, lens, &tr);
  /* out's buffer begins with the lengths' int64. */
  static union {
    int64_t len;
    float f[4 * 64 + 2];
  } u;
  u.len = 40;
  attn_tensor tov = t4(u.f, ATTN_F32, 1, 4, 1, 64);
  attn_status s2 = attn_decode_paged(m, 1, &tq, &tkc, &tvc, &tt, &u.len, &tov);
  double d = 0;
  for (int i = 0; i < 4 * 64; ++i)
    d = fmax(d, fabs(u.f[i] - ref[i]));
  printf("decode with out over kv_lengths: status %d %d, max_diff %.3e\n",
         (int)s, (int)s2, d);
  attn_model_close(m);
  return 0;
}
