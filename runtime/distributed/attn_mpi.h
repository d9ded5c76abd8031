/*===- attn_mpi.h - the attn C API over MPI (context parallelism) ---------===*
 *
 * What a library compiled with `attn-compile --distributed=mpi
 * --emit=shared` adds to attn.h: attention whose KV cache is sharded by
 * sequence position across the ranks of an MPI communicator. Include after
 * <mpi.h>'s availability (this header includes it); link the library and
 * MPI (mpicc does). MPI must be initialized by the caller.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_MPI_H
#define ATTN_MPI_H

/* Open MPI's and MPICH's C++ bindings (deprecated, and what g++ builds
 * would otherwise need at link time: MPI::Comm::Comm()) stay out. */
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One decode (or speculative) step over a KV cache sharded across the
 * ranks of `comm`: each rank holds a contiguous range of every sequence's
 * tokens in its own paged cache (k_cache, v_cache, block_table as for
 * attn_decode_paged; kv_lengths[b] tokens of sequence b on this rank, 0 for
 * a rank that holds none), q_pos[b] is the position of the query's first
 * row in this rank's numbering of its range (the sequence's total length
 * - Sq - the range's first token: negative never happens for decode, as
 * the query follows every key), range_start[b] the range's first token
 * (NULL: 0; needed by a kind with chunked attention, see
 * attn_decode_paged_part). Collective: every rank of `comm` calls it
 * with the same q [B, Hq, Sq, D] and gets the exact attention over the
 * whole cache in out [B, Hq, Sq, Dv]: each rank runs the partial kernel
 * (attn_decode_paged_part) on its range, and one MPI_Allreduce with a
 * user-defined operation merges the (out, max, sum) rows by log-sum-exp
 * (a rank without keys for a row contributes weight 0). With a library
 * compiled with --tensor-parallel=T, q, the cache and out hold this rank's
 * share of the heads (Hq/T query heads, Hkv/T KV heads) and `comm` is the
 * ranks of its head shard. When any rank's
 * arguments fail their checks, every rank returns that status (the
 * failing rank's message on it, "another rank failed" elsewhere) and
 * nothing is written. */
attn_status attn_decode_paged_mpi(const attn_model *model, int32_t kind,
                                  MPI_Comm comm, const attn_tensor *q,
                                  const attn_tensor *k_cache,
                                  const attn_tensor *v_cache,
                                  const attn_tensor *block_table,
                                  const int64_t *kv_lengths,
                                  const int64_t *q_pos,
                                  const int64_t *range_start,
                                  attn_tensor *out);

/* The same for a multi-head latent attention kind (attn_decode_latent):
 * each rank holds a contiguous range of every sequence's latent rows in its
 * own paged latent cache [num_pages, page_size, r + dr]; q [B, H, Sq,
 * r + dr] is the same on every rank, out [B, H, Sq, r] the attention over
 * the whole cache on every rank (one MPI_Allreduce of the partial rows,
 * merged by log-sum-exp). */
attn_status attn_decode_latent_mpi(const attn_model *model, int32_t kind,
                                   MPI_Comm comm, const attn_tensor *q,
                                   const attn_tensor *latent_cache,
                                   const attn_tensor *block_table,
                                   const int64_t *kv_lengths,
                                   const int64_t *q_pos, attn_tensor *out);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_MPI_H */
