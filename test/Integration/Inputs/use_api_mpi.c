/* A C program over attn_mpi.h: every rank of MPI_COMM_WORLD opens a library
 * built with attn-compile --distributed=mpi --emit=shared, keeps its
 * page-aligned range of two sequences in its own paged cache (pages handed
 * out in reverse order), and runs one decode step with
 * attn_decode_paged_mpi; the result is compared with attn_decode_paged over
 * the whole cache in one process (with a kind's attention sinks set: the
 * partial kernels count none, the merged rows fold them in once). Then a
 * bad call on one rank: every rank gets the error, nothing is written.
 *
 *   mpirun -np N use_api_mpi LIBRARY.so */
#include "attn_mpi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, P = 16 };

static float value(int64_t b, int64_t h, int64_t j, int64_t e, int which) {
  double x = 0.37 * b + 1.3 * h + 0.071 * j + 0.53 * e + which;
  return (float)(which == 2 ? cos(x) : sin(x * (which + 1)));
}

/* Pages of tokens [lo[b], hi[b]) of each sequence: k [pages, Hkv, P, D],
 * v [pages, Hkv, P, Dv], table [B, maxPages]. */
static int64_t build(const attn_kind_info *ki, const int64_t *lo,
                     const int64_t *hi, float **k, float **v, int32_t **table,
                     int64_t *maxPages) {
  int64_t Hkv = ki->num_kv_heads, D = ki->head_dim, Dv = ki->head_dim_v;
  int64_t pages = 0, mp = 1;
  for (int b = 0; b < B; ++b) {
    int64_t n = (hi[b] - lo[b] + P - 1) / P;
    pages += n;
    if (n > mp)
      mp = n;
  }
  int64_t alloc = pages ? pages : 1;
  *k = calloc(alloc * Hkv * P * D, sizeof(float));
  *v = calloc(alloc * Hkv * P * Dv, sizeof(float));
  *table = calloc(B * mp, sizeof(int32_t));
  int64_t next = pages;
  for (int b = 0; b < B; ++b)
    for (int64_t p = 0; p < (hi[b] - lo[b] + P - 1) / P; ++p)
      (*table)[b * mp + p] = (int32_t)--next;
  for (int b = 0; b < B; ++b)
    for (int64_t j = lo[b]; j < hi[b]; ++j) {
      int64_t page = (*table)[b * mp + (j - lo[b]) / P], row = (j - lo[b]) % P;
      for (int64_t h = 0; h < Hkv; ++h) {
        for (int64_t e = 0; e < D; ++e)
          (*k)[((page * Hkv + h) * P + row) * D + e] = value(b, h, j, e, 1);
        for (int64_t e = 0; e < Dv; ++e)
          (*v)[((page * Hkv + h) * P + row) * Dv + e] = value(b, h, j, e, 2);
      }
    }
  *maxPages = mp;
  return alloc;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  attn_model *m;
  if (argc < 2 || attn_model_open(argv[1], &m) != ATTN_OK) {
    fprintf(stderr, "open: %s\n", attn_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int32_t kind;
  attn_kind_info ki;
  attn_kind_by_layer(m, 0, &kind);
  attn_kind_get_info(m, kind, &ki);
  int64_t Hq = ki.num_heads, Hkv = ki.num_kv_heads, D = ki.head_dim,
          Dv = ki.head_dim_v;
  int64_t lens[B] = {203, 20};
  float *q = malloc(sizeof(float) * B * Hq * D);
  for (int b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t e = 0; e < D; ++e)
        q[(b * Hq + h) * D + e] = value(b, h, 999, e, 0);
  int64_t qShape[4] = {B, Hq, 1, D}, oShape[4] = {B, Hq, 1, Dv};
  attn_tensor tq = attn_tensor_contiguous(q, ATTN_F32, 4, qShape);

  /* This rank's range of each sequence: whole pages, the last ranks empty
   * for the short one. */
  int64_t lo[B], hi[B], local[B], qPos[B], zero[B] = {0, 0};
  for (int b = 0; b < B; ++b) {
    int64_t pages = (lens[b] + P - 1) / P;
    lo[b] = pages * rank / size * P;
    hi[b] = pages * (rank + 1) / size * P;
    lo[b] = lo[b] < lens[b] ? lo[b] : lens[b];
    hi[b] = hi[b] < lens[b] ? hi[b] : lens[b];
    local[b] = hi[b] - lo[b];
    qPos[b] = lens[b] - 1 - lo[b];
  }
  float *k, *v, *kw, *vw;
  int32_t *table, *tw;
  int64_t maxPages, maxPagesW;
  int64_t pages = build(&ki, lo, hi, &k, &v, &table, &maxPages);
  int64_t pagesW = build(&ki, zero, lens, &kw, &vw, &tw, &maxPagesW);
  int64_t kShape[4] = {pages, Hkv, P, D}, vShape[4] = {pages, Hkv, P, Dv},
          tShape[2] = {B, maxPages};
  attn_tensor tk = attn_tensor_contiguous(k, ATTN_F32, 4, kShape),
              tv = attn_tensor_contiguous(v, ATTN_F32, 4, vShape),
              tt = attn_tensor_contiguous(table, ATTN_I32, 2, tShape);
  float *out = calloc(B * Hq * Dv, sizeof(float)),
        *ref = calloc(B * Hq * Dv, sizeof(float));
  attn_tensor to = attn_tensor_contiguous(out, ATTN_F32, 4, oShape);
  /* A kind with attention sinks (gpt-oss) gets them first: one near the
   * scores, very large, very negative and none (-inf), cycling. */
  float *sinks = malloc(sizeof(float) * Hq);
  for (int64_t h = 0; h < Hq; ++h)
    sinks[h] = h % 4 == 0 ? 0.3f : h % 4 == 1 ? 1e4f : h % 4 == 2 ? -1e4f
                                                                  : -INFINITY;
  int64_t sShape1[1] = {Hq};
  attn_tensor tsk = attn_tensor_contiguous(sinks, ATTN_F32, 1, sShape1);
  attn_status hasSinks = attn_kind_set_sinks(m, kind, &tsk);
  if (rank == 0)
    printf("sinks: %s\n", hasSinks == ATTN_OK ? "set" : attn_last_error());
  attn_status s = attn_decode_paged_mpi(m, kind, MPI_COMM_WORLD, &tq, &tk,
                                        &tv, &tt, local, qPos, lo, &to);
  if (s != ATTN_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, attn_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int64_t kwShape[4] = {pagesW, Hkv, P, D}, vwShape[4] = {pagesW, Hkv, P, Dv},
          twShape[2] = {B, maxPagesW};
  attn_tensor wk = attn_tensor_contiguous(kw, ATTN_F32, 4, kwShape),
              wv = attn_tensor_contiguous(vw, ATTN_F32, 4, vwShape),
              wt = attn_tensor_contiguous(tw, ATTN_I32, 2, twShape),
              wo = attn_tensor_contiguous(ref, ATTN_F32, 4, oShape);
  if (attn_decode_paged(m, kind, &tq, &wk, &wv, &wt, lens, &wo) != ATTN_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, attn_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double diff = 0, mx = 0;
  for (int64_t i = 0; i < B * Hq * Dv; ++i) {
    diff = fmax(diff, fabs((double)out[i] - ref[i]));
    mx = fmax(mx, fabs(ref[i]));
  }
  double worst;
  MPI_Reduce(&diff, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%s c-api decode np=%d: max |mpi - 1-process| / max |ref| = "
           "%.2e\n",
           worst / mx <= 1e-6 ? "ok" : "FAIL", size, worst / mx);

  /* Rank 1 (or the only rank) passes a query of the wrong head count. */
  int64_t badShape[4] = {B, Hq + 1, 1, D};
  attn_tensor bad = attn_tensor_contiguous(q, ATTN_F32, 4, badShape);
  memset(out, 0, sizeof(float) * B * Hq * Dv);
  out[0] = 42.0f;
  s = attn_decode_paged_mpi(m, kind, MPI_COMM_WORLD,
                            rank == size - 1 ? &bad : &tq, &tk, &tv, &tt,
                            local, qPos, lo, &to);
  int untouched = out[0] == 42.0f;
  /* Rank 0 prints every rank's line: the lines of ranks that print for
   * themselves reach mpirun's output in no fixed order. */
  enum { LINE = 512 };
  char line[LINE];
  snprintf(line, LINE, "rank %s: status %d, out %s: %s",
           rank == size - 1 ? "bad" : "good", (int)s,
           untouched ? "untouched" : "WRITTEN", attn_last_error());
  char *lines = rank == 0 ? malloc((size_t)LINE * size) : NULL;
  MPI_Gather(line, LINE, MPI_CHAR, lines, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < size; ++r)
      printf("%s\n", lines + (size_t)r * LINE);
    free(lines);
  }
  /* The partial kernel's own argument errors (rank 0 prints them). */
  int64_t sShape[4] = {B, Hq, 1, 2};
  float *st = calloc(B * Hq * 2, sizeof(float));
  attn_tensor ts = attn_tensor_contiguous(st, ATTN_F32, 4, sShape);
  attn_status noStats = attn_decode_paged_part(m, kind, &tq, &tk, &tv, &tt,
                                               local, qPos, lo, &to, NULL);
  if (rank == 0)
    printf("part without stats: status %d: %s\n", (int)noStats,
           attn_last_error());
  attn_status noPos = attn_decode_paged_part(m, kind, &tq, &tk, &tv, &tt,
                                             local, NULL, lo, &to, &ts);
  if (rank == 0)
    printf("part without q_pos: status %d: %s\n", (int)noPos,
           attn_last_error());
  /* A chunked kind (Llama 4) cannot place its chunks without the range's
   * start in its sequence. */
  if (ki.chunk > 0) {
    attn_status noStart = attn_decode_paged_part(
        m, kind, &tq, &tk, &tv, &tt, local, qPos, NULL, &to, &ts);
    if (rank == 0)
      printf("chunk %lld, part without range_start: status %d: %s\n",
             (long long)ki.chunk, (int)noStart, attn_last_error());
  }
  attn_model_close(m);
  MPI_Finalize();
  return 0;
}
