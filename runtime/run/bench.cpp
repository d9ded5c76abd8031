//===- bench.cpp - the executables' bench command --------------------------===//
//
// This file implements `bench`: the median time of the fused kernel and of
// the unfused reference (or, on a GPU, the fused kernel against the device's
// peaks), with the FLOPs of runtime/run/flops.h, as text or JSON.
//
//===----------------------------------------------------------------------===//

#include "cli.h"
#include "resources.h"
#include "flops.h"
#include "narrow.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include <sys/resource.h>
#include <unistd.h>

namespace attn_rt {
namespace cli {

namespace {
double flops(const attn_rt_kind &k, int64_t b, int64_t sq, int64_t skv) {
  if (k.chunk > 0)
    return 2.0 * double(b) * double(k.num_heads) *
           double(k.head_dim + k.head_dim_v) *
           attn_rt_visible_pairs_chunked(sq, skv, k.chunk);
  return attn_rt_attention_flops(b, k.num_heads, sq, skv, k.head_dim,
                                 k.head_dim_v, k.causal, k.window);
}

/// `"wall_ms": X, ` for a GPU bench's JSON (its fused_ms is the events'),
/// "" on the CPU (NaN).
std::string wallJson(double wallMs) {
  if (std::isnan(wallMs))
    return "";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "\"wall_ms\": %.4f, ", wallMs);
  return buf;
}

/// How bench --page-size lays out its pools and hands out their pages.
struct PoolLayout {
  /// "hnd" [pages, Hkv, P, d] (the C API's default), "nhd" [pages, P, Hkv,
  /// d] (vLLM's), "head-major" [Hkv, pages, P, d].
  std::string layout = "hnd";
  /// The pages in the table's order (an allocator's fresh runs) rather
  /// than shuffled over the pool (one long in use).
  bool inOrder = false;
};

/// bench --page-size: the kind's paged kernel over a cache of `skv` tokens
/// per sequence in pages of `page` (shuffled over the pool, as an
/// allocator leaves them, or in order), of the kind's kv_dtype, filled in
/// place (no fp32 copy of a narrow cache): ms, K+V bytes read per second,
/// peak RSS.
void benchPaged(const attn_rt_kind &kind, int64_t b, int64_t sq, int64_t skv,
                int64_t page, int64_t repeats, bool json, bool first,
                const PoolLayout &pool) {
  // (cmdBench refused a kind without a paged kernel before the device.)
  int64_t eb = kvElementBytes(kind);
  const char *dt = kvDtypeName(kind);
  int64_t perSeq = (skv + page - 1) / page, pages = b * perSeq;
  int64_t rowK = kind.num_kv_heads * page * kind.head_dim,
          rowV = kind.num_kv_heads * page * kind.head_dim_v;
  double cacheBytes = double(pages) * (rowK + rowV) * eb;
  if (cacheBytes > double(memoryBudget()))
    fail("bench --page-size: a cache of " + std::to_string(skv) +
         " tokens x batch " + std::to_string(b) + " needs " +
         std::to_string(int64_t(cacheBytes / 1e9)) + " GB; this machine has " +
         std::to_string(int64_t(double(physicalMemory()) / 1e9)) + " GB");
  // Small normal-ish values straight in the cache's element type.
  uint64_t state = 88172645463325252ull;
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return float(int64_t(state >> 40) - (1 << 23)) / float(1 << 23);
  };
  auto fill = [&](Buf<uint16_t> &v16, Buf<float> &v32, int64_t n) {
    if (eb == 4) {
      v32.resize(n);
      for (float &x : v32)
        x = next();
      return;
    }
    v16.resize(n);
    bool half = kvIsHalf(kind);
    for (uint16_t &x : v16)
      x = narrowBits(next(), half);
  };
  Buf<uint16_t> k16, v16;
  Buf<float> k32, v32;
  fill(k16, k32, pages * rowK);
  fill(v16, v32, pages * rowV);
  void *kp = eb == 4 ? (void *)k32.data() : (void *)k16.data();
  void *vp = eb == 4 ? (void *)v32.data() : (void *)v16.data();
  std::vector<int32_t> table(pages);
  for (int64_t p = 0; p < pages; ++p)
    table[p] = int32_t(p);
  if (!pool.inOrder)
    std::shuffle(table.begin(), table.end(), std::mt19937(11));
  std::vector<int64_t> lens(b, skv);
  std::mt19937 rng(7);
  auto q = randomVec(rng, b * kind.num_heads * sq * kind.head_dim, 1);
  Buf<float> out(b * kind.num_heads * sq * kind.head_dim_v);
  std::vector<int64_t> qs = {b, kind.num_heads, sq, kind.head_dim},
                       os = {b, kind.num_heads, sq, kind.head_dim_v};
  // --qo-dtype: q and the output in 16 bits (through the descriptors'
  // untyped pointers).
  int64_t qb = qoNarrow(kind) ? 2 : 4;
  Buf<uint16_t> q16 = qb == 2 ? narrowToQO(kind, q) : Buf<uint16_t>(),
                out16(qb == 2 ? out.size() : 0);
  float *qp = qb == 2 ? reinterpret_cast<float *>(q16.data()) : q.data(),
        *op = qb == 2 ? reinterpret_cast<float *>(out16.data()) : out.data();
  attn_rt_memref_f32_4 dq = view4(qp, qs), dout = view4(op, os);
  attn_rt_memref_f32_4 dk = view4(static_cast<float *>(kp),
                                  {pages, kind.num_kv_heads, page,
                                   kind.head_dim}),
                       dv = view4(static_cast<float *>(vp),
                                  {pages, kind.num_kv_heads, page,
                                   kind.head_dim_v});
  // (The CPU kernels take the pools' strides; cmdBench refused another
  // layout on the GPU.)
  auto ks = poolStrides(pool.layout, pages, kind.num_kv_heads, page,
                        kind.head_dim),
       vs = poolStrides(pool.layout, pages, kind.num_kv_heads, page,
                        kind.head_dim_v);
  std::copy(ks.begin(), ks.end(), dk.strides);
  std::copy(vs.begin(), vs.end(), dv.strides);
  attn_rt_memref_i32_2 dt2{table.data(), table.data(), 0, {b, perSeq},
                           {perSeq, 1}};
  attn_rt_memref_i64_1 dl{lens.data(), lens.data(), 0, {b}, {1}};
  // On the GPU: the same buffers copied to the device once; each call is
  // the host stub (launch, wait).
  std::unique_ptr<DeviceBuffer> gq, gk, gv, gt, gl, gOut;
  if (gCuda) {
    gq = std::make_unique<DeviceBuffer>(qp, qb * int64_t(q.size()));
    gk = std::make_unique<DeviceBuffer>(kp, pages * rowK * eb);
    gv = std::make_unique<DeviceBuffer>(vp, pages * rowV * eb);
    gt = std::make_unique<DeviceBuffer>(table.data(), 4 * pages);
    gl = std::make_unique<DeviceBuffer>(lens.data(), 8 * b);
    gOut = std::make_unique<DeviceBuffer>(nullptr, qb * int64_t(out.size()));
    dq.allocated = dq.aligned = static_cast<float *>(gq->ptr);
    dk.allocated = dk.aligned = static_cast<float *>(gk->ptr);
    dv.allocated = dv.aligned = static_cast<float *>(gv->ptr);
    dout.allocated = dout.aligned = static_cast<float *>(gOut->ptr);
    dt2.allocated = dt2.aligned = static_cast<int32_t *>(gt->ptr);
    dl.allocated = dl.aligned = static_cast<int64_t *>(gl->ptr);
  }
  // On the GPU the device time (events), the wall clock's beside it.
  double wallMs = NAN;
  auto step = [&] { kind.paged(&dout, &dq, &dk, &dv, &dt2, &dl); };
  double ms =
      gCuda ? deviceMedianMs(repeats, step, wallMs) : medianMs(repeats, step);
  double kvBytes = double(b) * skv * kind.num_kv_heads *
                   (kind.head_dim + kind.head_dim_v) * eb;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double rssMb = ru.ru_maxrss / 1024.0;
  if (json)
    std::printf("%s\n  {\"kind\": \"%s\", \"paged\": true, \"kv_dtype\": "
                "\"%s\", \"qo_dtype\": \"%s\", \"page_size\": %lld, "
                "\"pool_layout\": \"%s\", \"pages_in_order\": %s, "
                "\"batch\": %lld, \"seq\": "
                "%lld, \"kv_len\": %lld, \"threads\": %d, \"fused_ms\": %.4f, "
                "%s\"kv_gbps\": %.3f, \"cache_mb\": %.1f, \"peak_rss_mb\": "
                "%.1f}",
                first ? "" : ",", kind.name, dt, qoDtypeName(kind),
                (long long)page, pool.layout.c_str(),
                pool.inOrder ? "true" : "false", (long long)b, (long long)sq,
                (long long)skv, ompThreads(), ms, wallJson(wallMs).c_str(),
                kvBytes / ms / 1e6, cacheBytes / 1048576.0, rssMb);
  else {
    // On the GPU, against the device-to-device copy bandwidth.
    char ofCopy[96] = "";
    if (gCuda)
      std::snprintf(ofCopy, sizeof(ofCopy),
                    " (%.1f%% of the copy bandwidth; events, wall %.3f ms)",
                    100 * kvBytes / ms / 1e6 / gDevice.copyGbps, wallMs);
    std::printf("%-30s B=%lld Sq=%lld Skv=%lld threads=%d paged %s cache, "
                "page %lld%s%s%s: %9.3f ms, K+V read %.1f GB/s%s | cache "
                "%.1f MB, peak RSS %.1f MB\n",
                kind.name, (long long)b, (long long)sq, (long long)skv,
                ompThreads(), dt, (long long)page,
                pool.layout == "hnd" ? "" : ", ",
                pool.layout == "hnd" ? "" : pool.layout.c_str(),
                pool.inOrder ? ", pages in order" : "", ms, kvBytes / ms / 1e6,
                ofCopy, cacheBytes / 1048576.0, rssMb);
  }
}
} // namespace

int cmdBench(const attn_rt_model *m, int argc, char **argv) {
  // Long: bench's report, one section per kind, in the order it prints.
  auto args = parseArgs(argc, argv, 2,
                        {"layer", "batch", "seq", "kv-len", "threads",
                         "repeats", "page-size", "pool-layout"},
                        {"json", "pages-in-order"});
  int64_t b = intArg(args, "batch", 1, 1, 1 << 16);
  int64_t sq = intArg(args, "seq", 512, 1, 1 << 24);
  int64_t skv = intArg(args, "kv-len", sq, 1, 1 << 24);
  int64_t repeats = intArg(args, "repeats", 5, 1, 10000);
  // --page-size 0 is no page size, not the contiguous benchmark.
  int64_t page =
      args.count("page-size") ? intArg(args, "page-size", 1, 1, 1 << 20) : 0;
  PoolLayout pool;
  if (args.count("pool-layout")) {
    pool.layout = args["pool-layout"];
    if (!isPoolLayout(pool.layout))
      fail("bench --pool-layout " + pool.layout +
           ": accepted: hnd, nhd, head-major");
  }
  pool.inOrder = args.count("pages-in-order");
  if ((args.count("pool-layout") || pool.inOrder) && page == 0)
    fail("bench: --pool-layout and --pages-in-order lay out the paged "
         "cache; pass --page-size too");
  if (pool.layout != "hnd" && gCuda)
    fail("bench --pool-layout " + pool.layout +
         ": the CUDA paged kernels read hnd pools [pages, Hkv, P, d]");
  if (args.count("threads"))
    if (omp_set_num_threads)
      omp_set_num_threads(int(intArg(args, "threads", 1, 1, 4096)));
  bool json = args.count("json");
  std::vector<int64_t> kinds;
  if (args.count("layer")) {
    const attn_rt_kind &k =
        kindOfLayer(m, intArg(args, "layer", 0, 0, 1 << 30));
    kinds.push_back(&k - m->kinds);
  } else {
    for (int64_t i = 0; i < m->num_kinds; ++i)
      kinds.push_back(i);
  }
  // Refuse shapes whose buffers cannot fit rather than dying in new[].
  double physical = double(physicalMemory());
  if (page > 0) {
    // A kind without the kernel is refused before the device is needed.
    for (int64_t ki : kinds) {
      const attn_rt_kind &k = m->kinds[ki];
      if (k.op == ATTN_RT_OP_SDPA && !k.mla && !k.paged)
        fail(std::string("bench --page-size: kind '") + k.name +
             "' has no paged kernel (T5's relative bias, or attn-compile "
             "--entries without paged; GPU builds: --entries=paged)");
    }
    requireDevice("bench");
    if (gCuda)
      describeDevice();
    if (json)
      std::printf("[");
    bool first = true;
    for (int64_t ki : kinds) {
      const attn_rt_kind &k = m->kinds[ki];
      if (k.mla) {
        benchLatentKind(k, b, sq, skv, page, repeats, json, first,
                        /*expanded=*/false);
        first = false;
        continue;
      }
      if (k.op != ATTN_RT_OP_SDPA) {
        // A linear layer's state is not a KV cache: skipped among all
        // kinds, an error when it is the one asked for.
        if (args.count("layer"))
          fail(std::string("bench --page-size: layer kind '") + k.name +
               "' is Gated DeltaNet linear attention, whose state is not a "
               "paged KV cache; pass a softmax-attention layer");
        continue;
      }
      benchPaged(k, b, sq, skv, page, repeats, json, first, pool);
      first = false;
    }
    if (json)
      std::printf("\n]\n");
    return 0;
  }
  if (args.count("kv-len")) {
    bool softmax = false;
    for (int64_t ki : kinds)
      softmax = softmax || m->kinds[ki].op == ATTN_RT_OP_SDPA;
    if (!softmax)
      fail(std::string("bench --kv-len: layer kind '") +
           m->kinds[kinds[0]].name +
           "' is linear attention, whose state does not grow with the "
           "context: it takes --batch and --seq only");
  }
  // A latent kind's expanded K/V (a plain MHA cache) can be far larger
  // than its latent cache: past a quarter of the memory only its absorbed
  // form is timed.
  auto expandedFits = [&](const attn_rt_kind &k) {
    double bytes = 4.0 * b *
                   (2.0 * k.num_heads * sq * std::max(k.head_dim, k.head_dim_v) +
                    2.0 * k.num_kv_heads * skv *
                        std::max(k.head_dim, k.head_dim_v));
    return bytes <= (k.mla ? 0.25 : 1.0) * double(memoryBudget());
  };
  for (int64_t ki : kinds) {
    const attn_rt_kind &k = m->kinds[ki];
    double bytes = 4.0 * b *
                   (2.0 * k.num_heads * sq * std::max(k.head_dim, k.head_dim_v) +
                    2.0 * k.num_kv_heads * skv *
                        std::max(k.head_dim, k.head_dim_v));
    if (k.mla)
      bytes = 4.0 * b * (k.num_heads * sq * 2.0 * (k.kv_lora_rank +
                                                   k.rope_head_dim) +
                         skv * double(k.kv_lora_rank + k.rope_head_dim));
    if (bytes > double(memoryBudget()))
      fail("bench: --batch/--seq/--kv-len need " +
           std::to_string(int64_t(bytes / 1e9)) + " GB of tensors; this "
           "machine has " + std::to_string(int64_t(physical / 1e9)) + " GB");
  }
  requireDevice("bench");
  if (gCuda) {
    describeDevice();
    if (!json)
      std::printf("device: %s, %d SMs at %.0f MHz, sm_%d%d: fp32 peak %.1f "
                  "TFLOP/s, dense bf16 tensor peak %.1f TFLOP/s, "
                  "device-to-device copy %.0f GB/s\n",
                  gDevice.name.c_str(), gDevice.sms, gDevice.mhz, gDevice.major,
                  gDevice.minor, gDevice.fp32Tflops, gDevice.tensorTflops,
                  gDevice.copyGbps);
  }
  std::mt19937 rng(7);
  if (json)
    std::printf("[");
  for (size_t ki = 0; ki < kinds.size(); ++ki) {
    const attn_rt_kind &kind = m->kinds[kinds[ki]];
    if (kind.op == ATTN_RT_OP_GATED_DELTA) {
      benchLinearKind(kind, b, sq, repeats, json, ki == 0);
      continue;
    }
    if (kind.mla && !expandedFits(kind)) {
      if (!json)
        std::printf("%-30s B=%lld Sq=%lld Skv=%lld: the expanded form's "
                    "K/V would not fit in a quarter of the memory: only the "
                    "absorbed form is timed\n",
                    kind.name, (long long)b, (long long)sq, (long long)skv);
      benchLatentKind(kind, b, sq, skv, 0, repeats, json, ki == 0,
                      /*expanded=*/false);
      continue;
    }
    std::vector<int64_t> qs = {b, kind.num_heads, sq, kind.head_dim},
                         ks = {b, kind.num_kv_heads, skv, kind.head_dim},
                         vs = {b, kind.num_kv_heads, skv, kind.head_dim_v};
    auto q = randomVec(rng, b * kind.num_heads * sq * kind.head_dim, 1);
    auto k = randomVec(rng, b * kind.num_kv_heads * skv * kind.head_dim, 1);
    auto v = randomVec(rng, b * kind.num_kv_heads * skv * kind.head_dim_v, 1);
    std::vector<int64_t> lens(b, skv);
    auto table = randomExtraInput(kind, rng);
    Buf<float> out;
    double f = flops(kind, b, sq, skv);
    if (gCuda) {
      // Device buffers once; each call is the host stub: launch on a
      // stream and wait for it.
      int64_t outElems = b * kind.num_heads * sq * kind.head_dim_v;
      DeviceCall c(kind, q, qs, k, ks, v, vs, lens, outElems);
      double wallMs = 0;
      double fusedMs = deviceMedianMs(
          repeats, [&] { c.call(kind.fused, kind); }, wallMs);
      double tflops = f / fusedMs / 1e9;
      double pctFp32 = 100 * tflops / gDevice.fp32Tflops;
      double pctTensor = 100 * tflops / gDevice.tensorTflops;
      // K and V read once (what bounds decode), against the copy bandwidth.
      double kvGbps = double(b) * skv * kind.num_kv_heads *
                      (kind.head_dim + kind.head_dim_v) * kvElementBytes(kind) /
                      fusedMs / 1e6;
      double pctCopy = 100 * kvGbps / gDevice.copyGbps;
      if (json)
        std::printf("%s\n  {\"kind\": \"%s\", \"device\": \"%s\", "
                    "\"kv_dtype\": \"%s\", \"qo_dtype\": \"%s\", "
                    "\"batch\": %lld, \"seq\": %lld, \"kv_len\": %lld, "
                    "\"flops\": %.0f, \"fused_ms\": %.4f, \"wall_ms\": %.4f, "
                    "\"fused_tflops\": %.3f, \"pct_fp32_peak\": %.2f, "
                    "\"pct_bf16_tensor_peak\": %.2f, \"kv_gbps\": %.1f, "
                    "\"pct_copy_bandwidth\": %.2f}",
                    ki ? "," : "", kind.name, gDevice.name.c_str(),
                    kvDtypeName(kind), qoDtypeName(kind), (long long)b,
                    (long long)sq, (long long)skv, f, fusedMs, wallMs, tflops,
                    pctFp32, pctTensor, kvGbps, pctCopy);
      else
        std::printf("%-30s B=%lld Sq=%lld Skv=%lld%s%s: fused %9.3f ms "
                    "(events; wall %.3f ms) %8.3f TFLOP/s, %.1f%% of the fp32 "
                    "peak, %.1f%% of the dense bf16 tensor peak; K+V read "
                    "%.1f GB/s, %.1f%% of the copy bandwidth\n",
                    kind.name, (long long)b, (long long)sq, (long long)skv,
                    kind.kv_dtype == ATTN_RT_KV_F32 ? "" : " K/V ",
                    kind.kv_dtype == ATTN_RT_KV_F32 ? "" : kvDtypeName(kind),
                    fusedMs, wallMs, tflops, pctFp32, pctTensor, kvGbps,
                    pctCopy);
      continue;
    }
    // K/V narrowed once (a --kv-dtype=bf16/f16 kind): the calls read the
    // cache as it is stored.
    HostCall call(kind, q, qs, k, ks, v, vs, lens, &table, out);
    auto time = [&](void (*fn)(void)) {
      return medianMs(repeats, [&] { call.call(fn, kind); });
    };
    double fusedMs = time(kind.fused);
    // The unfused reference holds [B, Hq, Sq, Skv] scores (several copies):
    // skipped past a quarter of the memory.
    double scoreBytes = 4.0 * b * kind.num_heads * double(sq) * double(skv);
    // Without the reference (attn-compile --entries), the same null.
    double refMs = kind.reference && scoreBytes * 3 < 0.25 * physical
                       ? time(kind.reference)
                       : NAN;
    if (json) {
      // A skipped reference is null, not NaN (which JSON cannot spell).
      auto num = [](double v) {
        char buf[32];
        if (std::isnan(v))
          return std::string("null");
        std::snprintf(buf, sizeof(buf), "%.4f", v);
        return std::string(buf);
      };
      std::printf("%s\n  {\"kind\": \"%s\", \"kv_dtype\": \"%s\", "
                  "\"qo_dtype\": \"%s\", "
                  "\"batch\": %lld, \"seq\": %lld, "
                  "\"kv_len\": %lld, \"threads\": %d, \"flops\": %.0f, "
                  "\"fused_ms\": %s, \"fused_gflops\": %s, "
                  "\"unfused_ms\": %s, \"unfused_gflops\": %s}",
                  ki ? "," : "", kind.name, kvDtypeName(kind),
                  qoDtypeName(kind), (long long)b, (long long)sq,
                  (long long)skv, ompThreads(), f, num(fusedMs).c_str(),
                  num(f / fusedMs / 1e6).c_str(), num(refMs).c_str(),
                  num(f / refMs / 1e6).c_str());
    } else {
      char ref[96];
      if (!kind.reference)
        std::snprintf(ref, sizeof(ref), "no unfused reference (compiled "
                                        "without it)");
      else if (std::isnan(refMs))
        std::snprintf(ref, sizeof(ref), "unfused reference skipped (its "
                                        "scores would not fit)");
      else
        std::snprintf(ref, sizeof(ref),
                      "unfused reference %9.3f ms %8.2f GFLOP/s | "
                      "fused/unfused x%.2f",
                      refMs, f / refMs / 1e6, refMs / fusedMs);
      std::printf("%-30s B=%lld Sq=%lld Skv=%lld threads=%d%s%s: fused "
                  "%9.3f ms %8.2f GFLOP/s | %s\n",
                  kind.name, (long long)b, (long long)sq, (long long)skv,
                  ompThreads(),
                  kind.kv_dtype == ATTN_RT_KV_F32 ? "" : " K/V ",
                  kind.kv_dtype == ATTN_RT_KV_F32 ? "" : kvDtypeName(kind),
                  fusedMs, f / fusedMs / 1e6, ref);
    }
    // A latent kind's absorbed form (its decode) on the same step.
    if (kind.mla)
      benchLatentKind(kind, b, sq, skv, 0, repeats, json, false,
                      /*expanded=*/true);
  }
  if (json)
    std::printf("\n]\n");
  return 0;
}

} // namespace cli
} // namespace attn_rt
