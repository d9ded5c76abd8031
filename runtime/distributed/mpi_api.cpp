//===- mpi_api.cpp - the C API's collectives over MPI ---------------------===//
//
// attn_decode_paged_mpi and attn_decode_latent_mpi (attn_mpi.h): every rank
// runs the partial call on its range of the cache, every rank learns
// whether any failed its checks, then the rows merge by log-sum-exp into
// every rank's out.
//
//===----------------------------------------------------------------------===//

#include "attn_mpi.h"
#include "mpi_internal.h"
#include "capi_internal.h"

#include "narrow.h"
#include "npy.h"
#include "resources.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace attn_rt;
using namespace attn_rt::mpi;

using attn_rt::guardCall;

namespace {

/// The collective of attn_decode_paged_mpi and attn_decode_latent_mpi:
/// `partial(o, s)` runs this rank's partial call into scratch tensors of
/// out's shape (so that a failure on another rank leaves `out` untouched)
/// and the row statistics; every rank learns whether any failed, then the
/// rows merge by log-sum-exp into every rank's `out`. `dv` is the rows'
/// width (the kind's head_dim_v, or its latent rank).
template <typename F>
attn_status decodeOverRanks(const char *call, const attn_model *model,
                            int32_t kind, MPI_Comm comm, attn_tensor *out,
                            bool latent, F partial) {
  attn_kind_info info;
  attn_status status = ATTN_OK;
  if (!out)
    status = ATTN_ERR_ARGUMENT;
  else
    status = attn_kind_get_info(model, kind, &info);
  // A kind's sinks, folded into the merged rows once (the partial kernels
  // count none): set for out's query heads.
  const float *sinks = nullptr;
  if (status == ATTN_OK && !latent && out->rank == 4)
    status = attn_rt::sinksForCall(model, kind, call, out->shape[1], sinks);
  Buf<float> part, stats;
  int64_t rows = 0, dv = 0;
  if (status == ATTN_OK) {
    bool contiguous = out->rank == 4 && out->dtype == ATTN_F32;
    int64_t stride = 1;
    for (int i = 3; contiguous && i >= 0; --i) {
      contiguous = out->shape[i] >= 0 &&
                   (out->shape[i] == 1 || out->strides[i] == stride);
      stride *= out->shape[i];
    }
    if (!contiguous) {
      status = ATTN_ERR_SHAPE;
      setLastError(std::string(call) + ": out must be a row-major "
                   "contiguous [B, " + (latent ? "H, Sq, r" : "Hq, Sq, Dv") +
                   "] ATTN_F32 tensor");
    }
  }
  if (status == ATTN_OK) {
    // out's head count is checked by the partial call (on its scratch of
    // the same shape): the kind's, or one rank's share with
    // --tensor-parallel (the communicator is then one head shard's ranks).
    int64_t hq = out->shape[1];
    rows = out->shape[0] * hq * out->shape[2];
    dv = latent ? info.latent_rank : info.head_dim_v;
    if (out->shape[3] != dv) {
      status = ATTN_ERR_SHAPE;
      setLastError(std::string(call) + ": out has " +
                   (latent ? "width " : "Dv ") +
                   std::to_string(out->shape[3]) + "; the kind's is " +
                   std::to_string(dv));
    } else {
      try {
        part.assign(rows * dv, 0.0f);
        stats.assign(rows * 2, 0.0f);
      } catch (const std::exception &) {
        status = ATTN_ERR_MEMORY;
        setLastError(std::string(call) + ": no memory for the partial "
                     "rows of out " +
                     std::to_string(rows) + " x " + std::to_string(dv));
      }
    }
    if (status == ATTN_OK) {
      int64_t os[4] = {out->shape[0], hq, out->shape[2], dv};
      int64_t ss[4] = {out->shape[0], hq, out->shape[2], 2};
      attn_tensor o = attn_tensor_contiguous(part.data(), ATTN_F32, 4, os);
      attn_tensor s = attn_tensor_contiguous(stats.data(), ATTN_F32, 4, ss);
      status = partial(&o, &s);
    }
  } else if (!out) {
    setLastError(std::string(call) + ": out is NULL");
  }
  // Every rank learns whether any failed before the data collective.
  int mine = int(status), worst = 0;
  MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm);
  if (worst != ATTN_OK) {
    if (status == ATTN_OK)
      setLastError(std::string(call) + ": another rank of the "
                   "communicator failed its checks (status " +
                   std::to_string(worst) + "); nothing was written");
    return attn_status(worst);
  }
  Buf<float> packed;
  allreduceRows(comm, rows, dv, part.data(), stats.data(), packed, sinks,
                out->shape[1], out->shape[2]);
  std::memcpy(out->data, part.data(), part.size() * sizeof(float));
  return ATTN_OK;
}

} // namespace

extern "C" attn_status
attn_decode_paged_mpi(const attn_model *model, int32_t kind, MPI_Comm comm,
                      const attn_tensor *q, const attn_tensor *k_cache,
                      const attn_tensor *v_cache,
                      const attn_tensor *block_table,
                      const int64_t *kv_lengths, const int64_t *q_pos,
                      const int64_t *range_start, attn_tensor *out) {
  return guardCall("attn_decode_paged_mpi", [&]() -> attn_status {
  return decodeOverRanks(
      "attn_decode_paged_mpi", model, kind, comm, out, /*latent=*/false,
      [&](attn_tensor *o, attn_tensor *s) {
        return attn_decode_paged_part(model, kind, q, k_cache, v_cache,
                                      block_table, kv_lengths, q_pos,
                                      range_start, o, s);
      });
});
}

extern "C" attn_status
attn_decode_latent_mpi(const attn_model *model, int32_t kind, MPI_Comm comm,
                       const attn_tensor *q, const attn_tensor *latent_cache,
                       const attn_tensor *block_table,
                       const int64_t *kv_lengths, const int64_t *q_pos,
                       attn_tensor *out) {
  return guardCall("attn_decode_latent_mpi", [&]() -> attn_status {
  return decodeOverRanks(
      "attn_decode_latent_mpi", model, kind, comm, out, /*latent=*/true,
      [&](attn_tensor *o, attn_tensor *s) {
        return attn_decode_latent_part(model, kind, q, latent_cache,
                                       block_table, kv_lengths, q_pos, o, s);
      });
});
}
