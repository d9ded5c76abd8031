//===- mpi_commands.cpp - check and sdpa over MPI ranks -------------------===//
//
// The commands of executables compiled with --distributed=mpi
// (attn_rt_mpi_main, reached from main.cpp through a weak reference):
// `check` (the distributed kernels against the 1-process kernel and a
// float64 reference, every layer kind, decode and ring prefill, head
// sharding) and `sdpa` (one call from .npy files); `bench` is in
// mpi_bench.cpp.
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
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace attn_rt::mpi {

void pickThreads(const Args &args) {
  int threads;
  if (args.count("threads")) {
    threads = int(intArg(args, "threads", 1, 1, 4096));
  } else {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                        &node);
    int local = 1;
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    threads = int(std::max<long>(1, cores / std::max(1, local)));
  }
  if (omp_set_num_threads)
    omp_set_num_threads(threads);
}

const attn_rt_kind &distributedKind(const attn_rt_model *m, int64_t layer) {
  const attn_rt_kind &kind = kindOfLayer(m, layer);
  if (kind.op != ATTN_RT_OP_SDPA || !kind.paged_part)
    fail("layer " + std::to_string(layer) + " (kind '" + kind.name +
         "') has no context-parallel kernel: " +
         (kind.op != ATTN_RT_OP_SDPA
              ? "Gated DeltaNet layers keep a constant-size state and need no "
                "sharding"
              : "T5's relative-bias layers have no paged kernels"));
  return kind;
}

namespace {

double maxAbsDiff(const Buf<float> &a, const Buf<float> &b, double &refMax) {
  double d = 0;
  refMax = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]))
      return INFINITY;
    d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    refMax = std::max(refMax, std::fabs(double(b[i])));
  }
  return d;
}

/// check: the distributed kernels against the single-process kernel and
/// the float64 reference, for every kind that has them.
/// A rank's paged latent cache: token ranges [start[b], start[b] + len[b])
/// of each sequence's rows of a contiguous latent cache [B, S, row], pages
/// [numPages, P, row] of the kind's element type handed out from the end of
/// the pool.
struct LatentShard {
  int64_t pageSize = 16, numPages = 0, maxPages = 1, row = 0;
  std::vector<int64_t> start, len;
  Buf<unsigned char> pool;
  std::vector<int32_t> table;
  LatentShard(const attn_rt_kind &kind, const Buf<float> &cache, int64_t B,
              int64_t S, std::vector<int64_t> starts, std::vector<int64_t> lens,
              int64_t P)
      : pageSize(P), row(kind.kv_lora_rank + kind.rope_head_dim),
        start(std::move(starts)), len(std::move(lens)) {
    int64_t eb = kvElementBytes(kind);
    pagesFromEnd(len, P, numPages, maxPages, table);
    pool.assign(std::max<int64_t>(numPages, 1) * P * row * eb, 0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < len[b]; ++j)
        storeRow(kind, pool, &cache[(b * S + start[b] + j) * row],
                 (table[b * maxPages + j / P] * P + j % P) * row, row);
  }
  /// The partial kernel with q_pos (or, `qPos` null, the whole-cache one).
  void run(const attn_rt_kind &kind, Buf<float> &q,
           const std::vector<int64_t> &qs, std::vector<int64_t> *qPos,
           Buf<float> &out, Buf<float> &stats) {
    int64_t B = qs[0], H = qs[1], Sq = qs[2], r = kind.kv_lora_rank;
    out.resize(B * H * Sq * r);
    stats.resize(B * H * Sq * 2);
    attn_rt_memref_f32_4 dout = view4(out.data(), {B, H, Sq, r}),
                         ds = view4(stats.data(), {B, H, Sq, 2}),
                         dq = view4(q.data(), qs);
    attn_rt_memref_f32_3 dp =
        view3(reinterpret_cast<float *>(pool.data()),
              {std::max<int64_t>(numPages, 1), pageSize, row});
    attn_rt_memref_i32_2 dt{
        table.data(), table.data(), 0, {B, maxPages}, {maxPages, 1}};
    attn_rt_memref_i64_1 dl{len.data(), len.data(), 0, {B}, {1}};
    if (!qPos) {
      kind.mla_paged(&dout, &dq, &dp, &dt, &dl);
      return;
    }
    attn_rt_memref_i64_1 dq1{qPos->data(), qPos->data(), 0, {B}, {1}};
    kind.mla_paged_part(&dout, &ds, &dq, &dp, &dt, &dl, &dq1);
  }
};

/// check's sharded latent decode for one multi-head latent attention kind:
/// each rank's page-aligned range of every sequence's latent rows, the
/// partial kernels merged by one MPI_Allreduce, against the single-process
/// paged kernel and a float64 reference (rank 0 prints).
bool checkLatentMpi(const attn_rt_kind &kind, const World &w, int64_t P,
                    std::mt19937 &rng) {
  int64_t H = kind.num_heads, r = kind.kv_lora_rank,
          row = kind.kv_lora_rank + kind.rope_head_dim;
  struct Case {
    std::vector<int64_t> lens;
    int64_t sq;
    float qScale;
  };
  const Case cases[] = {{{0, 1, 5, 40, 203}, 1, 1.0f},
                        {{3, 17, 100}, 3, 1.0f},
                        {{64, 257}, 1, 20.0f}};
  bool allOk = true;
  for (const Case &c : cases) {
    int64_t B = int64_t(c.lens.size()), S = 1;
    for (int64_t l : c.lens)
      S = std::max(S, l);
    std::vector<int64_t> qs = {B, H, c.sq, row};
    Buf<float> q = randomVec(rng, B * H * c.sq * row, c.qScale),
               cache = randomVec(rng, B * S * row, 1.0f);
    roundToKV(kind, cache);
    std::vector<int64_t> starts(B), lens(B), qPos(B);
    for (int64_t b = 0; b < B; ++b) {
      auto [lo, hi] = shardRange(c.lens[b], w.size, w.rank, P, {});
      starts[b] = lo;
      lens[b] = hi - lo;
      qPos[b] = c.lens[b] - c.sq - lo;
    }
    LatentShard shard(kind, cache, B, S, starts, lens, P);
    Buf<float> out, stats, packed;
    shard.run(kind, q, qs, &qPos, out, stats);
    allreduceRows(MPI_COMM_WORLD, B * H * c.sq, r, out.data(), stats.data(),
                  packed);
    if (w.rank != 0)
      continue;
    std::vector<int64_t> zero(B, 0);
    LatentShard whole(kind, cache, B, S, zero, c.lens, P);
    Buf<float> kOut, unused, ref;
    whole.run(kind, q, qs, nullptr, kOut, unused);
    attn_rt_kind a = kind;
    a.num_kv_heads = 1;
    a.head_dim = row;
    a.head_dim_v = r;
    Buf<float> v(B * S * r);
    for (int64_t i = 0; i < B * S; ++i)
      std::copy_n(&cache[i * row], r, &v[i * r]);
    std::vector<int64_t> qStart(B);
    for (int64_t b = 0; b < B; ++b)
      qStart[b] = c.lens[b] - c.sq;
    referenceF64(a, q, qs, cache, {B, 1, S, row}, v, {B, 1, S, r}, c.lens,
                 kind.scale, 0.0, ref, &qStart);
    double kMax, refMax;
    double relK = maxAbsDiff(out, kOut, kMax) / std::max(kMax, 1e-30);
    double relR = maxAbsDiff(out, ref, refMax) / std::max(refMax, 1e-30);
    bool ok = relK <= 1e-6 && relR <= 1e-5;
    allOk = allOk && ok;
    std::string lensStr;
    for (int64_t l : c.lens)
      lensStr += (lensStr.empty() ? "" : ",") + std::to_string(l);
    std::printf("%s %s latent decode Sq=%lld lengths=%s%s np=%d: vs "
                "1-process kernel %.2e, vs float64 %.2e (relative to max "
                "|ref| %.3g)\n",
                ok ? "ok  " : "FAIL", kind.name, (long long)c.sq,
                lensStr.c_str(), c.qScale > 1 ? " extreme logits" : "", w.size,
                relK, relR, refMax);
  }
  return allOk;
}

int cmdCheck(const attn_rt_model *m, const World &w, int argc, char **argv) {
  Args args = parseArgs(argc, argv, 2, {"seed", "page-size", "threads"});
  pickThreads(args);
  int64_t seed = intArg(args, "seed", 1, 0, INT64_MAX);
  int64_t P = intArg(args, "page-size", 16, 1, 1 << 20);
  bool allOk = true;
  int kinds = 0;
  for (int64_t ki = 0; ki < m->num_kinds; ++ki) {
    const attn_rt_kind &kind = m->kinds[ki];
    if (kind.mla_paged_part) {
      ++kinds;
      std::mt19937 rng(uint32_t(seed * 7919 + ki));
      allOk = checkLatentMpi(kind, w, P, rng) && allOk;
      continue;
    }
    if (kind.op != ATTN_RT_OP_SDPA || !kind.paged_part)
      continue;
    ++kinds;
    std::mt19937 rng(uint32_t(seed * 7919 + ki));
    int64_t Hq = kind.num_heads, Hkv = kind.num_kv_heads, D = kind.head_dim,
            Dv = kind.head_dim_v;
    // Bounds: the single-process kernel (same arithmetic, another order of
    // the sums) and the float64 reference, relative to max |reference|.
    const double kernelTol = 1e-6, refTol = 1e-5;
    auto report = [&](const std::string &what, const Buf<float> &got,
                      const Buf<float> &kernel, const Buf<float> &ref) {
      if (w.rank != 0)
        return;
      double refMax, kMax;
      double dk = maxAbsDiff(got, kernel, kMax);
      double dr = maxAbsDiff(got, ref, refMax);
      double relK = dk / std::max(kMax, 1e-30),
             relR = dr / std::max(refMax, 1e-30);
      bool ok = relK <= kernelTol && relR <= refTol;
      allOk = allOk && ok;
      int T = int(std::max<int64_t>(1, kind.tensor_parallel));
      std::printf("%s %s %s np=%d (%d head x %d context shards): vs "
                  "1-process kernel %.2e, vs float64 %.2e (relative to max "
                  "|ref| %.3g)\n",
                  ok ? "ok  " : "FAIL", kind.name, what.c_str(), w.size, T,
                  w.size / T, relK, relR, refMax);
    };
    // Sharded-KV decode: lengths that leave ranks empty (1, 5 tokens with
    // pages of 16), equal and unequal shards, speculative rows, extreme
    // logits.
    struct DecodeCase {
      std::vector<int64_t> lens;
      int64_t sq;
      bool unequal;
      float qScale;
    };
    std::vector<DecodeCase> decodeCases = {
        {{0, 1, 5, 40, 203}, 1, false, 1.0f},
        {{3, 17, 100, 1000}, 3, true, 1.0f},
        {{64, 257}, 1, false, 40.0f},
    };
    for (const DecodeCase &c : decodeCases) {
      int64_t B = int64_t(c.lens.size()), S = 0;
      for (int64_t l : c.lens)
        S = std::max(S, l);
      std::vector<int64_t> qs = {B, Hq, c.sq, D};
      Buf<float> q = randomVec(rng, B * Hq * c.sq * D, c.qScale),
                 k = randomVec(rng, B * Hkv * S * D, 1.0f),
                 v = randomVec(rng, B * Hkv * S * Dv, 1.0f);
      roundToKV(kind, k);
      roundToKV(kind, v);
      // Sinks: ordinary, very large, very negative and -inf ones.
      Buf<float> sinks =
          kind.has_sinks ? randomExtraInput(kind, rng) : Buf<float>();
      Topology tp(kind, w);
      Buf<float> lsinks = tp.sliceSinks(sinks);
      std::vector<double> weights;
      if (c.unequal)
        for (int r = 0; r < tp.C; ++r)
          weights.push_back(r + 1.0);
      PagedShard shard =
          makeDecodeShard(tp.ctx, tp.local, tp.slice(k, B, Hkv, S, D),
                          tp.slice(v, B, Hkv, S, Dv), B, S, c.lens, P, weights);
      Buf<float> qt = tp.slice(q, B, Hq, c.sq, D), part, out;
      std::vector<int64_t> qts = {B, tp.local.num_heads, c.sq, D};
      shardedDecode(tp.ctx, tp.local, qt, qts, &shard, c.lens, part,
                    lsinks.empty() ? nullptr : lsinks.data());
      tp.gather(part, B, Hq, c.sq, Dv, out);
      if (w.rank == 0) {
        // The single-process kernel over the whole cache (the partial
        // kernel on all of it is the same loop nest; the paged entry is
        // the one serving uses).
        std::vector<int64_t> zero(B, 0);
        PagedShard whole(kind, k, v, B, S, zero, c.lens, P);
        Buf<float> kOut, unused, ref;
        whole.run(kind, q, qs, /*qPos=*/nullptr, kOut, unused, sinks.data());
        std::vector<int64_t> qStart(B);
        for (int64_t b = 0; b < B; ++b)
          qStart[b] = c.lens[b] - c.sq;
        referenceF64(kind, q, qs, k, {B, Hkv, S, D}, v, {B, Hkv, S, Dv}, c.lens,
                     kind.scale, kind.softcap, ref, &qStart,
                     kind.has_sinks ? &sinks : nullptr);
        std::string lensStr;
        for (int64_t l : c.lens)
          lensStr += (lensStr.empty() ? "" : ",") + std::to_string(l);
        report("decode Sq=" + std::to_string(c.sq) + " lengths=" + lensStr +
                   (c.unequal ? " unequal shards" : " equal shards") +
                   (c.qScale > 1 ? " extreme logits" : ""),
               out, kOut, ref);
      }
    }
    // Ring prefill: S not divisible by 2R, S smaller than 2R (empty
    // chunks).
    for (auto [B, S] : {std::pair<int64_t, int64_t>{2, 67}, {1, 3}, {1, 300}}) {
      std::vector<int64_t> qs = {B, Hq, S, D};
      Buf<float> q = randomVec(rng, B * Hq * S * D, 1.0f),
                 k = randomVec(rng, B * Hkv * S * D, 1.0f),
                 v = randomVec(rng, B * Hkv * S * Dv, 1.0f);
      roundToKV(kind, k);
      roundToKV(kind, v);
      Buf<float> sinks =
          kind.has_sinks ? randomExtraInput(kind, rng) : Buf<float>();
      Topology tp(kind, w);
      Buf<float> part, out, lsinks = tp.sliceSinks(sinks);
      ringPrefill(tp.ctx, tp.local, tp.slice(q, B, Hq, S, D),
                  tp.slice(k, B, Hkv, S, D), tp.slice(v, B, Hkv, S, Dv), B, S,
                  P, part, lsinks.empty() ? nullptr : lsinks.data());
      tp.gather(part, B, Hq, S, Dv, out);
      if (w.rank == 0) {
        std::vector<int64_t> lens(B, S);
        Buf<float> kOut, ref;
        Buf<float> qq = q, kk = k, vv = v;
        run(kind.fused, kind, qq, qs, kk, {B, Hkv, S, D}, vv, {B, Hkv, S, Dv},
            lens, kind.has_sinks ? &sinks : nullptr, kOut);
        referenceF64(kind, q, qs, k, {B, Hkv, S, D}, v, {B, Hkv, S, Dv}, lens,
                     kind.scale, kind.softcap, ref, nullptr,
                     kind.has_sinks ? &sinks : nullptr);
        report("ring prefill B=" + std::to_string(B) +
                   " S=" + std::to_string(S) +
                   (kind.causal ? " causal" : " bidirectional"),
               out, kOut, ref);
      }
    }
  }
  int ok = allOk ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (w.rank == 0) {
    if (kinds == 0)
      std::printf("check: no layer kind has context-parallel kernels\n");
    else
      std::printf("check: %s (np=%d)\n",
                  ok ? "the distributed kernels match" : "MISMATCH", w.size);
  }
  return ok ? 0 : 1;
}

/// Reads a float32 array, or a 16-bit K/V array of the kind's type widened
/// to float32 (exactly).
Buf<float> readArray(const attn_rt_kind &kind, const std::string &path,
                     const char *name, bool isKV, std::vector<int64_t> &shape) {
  NpyArray a;
  std::string err;
  if (!readNpy(path, a, err))
    fail(err);
  std::string want = !isKV || kind.kv_dtype == ATTN_RT_KV_F32 ? "f4"
                     : kind.kv_dtype == ATTN_RT_KV_F16        ? "f2"
                                                              : "u2";
  if (a.dtype != want)
    fail(path + ": dtype " + a.dtypeName() + "; --" + name + " must be " +
         (want == "f4"   ? "float32"
          : want == "f2" ? "float16 ('<f2')"
                         : "bfloat16 bits as uint16 ('<u2')"));
  if (a.shape.size() != 4)
    fail(path + ": shape " + shapeStr(a.shape) + "; --" + name +
         " must have rank 4");
  shape = a.shape;
  if (want == "f4")
    return std::move(a.f32);
  Buf<float> f(a.u16.size());
  bool half = kind.kv_dtype == ATTN_RT_KV_F16;
  for (size_t i = 0; i < f.size(); ++i)
    f[i] = widenBits(a.u16[i], half);
  return f;
}

int cmdSdpa(const attn_rt_model *m, const World &w, int argc, char **argv) {
  Args args = parseArgs(argc, argv, 2,
                        {"layer", "q", "k", "v", "out", "kv-lengths", "mode",
                         "page-size", "threads", "sinks"});
  for (const char *req : {"layer", "q", "k", "v", "out", "mode"})
    if (!args.count(req))
      fail(std::string("sdpa needs --") + req +
           (std::string(req) == "mode"
                ? " (decode: the KV cache sharded by sequence position, the "
                  "query replicated; ring: Q, K and V sharded, ring "
                  "attention)"
                : ""));
  pickThreads(args);
  std::string mode = args["mode"];
  if (mode != "decode" && mode != "ring")
    fail("--mode " + mode + ": accepted: decode, ring");
  const attn_rt_kind &kind =
      distributedKind(m, intArg(args, "layer", 0, 0, 1 << 30));
  int64_t P = intArg(args, "page-size", 16, 1, 1 << 20);
  std::vector<int64_t> qs, ks, vs;
  Buf<float> q = readArray(kind, args["q"], "q", false, qs),
             k = readArray(kind, args["k"], "k", true, ks),
             v = readArray(kind, args["v"], "v", true, vs);
  int64_t B = qs[0], S = ks[2];
  if (qs[1] != kind.num_heads || qs[3] != kind.head_dim ||
      ks != std::vector<int64_t>{B, kind.num_kv_heads, S, kind.head_dim} ||
      vs != std::vector<int64_t>{B, kind.num_kv_heads, S, kind.head_dim_v})
    fail("shapes q " + shapeStr(qs) + ", k " + shapeStr(ks) + ", v " +
         shapeStr(vs) + "; layer kind '" + kind.name + "' takes q [B, " +
         std::to_string(kind.num_heads) + ", Sq, " +
         std::to_string(kind.head_dim) + "], k [B, " +
         std::to_string(kind.num_kv_heads) + ", Skv, " +
         std::to_string(kind.head_dim) + "], v [B, " +
         std::to_string(kind.num_kv_heads) + ", Skv, " +
         std::to_string(kind.head_dim_v) + "]");
  Buf<float> sinks = readSinks(kind, args);
  // Every rank must hold the same inputs: their shapes and a hash of their
  // values agree, or every rank stops with the same error (a rank given
  // other files would abort inside MPI or merge a wrong result).
  {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](const void *p, size_t n) {
      auto *c = static_cast<const unsigned char *>(p);
      for (size_t i = 0; i < n; ++i)
        h = (h ^ c[i]) * 1099511628211ull;
    };
    for (const Buf<float> *a : {&q, &k, &v, &sinks})
      mix(a->data(), a->size() * sizeof(float));
    std::vector<int64_t> sig = qs;
    sig.insert(sig.end(), ks.begin(), ks.end());
    sig.insert(sig.end(), vs.begin(), vs.end());
    sig.push_back(int64_t(h & 0x7fffffffffffffffull));
    sig.push_back(int64_t(args.count("kv-lengths") ? 1 : 0));
    std::vector<int64_t> lo(sig.size()), hi(sig.size());
    MPI_Allreduce(sig.data(), lo.data(), int(sig.size()), MPI_INT64_T, MPI_MIN,
                  MPI_COMM_WORLD);
    MPI_Allreduce(sig.data(), hi.data(), int(sig.size()), MPI_INT64_T, MPI_MAX,
                  MPI_COMM_WORLD);
    if (lo != hi)
      fail("the ranks were given different inputs (--q, --k, --v or "
           "--sinks differ in shape or values between ranks; this rank's q " +
           shapeStr(qs) + ", k " + shapeStr(ks) + ", v " + shapeStr(vs) +
           "): every rank reads the same arrays");
  }
  Buf<float> out;
  std::vector<int64_t> outShape = {B, kind.num_heads, qs[2], kind.head_dim_v};
  if (mode == "decode") {
    std::vector<int64_t> lens(B, S);
    if (args.count("kv-lengths")) {
      NpyArray l;
      std::string err;
      if (!readNpy(args["kv-lengths"], l, err))
        fail(err);
      if (l.dtype != "i8" || l.shape != std::vector<int64_t>{B})
        fail(args["kv-lengths"] +
             ": --kv-lengths must be int64 [B = " + std::to_string(B) +
             "], got " + l.dtypeName() + " " + shapeStr(l.shape));
      lens = l.i64;
      for (int64_t b = 0; b < B; ++b)
        if (lens[b] < qs[2] || lens[b] > S)
          fail(args["kv-lengths"] + ": length " + std::to_string(lens[b]) +
               " of sequence " + std::to_string(b) +
               " is outside [Sq, Skv] = [" + std::to_string(qs[2]) + ", " +
               std::to_string(S) + "] (its query rows are its last Sq tokens)");
    } else if (qs[2] > S) {
      fail("q has " + std::to_string(qs[2]) + " rows and K/V " +
           std::to_string(S) +
           " tokens: decode's query rows are the "
           "sequence's last Sq tokens");
    }
    Topology tp(kind, w);
    PagedShard shard = makeDecodeShard(
        tp.ctx, tp.local, tp.slice(k, B, kind.num_kv_heads, S, kind.head_dim),
        tp.slice(v, B, kind.num_kv_heads, S, kind.head_dim_v), B, S, lens, P,
        {});
    Buf<float> qt = tp.slice(q, B, kind.num_heads, qs[2], qs[3]), part;
    std::vector<int64_t> qts = {B, tp.local.num_heads, qs[2], qs[3]};
    Buf<float> lsinks = tp.sliceSinks(sinks);
    shardedDecode(tp.ctx, tp.local, qt, qts, &shard, lens, part,
                  lsinks.empty() ? nullptr : lsinks.data());
    tp.gather(part, B, kind.num_heads, qs[2], kind.head_dim_v, out);
  } else {
    if (qs[2] != S)
      fail("--mode ring: q has " + std::to_string(qs[2]) + " rows and K/V " +
           std::to_string(S) +
           ": ring attention shards one sequence of S tokens (Sq = Skv)");
    Topology tp(kind, w);
    Buf<float> part, lsinks = tp.sliceSinks(sinks);
    ringPrefill(tp.ctx, tp.local,
                tp.slice(q, B, kind.num_heads, S, kind.head_dim),
                tp.slice(k, B, kind.num_kv_heads, S, kind.head_dim),
                tp.slice(v, B, kind.num_kv_heads, S, kind.head_dim_v), B, S, P,
                part, lsinks.empty() ? nullptr : lsinks.data());
    tp.gather(part, B, kind.num_heads, S, kind.head_dim_v, out);
  }
  int ok = 1;
  if (w.rank == 0) {
    std::string err;
    NpyOutputs outs;
    outs.add(args["out"], outShape, out.data());
    if (!outs.commit(inputsOf(args, {"out"}), err)) {
      std::fprintf(stderr, "error: %s\n", err.c_str());
      ok = 0;
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok ? 0 : 1;
}

} // namespace
} // namespace attn_rt::mpi

using namespace attn_rt::mpi;

extern "C" int attn_rt_mpi_main(const attn_rt_model *m, int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  // (No mallopt: the kernels' scratch comes from the runtime's per-thread
  // workspaces, not malloc, so the MPI process no longer maps fresh pages
  // for it at every call; docs/mpi.md.)
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  std::string cmd = argv[1];
  int rc;
  // The distributed library reports what it cannot do by throwing (every
  // rank throws alike: its checks read what every rank shares).
  try {
    if (cmd == "check")
      rc = cmdCheck(m, w, argc, argv);
    else if (cmd == "sdpa")
      rc = cmdSdpa(m, w, argc, argv);
    else
      rc = cmdBench(m, w, argc, argv);
  } catch (const std::exception &e) {
    fail(e.what());
  }
  MPI_Finalize();
  return rc;
}
