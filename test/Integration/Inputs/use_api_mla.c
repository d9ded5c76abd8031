/* The C API's multi-head latent attention over a paged latent cache
 * (attn_append_latent, attn_decode_latent), from a C program that includes
 * only attn.h: rows appended page by page into shuffled pages of a pool
 * that also holds pages no sequence lists, decode of one and of three
 * query rows per sequence against a float64 reference written here (every
 * head over the rows, the values their first r features, bottom-right
 * causal), lengths 0, 1, P - 1, P, P + 1 and longer in one batch, and the
 * error of each bad call.
 *
 * usage: use_api_mla LIB */
#include "attn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state = 88172645463325252ull;
static float next(void) {
  state ^= state << 13, state ^= state >> 7, state ^= state << 17;
  return (float)((int64_t)(state >> 40) - (1 << 23)) / (float)(1 << 23);
}

#define CHECK(call)                                                            \
  do {                                                                         \
    attn_status s_ = (call);                                                   \
    if (s_ != ATTN_OK) {                                                       \
      printf("FAIL %s: %s\n", #call, attn_last_error());                      \
      return 1;                                                                \
    }                                                                          \
  } while (0)

static void expectError(const char *what, attn_status s) {
  printf("%s -> status %d: %s\n", what, (int)s, attn_last_error());
}

int main(int argc, char **argv) {
  attn_model *m;
  if (argc < 2 || attn_model_open(argv[1], &m) != ATTN_OK) {
    printf("FAIL open: %s\n", attn_last_error());
    return 1;
  }
  attn_kind_info k;
  CHECK(attn_kind_get_info(m, 0, &k));
  printf("kind '%s': H=%lld latent_rank=%lld rope_head_dim=%lld (expanded "
         "D=%lld Dv=%lld) paged=%d\n",
         k.name, (long long)k.num_heads, (long long)k.latent_rank,
         (long long)k.rope_head_dim, (long long)k.head_dim,
         (long long)k.head_dim_v, k.paged);
  const int64_t h = k.num_heads, r = k.latent_rank, row = r + k.rope_head_dim;
  const int64_t page = 16, b = 6, maxPages = 8, pages = b * maxPages + 5;
  int64_t lens[6] = {0, 1, 15, 16, 17, 100};
  /* The rows of each sequence, and the pool: pages shuffled. */
  float *rows = malloc(sizeof(float) * b * 128 * row);
  float *pool = malloc(sizeof(float) * pages * page * row);
  int32_t table[6 * 8];
  int32_t ids[6 * 8 + 5];
  for (int64_t i = 0; i < pages; ++i)
    ids[i] = (int32_t)i;
  for (int64_t i = pages - 1; i > 0; --i) {
    int64_t j = (int64_t)(state % (uint64_t)(i + 1));
    next();
    int32_t t = ids[i];
    ids[i] = ids[j];
    ids[j] = t;
  }
  memcpy(table, ids, sizeof(table));
  for (int64_t i = 0; i < pages * page * row; ++i)
    pool[i] = next(); /* pages no sequence lists: random */
  for (int64_t i = 0; i < b * 128 * row; ++i)
    rows[i] = next();
  int64_t tshape[2] = {b, maxPages}, pshape[3] = {pages, page, row};
  attn_tensor tt = attn_tensor_contiguous(table, ATTN_I32, 2, tshape);
  attn_tensor tp = attn_tensor_contiguous(pool, ATTN_F32, 3, pshape);
  /* Appended in two calls: the first 10 rows, then the rest. */
  int64_t n1 = 10, start[6] = {0, 0, 0, 0, 0, 0}, counts[6];
  for (int pass = 0; pass < 2; ++pass) {
    int64_t n = pass == 0 ? n1 : 128 - n1;
    float *chunk = malloc(sizeof(float) * b * n * row);
    for (int64_t i = 0; i < b; ++i) {
      int64_t first = pass == 0 ? 0 : n1;
      counts[i] = lens[i] - first < 0 ? 0 : lens[i] - first;
      if (counts[i] > n)
        counts[i] = n;
      start[i] = first;
      memcpy(chunk + i * n * row, rows + (i * 128 + first) * row,
             sizeof(float) * n * row);
    }
    int64_t cshape[3] = {b, n, row};
    attn_tensor tc = attn_tensor_contiguous(chunk, ATTN_F32, 3, cshape);
    CHECK(attn_append_latent(m, 0, &tp, &tt, start, counts, &tc));
    free(chunk);
  }
  for (int sq = 1; sq <= 3; sq += 2) {
    float *q = malloc(sizeof(float) * b * h * sq * row);
    float *out = malloc(sizeof(float) * b * h * sq * r);
    for (int64_t i = 0; i < b * h * sq * row; ++i)
      q[i] = next();
    int64_t qshape[4] = {b, h, sq, row}, oshape[4] = {b, h, sq, r};
    attn_tensor tq = attn_tensor_contiguous(q, ATTN_F32, 4, qshape);
    attn_tensor to = attn_tensor_contiguous(out, ATTN_F32, 4, oshape);
    CHECK(attn_decode_latent(m, 0, &tq, &tp, &tt, lens, &to));
    double maxErr = 0, maxRef = 0;
    double *s = malloc(sizeof(double) * 128), *o = malloc(sizeof(double) * r);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t hh = 0; hh < h; ++hh)
        for (int64_t i = 0; i < sq; ++i) {
          const float *qr = q + ((bi * h + hh) * sq + i) * row;
          int64_t visible = lens[bi] - sq + i + 1; /* keys [0, visible) */
          if (visible > lens[bi])
            visible = lens[bi];
          double mx = -INFINITY, sum = 0;
          for (int64_t j = 0; j < visible; ++j) {
            const float *kr = rows + (bi * 128 + j) * row;
            double d = 0;
            for (int64_t c = 0; c < row; ++c)
              d += (double)qr[c] * kr[c];
            s[j] = d * k.scale;
            if (s[j] > mx)
              mx = s[j];
          }
          for (int64_t c = 0; c < r; ++c)
            o[c] = 0;
          for (int64_t j = 0; j < visible; ++j) {
            double e = exp(s[j] - mx);
            sum += e;
            for (int64_t c = 0; c < r; ++c)
              o[c] += e * rows[(bi * 128 + j) * row + c];
          }
          for (int64_t c = 0; c < r; ++c) {
            double ref = visible > 0 ? o[c] / sum : 0.0;
            double got = out[((bi * h + hh) * sq + i) * r + c];
            if (fabs(got - ref) > maxErr || isnan(got))
              maxErr = isnan(got) ? INFINITY : fabs(got - ref);
            if (fabs(ref) > maxRef)
              maxRef = fabs(ref);
          }
        }
    printf("decode_latent Sq=%d lengths 0,1,15,16,17,100 pages of 16: max "
           "error %s\n",
           sq, maxErr <= 1e-5 * (1 + maxRef) ? "<= 1e-5" : "TOO LARGE");
    if (sq == 1) {
      /* Errors. */
      int64_t bad[4] = {b, h, sq, row - 1};
      attn_tensor tb = attn_tensor_contiguous(q, ATTN_F32, 4, bad);
      expectError("q rows of r + dr - 1",
                  attn_decode_latent(m, 0, &tb, &tp, &tt, lens, &to));
      int64_t longer[6] = {0, 1, 15, 16, 17, 129};
      expectError("a length past max_pages * page_size",
                  attn_decode_latent(m, 0, &tq, &tp, &tt, longer, &to));
      int32_t keep = table[5 * maxPages];
      table[5 * maxPages] = (int32_t)pages;
      expectError("a page out of the pool",
                  attn_decode_latent(m, 0, &tq, &tp, &tt, lens, &to));
      table[5 * maxPages] = keep;
      int64_t kshape[4] = {pages, 1, page, row};
      attn_tensor tk = attn_tensor_contiguous(pool, ATTN_F32, 4, kshape);
      expectError("attn_decode_paged on a latent kind",
                  attn_decode_paged(m, 0, &tq, &tk, &tk, &tt, lens, &to));
      int64_t one[3] = {b, 1, row}, far[6] = {128, 0, 0, 0, 0, 0};
      attn_tensor tr = attn_tensor_contiguous(rows, ATTN_F32, 3, one);
      expectError("append past the pages",
                  attn_append_latent(m, 0, &tp, &tt, far, NULL, &tr));
      attn_tensor tov = attn_tensor_contiguous(pool, ATTN_F32, 4, oshape);
      expectError("out overlapping the pool",
                  attn_decode_latent(m, 0, &tq, &tp, &tt, lens, &tov));
    }
    free(q);
    free(out);
    free(s);
    free(o);
  }
  free(rows);
  free(pool);
  attn_model_close(m);
  return 0;
}
