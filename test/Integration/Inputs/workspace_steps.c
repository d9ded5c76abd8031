/* Decode steps make no malloc once warm: the kernels' scratch comes from
 * the library's per-thread workspaces (attn_workspace_get_info), and the C
 * API's calls build no message unless they fail and copy their lengths
 * into reused per-thread buffers. The kernels are called directly (the
 * model table of attn_runtime.h), then through the C API (a state updated
 * in place, so copied). Counts the process's mallocs with the counter
 * malloc_count.c exports when it is preloaded (LD_PRELOAD). Usage:
 * workspace_steps LIB.so */
#include "attn.h"
#include "attn_runtime.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long (*mallocCount)(void);
/* The model table of the library under test (not necessarily the one the
 * program links). */
static const attn_rt_model *model;

static long mallocs(void) { return mallocCount ? mallocCount() : 0; }

static void fail(const char *what) {
  printf("FAIL %s: %s\n", what, attn_last_error());
  exit(1);
}

static float *filled(size_t n, unsigned seed) {
  float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    p[i] = (float)((seed >> 9) & 0xffff) / 65536.0f - 0.5f;
  }
  return p;
}

static attn_workspace_info info(const attn_model *m) {
  attn_workspace_info w;
  if (attn_workspace_get_info(m, &w) != ATTN_OK)
    fail("attn_workspace_get_info");
  return w;
}

/* The OpenMP team's size (libomp, which the library loads). */
static int team(void) {
  int (*get)(void) = NULL;
  *(void **)&get = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
  return get ? get() : 1;
}

/* Runs `step` to warm up (twice, and until every thread of the team has a
 * workspace: with a dynamic schedule a worker may get no iteration for a
 * while), then `n` times: prints the mallocs and workspace growths of those
 * n steps. */
#define STEPS(m, label, n, step)                                               \
  do {                                                                         \
    for (int i_ = 0; i_ < 2 || (info(m).threads < team() && i_ < 5000); ++i_) \
      if ((step) != ATTN_OK)                                                   \
        fail(label);                                                           \
    attn_workspace_info before_ = info(m);                                     \
    long count_ = mallocs();                                                   \
    for (int i_ = 0; i_ < (n); ++i_)                                           \
      if ((step) != ATTN_OK)                                                   \
        fail(label);                                                           \
    long made_ = mallocs() - count_;                                           \
    attn_workspace_info after_ = info(m);                                      \
    printf("%s: %d steps: %ld mallocs, %lld workspace grows, held %s\n",       \
           label, (n), made_, (long long)(after_.grows - before_.grows),       \
           after_.held_bytes > 0 ? "> 0" : "0");                               \
  } while (0)

static void softmaxSteps(const attn_model *m, int32_t kind,
                         const attn_kind_info *ki) {
  const int64_t B = 2, page = 16, pages = 64, len = 500;
  int64_t qs[4] = {B, ki->num_heads, 1, ki->head_dim};
  int64_t os[4] = {B, ki->num_heads, 1, ki->head_dim_v};
  int64_t ks[4] = {pages, ki->num_kv_heads, page, ki->head_dim};
  int64_t vs[4] = {pages, ki->num_kv_heads, page, ki->head_dim_v};
  int64_t ts[2] = {B, pages / B};
  size_t kn = (size_t)(pages * ki->num_kv_heads * page * ki->head_dim);
  size_t vn = (size_t)(pages * ki->num_kv_heads * page * ki->head_dim_v);
  float *q = filled((size_t)(qs[0] * qs[1] * qs[3]), 1);
  float *out = filled((size_t)(os[0] * os[1] * os[3]), 2);
  /* The cache in the kind's element type: f32 values, or their top halves
   * (bf16) - any bits do for counting. */
  size_t eb = ki->kv_dtype == ATTN_F32 ? 4 : 2;
  void *kc = filled(kn * eb / 4 + 1, 3), *vc = filled(vn * eb / 4 + 1, 4);
  int32_t table[64];
  for (int i = 0; i < 64; ++i)
    table[i] = (i * 37) % 64;
  int64_t lens[2] = {len, len - 300};
  attn_tensor tq = attn_tensor_contiguous(q, ATTN_F32, 4, qs);
  attn_tensor to = attn_tensor_contiguous(out, ATTN_F32, 4, os);
  attn_tensor tk = attn_tensor_contiguous(kc, ki->kv_dtype, 4, ks);
  attn_tensor tv = attn_tensor_contiguous(vc, ki->kv_dtype, 4, vs);
  attn_tensor tt = attn_tensor_contiguous(table, ATTN_I32, 2, ts);
  const attn_rt_kind *rk = &model->kinds[kind];
  attn_rt_memref_f32_4 dq = {
      q, q, 0, {B, qs[1], 1, qs[3]}, {qs[1] * qs[3], qs[3], qs[3], 1}};
  attn_rt_memref_f32_4 dout = {
      out, out, 0, {B, os[1], 1, os[3]}, {os[1] * os[3], os[3], os[3], 1}};
  attn_rt_memref_f32_4 dk = {kc,
                             kc,
                             0,
                             {ks[0], ks[1], ks[2], ks[3]},
                             {ks[1] * ks[2] * ks[3], ks[2] * ks[3], ks[3], 1}};
  attn_rt_memref_f32_4 dv = {vc,
                             vc,
                             0,
                             {vs[0], vs[1], vs[2], vs[3]},
                             {vs[1] * vs[2] * vs[3], vs[2] * vs[3], vs[3], 1}};
  attn_rt_memref_i32_2 dt = {table, table, 0, {B, pages / B}, {pages / B, 1}};
  attn_rt_memref_i64_1 dl = {lens, lens, 0, {B}, {1}};
  STEPS(m, "paged kernel", 50,
        (rk->paged(&dout, &dq, &dk, &dv, &dt, &dl), ATTN_OK));
  STEPS(m, "attn_decode_paged", 50,
        attn_decode_paged(m, kind, &tq, &tk, &tv, &tt, lens, &to));
  /* Appending a token to each sequence (at its last position, again). */
  int64_t ns[4] = {B, ki->num_kv_heads, 1, ki->head_dim};
  int64_t nv[4] = {B, ki->num_kv_heads, 1, ki->head_dim_v};
  float *kn1 = filled((size_t)(B * ns[1] * ns[3]), 8);
  float *vn1 = filled((size_t)(B * nv[1] * nv[3]), 9);
  attn_tensor tkn = attn_tensor_contiguous(kn1, ki->kv_dtype, 4, ns);
  attn_tensor tvn = attn_tensor_contiguous(vn1, ki->kv_dtype, 4, nv);
  int64_t at[2] = {len - 1, len - 301};
  STEPS(m, "attn_append_kv", 50,
        attn_append_kv(m, kind, &tk, &tv, &tt, at, NULL, &tkn, &tvn));
  free(kn1);
  free(vn1);
  /* Prefill over contiguous K/V (f32 q; K/V of the kind's type). */
  const int64_t S = 96;
  int64_t pq[4] = {1, ki->num_heads, S, ki->head_dim};
  int64_t pk[4] = {1, ki->num_kv_heads, S, ki->head_dim};
  int64_t pv[4] = {1, ki->num_kv_heads, S, ki->head_dim_v};
  int64_t po[4] = {1, ki->num_heads, S, ki->head_dim_v};
  float *pqb = filled((size_t)(S * ki->num_heads * ki->head_dim), 5);
  float *pob = filled((size_t)(S * ki->num_heads * ki->head_dim_v), 6);
  attn_tensor tpq = attn_tensor_contiguous(pqb, ATTN_F32, 4, pq);
  attn_tensor tpk = attn_tensor_contiguous(kc, ki->kv_dtype, 4, pk);
  attn_tensor tpv = attn_tensor_contiguous(vc, ki->kv_dtype, 4, pv);
  attn_tensor tpo = attn_tensor_contiguous(pob, ATTN_F32, 4, po);
  STEPS(m, "attn_sdpa prefill", 5,
        attn_sdpa(m, kind, &tpq, &tpk, &tpv, NULL, NULL, &tpo));
  free(q);
  free(out);
  free(kc);
  free(vc);
  free(pqb);
  free(pob);
}

static void linearSteps(const attn_model *m, int32_t kind,
                        const attn_kind_info *ki) {
  const int64_t B = 2;
  int64_t Hv = ki->num_heads, Hk = ki->num_kv_heads, dk = ki->head_dim,
          dv = ki->head_dim_v;
  int64_t qs[4] = {B, Hk, 1, dk}, vs[4] = {B, Hv, 1, dv};
  int64_t gs[4] = {B, Hv, 1, dk}, ss[4] = {B, Hv, dk, dv};
  float *q = filled((size_t)(B * Hk * dk), 1),
        *k = filled((size_t)(B * Hk * dk), 2);
  float *v = filled((size_t)(B * Hv * dv), 3),
        *o = filled((size_t)(B * Hv * dv), 4);
  float *g = filled((size_t)(B * Hv * dk), 5),
        *beta = filled((size_t)(B * Hv), 6);
  float *state = filled((size_t)(B * Hv * dk * dv), 7);
  for (int64_t i = 0; i < B * Hv * dk; ++i)
    g[i] = -0.01f;
  attn_tensor tq = attn_tensor_contiguous(q, ATTN_F32, 4, qs);
  attn_tensor tk = attn_tensor_contiguous(k, ATTN_F32, 4, qs);
  attn_tensor tv = attn_tensor_contiguous(v, ATTN_F32, 4, vs);
  attn_tensor to = attn_tensor_contiguous(o, ATTN_F32, 4, vs);
  attn_tensor tg =
      attn_tensor_contiguous(g, ATTN_F32, ki->channel_gate ? 4 : 3, gs);
  attn_tensor tb = attn_tensor_contiguous(beta, ATTN_F32, 3, gs);
  attn_tensor ts = attn_tensor_contiguous(state, ATTN_F32, 4, ss);
  attn_rt_gdn_fn gdn = (attn_rt_gdn_fn)model->kinds[kind].fused;
  attn_rt_memref_f32_4 dq = {q, q, 0, {B, Hk, 1, dk}, {Hk * dk, dk, dk, 1}};
  attn_rt_memref_f32_4 dkk = {k, k, 0, {B, Hk, 1, dk}, {Hk * dk, dk, dk, 1}};
  attn_rt_memref_f32_4 dvv = {v, v, 0, {B, Hv, 1, dv}, {Hv * dv, dv, dv, 1}};
  attn_rt_memref_f32_4 dout = {o, o, 0, {B, Hv, 1, dv}, {Hv * dv, dv, dv, 1}};
  attn_rt_memref_f32_4 dst = {
      state, state, 0, {B, Hv, dk, dv}, {Hv * dk * dv, dk * dv, dv, 1}};
  attn_rt_memref_f32_3 dg = {g, g, 0, {B, Hv, 1}, {Hv, 1, 1}};
  attn_rt_memref_f32_3 db = {beta, beta, 0, {B, Hv, 1}, {Hv, 1, 1}};
  int64_t whole[2] = {1, 1};
  attn_rt_memref_i64_1 dl = {whole, whole, 0, {B}, {1}};
  if (!ki->channel_gate)
    STEPS(m, "gated delta kernel", 50,
          (gdn(&dout, &dst, &dq, &dkk, &dvv, &dg, &db, &dst, &dl), ATTN_OK));
  STEPS(
      m, "attn_gated_delta decode", 50,
      attn_gated_delta(m, kind, &tq, &tk, &tv, &tg, &tb, &ts, NULL, &to, &ts));
  free(q);
  free(k);
  free(v);
  free(o);
  free(g);
  free(beta);
  free(state);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  *(void **)&mallocCount = dlsym(RTLD_DEFAULT, "malloc_count");
  if (argc < 2)
    return 2;
  void *lib = dlopen(argv[1], RTLD_NOW);
  const attn_rt_model *(*get)(void) = NULL;
  if (lib)
    *(void **)&get = dlsym(lib, "attn_rt_get_model");
  if (!get) {
    printf("FAIL %s has no attn_rt_get_model\n", argv[1]);
    return 1;
  }
  model = get();
  printf("malloc counter: %s\n", mallocCount ? "preloaded" : "absent");
  attn_model *m;
  if (attn_model_open(argv[1], &m) != ATTN_OK)
    fail("attn_model_open");
  attn_model_info mi;
  if (attn_model_get_info(m, &mi) != ATTN_OK)
    fail("attn_model_get_info");
  for (int32_t kind = 0; kind < mi.num_kinds; ++kind) {
    attn_kind_info ki;
    if (attn_kind_get_info(m, kind, &ki) != ATTN_OK)
      fail("attn_kind_get_info");
    printf("kind '%s'\n", ki.name);
    if (ki.op == ATTN_OP_SDPA && ki.paged && ki.latent_rank == 0)
      softmaxSteps(m, kind, &ki);
    else if (ki.op == ATTN_OP_GATED_DELTA)
      linearSteps(m, kind, &ki);
  }
  attn_workspace_info w = info(m);
  printf("peak %s, in use after the calls %lld, threads %s\n",
         w.peak_bytes > 0 ? "> 0" : "0", (long long)w.in_use_bytes,
         w.threads > 0 ? "> 0" : "0");
  /* The calling thread's workspace goes back to the heap. */
  if (attn_workspace_trim(m) != ATTN_OK)
    fail("attn_workspace_trim");
  attn_workspace_info t = info(m);
  printf("trim: held %s\n", t.held_bytes < w.held_bytes ? "less" : "the same");
  if (attn_workspace_get_info(m, NULL) != ATTN_ERR_ARGUMENT)
    fail("attn_workspace_get_info(info NULL) succeeded");
  printf("NULL info: %s\n", attn_last_error());
  if (attn_workspace_get_info(NULL, &t) != ATTN_ERR_ARGUMENT)
    fail("attn_workspace_get_info(model NULL) succeeded");
  printf("NULL model: %s\n", attn_last_error());
  attn_model_close(m);
  return 0;
}
