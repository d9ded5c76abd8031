//===- mpi_cli.h - the executable's commands over MPI ranks -----*- C++ -*-===//
//
// What the MPI commands share (mpi_commands.cpp: check, sdpa; mpi_bench.cpp:
// bench): the ranks, their thread choice and their head x context topology.
// The algorithms they run are the distributed library's
// (runtime/distributed/mpi_internal.h). Internal: not installed.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_RUN_MPI_CLI_H
#define ATTN_RUNTIME_RUN_MPI_CLI_H

#include "cli.h"
#include "mpi_internal.h"

#include <climits>
#include <cstring>

namespace attn_rt::mpi {

using namespace attn_rt::cli;

struct World {
  int rank = 0, size = 1;
};

/// One OpenMP thread per core this rank shares with the others of its node
/// (all of them for one rank), unless --threads says otherwise.
void pickThreads(const Args &args);

const attn_rt_kind &distributedKind(const attn_rt_model *m, int64_t layer);

/// The ranks as head shards x context shards: rank c·T + t holds head shard
/// t (KV heads [t·Hkv/T, (t+1)·Hkv/T) and their query heads) of context
/// shard c; T = the kind's tensor_parallel.
struct Topology {
  int T = 1, t = 0, C = 1, c = 0;
  MPI_Comm ctx = MPI_COMM_NULL;   ///< the C ranks of head shard t
  MPI_Comm heads = MPI_COMM_NULL; ///< the T ranks of context shard c
  attn_rt_kind local{};           ///< the kind as a rank sees it: its heads
  Topology(const attn_rt_kind &kind, const World &w) : local(kind) {
    T = int(std::max<int64_t>(1, kind.tensor_parallel));
    if (w.size % T != 0)
      fail("mpirun -np " + std::to_string(w.size) + ": kind '" + kind.name +
           "' shards its heads over --tensor-parallel=" + std::to_string(T) +
           " ranks, so the rank count must be a multiple of " +
           std::to_string(T) + " (T head shards x context shards)");
    t = w.rank % T;
    c = w.rank / T;
    C = w.size / T;
    MPI_Comm_split(MPI_COMM_WORLD, t, c, &ctx);
    MPI_Comm_split(MPI_COMM_WORLD, c, t, &heads);
    local.num_heads /= T;
    local.num_kv_heads /= T;
  }
  ~Topology() {
    MPI_Comm_free(&ctx);
    MPI_Comm_free(&heads);
  }
  Topology(const Topology &) = delete;
  Topology &operator=(const Topology &) = delete;
  /// This rank's heads [h0, h0 + local heads) of x [B, H, S, D] (H: the
  /// kind's query or KV head count).
  Buf<float> slice(const Buf<float> &x, int64_t B, int64_t H, int64_t S,
                   int64_t D) const {
    if (T == 1)
      return x;
    int64_t hn = H / T, h0 = t * hn;
    Buf<float> out(B * hn * S * D);
    for (int64_t b = 0; b < B; ++b)
      std::memcpy(&out[b * hn * S * D], &x[((b * H) + h0) * S * D],
                  hn * S * D * sizeof(float));
    return out;
  }
  /// This rank's share of a kind's sinks [Hq] (empty: none).
  Buf<float> sliceSinks(const Buf<float> &sinks) const {
    if (sinks.empty() || T == 1)
      return sinks;
    int64_t hn = int64_t(sinks.size()) / T;
    return Buf<float>(sinks.begin() + t * hn, sinks.begin() + (t + 1) * hn);
  }
  /// The head shards' outputs [B, Hq/T, rows, Dv] of context shard 0 into
  /// out [B, Hq, rows, Dv] on world rank 0.
  void gather(const Buf<float> &part, int64_t B, int64_t Hq, int64_t rows,
              int64_t Dv, Buf<float> &out) const {
    if (c != 0)
      return;
    if (T == 1) {
      out = part;
      return;
    }
    int64_t per = B * (Hq / T) * rows * Dv;
    if (per * T > INT_MAX)
      fail("gathering the heads: the output is too large for one call");
    Buf<float> all(t == 0 ? per * T : 0);
    MPI_Gather(part.data(), int(per), MPI_FLOAT, all.data(), int(per),
               MPI_FLOAT, 0, heads);
    if (t != 0)
      return;
    int64_t hn = Hq / T, block = hn * rows * Dv;
    out.assign(B * Hq * rows * Dv, 0.0f);
    for (int64_t r = 0; r < T; ++r)
      for (int64_t b = 0; b < B; ++b)
        std::memcpy(&out[(b * Hq + r * hn) * rows * Dv],
                    &all[r * per + b * block], block * sizeof(float));
  }
};

/// `bench` over MPI ranks (mpi_bench.cpp).
int cmdBench(const attn_rt_model *m, const World &w, int argc, char **argv);

} // namespace attn_rt::mpi

#endif // ATTN_RUNTIME_RUN_MPI_CLI_H
