/* A C program that uses only attn.h: opens a library built with
 * attn-compile --emit=shared (its own, and again by path), lists its kinds,
 * runs every softmax kind through attn_sdpa and every Gated DeltaNet kind
 * through attn_gated_delta against float64 references written here from
 * the definitions, and prints the errors of bad calls.
 *
 *   use_api LIBRARY.so */
#include "attn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

static unsigned seed = 7;
static float uniform(void) {
  seed = seed * 1103515245u + 12345u;
  return (float)(seed >> 8) / 16777216.0f - 0.5f;
}
static float *randoms(int64_t n, float scale) {
  float *p = malloc(sizeof(float) * (n ? n : 1));
  for (int64_t i = 0; i < n; ++i)
    p[i] = scale * uniform();
  return p;
}
static double maxAbs(const float *a, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i)
    m = fmax(m, fabs(a[i]));
  return m;
}
static double maxDiff(const float *a, const float *b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i)
    m = fmax(m, fabs((double)a[i] - b[i]));
  return m;
}

/* Softmax attention in float64: keys j < lens[b] (padding after), causal
 * bottom-right aligned (query i of Sq sits at key position Skv - Sq + i), a
 * window of the last `window` keys, tanh softcap; a row that sees no key is
 * 0. */
static void sdpaRef(const attn_kind_info *k, int64_t B, int64_t Sq,
                    int64_t Skv, const float *q, const float *kk,
                    const float *v, const int64_t *lens, float *out) {
  int64_t Hq = k->num_heads, Hkv = k->num_kv_heads, D = k->head_dim,
          Dv = k->head_dim_v, G = Hq / Hkv;
  double *p = malloc(sizeof(double) * (Skv ? Skv : 1));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        int64_t len = lens[b], pos = Skv - Sq + i, g = h / G;
        const float *qr = q + ((b * Hq + h) * Sq + i) * D;
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < len; ++j) {
          int seen = !k->causal || j <= pos;
          if (k->window > 0 && j <= pos - k->window)
            seen = 0;
          p[j] = -INFINITY;
          if (!seen)
            continue;
          const float *kr = kk + ((b * Hkv + g) * Skv + j) * D;
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += (double)qr[d] * kr[d];
          s *= k->scale;
          if (k->softcap > 0)
            s = k->softcap * tanh(s / k->softcap);
          p[j] = s;
          m = fmax(m, s);
        }
        float *o = out + ((b * Hq + h) * Sq + i) * Dv;
        for (int64_t d = 0; d < Dv; ++d)
          o[d] = 0;
        if (m == -INFINITY)
          continue;
        for (int64_t j = 0; j < len; ++j)
          sum += p[j] == -INFINITY ? 0 : exp(p[j] - m);
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < len; ++j)
            if (p[j] != -INFINITY)
              acc += exp(p[j] - m) / sum * v[((b * Hkv + g) * Skv + j) * Dv + d];
          o[d] = (float)acc;
        }
      }
  free(p);
}

/* The gated delta rule in float64, token by token: S <- S e^g (row i by
 * e^g[i] for a kind with channel_gate: Kimi Delta Attention, g [B, Hv, S,
 * dk]); S <- S + k (x) beta (v - S^T k); o = S^T (scale q). */
static void gdnRef(const attn_kind_info *k, int64_t B, int64_t S,
                   const float *q, const float *kk, const float *v,
                   const float *g, const float *beta, const float *s0,
                   const int64_t *lens, float *out, float *s1) {
  int64_t Hv = k->num_heads, Hk = k->num_kv_heads, dk = k->head_dim,
          dv = k->head_dim_v, r = Hv / Hk;
  double *st = malloc(sizeof(double) * dk * dv), *kv = malloc(sizeof(double) * dv);
  memset(out, 0, sizeof(float) * B * Hv * S * dv);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hv; ++h) {
      for (int64_t i = 0; i < dk * dv; ++i)
        st[i] = s0 ? s0[(b * Hv + h) * dk * dv + i] : 0;
      for (int64_t t = 0; t < lens[b]; ++t) {
        const float *qr = q + ((b * Hk + h / r) * S + t) * dk;
        const float *kr = kk + ((b * Hk + h / r) * S + t) * dk;
        const float *vr = v + ((b * Hv + h) * S + t) * dv;
        double be = beta[(b * Hv + h) * S + t];
        for (int64_t i = 0; i < dk; ++i) {
          double decay = exp(k->channel_gate
                                 ? g[((b * Hv + h) * S + t) * dk + i]
                                 : g[(b * Hv + h) * S + t]);
          for (int64_t j = 0; j < dv; ++j)
            st[i * dv + j] *= decay;
        }
        /* Without the delta correction (Mamba2's SSD) kv stays 0. */
        for (int64_t j = 0; j < dv; ++j) {
          kv[j] = 0;
          for (int64_t i = 0; i < dk && !k->no_delta; ++i)
            kv[j] += st[i * dv + j] * kr[i];
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j)
            st[i * dv + j] += kr[i] * be * (vr[j] - kv[j]);
        for (int64_t j = 0; j < dv; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < dk; ++i)
            acc += st[i * dv + j] * k->scale * qr[i];
          out[((b * Hv + h) * S + t) * dv + j] = (float)acc;
        }
      }
      for (int64_t i = 0; i < dk * dv; ++i)
        s1[(b * Hv + h) * dk * dv + i] = (float)st[i];
    }
  free(st);
  free(kv);
}

/* IEEE half from a float (round to nearest even; the test's values are
 * normal halves or round to subnormals/zero) and back. */
static uint16_t toHalf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a >= 0x477ff000u) /* rounds past 65504: inf (never in the test) */
    return (uint16_t)(sign | 0x7c00u);
  if (a < 0x38800000u) { /* below 2^-14: a subnormal half */
    float m;
    memcpy(&m, &a, 4);
    return (uint16_t)(sign | (uint32_t)lrintf(m * 16777216.0f));
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u); /* round at bit 13 */
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}
static float fromHalf(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu,
           m = h & 0x3ffu;
  float f = e ? ldexpf((float)(m | 0x400u), (int)e - 25)
              : ldexpf((float)m, -24);
  uint32_t u;
  memcpy(&u, &f, 4);
  u |= sign;
  memcpy(&f, &u, 4);
  return f;
}

/* The cache's element type: values rounded to it (round to nearest even),
 * and a copy in it (2-byte elements for bf16/f16). */
static float roundOne(attn_dtype dt, float x) {
  if (dt == ATTN_F16)
    return fromHalf(toHalf(x));
  if (dt == ATTN_BF16) {
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&x, &u, 4);
  }
  return x;
}
static void roundTo(attn_dtype dt, float *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = roundOne(dt, x[i]);
}
static void *narrow(attn_dtype dt, const float *x, int64_t n) {
  if (dt == ATTN_F32) {
    float *c = malloc(sizeof(float) * (n ? n : 1));
    memcpy(c, x, sizeof(float) * n);
    return c;
  }
  uint16_t *c = malloc(2 * (n ? n : 1));
  for (int64_t i = 0; i < n; ++i) {
    if (dt == ATTN_F16) {
      c[i] = toHalf(x[i]);
    } else {
      uint32_t u;
      memcpy(&u, &x[i], 4); /* x is already rounded to bf16 */
      c[i] = (uint16_t)(u >> 16);
    }
  }
  return c;
}
static const char *dtypeName(attn_dtype dt) {
  return dt == ATTN_BF16 ? "bf16" : dt == ATTN_F16 ? "f16" : "f32";
}

static int failures = 0;
/* The caller's MXCSR (its exception flags aside) at the start: the
 * generated code flushes subnormals (FTZ/DAZ) while it runs and must give
 * the caller its own MXCSR back. */
static unsigned initialCsr;
static unsigned callerCsr(void) {
#if defined(__x86_64__)
  return _mm_getcsr() & ~0x3fu;
#else
  return 0;
#endif
}
static void expectOk(attn_status s, const char *what) {
  if (s != ATTN_OK) {
    printf("FAIL %s: status %d: %s\n", what, (int)s, attn_last_error());
    ++failures;
  }
  if (callerCsr() != initialCsr) {
    printf("FAIL %s: the MXCSR is %#x after the call, %#x before\n", what,
           callerCsr(), initialCsr);
    ++failures;
  }
}
static void report(const char *what, const float *got, const float *want,
                   int64_t n) {
  double err = maxDiff(got, want, n) / fmax(1.0, maxAbs(want, n));
  printf("%s: max error %s 1e-5 of max |reference|\n", what,
         err <= 1e-5 ? "<=" : ">");
  if (!(err <= 1e-5)) {
    printf("  (error %.3e)\n", err);
    ++failures;
  }
}
/* Prints a failing call's status and message. */
static void bad(const char *what, attn_status s) {
  printf("%s -> %d: %s\n", what, (int)s, attn_last_error());
  if (s == ATTN_OK)
    ++failures;
}

/* `bytes` of `data` (freed) moved into a buffer of attn_buffer_alloc. */
static void *poolOf(void *data, int64_t bytes) {
  void *p = NULL;
  expectOk(attn_buffer_alloc(bytes, &p), "attn_buffer_alloc");
  if (p)
    memcpy(p, data, (size_t)bytes);
  free(data);
  return p;
}

/* attn_buffer_alloc: 64-byte aligned below 4 MiB, 2 MiB from there on,
 * writable to the end; its errors. */
static void testBuffers(void) {
  int64_t sizes[4] = {1, 100, 4 << 20, (16 << 20) + 3};
  int aligned = 1;
  for (int i = 0; i < 4; ++i) {
    unsigned char *p = NULL;
    expectOk(attn_buffer_alloc(sizes[i], (void **)&p), "attn_buffer_alloc");
    uintptr_t want = sizes[i] >= (4 << 20) ? (2 << 20) : 64;
    if (!p || (uintptr_t)p % want) {
      printf("FAIL attn_buffer_alloc(%ld) = %p: not on a %lu-byte boundary\n",
             (long)sizes[i], (void *)p, (unsigned long)want);
      aligned = 0;
      ++failures;
    }
    if (p) {
      memset(p, 0x5a, (size_t)sizes[i]);
      expectOk(attn_buffer_free(p), "attn_buffer_free");
    }
  }
  if (aligned)
    printf("attn_buffer_alloc: 1, 100, 4 MiB, 16 MiB + 3 bytes aligned\n");
  void *p;
  bad("buffer of 0 bytes", attn_buffer_alloc(0, &p));
  bad("buffer to NULL", attn_buffer_alloc(64, NULL));
  bad("buffer of 2^62 bytes", attn_buffer_alloc((int64_t)1 << 62, &p));
  int local;
  bad("free a stack pointer", attn_buffer_free(&local));
  expectOk(attn_buffer_alloc(64, &p), "attn_buffer_alloc");
  expectOk(attn_buffer_free(p), "attn_buffer_free");
  bad("free twice", attn_buffer_free(p));
  expectOk(attn_buffer_free(NULL), "attn_buffer_free(NULL)");
}

static void testSdpa(attn_model *m, int32_t kind, const attn_kind_info *ki) {
  enum { B = 3, SQ = 3, SKV = 17 };
  int64_t Hq = ki->num_heads, Hkv = ki->num_kv_heads, D = ki->head_dim,
          Dv = ki->head_dim_v;
  int64_t qs[4] = {B, Hq, SQ, D}, ks[4] = {B, Hkv, SKV, D},
          vs[4] = {B, Hkv, SKV, Dv}, os[4] = {B, Hq, SQ, Dv};
  int64_t nq = B * Hq * SQ * D, nk = B * Hkv * SKV * D, nv = B * Hkv * SKV * Dv,
          no = B * Hq * SQ * Dv;
  float *q = randoms(nq, 2.0f), *k = randoms(nk, 2.0f), *v = randoms(nv, 1.0f);
  float *out = randoms(no, 1.0f), *ref = malloc(sizeof(float) * no);
  /* K and V in the library's --kv-dtype; the reference reads the rounded
   * values. */
  attn_dtype dt = ki->kv_dtype;
  roundTo(dt, k, nk);
  roundTo(dt, v, nv);
  void *kn = narrow(dt, k, nk), *vn = narrow(dt, v, nv);
  /* Lengths: whole, 1 key (a causal row of 3 queries sees none or one), 0. */
  int64_t lens[B] = {SKV, 1, 0};
  attn_tensor tq = attn_tensor_contiguous(q, ATTN_F32, 4, qs),
              tk = attn_tensor_contiguous(kn, dt, 4, ks),
              tv = attn_tensor_contiguous(vn, dt, 4, vs),
              to = attn_tensor_contiguous(out, ATTN_F32, 4, os);
  expectOk(attn_sdpa(m, kind, &tq, &tk, &tv, lens, NULL, &to), "attn_sdpa");
  sdpaRef(ki, B, SQ, SKV, q, k, v, lens, ref);
  printf("sdpa kind '%s' K/V %s q [%d, %ld, %d, %ld] kv_lengths 17,1,0 ",
         ki->name, dtypeName(dt), B, (long)Hq, SQ, (long)D);
  report("out", out, ref, no);

  /* Bad calls: each names the argument and what is accepted. */
  attn_tensor t = tq;
  t.dtype = ATTN_BF16;
  bad("q bf16", attn_sdpa(m, kind, &t, &tk, &tv, NULL, NULL, &to));
  t = tk;
  t.shape[3] = D + 1;
  bad("k head dim", attn_sdpa(m, kind, &tq, &t, &tv, NULL, NULL, &to));
  t = tq;
  t.rank = 3;
  bad("q rank 3", attn_sdpa(m, kind, &t, &tk, &tv, NULL, NULL, &to));
  t = tv;
  t.strides[2] = 2 * Dv;
  bad("v strided", attn_sdpa(m, kind, &tq, &tk, &t, NULL, NULL, &to));
  int64_t badLens[B] = {SKV, SKV + 1, 0};
  bad("kv_lengths", attn_sdpa(m, kind, &tq, &tk, &tv, badLens, NULL, &to));
  t = to;
  t.data = q;
  bad("out over q", attn_sdpa(m, kind, &tq, &tk, &tv, NULL, NULL, &t));
  bad("no out", attn_sdpa(m, kind, &tq, &tk, &tv, NULL, NULL, NULL));
  bad("bias table", attn_sdpa(m, kind, &tq, &tk, &tv, NULL, &tq, &to));
  bad("kind 99", attn_sdpa(m, 99, &tq, &tk, &tv, NULL, NULL, &to));
  t = tk;
  t.dtype = dt == ATTN_F32 ? ATTN_BF16 : ATTN_F32;
  bad("k of another dtype", attn_sdpa(m, kind, &tq, &t, &tv, NULL, NULL, &to));
  free(q), free(k), free(v), free(kn), free(vn), free(out), free(ref);
}

/* The pools' layouts the C API takes (strides in elements over one
 * buffer; rows contiguous): */
enum {
  LAYOUT_HND,         /* [pages, Hkv, P, D], the contiguous default */
  LAYOUT_NHD,         /* vLLM's [pages, P, Hkv, D] through strides */
  LAYOUT_HEAD_MAJOR,  /* [Hkv, pages, P, D + 8], pages and heads padded */
  LAYOUT_INTERLEAVED, /* FlashInfer's [pages, 2, P, Hkv, D]: K and V in one
                         buffer (D = Dv) */
};
static const char *layoutName[] = {"", " nhd", " head-major padded",
                                   " k/v interleaved"};
/* A pool's strides [pages, Hkv, P, d] for `layout`, and the elements its
 * buffer spans (with LAYOUT_INTERLEAVED: the K or V half's strides, the
 * span of both). */
static int64_t poolStrides(int layout, int64_t pages, int64_t Hkv, int64_t P,
                           int64_t d, int64_t st[4]) {
  int64_t r = layout == LAYOUT_HEAD_MAJOR ? d + 8 : d;
  int64_t page = P * r + 16, head = pages * page + 32;
  st[3] = 1;
  switch (layout) {
  case LAYOUT_NHD:
  case LAYOUT_INTERLEAVED:
    st[0] = (layout == LAYOUT_INTERLEAVED ? 2 : 1) * P * Hkv * d;
    st[1] = d, st[2] = Hkv * d;
    return pages * st[0];
  case LAYOUT_HEAD_MAJOR:
    st[0] = page, st[1] = head, st[2] = r;
    return Hkv * head;
  default:
    st[0] = Hkv * P * d, st[1] = P * d, st[2] = d;
    return pages * st[0];
  }
}
/* The rows of sequence b's tokens [0, len) where the pool's strides place
 * them (read here from the bytes: a kernel and attn_append_kv that agreed
 * on a wrong layout would pass the decode checks); returns those that are
 * not `rows` [B, Hkv, maxLen, d] (the cache's element type). */
static int64_t misplacedRows(const char *pool, const int64_t st[4], int64_t eb,
                             const char *rows, int64_t b, int64_t len,
                             int64_t Hkv, int64_t maxLen, int64_t d,
                             const int32_t *table, int64_t maxPages,
                             int64_t P) {
  int64_t wrong = 0;
  for (int64_t h = 0; h < Hkv; ++h)
    for (int64_t j = 0; j < len; ++j) {
      int64_t page = table[b * maxPages + j / P];
      const char *at = pool + (page * st[0] + h * st[1] + j % P * st[2]) * eb;
      wrong += memcmp(at, rows + ((b * Hkv + h) * maxLen + j) * d * eb,
                      (size_t)(d * eb)) != 0;
    }
  return wrong;
}

/* The paged cache: B sequences of lengths 0, 1, P-1, P+1 and 2P+7 whose
 * pages are scattered over a pool at random, sequence 4 sharing its first
 * page with sequence 3 (a common prefix), filled by attn_append_kv; decode
 * (Sq 1) and Sq 3 against the float64 reference of each sequence alone and
 * against attn_sdpa over its contiguous copy; then one token appended to
 * every sequence and decode over the longer cache. The pools laid out as
 * `layout` says. */
static void testPaged(attn_model *m, int32_t kind, const attn_kind_info *ki,
                      int64_t P, int layout) {
  enum { B = 5 };
  int64_t Hq = ki->num_heads, Hkv = ki->num_kv_heads, D = ki->head_dim,
          Dv = ki->head_dim_v;
  int64_t lens[B] = {0, 1, P - 1, P + 1, 2 * P + 7}, maxLen = 2 * P + 8;
  int64_t maxPages = (maxLen + P - 1) / P + 1, pages = B * maxPages + 3;
  /* Logical K/V per sequence [B, Hkv, maxLen, D], rounded to the cache's
   * element type (the reference sees what the cache holds); sequence 4's
   * first P tokens are sequence 3's. */
  attn_dtype dt = ki->kv_dtype;
  float *k = randoms(B * Hkv * maxLen * D, 2.0f),
        *v = randoms(B * Hkv * maxLen * Dv, 1.0f);
  roundTo(dt, k, B * Hkv * maxLen * D);
  roundTo(dt, v, B * Hkv * maxLen * Dv);
  for (int64_t h = 0; h < Hkv; ++h) {
    memcpy(k + ((4 * Hkv + h) * maxLen) * D, k + ((3 * Hkv + h) * maxLen) * D,
           sizeof(float) * P * D);
    memcpy(v + ((4 * Hkv + h) * maxLen) * Dv,
           v + ((3 * Hkv + h) * maxLen) * Dv, sizeof(float) * P * Dv);
  }
  /* Pages: a shuffled pool, sequence 4's page 0 = sequence 3's page 0. */
  int32_t *perm = malloc(sizeof(int32_t) * pages),
          *table = malloc(sizeof(int32_t) * B * maxPages);
  for (int64_t i = 0; i < pages; ++i)
    perm[i] = (int32_t)i;
  for (int64_t i = pages - 1; i > 0; --i) {
    seed = seed * 1103515245u + 12345u;
    int64_t j = (seed >> 8) % (i + 1);
    int32_t t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  for (int64_t i = 0; i < B * maxPages; ++i)
    table[i] = perm[i];
  table[4 * maxPages] = table[3 * maxPages];
  /* Pools full of other values (100x larger): a wrong page read shows.
   * They live in attn_buffer_alloc's buffers, as a serving loop keeps its
   * cache (one buffer for both when K and V interleave). */
  int64_t eb = dt == ATTN_F32 ? 4 : 2, kst[4], vst[4];
  int64_t kSpan = poolStrides(layout, pages, Hkv, P, D, kst),
          vSpan = poolStrides(layout, pages, Hkv, P, Dv, vst);
  int one = layout == LAYOUT_INTERLEAVED;
  float *junkK = randoms(kSpan, 100.0f), *junkV = randoms(vSpan, 100.0f);
  void *kc = poolOf(narrow(dt, junkK, kSpan), kSpan * eb),
       *vc = one ? (char *)kc + P * Hkv * D * eb
                 : poolOf(narrow(dt, junkV, vSpan), vSpan * eb);
  void *kn = narrow(dt, k, B * Hkv * maxLen * D),
       *vn = narrow(dt, v, B * Hkv * maxLen * Dv);
  free(junkK), free(junkV);
  int64_t kcs[4] = {pages, Hkv, P, D}, vcs[4] = {pages, Hkv, P, Dv},
          ts[2] = {B, maxPages}, kns[4] = {B, Hkv, maxLen, D},
          vns[4] = {B, Hkv, maxLen, Dv};
  attn_tensor tkc = attn_tensor_contiguous(kc, dt, 4, kcs),
              tvc = attn_tensor_contiguous(vc, dt, 4, vcs),
              tt = attn_tensor_contiguous(table, ATTN_I32, 2, ts),
              tkn = attn_tensor_contiguous(kn, dt, 4, kns),
              tvn = attn_tensor_contiguous(vn, dt, 4, vns);
  memcpy(tkc.strides, kst, sizeof kst);
  memcpy(tvc.strides, vst, sizeof vst);
  int64_t zeros[B] = {0, 0, 0, 0, 0};
  expectOk(attn_append_kv(m, kind, &tkc, &tvc, &tt, zeros, lens, &tkn, &tvn),
           "attn_append_kv");
  if (layout != LAYOUT_HND) {
    int64_t wrong = 0;
    for (int64_t b = 0; b < B; ++b)
      wrong += misplacedRows(kc, kst, eb, kn, b, lens[b], Hkv, maxLen, D, table,
                             maxPages, P) +
               misplacedRows(vc, vst, eb, vn, b, lens[b], Hkv, maxLen, Dv,
                             table, maxPages, P);
    printf("paged %s page_size %ld%s: %ld rows not where the strides place "
           "them\n",
           dtypeName(dt), (long)P, layoutName[layout], (long)wrong);
    failures += wrong != 0;
  }
  for (int step = 0; step < 2; ++step) {
    for (int64_t sq = 1; sq <= 3; sq += 2) {
      int64_t qs[4] = {B, Hq, sq, D}, os[4] = {B, Hq, sq, Dv};
      int64_t no = B * Hq * sq * Dv;
      float *q = randoms(B * Hq * sq * D, 2.0f), *out = randoms(no, 1.0f),
            *ref = malloc(sizeof(float) * no), *con = malloc(sizeof(float) * no);
      attn_tensor tq = attn_tensor_contiguous(q, ATTN_F32, 4, qs),
                  to = attn_tensor_contiguous(out, ATTN_F32, 4, os);
      expectOk(attn_decode_paged(m, kind, &tq, &tkc, &tvc, &tt, lens, &to),
               "attn_decode_paged");
      /* Each sequence alone: its contiguous K/V [1, Hkv, len, D]. */
      for (int64_t b = 0; b < B; ++b) {
        int64_t len = lens[b], one[1] = {len};
        float *kb = malloc(sizeof(float) * (Hkv * len * D + 1)),
              *vb = malloc(sizeof(float) * (Hkv * len * Dv + 1));
        for (int64_t h = 0; h < Hkv; ++h) {
          memcpy(kb + h * len * D, k + ((b * Hkv + h) * maxLen) * D,
                 sizeof(float) * len * D);
          memcpy(vb + h * len * Dv, v + ((b * Hkv + h) * maxLen) * Dv,
                 sizeof(float) * len * Dv);
        }
        const float *qb = q + b * Hq * sq * D;
        sdpaRef(ki, 1, sq, len, qb, kb, vb, one, ref + b * Hq * sq * Dv);
        int64_t q1[4] = {1, Hq, sq, D}, k1[4] = {1, Hkv, len, D},
                v1[4] = {1, Hkv, len, Dv}, o1[4] = {1, Hq, sq, Dv};
        void *kbn = narrow(dt, kb, Hkv * len * D),
             *vbn = narrow(dt, vb, Hkv * len * Dv);
        attn_tensor a = attn_tensor_contiguous((void *)qb, ATTN_F32, 4, q1),
                    bk = attn_tensor_contiguous(kbn, dt, 4, k1),
                    bv = attn_tensor_contiguous(vbn, dt, 4, v1),
                    bo = attn_tensor_contiguous(con + b * Hq * sq * Dv,
                                                ATTN_F32, 4, o1);
        expectOk(attn_sdpa(m, kind, &a, &bk, &bv, NULL, NULL, &bo),
                 "attn_sdpa of one sequence");
        free(kb), free(vb), free(kbn), free(vbn);
      }
      printf("paged %s page_size %ld%s %s Sq %ld lengths %ld,%ld,%ld,%ld,%ld: ",
             dtypeName(dt), (long)P, layoutName[layout],
             step ? "after append" : "", (long)sq, (long)lens[0], (long)lens[1],
             (long)lens[2], (long)lens[3], (long)lens[4]);
      report("out", out, ref, no);
      report("  = contiguous", out, con, no);
      free(q), free(out), free(ref), free(con);
    }
    /* One more token per sequence: token lens[b] of the logical K/V. */
    if (step == 0) {
      int64_t ones[B] = {1, 1, 1, 1, 1}, n1[4] = {B, Hkv, 1, D},
              n1v[4] = {B, Hkv, 1, Dv};
      float *k1 = malloc(sizeof(float) * B * Hkv * D),
            *v1 = malloc(sizeof(float) * B * Hkv * Dv);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hkv; ++h) {
          memcpy(k1 + (b * Hkv + h) * D,
                 k + ((b * Hkv + h) * maxLen + lens[b]) * D, sizeof(float) * D);
          memcpy(v1 + (b * Hkv + h) * Dv,
                 v + ((b * Hkv + h) * maxLen + lens[b]) * Dv,
                 sizeof(float) * Dv);
        }
      /* Sequence 4 shares page 0 with sequence 3, which sequence 3's new
       * token (position P + 1) does not touch. */
      void *k1n = narrow(dt, k1, B * Hkv * D), *v1n = narrow(dt, v1, B * Hkv * Dv);
      attn_tensor a1 = attn_tensor_contiguous(k1n, dt, 4, n1),
                  b1 = attn_tensor_contiguous(v1n, dt, 4, n1v);
      expectOk(attn_append_kv(m, kind, &tkc, &tvc, &tt, lens, ones, &a1, &b1),
               "attn_append_kv one token");
      for (int64_t b = 0; b < B; ++b)
        ++lens[b];
      free(k1), free(v1), free(k1n), free(v1n);
    }
  }
  /* Bad calls. */
  int64_t qs[4] = {B, Hq, 1, D}, os[4] = {B, Hq, 1, Dv};
  float *q = randoms(B * Hq * D, 1.0f), *out = randoms(B * Hq * Dv, 1.0f);
  attn_tensor tq = attn_tensor_contiguous(q, ATTN_F32, 4, qs),
              to = attn_tensor_contiguous(out, ATTN_F32, 4, os);
  if (P == 16 && layout == LAYOUT_HND) {
    int32_t saved = table[2 * maxPages];
    table[2 * maxPages] = (int32_t)(pages + 5);
    bad("page out of the pool",
        attn_decode_paged(m, kind, &tq, &tkc, &tvc, &tt, lens, &to));
    table[2 * maxPages] = saved;
    int64_t tooLong[B] = {0, 0, maxPages * P + 1, 0, 0};
    bad("length past the pages",
        attn_decode_paged(m, kind, &tq, &tkc, &tvc, &tt, tooLong, &to));
    attn_tensor t = tt;
    t.dtype = ATTN_I64;
    bad("block_table i64",
        attn_decode_paged(m, kind, &tq, &tkc, &tvc, &t, lens, &to));
    t = tkc;
    t.dtype = dt == ATTN_F32 ? ATTN_BF16 : ATTN_F32;
    bad("k_cache of another dtype",
        attn_decode_paged(m, kind, &tq, &t, &tvc, &tt, lens, &to));
    t = tvc;
    t.shape[2] = P / 2;
    bad("v_cache page size",
        attn_decode_paged(m, kind, &tq, &tkc, &t, &tt, lens, &to));
    int64_t late[B] = {0, 0, 0, 0, maxPages * P};
    bad("append past the pages",
        attn_append_kv(m, kind, &tkc, &tvc, &tt, late, NULL, &tkn, &tvn));
    bad("no lengths",
        attn_decode_paged(m, kind, &tq, &tkc, &tvc, &tt, NULL, &to));
    t = tkc;
    t.strides[3] = 2, t.strides[2] = 2 * D, t.strides[1] = 2 * P * D;
    bad("k_cache rows strided",
        attn_decode_paged(m, kind, &tq, &t, &tvc, &tt, lens, &to));
    t = tvc;
    t.strides[2] = Dv - 1;
    bad("v_cache rows overlapping",
        attn_decode_paged(m, kind, &tq, &tkc, &t, &tt, lens, &to));
    t = tvc;
    t.strides[0] = -t.strides[0];
    bad("v_cache page stride negative",
        attn_decode_paged(m, kind, &tq, &tkc, &t, &tt, lens, &to));
    t = tvc;
    t.data = (char *)kc + eb;
    bad("append with v_cache over k_cache",
        attn_append_kv(m, kind, &tkc, &t, &tt, zeros, NULL, &tkn, &tvn));
  }
  expectOk(attn_buffer_free(kc), "attn_buffer_free");
  if (!one)
    expectOk(attn_buffer_free(vc), "attn_buffer_free");
  free(q), free(out), free(k), free(v), free(kn), free(vn), free(perm),
      free(table);
}

static void testGdn(attn_model *m, int32_t kind, const attn_kind_info *ki) {
  enum { B = 2, S = 70 };
  int64_t Hv = ki->num_heads, Hk = ki->num_kv_heads, dk = ki->head_dim,
          dv = ki->head_dim_v;
  /* g [B, Hv, S] (dk more per token with a per-channel gate). */
  int cg = ki->channel_gate != 0;
  int64_t qs[4] = {B, Hk, S, dk}, vs[4] = {B, Hv, S, dv}, gs[4] = {B, Hv, S, dk},
          ss[4] = {B, Hv, dk, dv};
  int64_t nq = B * Hk * S * dk, nv = B * Hv * S * dv, ng = B * Hv * S,
          ngate = ng * (cg ? dk : 1), ns = B * Hv * dk * dv;
  float *q = randoms(nq, 1.0f), *k = randoms(nq, 1.0f), *v = randoms(nv, 1.0f),
        *g = randoms(ngate, 0.2f), *beta = randoms(ng, 1.0f),
        *s0 = randoms(ns, 1.0f);
  /* q and k L2-normalized per token (as the layer makes them), g < 0,
   * beta in (0, 1). */
  for (int64_t t = 0; t < B * Hk * S; ++t)
    for (float *x = q; x; x = x == q ? k : NULL) {
      double n = 0;
      for (int64_t i = 0; i < dk; ++i)
        n += x[t * dk + i] * x[t * dk + i];
      for (int64_t i = 0; i < dk; ++i)
        x[t * dk + i] /= (float)sqrt(n + 1e-6);
    }
  for (int64_t i = 0; i < ngate; ++i)
    g[i] = -fabsf(g[i]);
  for (int64_t i = 0; i < ng; ++i)
    beta[i] += 0.5f;
  float *out = malloc(sizeof(float) * nv), *ref = malloc(sizeof(float) * nv),
        *s1 = malloc(sizeof(float) * ns), *r1 = malloc(sizeof(float) * ns);
  int64_t lens[B] = {S, 37};
  attn_tensor tq = attn_tensor_contiguous(q, ATTN_F32, 4, qs),
              tk = attn_tensor_contiguous(k, ATTN_F32, 4, qs),
              tv = attn_tensor_contiguous(v, ATTN_F32, 4, vs),
              tg = attn_tensor_contiguous(g, ATTN_F32, cg ? 4 : 3, gs),
              tb = attn_tensor_contiguous(beta, ATTN_F32, 3, gs),
              ts0 = attn_tensor_contiguous(s0, ATTN_F32, 4, ss),
              to = attn_tensor_contiguous(out, ATTN_F32, 4, vs),
              ts1 = attn_tensor_contiguous(s1, ATTN_F32, 4, ss);
  expectOk(attn_gated_delta(m, kind, &tq, &tk, &tv, &tg, &tb, &ts0, lens, &to,
                            &ts1),
           "attn_gated_delta");
  gdnRef(ki, B, S, q, k, v, g, beta, s0, lens, ref, r1);
  printf("gated_delta kind '%s' S %d lengths 70,37 with a state: ", ki->name, S);
  report("out", out, ref, nv);
  report("  state", s1, r1, ns);
  /* The state updated in place: the same numbers. */
  float *inplace = malloc(sizeof(float) * ns);
  memcpy(inplace, s0, sizeof(float) * ns);
  attn_tensor tin = attn_tensor_contiguous(inplace, ATTN_F32, 4, ss);
  expectOk(attn_gated_delta(m, kind, &tq, &tk, &tv, &tg, &tb, &tin, lens, &to,
                            &tin),
           "attn_gated_delta in place");
  report("  state in place", inplace, r1, ns);
  /* No state in, none out, whole lengths. */
  expectOk(attn_gated_delta(m, kind, &tq, &tk, &tv, &tg, &tb, NULL, NULL, &to,
                            NULL),
           "attn_gated_delta fresh");
  int64_t whole[B] = {S, S};
  gdnRef(ki, B, S, q, k, v, g, beta, NULL, whole, ref, r1);
  report("  fresh", out, ref, nv);

  attn_tensor t = tg;
  t.shape[2] = S - 1;
  bad("g short", attn_gated_delta(m, kind, &tq, &tk, &tv, &t, &tb, NULL, NULL,
                                  &to, NULL));
  t = tk;
  t.dtype = ATTN_F16;
  bad("k f16", attn_gated_delta(m, kind, &tq, &t, &tv, &tg, &tb, NULL, NULL,
                                &to, NULL));
  t = ts1;
  t.data = k;
  bad("state_out over k", attn_gated_delta(m, kind, &tq, &tk, &tv, &tg, &tb,
                                           NULL, NULL, &to, &t));
  bad("as sdpa", attn_sdpa(m, kind, &tq, &tk, &tv, NULL, NULL, &to));
  free(q), free(k), free(v), free(g), free(beta), free(s0), free(out);
  free(ref), free(s1), free(r1), free(inplace);
}

/* Token x of a [B, H, S, d] array as [B, H, 1, d]. */
static float *tokenOf(const float *x, int64_t BH, int64_t S, int64_t d,
                      int64_t t) {
  float *y = malloc(sizeof(float) * BH * d);
  for (int64_t r = 0; r < BH; ++r)
    memcpy(y + r * d, x + (r * S + t) * d, sizeof(float) * d);
  return y;
}

/* Decode through the C API with caller-owned states: T steps of one token,
 * the state carried by the caller, (a) updated in place in a buffer that
 * starts 4 bytes past a 64-byte boundary (the kernels' streaming stores
 * need aligned states: this one takes the other path), (b) passed between
 * two 64-byte aligned buffers; both against the float64 recurrence over
 * the T tokens. */
static void testGdnDecode(attn_model *m, int32_t kind,
                          const attn_kind_info *ki) {
  enum { B = 2, T = 4 };
  int64_t Hv = ki->num_heads, Hk = ki->num_kv_heads, dk = ki->head_dim,
          dv = ki->head_dim_v;
  int cg = ki->channel_gate != 0;
  int64_t nq = B * Hk * T * dk, nv = B * Hv * T * dv, ng = B * Hv * T,
          ngate = ng * (cg ? dk : 1), ns = B * Hv * dk * dv;
  float *q = randoms(nq, 0.15f), *k = randoms(nq, 0.15f),
        *v = randoms(nv, 1.0f), *g = randoms(ngate, 0.2f),
        *beta = randoms(ng, 0.4f), *s0 = randoms(ns, 1.0f);
  for (int64_t i = 0; i < ngate; ++i)
    g[i] = -fabsf(g[i]);
  for (int64_t i = 0; i < ng; ++i)
    beta[i] += 0.5f;
  float *ref = malloc(sizeof(float) * nv), *r1 = malloc(sizeof(float) * ns);
  int64_t lens[B] = {T, T};
  gdnRef(ki, B, T, q, k, v, g, beta, s0, lens, ref, r1);
  size_t bytes = (sizeof(float) * ns + 64 + 63) / 64 * 64;
  float *odd = (float *)aligned_alloc(64, bytes) + 1,
        *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
  memcpy(odd, s0, sizeof(float) * ns);
  memcpy(a, s0, sizeof(float) * ns);
  float *outOdd = malloc(sizeof(float) * nv),
        *outAb = malloc(sizeof(float) * nv);
  int64_t qs[4] = {B, Hk, 1, dk}, vs[4] = {B, Hv, 1, dv}, gs[4] = {B, Hv, 1, dk},
          ss[4] = {B, Hv, dk, dv};
  for (int64_t t = 0; t < T; ++t) {
    float *qt = tokenOf(q, B * Hk, T, dk, t),
          *kt = tokenOf(k, B * Hk, T, dk, t),
          *vt = tokenOf(v, B * Hv, T, dv, t),
          *gt = tokenOf(g, B * Hv, T, cg ? dk : 1, t),
          *bt = tokenOf(beta, B * Hv, T, 1, t),
          *o = malloc(sizeof(float) * B * Hv * dv);
    attn_tensor tq = attn_tensor_contiguous(qt, ATTN_F32, 4, qs),
                tk = attn_tensor_contiguous(kt, ATTN_F32, 4, qs),
                tv = attn_tensor_contiguous(vt, ATTN_F32, 4, vs),
                tg = attn_tensor_contiguous(gt, ATTN_F32, cg ? 4 : 3, gs),
                tb = attn_tensor_contiguous(bt, ATTN_F32, 3, gs),
                to = attn_tensor_contiguous(o, ATTN_F32, 4, vs),
                tOdd = attn_tensor_contiguous(odd, ATTN_F32, 4, ss),
                tIn = attn_tensor_contiguous(t % 2 ? b : a, ATTN_F32, 4, ss),
                tOut = attn_tensor_contiguous(t % 2 ? a : b, ATTN_F32, 4, ss);
    expectOk(attn_gated_delta(m, kind, &tq, &tk, &tv, &tg, &tb, &tOdd, NULL,
                              &to, &tOdd),
             "attn_gated_delta decode in place");
    for (int64_t r = 0; r < B * Hv; ++r)
      memcpy(outOdd + (r * T + t) * dv, o + r * dv, sizeof(float) * dv);
    expectOk(attn_gated_delta(m, kind, &tq, &tk, &tv, &tg, &tb, &tIn, NULL, &to,
                              &tOut),
             "attn_gated_delta decode");
    for (int64_t r = 0; r < B * Hv; ++r)
      memcpy(outAb + (r * T + t) * dv, o + r * dv, sizeof(float) * dv);
    free(qt), free(kt), free(vt), free(gt), free(bt), free(o);
  }
  printf("gated_delta kind '%s' decode %d steps, caller-owned states: ",
         ki->name, T);
  report("out (unaligned, in place)", outOdd, ref, nv);
  report("  state (unaligned, in place)", odd, r1, ns);
  report("  out (aligned, two buffers)", outAb, ref, nv);
  report("  state (aligned, two buffers)", T % 2 ? b : a, r1, ns);
  free(q), free(k), free(v), free(g), free(beta), free(s0), free(ref);
  free(r1), free(odd - 1), free(a), free(b), free(outOdd), free(outAb);
}

int main(int argc, char **argv) {
  initialCsr = callerCsr();
  /* --gdn-only: the Gated DeltaNet kinds' calls only. */
  int gdnOnly = argc == 3 && !strcmp(argv[2], "--gdn-only");
  if (argc != 2 && !gdnOnly) {
    fprintf(stderr, "usage: use_api LIBRARY.so [--gdn-only]\n");
    return 2;
  }
  printf("api version %d (header %d)\n", attn_api_version(), ATTN_API_VERSION);
  attn_model *self, *m;
  expectOk(attn_model_open(NULL, &self), "attn_model_open(NULL)");
  expectOk(attn_model_open(argv[1], &m), "attn_model_open(path)");
  if (failures)
    return 1;
  attn_model_info info;
  expectOk(attn_model_get_info(m, &info), "attn_model_get_info");
  printf("model %s: %ld layers, %d kinds, hidden %ld\n", info.family,
         (long)info.num_layers, info.num_kinds, (long)info.hidden_size);
  for (int64_t l = 0; l < info.num_layers; ++l) {
    int32_t kind;
    expectOk(attn_kind_by_layer(m, l, &kind), "attn_kind_by_layer");
    attn_kind_info ki;
    expectOk(attn_kind_get_info(m, kind, &ki), "attn_kind_get_info");
    printf("layer %ld: kind %d '%s' op %d heads %ld/%ld dims %ld/%ld\n",
           (long)l, kind, ki.name, ki.op, (long)ki.num_heads,
           (long)ki.num_kv_heads, (long)ki.head_dim, (long)ki.head_dim_v);
  }
  attn_set_num_threads(2);
  for (int32_t kind = 0; kind < info.num_kinds; ++kind) {
    attn_kind_info ki;
    attn_kind_get_info(m, kind, &ki);
    if (ki.op == ATTN_OP_SDPA && gdnOnly)
      continue;
    if (ki.op == ATTN_OP_SDPA) {
      testSdpa(kind % 2 ? self : m, kind, &ki);
      for (int64_t p = 16; p > 0; p = p == 16 ? 5 : p == 5 ? 1 : 0)
        testPaged(m, kind, &ki, p, LAYOUT_HND);
      /* The other layouts, through their strides. */
      testPaged(m, kind, &ki, 16, LAYOUT_NHD);
      testPaged(m, kind, &ki, 5, LAYOUT_NHD);
      testPaged(m, kind, &ki, 16, LAYOUT_HEAD_MAJOR);
      if (ki.head_dim == ki.head_dim_v)
        testPaged(m, kind, &ki, 16, LAYOUT_INTERLEAVED);
    } else {
      testGdn(kind % 2 ? self : m, kind, &ki);
      testGdnDecode(m, kind, &ki);
    }
  }
  testBuffers();
  int32_t kind;
  bad("layer 1000", attn_kind_by_layer(m, 1000, &kind));
  bad("null model", attn_kind_by_layer(NULL, 0, &kind));
  attn_model *other;
  bad("missing file", attn_model_open("/nonexistent/lib.so", &other));
  bad("not ours", attn_model_open("libm.so.6", &other));
  attn_model_close(m);
  attn_model_close(self);
  attn_model_close(NULL);
  printf("%s\n", failures ? "FAILED" : "all API calls behaved");
  return failures ? 1 : 0;
}
