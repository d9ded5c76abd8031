//===- mpi_bench.cpp - bench over MPI ranks -------------------------------===//
//
// `bench` of executables compiled with --distributed=mpi: sharded-KV decode
// and ring prefill timed over the ranks (kernel, collective and
// communication-alone figures), next to the read bandwidth of all ranks
// together measured in the same run.
//
//===----------------------------------------------------------------------===//

#include "attn_mpi.h"
#include "mpi_cli.h"

#include "cli.h"
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

namespace attn_rt::mpi {

namespace {

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The largest of every rank's value (the step waits for the slowest).
double maxOverRanks(double x) {
  double y;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return y;
}

/// The read bandwidth of all ranks together (GB/s): each rank sums its own
/// 256 MiB buffer at the same time (median of 5, slowest rank's time).
double probeReadBandwidth() {
  std::vector<uint64_t> buf(size_t(32) << 20);
  for (size_t i = 0; i < buf.size(); ++i)
    buf[i] = i * 0x9E3779B97F4A7C15ull;
  std::vector<double> gbs;
  uint64_t sink = 0;
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int threads = std::max(1, ompThreads());
  std::vector<uint64_t> sums(threads);
  for (int r = 0; r < 6; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    // This rank's threads (its cores), each on its slice.
    std::vector<std::thread> pool;
    for (int th = 0; th < threads; ++th)
      pool.emplace_back([&, th] {
        size_t n = buf.size() / threads, lo = th * n;
        uint64_t a[8] = {};
        for (size_t i = lo; i + 8 <= lo + n; i += 8)
          for (int j = 0; j < 8; ++j)
            a[j] += buf[i + j];
        for (uint64_t x : a)
          sums[th] += x;
      });
    for (std::thread &t : pool)
      t.join();
    for (uint64_t x : sums)
      sink += x;
    double t = maxOverRanks(now() - t0);
    if (r > 0)
      gbs.push_back(double(buf.size()) * 8 * size / t / 1e9);
  }
  if (sink == 42)
    std::printf(" ");
  return medianOf(gbs);
}

} // namespace

int cmdBench(const attn_rt_model *m, const World &w, int argc, char **argv) {
  // Long: bench's report over ranks, rows in the order they print.
  Args args = parseArgs(argc, argv, 2,
                        {"layer", "kv-len", "batch", "seq", "page-size",
                         "repeats", "threads"});
  pickThreads(args);
  int64_t layer = -1;
  if (args.count("layer"))
    layer = intArg(args, "layer", 0, 0, 1 << 30);
  else
    for (int64_t i = 0; i < m->num_layers && layer < 0; ++i)
      if (m->layer_kind[i] >= 0 && m->kinds[m->layer_kind[i]].paged_part)
        layer = i;
  if (layer < 0)
    fail("bench: no layer has context-parallel kernels");
  const attn_rt_kind &kind = distributedKind(m, layer);
  int64_t N = intArg(args, "kv-len", 32768, 1, int64_t(1) << 40),
          B = intArg(args, "batch", 1, 1, 1 << 20),
          S = intArg(args, "seq", 4096, 1, int64_t(1) << 30),
          P = intArg(args, "page-size", 256, 1, 1 << 20),
          repeats = intArg(args, "repeats", 9, 1, 100000);
  int64_t Hq = kind.num_heads, Hkv = kind.num_kv_heads, D = kind.head_dim,
          Dv = kind.head_dim_v;
  Topology tp(kind, w);
  // Each rank's heads: the ring and the decode shards run within tp.ctx.
  const attn_rt_kind &lk = tp.local;
  int64_t lHq = lk.num_heads, lHkv = lk.num_kv_heads;
  // What each rank allocates, checked before any of it: the prefill's q,
  // K/V and their pools and outputs; the decode's contiguous K/V and its
  // paged copy.
  {
    std::string err;
    unsigned __int128 prefill =
        (unsigned __int128)4 * B * S * (3 * lHq * (D + Dv) + 3 * lHkv * (D + Dv));
    unsigned __int128 decode =
        (unsigned __int128)4 * B * (N + P) * lHkv * (D + Dv) * 2;
    int bad = !fitsInMemory(prefill, "bench's prefill of --seq " +
                                         std::to_string(S) + " tokens",
                            err) ||
              !fitsInMemory(decode, "bench's decode over --kv-len " +
                                        std::to_string(N) + " tokens",
                            err);
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any)
      fail(bad ? err : "another rank cannot hold bench's tensors");
  }
  std::mt19937 rng(7);
  // A kind with sinks runs with its rank's share of random ones (folded
  // into the merged rows, as serving does).
  Buf<float> sinks = tp.sliceSinks(kind.has_sinks ? randomExtraInput(kind, rng)
                                                  : Buf<float>());
  const float *sk = sinks.empty() ? nullptr : sinks.data();
  double bandwidth = probeReadBandwidth();
  if (w.rank == 0) {
    std::string cpu = "unknown CPU";
    if (FILE *f = std::fopen("/proc/cpuinfo", "r")) {
      char line[512];
      while (std::fgets(line, sizeof(line), f))
        if (!std::strncmp(line, "model name", 10)) {
          cpu = std::string(std::strchr(line, ':') + 2);
          cpu.erase(cpu.find_last_not_of(" \n") + 1);
          break;
        }
      std::fclose(f);
    }
    std::printf("bench: layer %lld (kind '%s', Hq %lld, Hkv %lld, d %lld, K/V "
                "%s), np=%d = %d head shard(s) x %d context shard(s), %d "
                "thread(s) per rank; %s, read bandwidth of all ranks "
                "together %.1f GB/s\n",
                (long long)layer, kind.name, (long long)Hq, (long long)Hkv,
                (long long)D, kvDtypeName(kind), w.size, tp.T, tp.C,
                ompThreads(), cpu.c_str(), bandwidth);
  }
  // Prefill: ring attention over S tokens.
  {
    Buf<float> q = randomVec(rng, B * lHq * S * D, 1.0f),
               k = randomVec(rng, B * lHkv * S * D, 1.0f),
               v = randomVec(rng, B * lHkv * S * Dv, 1.0f);
    RingLayout L = ringLayout(lk, B, S, tp.C, P);
    Buf<float> qc[2];
    ringQueries(L, lHq, tp.c, q, qc);
    Buf<unsigned char> kPool(L.maxPoolPages() * L.pageBytes(L.d)),
        vPool(L.maxPoolPages() * L.pageBytes(L.dv));
    fillRingPools(lk, L, tp.c, k, v, kPool, vPool);
    RingState st;
    std::vector<double> total, compute, wait, comm;
    RingTimes t{};
    for (int64_t r = 0; r <= repeats; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      t = ringAttention(tp.ctx, lk, L, qc, kPool, vPool, st, false, sk);
      double tt = maxOverRanks(t.total), tc = maxOverRanks(t.compute),
             tw = maxOverRanks(t.exposedWait);
      MPI_Barrier(MPI_COMM_WORLD);
      RingTimes c = ringAttention(tp.ctx, lk, L, qc, kPool, vPool,
                                  st, /*computeOff=*/true);
      double tcomm = maxOverRanks(c.total);
      if (r == 0)
        continue;
      total.push_back(tt * 1e3);
      compute.push_back(tc * 1e3);
      wait.push_back(tw * 1e3);
      comm.push_back(tcomm * 1e3);
    }
    // Causal FLOP: the visible (i, j) pairs, 2·(D + Dv) each per head.
    double pairs = kind.causal ? double(S) * (S + 1) / 2 : double(S) * S;
    double flop = 2.0 * pairs * (D + Dv) * Hq * B;
    double ms = medianOf(total), commMs = medianOf(comm),
           waitMs = medianOf(wait);
    double hidden = commMs > 0 ? std::clamp(1.0 - waitMs / commMs, 0.0, 1.0)
                               : 1.0;
    if (w.rank == 0) {
      std::printf("prefill (ring, zig-zag chunks): B=%lld S=%lld, %s\n",
                  (long long)B, (long long)S,
                  kind.causal ? "causal" : "bidirectional");
      std::printf("  %.3f ms (%.1f GFLOP/s over all ranks): compute %.3f ms "
                  "(slowest rank), exposed wait %.3f ms; the ring's "
                  "communication alone %.3f ms (%lld bytes sent per rank): "
                  "%.0f%% of it hidden behind compute\n",
                  ms, flop / (ms * 1e-3) / 1e9, medianOf(compute), waitMs,
                  commMs, (long long)t.bytesSent, hidden * 100);
    }
  }
  // Decode: B sequences of N tokens, one query row each.
  {
    std::vector<int64_t> qs = {B, lHq, 1, D}, lens(B, N);
    Buf<float> q = randomVec(rng, B * lHq * D, 1.0f),
               k = randomVec(rng, B * lHkv * N * D, 1.0f),
               v = randomVec(rng, B * lHkv * N * Dv, 1.0f);
    PagedShard shard =
        makeDecodeShard(tp.ctx, lk, k, v, B, N, lens, P, {});
    k = {};
    v = {};
    Buf<float> out;
    std::vector<double> step, kern, coll;
    DecodeTimes t{};
    for (int64_t r = 0; r <= repeats; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now();
      t = shardedDecode(tp.ctx, lk, q, qs, &shard, lens, out, sk);
      double total = now() - t0;
      double slowKernel = maxOverRanks(t.kernel);
      if (r == 0)
        continue; // warm-up
      step.push_back(maxOverRanks(total) * 1e3);
      kern.push_back(slowKernel * 1e3);
      // The collective alone, every rank ready (in the step it also waits
      // for the slowest rank's kernel).
      Buf<float> o2(out.size()), st2(out.size() / Dv * 2), packed;
      MPI_Barrier(MPI_COMM_WORLD);
      coll.push_back(maxOverRanks(allreduceRows(tp.ctx,
                                                int64_t(st2.size() / 2), Dv,
                                                o2.data(), st2.data(),
                                                packed)) *
                     1e3);
    }
    int64_t localTokens = 0;
    for (int64_t b = 0; b < B; ++b)
      localTokens += shard.len[b];
    double kvBytes =
        double(localTokens) * lHkv * (D + Dv) * kvElementBytes(kind);
    double kms = medianOf(kern);
    if (w.rank == 0) {
      std::printf("decode: B=%lld, %lld tokens per sequence in pages of %lld, "
                  "%lld tokens of K/V per rank (%.1f MB)\n",
                  (long long)B, (long long)N, (long long)P,
                  (long long)localTokens, kvBytes / 1e6);
      double rate = kvBytes * w.size / (kms * 1e-3) / 1e9;
      std::printf("  step %.3f ms = local kernel %.3f ms (slowest rank; all "
                  "ranks read K+V at %.1f GB/s, %.0f%% of the bandwidth) + "
                  "allreduce %.3f ms (%.1f%% of the step); each rank "
                  "contributes %lld bytes of packed rows (%lld rows x (Dv + "
                  "2) floats)\n",
                  medianOf(step), kms, rate, 100 * rate / bandwidth,
                  medianOf(coll), 100 * medianOf(coll) / medianOf(step),
                  (long long)t.bytes, (long long)(B * lHq));
    }
  }
  return 0;
}

} // namespace attn_rt::mpi
