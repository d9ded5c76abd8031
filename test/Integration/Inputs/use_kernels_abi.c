/* Calls the entries the --emit=obj/shared header declares that
 * use_kernels.c does not, through that header only (issue 42, class 3):
 * with -DGDN, a Gated DeltaNet kind's fused and reference kernels
 * (Hv 4, Hk 2, dk 40, dv 24: qwen3-next-gdn-r2-d40.json) on a batch of two
 * rows of different lengths; with -DSINKS, gpt-oss-small.json's sliding
 * kind's sdpa and paged kernels with attention sinks (8 query heads of 16
 * over 2 KV heads), the paged one over a pool whose pages are handed out
 * in reverse. Prints the largest difference of each pair. */
#include KERNELS_HEADER
#include "kernel_views.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned seed = 1;
static float rnd(void) {
  return (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
}
static void fill(float *p, int n, float scale, float shift) {
  for (int i = 0; i < n; ++i)
    p[i] = rnd() * scale + shift;
}
static double maxDiff(const float *a, const float *b, int n) {
  double d = 0;
  for (int i = 0; i < n; ++i)
    d = fmax(d, isfinite(a[i]) && isfinite(b[i]) ? fabs(a[i] - b[i]) : 1e30);
  return d;
}

int main(void) {
#ifdef GDN
  enum { B = 2, HK = 2, HV = 4, S = 37, DK = 40, DV = 24 };
  static float q[B * HK * S * DK], k[B * HK * S * DK], v[B * HV * S * DV],
      g[B * HV * S], beta[B * HV * S], s0[B * HV * DK * DV];
  static float o1[B * HV * S * DV], o2[B * HV * S * DV], st1[B * HV * DK * DV],
      st2[B * HV * DK * DV];
  fill(q, B * HK * S * DK, 1, 0);
  fill(k, B * HK * S * DK, 1, 0);
  fill(v, B * HV * S * DV, 1, 0);
  fill(g, B * HV * S, 0.5f, -0.3f);
  fill(beta, B * HV * S, 0.5f, 0.5f);
  fill(s0, B * HV * DK * DV, 0.1f, 0);
  int64_t lens[B] = {S, 20};
  attn_rt_memref_f32_4 mq = view(q, B, HK, S, DK), mk = view(k, B, HK, S, DK),
                       mv = view(v, B, HV, S, DV),
                       ms = view(s0, B, HV, DK, DV),
                       mo1 = view(o1, B, HV, S, DV),
                       mo2 = view(o2, B, HV, S, DV),
                       ms1 = view(st1, B, HV, DK, DV),
                       ms2 = view(st2, B, HV, DK, DV);
  attn_rt_memref_f32_3 mg = {g, g, 0, {B, HV, S}, {HV * S, S, 1}},
                       mb = {beta, beta, 0, {B, HV, S}, {HV * S, S, 1}};
  attn_rt_memref_i64_1 ml = {lens, lens, 0, {B}, {1}};
  _mlir_ciface_linear_attention_gdn(&mo1, &ms1, &mq, &mk, &mv, &mg, &mb, &ms,
                                    &ml);
  _mlir_ciface_linear_attention_gdn_reference(&mo2, &ms2, &mq, &mk, &mv, &mg,
                                              &mb, &ms, &ml);
  double d = fmax(maxDiff(o1, o2, B * HV * S * DV),
                  maxDiff(st1, st2, B * HV * DK * DV));
  printf("gdn fused vs reference, lengths %ld and %ld: max_diff %.3e\n",
         (long)lens[0], (long)lens[1], d);
  return d < 1e-4 ? 0 : 1;
#endif
#ifdef SINKS
  enum { B = 1, HQ = 8, HKV = 2, SQ = 3, SKV = 40, D = 16, P = 16, PAGES = 3 };
  static float q[B * HQ * SQ * D], k[B * HKV * SKV * D], v[B * HKV * SKV * D];
  static float kc[PAGES * HKV * P * D], vc[PAGES * HKV * P * D];
  static float o1[B * HQ * SQ * D], o2[B * HQ * SQ * D];
  float sinks[HQ] = {0.3f, 1e4f, -1e4f, -INFINITY, 30.0f, -2.0f, 0.0f, 1.0f};
  fill(q, B * HQ * SQ * D, 2, 0);
  fill(k, B * HKV * SKV * D, 2, 0);
  fill(v, B * HKV * SKV * D, 2, 0);
  int32_t table[PAGES] = {2, 1, 0};
  for (int h = 0; h < HKV; ++h)
    for (int j = 0; j < SKV; ++j)
      for (int e = 0; e < D; ++e) {
        int page = table[j / P];
        kc[((page * HKV + h) * P + j % P) * D + e] = k[(h * SKV + j) * D + e];
        vc[((page * HKV + h) * P + j % P) * D + e] = v[(h * SKV + j) * D + e];
      }
  int64_t lens[B] = {SKV};
  attn_rt_memref_f32_4 mq = view(q, B, HQ, SQ, D), mk = view(k, B, HKV, SKV, D),
                       mv = view(v, B, HKV, SKV, D),
                       mkc = view(kc, PAGES, HKV, P, D),
                       mvc = view(vc, PAGES, HKV, P, D),
                       mo1 = view(o1, B, HQ, SQ, D),
                       mo2 = view(o2, B, HQ, SQ, D);
  attn_rt_memref_i64_1 ml = {lens, lens, 0, {B}, {1}};
  attn_rt_memref_i32_2 mt = {table, table, 0, {B, PAGES}, {PAGES, 1}};
  attn_rt_memref_f32_1 msk = {sinks, sinks, 0, {HQ}, {1}};
  _mlir_ciface_sliding_attention_sdpa(&mo1, &mq, &mk, &mv, &ml, &msk);
  _mlir_ciface_sliding_attention_paged(&mo2, &mq, &mkc, &mvc, &mt, &ml, &msk);
  double d = maxDiff(o1, o2, B * HQ * SQ * D);
  printf("sinks sdpa vs paged: max_diff %.3e\n", d);
  return d < 1e-5 ? 0 : 1;
#endif
}
