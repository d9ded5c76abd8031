/*===- attn.h - the attn C API, version 10 --------------------------------===*
 *
 * The plain C interface to a model compiled with `attn-compile --emit=shared`
 * (every such library exports it): opaque handles, plain pointers, shapes,
 * strides and dtypes. No MLIR descriptor, no C++, no other header.
 *
 *   attn_model *m;
 *   if (attn_model_open("libmodel.so", &m) != ATTN_OK)      // or NULL: the
 *     fprintf(stderr, "%s\n", attn_last_error());           // library's own
 *   int32_t kind;
 *   attn_kind_by_layer(m, 3, &kind);
 *   attn_tensor q = attn_tensor_contiguous(qbuf, ATTN_F32, 4, qshape), ...;
 *   attn_sdpa(m, kind, &q, &k, &v, kv_lengths, NULL, &out);
 *   attn_model_close(m);
 *
 * Errors: every call returns an attn_status; on failure it writes nothing to
 * its outputs and attn_last_error() (per thread, valid until the thread's
 * next call) names the argument, the field and what is accepted.
 *
 * Tensors are row-major and contiguous (strides in elements, as made by
 * attn_tensor_contiguous; a dim of size 1 may have any stride). The calls
 * read and write the caller's buffers in place, never copying them; an
 * output may not overlap an input. Any alignment of the element type is
 * taken, but K/V caches on a 64-byte boundary read faster: malloc puts
 * large buffers 16 bytes past a cache line, where every 64-byte vector load
 * of a row spans two lines (docs/c-api-python.md: decode 8-22% slower over
 * an f32 cache). attn_buffer_alloc gives such buffers, on huge pages when
 * large (decode 4-6% faster again).
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_H
#define ATTN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTN_API_VERSION 10

typedef enum {
  ATTN_OK = 0,
  ATTN_ERR_ARGUMENT = 1,    /* a NULL pointer, an index out of range */
  ATTN_ERR_SHAPE = 2,       /* a rank or shape the kind does not take */
  ATTN_ERR_DTYPE = 3,       /* an element type the kind does not take */
  ATTN_ERR_LAYOUT = 4,      /* strides that are not row-major contiguous
                               (a paged cache's pools: rows not contiguous
                               or elements not apart), outputs overlapping
                               inputs */
  ATTN_ERR_VALUE = 5,       /* a length outside its sequence */
  ATTN_ERR_OPEN = 6,        /* the library cannot be loaded or is not one
                               attn-compile built for this API */
  ATTN_ERR_UNSUPPORTED = 7, /* the operation does not exist for this kind */
  ATTN_ERR_MEMORY = 8       /* out of memory */
} attn_status;

typedef enum {
  ATTN_F32 = 0,
  ATTN_BF16 = 1,
  ATTN_F16 = 2,
  ATTN_I64 = 3,
  ATTN_I32 = 4
} attn_dtype;

#define ATTN_MAX_RANK 4

/* A strided view of caller memory. `strides` count elements. */
typedef struct {
  void *data;
  attn_dtype dtype;
  int32_t rank;
  int64_t shape[ATTN_MAX_RANK];
  int64_t strides[ATTN_MAX_RANK];
} attn_tensor;

/* A row-major contiguous view of `data` with `rank` dims from `shape`. */
static inline attn_tensor attn_tensor_contiguous(void *data, attn_dtype dtype,
                                                 int32_t rank,
                                                 const int64_t *shape) {
  attn_tensor t;
  int64_t stride = 1;
  int32_t i;
  t.data = data;
  t.dtype = dtype;
  t.rank = rank;
  for (i = 0; i < ATTN_MAX_RANK; ++i)
    t.shape[i] = t.strides[i] = 0;
  for (i = rank - 1; i >= 0 && i < ATTN_MAX_RANK; --i) {
    t.shape[i] = shape[i];
    t.strides[i] = stride;
    stride *= shape[i];
  }
  return t;
}

/* What a kind's layers compute (attn_kind_info.op). */
#define ATTN_OP_SDPA 0        /* softmax attention: attn_sdpa */
#define ATTN_OP_GATED_DELTA 1 /* Gated DeltaNet: attn_gated_delta */

typedef struct attn_model attn_model;

typedef struct {
  const char *family;   /* config's model_type, e.g. "llama" */
  int64_t num_layers;
  int32_t num_kinds;
  int64_t hidden_size;
  const char *describe_json; /* attn-compile --describe of the config */
} attn_model_info;

typedef struct {
  const char *name;
  int32_t op;           /* ATTN_OP_SDPA or ATTN_OP_GATED_DELTA */
  /* SDPA: query heads Hq, KV heads Hkv, head dims D (q, k) and Dv (v).
   * GATED_DELTA: value heads Hv, query/key heads Hk, d_k and d_v. */
  int64_t num_heads, num_kv_heads, head_dim, head_dim_v;
  int32_t causal;       /* 1: bottom-right aligned causal mask */
  int64_t window;       /* sliding window in keys, 0: none */
  int64_t bias_buckets; /* T5's relative-bias table rows, 0: none */
  double scale;         /* the scores' scale */
  double softcap;       /* 0: none */
  int64_t num_layers;   /* the layers of this kind, in `layers` */
  const int64_t *layers;
  /* The element type of the K and V attn_sdpa reads and of the paged cache
   * attn_decode_paged and attn_append_kv take (attn-compile --kv-dtype:
   * ATTN_F32, ATTN_BF16 or ATTN_F16; q and out: qo_dtype; the arithmetic
   * stays f32),
   * and whether the kind has paged kernels. */
  attn_dtype kv_dtype;
  int32_t paged;
  /* Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2; 0 for other
   * kinds): the latent rank r and the rotary head dim dr, the latent cache
   * rows r + dr wide (attn_decode_latent, attn_append_latent); num_heads H,
   * head_dim and head_dim_v the expanded form's (attn_sdpa). */
  int64_t latent_rank, rope_head_dim;
  /* Chunked local attention (Llama 4's attention_chunk_size; since API
   * version 4): a causal query sees the keys of its own chunk of `chunk`
   * positions; 0: none. */
  int64_t chunk;
  /* GATED_DELTA without the delta correction (Mamba2's SSD; since API
   * version 5): S <- e^g S + k (beta v)^T, o = S^T (scale q), with q = C,
   * k = B (num_kv_heads the groups), v = x, beta = dt, g = dt A; 0 for
   * every other kind. attn_gated_delta takes the same tensors. */
  int32_t no_delta;
  /* GATED_DELTA with one decay per key channel (Kimi Delta Attention; since
   * API version 6): attn_gated_delta's g is [B, Hv, S, dk], S[i, :] <-
   * e^g[i] S[i, :]; 0 for every other kind. */
  int32_t channel_gate;
  /* The element type of q and out of attn_sdpa, attn_decode_paged and
   * attn_decode_latent (since API version 8; attn-compile --qo-dtype):
   * ATTN_F32, or the kind's 16-bit kv_dtype (ATTN_BF16/ATTN_F16, as torch's
   * bf16/f16 SDPA and FlashMLA take them; the arithmetic stays f32). */
  attn_dtype qo_dtype;
} attn_kind_info;

/* The API version of the library (ATTN_API_VERSION it was built with). */
int32_t attn_api_version(void);

/* The message of this thread's last failed call ("" when none). */
const char *attn_last_error(void);

/* Opens the model of the library at `path` (dlopen), or with path NULL the
 * model compiled into the library this function is called from. */
attn_status attn_model_open(const char *path, attn_model **model);
/* Closes `model` (NULL is fine); handles of it are invalid afterwards. */
void attn_model_close(attn_model *model);

attn_status attn_model_get_info(const attn_model *model,
                                attn_model_info *info);
/* The kind of layer `layer` in [0, num_layers). */
attn_status attn_kind_by_layer(const attn_model *model, int64_t layer,
                               int32_t *kind);
attn_status attn_kind_get_info(const attn_model *model, int32_t kind,
                               attn_kind_info *info);

/* The kernels' thread count (OpenMP); <= 0 restores the default. */
void attn_set_num_threads(int32_t threads);

/* Buffers for K/V caches, page pools and other tensors (since API version
 * 9): `bytes` (>= 1) uninitialized bytes on a 64-byte boundary, or from
 * 4 MiB on, a mapping of their own on a 2 MiB boundary with transparent
 * huge pages advised (madvise MADV_HUGEPAGE; Linux's default THP mode
 * "madvise" honours it, "never" leaves 4 KiB pages). A decode step reads
 * its whole cache once: with 4 KiB pages every 4 KiB costs a TLB miss and
 * stops the hardware prefetchers (the seed's f32 decode over 65,536 keys
 * on a Zen 4 ran 4-6% faster, docs/benchmarks.md "Huge pages"). Any
 * buffer works with every call; these only read faster. */
attn_status attn_buffer_alloc(int64_t bytes, void **out);
/* (ATTN_ERR_MEMORY where `bytes` exceed 80% of the machine's memory or the
 * system has none to map.) */
/* Frees a buffer of attn_buffer_alloc (NULL is fine); ATTN_ERR_ARGUMENT,
 * freeing nothing, for any other pointer. */
attn_status attn_buffer_free(void *buffer);

/* Scratch (since API version 7). The kernels take every buffer they need
 * (packed tiles, split-K partial rows, a layer's activations) from a
 * workspace the library keeps for each thread that runs them: a call whose
 * buffers fit in what the workspace holds makes no malloc, so a decode
 * step at a length already seen allocates nothing; a call at a new largest
 * shape grows it once. Per thread rather than per model, so that calls on
 * one model from several threads need no lock. Each library keeps its own;
 * the figures are those of `model`'s library, over all its threads (all 0
 * when it was built with the sanitizers, whose buffers are plain
 * mallocs): */
typedef struct {
  int64_t held_bytes;   /* what the workspaces hold now: the memory to
                           budget for scratch after a warm-up call at the
                           largest shape */
  int64_t in_use_bytes; /* of which calls running now use */
  int64_t peak_bytes;   /* the most in use at once so far */
  int64_t grows;        /* the mallocs the workspaces made so far: constant
                           over calls that fit */
  int64_t threads;      /* the threads that hold a workspace */
} attn_workspace_info;
attn_status attn_workspace_get_info(const attn_model *model,
                                    attn_workspace_info *info);
/* Gives the calling thread's workspace in `model`'s library back to the
 * heap, with the buffers its C API calls keep (the lengths they copy, a
 * state copied for an in-place update): the next call grows new ones. The
 * OpenMP threads keep theirs. */
attn_status attn_workspace_trim(const attn_model *model);

/* Attention sinks (gpt-oss: a kind whose describe_json layers have
 * "attention_sinks": true): one learned logit per query head (the
 * checkpoint's self_attn.sinks) that joins every row's softmax as a key of
 * value 0. `sinks` [num_heads] ATTN_F32 (finite, or -inf for none; with a
 * --tensor-parallel=T library this rank's num_heads / T) is copied into
 * `model`; attn_sdpa, attn_decode_paged and attn_decode_paged_mpi of the
 * kind count them from then on, and refuse the kind (ATTN_ERR_ARGUMENT)
 * until they are set. Not concurrently with calls on the same model.
 * ATTN_ERR_UNSUPPORTED for a kind without sinks. */
attn_status attn_kind_set_sinks(attn_model *model, int32_t kind,
                                const attn_tensor *sinks);

/* Softmax attention of a kind (ATTN_OP_SDPA), fused and tiled:
 *   q [B, Hq, Sq, D], k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv] -> out
 *   [B, Hq, Sq, Dv]; q and out the kind's qo_dtype (ATTN_F32 unless
 *   compiled with --qo-dtype), k and v the kind's kv_dtype
 *   (widened in registers, never copied). kv_lengths: B int64 in [0, Skv]
 * (batch row b attends to its first kv_lengths[b] keys: the rest is padding),
 * or NULL for Skv everywhere. A causal kind aligns query i with key Skv - Sq +
 * i (bottom right), a window keeps the last `window` keys up to it, a softcap c
 * maps scores s to c·tanh(s/c). bias_table: [bias_buckets, Hq] ATTN_F32 for
 * kinds with bias_buckets > 0, else NULL. A query row that sees no key is 0. */
attn_status attn_sdpa(const attn_model *model, int32_t kind,
                      const attn_tensor *q, const attn_tensor *k,
                      const attn_tensor *v, const int64_t *kv_lengths,
                      const attn_tensor *bias_table, attn_tensor *out);

/* Gated DeltaNet (ATTN_OP_GATED_DELTA), chunked:
 *   q, k [B, Hk, S, dk], v [B, Hv, S, dv], g and beta [B, Hv, S] (g
 *   [B, Hv, S, dk] for a kind with channel_gate: Kimi Delta Attention,
 *   recurrent), state_in
 *   [B, Hv, dk, dv] or NULL (zeros: a fresh sequence) -> out [B, Hv, S, dv]
 *   and, unless NULL, state_out [B, Hv, dk, dv]; all ATTN_F32. lengths: B
 *   int64 in [0, S] (row b is its first lengths[b] tokens; padding leaves
 *   the state as it is, its outputs are 0), or NULL for S everywhere.
 *   state_out may be state_in (the state updated in place). */
attn_status attn_gated_delta(const attn_model *model, int32_t kind,
                             const attn_tensor *q, const attn_tensor *k,
                             const attn_tensor *v, const attn_tensor *g,
                             const attn_tensor *beta,
                             const attn_tensor *state_in,
                             const int64_t *lengths, attn_tensor *out,
                             attn_tensor *state_out);

/* A paged KV cache. K and V live in page pools, k_cache [num_pages, Hkv,
 * page_size, D] and v_cache [num_pages, Hkv, page_size, Dv] of the kind's
 * kv_dtype (ATTN_F32, or ATTN_BF16/ATTN_F16 for a library compiled with
 * --kv-dtype=bf16/f16: half the bytes to read; q and out the kind's
 * qo_dtype):
 * one page holds page_size consecutive tokens of every KV head, each
 * head's rows contiguous (FlashInfer's "HND" layout: a kernel streams one
 * head's keys from contiguous memory). block_table [B, max_pages]
 * (ATTN_I32, as vLLM and FlashInfer keep it) lists each sequence's pages:
 * token j of sequence b is row j % page_size of page
 * block_table[b, j / page_size]. Pages may be shared between sequences (a
 * common prefix); entries past a sequence's last page are never read.
 * The pools may have any strides (since API version 10) that keep each row
 * of D (Dv) elements contiguous (last stride 1) and every element apart
 * (positive strides, each at least the span of the dims strided more
 * finely), else ATTN_ERR_LAYOUT: vLLM's and FlashInfer's "NHD" pools
 * [num_pages, page_size, Hkv, D] passed with strides {page_size·Hkv·D, D,
 * Hkv·D, 1}; head-major pools [Hkv, num_pages, page_size, D] with {page_size·D,
 * num_pages·page_size·D, D, 1} (each head's pages in one run); padded rows
 * or pages; K and V interleaved in one buffer (FlashInfer's [num_pages, 2,
 * page_size, Hkv, D]: the same strides, v_cache's data page_size·Hkv·D
 * elements after k_cache's). Every layout reads the same rows, not at the
 * same speed: on a Zen 4 head-major pools whose pages a sequence gets in
 * runs read like a contiguous cache, HND over shuffled pages 1.1x slower
 * in f32, NHD up to 1.8x slower where decode is memory-bound (8 KV heads
 * of d 128; docs/benchmarks.md "Page pools' layouts"). */

/* Attention of q [B, Hq, Sq, D] (each sequence's last Sq tokens: decode
 * Sq = 1, speculative or chunked prefill more) over the paged cache, the
 * sequence b holding kv_lengths[b] tokens (B int64 in [0, max_pages ·
 * page_size]; every page they use must be in the pool) -> out [B, Hq, Sq,
 * Dv]. Causal and window masks align query i with key
 * kv_lengths[b] - Sq + i; a row that sees no key is 0. */
attn_status attn_decode_paged(const attn_model *model, int32_t kind,
                              const attn_tensor *q, const attn_tensor *k_cache,
                              const attn_tensor *v_cache,
                              const attn_tensor *block_table,
                              const int64_t *kv_lengths, attn_tensor *out);

/* The partial form of attn_decode_paged over one key range of each
 * sequence, for context parallelism (a library compiled with attn-compile
 * --distributed=mpi; else ATTN_ERR_UNSUPPORTED): the cache holds a range of
 * each sequence's tokens, numbered from 0 (kv_lengths[b] of them), and
 * q_pos[b] (B int64, any value) is the position of sequence b's first query
 * row in those numbers (the causal and window masks use it; negative when
 * the query precedes the range), and range_start[b] (B int64, or NULL for
 * 0) the position in sequence b of the range's first key: a kind with
 * chunked attention (Llama 4) cuts its chunks at multiples of the chunk in
 * the sequence's positions and needs it (NULL is refused there); other
 * kinds ignore it. Writes out [B, Hq, Sq, Dv] and stats [B,
 * Hq, Sq, 2] (ATTN_F32): each row's largest score m and l = Σ exp(s - m)
 * over the range (-inf and 0, with out 0, for a row that saw no key).
 * Ranges merge exactly: M = max_r m_r, o = Σ_r e^(m_r-M)·l_r·o_r /
 * Σ_r e^(m_r-M)·l_r (attn_mpi.h's attn_decode_paged_mpi does it over MPI).
 * A kind's attention sinks are not counted in a range: the caller folds
 * them in once after the merge, as one more range of m = sink, l = 1 and
 * out 0 (attn_decode_paged_mpi does). */
attn_status attn_decode_paged_part(const attn_model *model, int32_t kind,
                                   const attn_tensor *q,
                                   const attn_tensor *k_cache,
                                   const attn_tensor *v_cache,
                                   const attn_tensor *block_table,
                                   const int64_t *kv_lengths,
                                   const int64_t *q_pos,
                                   const int64_t *range_start,
                                   attn_tensor *out, attn_tensor *stats);

/* Writes new tokens into the paged cache: k_new [B, Hkv, n, D] and v_new
 * [B, Hkv, n, Dv]; sequence b's first counts[b] of them (counts NULL: all
 * n) become its tokens start[b], start[b] + 1, ... (pages from
 * block_table as above; every page written must be in the pool). */
attn_status attn_append_kv(const attn_model *model, int32_t kind,
                           attn_tensor *k_cache, attn_tensor *v_cache,
                           const attn_tensor *block_table,
                           const int64_t *start, const int64_t *counts,
                           const attn_tensor *k_new, const attn_tensor *v_new);

/* Multi-head latent attention's decode over a paged latent cache (a kind
 * with latent_rank r > 0, dr = rope_head_dim): the absorbed form, every
 * head over the cache's rows. latent_cache [num_pages, page_size, r + dr]
 * of the kind's kv_dtype holds one row per token (its RMS-normed latent,
 * then its rotated rotary key; pages of 64 tokens, as FlashMLA keeps them,
 * or any size); block_table and kv_lengths as for attn_decode_paged. q
 * [B, H, Sq, r + dr] (ATTN_F32) holds each head's query in the latent
 * space (q_nope · W_UK[h]) then its rotary part; out [B, H, Sq, r] gets the
 * attention over the rows' first r features (the values, read in place),
 * still in the latent space (· W_UV[h]ᵀ maps it back). Causal: query i of
 * sequence b at key kv_lengths[b] - Sq + i. The lengths are read once,
 * before anything is written. */
attn_status attn_decode_latent(const attn_model *model, int32_t kind,
                               const attn_tensor *q,
                               const attn_tensor *latent_cache,
                               const attn_tensor *block_table,
                               const int64_t *kv_lengths, attn_tensor *out);

/* The partial form of attn_decode_latent over one key range of each
 * sequence, for context parallelism (a library compiled with
 * --distributed=mpi; else ATTN_ERR_UNSUPPORTED), as attn_decode_paged_part:
 * q_pos[b] is the position of sequence b's first query row in the range's
 * numbering; stats [B, H, Sq, 2] gets each row's (m, l).
 * attn_decode_latent_mpi (attn_mpi.h) merges the ranks' results. */
attn_status attn_decode_latent_part(const attn_model *model, int32_t kind,
                                    const attn_tensor *q,
                                    const attn_tensor *latent_cache,
                                    const attn_tensor *block_table,
                                    const int64_t *kv_lengths,
                                    const int64_t *q_pos, attn_tensor *out,
                                    attn_tensor *stats);

/* Writes new latent rows rows_new [B, n, r + dr] (the kind's kv_dtype)
 * into the paged latent cache as tokens start[b], start[b] + 1, ... of each
 * sequence (its first counts[b] rows; all n without counts). */
attn_status attn_append_latent(const attn_model *model, int32_t kind,
                               attn_tensor *latent_cache,
                               const attn_tensor *block_table,
                               const int64_t *start, const int64_t *counts,
                               const attn_tensor *rows_new);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_H */
