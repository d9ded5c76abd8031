//===- attn-bench.cpp - fused attention vs OpenBLAS vs the FMA peak -------===//
//
// This file implements attn-bench: for each benchmark shape it compiles a
// config with attn-compile --emit=shared, loads the library, and measures in
// one run (each measurement in a child process, so that its peak RSS is its
// own): the compiled fused kernel, the unfused baseline eager frameworks use
// (sgemm from Debian's OpenBLAS for QKᵀ and P·V, softmax in between), and the
// machine's FMA peak (an AVX-512 or AVX2 FMA loop on every thread) and read
// bandwidth (a streaming sum of 512 MiB on every thread). It prints
// a table (median ms, GFLOP/s, % of peak, fused/unfused, peak RSS) and
// writes it as CSV.
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"

#include "attn_runtime.h"
#include "descriptors.h"
#include "flops.h"
#include "narrow.h"

#include <cblas.h>
#include <dlfcn.h>
#include <immintrin.h>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace attn_bench;

namespace {

struct Shape {
  std::string name;
  int64_t hq, hkv, sq, skv, d;
  bool causal;
};

const Shape kShapes[] = {
    {"P1", 8, 2, 2048, 2048, 128, true},
    {"P2", 8, 8, 2048, 2048, 64, false},
    {"P3", 16, 1, 4096, 4096, 128, true},
    {"P4", 64, 4, 1024, 1024, 256, true},
    {"D1", 32, 8, 1, 16384, 128, true},
    // The seed's full-attention layer in decode: 16 query heads per KV
    // head, head dim 256.
    {"D2", 64, 4, 1, 65536, 256, true},
    // Groups of 8 (issue 45's other grouped-decode shapes): Llama-3-70B's
    // 64/8 at d 128, Qwen3-Next-80B's full attention 16/2 at d 256.
    {"D3", 64, 8, 1, 32768, 128, true},
    {"D4", 16, 2, 1, 65536, 256, true},
};

double flops(const Shape &s) {
  return attn_rt_attention_flops(1, s.hq, s.sq, s.skv, s.d, s.d, s.causal,
                                 /*window=*/0);
}

//===----------------------------------------------------------------------===//
// FMA peak
//===----------------------------------------------------------------------===//

__attribute__((target("avx2,fma"))) double fmaLoop256(int64_t iters) {
  __m256 a[12], b = _mm256_set1_ps(1.0000001f), c = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < 12; ++i)
    a[i] = _mm256_set1_ps(float(i));
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i)
      a[i] = _mm256_fmadd_ps(a[i], b, c);
  float out[8], sum = 0;
  for (int i = 0; i < 12; ++i) {
    _mm256_storeu_ps(out, a[i]);
    for (float x : out)
      sum += x;
  }
  return sum;
}

/// GFLOP/s of FMAs on all threads (0.3 s repetitions: short parallel
/// regions under-measure on this machine).
double fmaPeak(int threads, bool &avx512) {
  avx512 = __builtin_cpu_supports("avx512f");
  int64_t iters = 20'000'000;
  double lanes = avx512 ? 16 : 8;
  std::vector<double> rates;
  volatile double sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = nowMs();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += avx512 ? fmaLoop512(iters) : fmaLoop256(iters);
    double ms = nowMs() - t0;
    rates.push_back(2.0 * lanes * 12 * double(iters) * threads / ms / 1e6);
  }
  // A peak: the best of 5 (a busy neighbour only ever lowers a run).
  return *std::max_element(rates.begin(), rates.end());
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

struct Inputs {
  attn_rt::Buf<float> q, k, v;
  explicit Inputs(const Shape &s) {
    std::mt19937 rng(5);
    std::normal_distribution<float> n(0.f, 1.f);
    q.resize(s.hq * s.sq * s.d);
    k.resize(s.hkv * s.skv * s.d);
    v.resize(s.hkv * s.skv * s.d);
    for (auto *t : {&q, &k, &v})
      for (float &x : *t)
        x = n(rng);
  }
};

attn_rt_memref_f32_4 view(float *p, int64_t h, int64_t s, int64_t d) {
  return {p, p, 0, {1, h, s, d}, {h * s * d, s * d, d, 1}};
}

/// The shape's K and V as bf16 bits (round to nearest even): what a
/// library compiled with --kv-dtype=bf16 reads.
struct Bf16KV {
  attn_rt::Buf<uint16_t> k, v;
  explicit Bf16KV(const Inputs &in) : k(in.k.size()), v(in.v.size()) {
    for (size_t i = 0; i < k.size(); ++i)
      k[i] = attn_rt::narrowBits(in.k[i], /*half=*/false);
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = attn_rt::narrowBits(in.v[i], /*half=*/false);
  }
};

/// One call of the compiled fused kernel into `o` (allocated once), over
/// the fp32 K/V of `in` or, given `kv`, their bf16 copies (a descriptor of
/// 2-byte elements: the same fields).
void runFused(attn_rt_sdpa_fn fn, const Shape &s, Inputs &in,
              attn_rt::Buf<float> &o, Bf16KV *kv = nullptr) {
  float *kp = kv ? reinterpret_cast<float *>(kv->k.data()) : in.k.data(),
        *vp = kv ? reinterpret_cast<float *>(kv->v.data()) : in.v.data();
  attn_rt_memref_f32_4 out = view(o.data(), s.hq, s.sq, s.d),
                       q = view(in.q.data(), s.hq, s.sq, s.d),
                       k = view(kp, s.hkv, s.skv, s.d),
                       v = view(vp, s.hkv, s.skv, s.d);
  int64_t len = s.skv;
  attn_rt_memref_i64_1 lens{&len, &len, 0, {1}, {1}};
  fn(&out, &q, &k, &v, &lens);
}

/// What eager frameworks do: S = Q·Kᵀ (sgemm), scale and mask, softmax,
/// O = P·V (sgemm), one query head at a time, the scores materialized.
void runUnfused(const Shape &s, Inputs &in, attn_rt::Buf<float> &scores,
                attn_rt::Buf<float> &out) {
  int64_t group = s.hq / s.hkv, off = s.skv - s.sq;
  float scale = 1.0f / std::sqrt(float(s.d));
  for (int64_t h = 0; h < s.hq; ++h) {
    const float *q = in.q.data() + h * s.sq * s.d;
    const float *k = in.k.data() + (h / group) * s.skv * s.d;
    const float *v = in.v.data() + (h / group) * s.skv * s.d;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(s.sq),
                int(s.skv), int(s.d), scale, q, int(s.d), k, int(s.d), 0.f,
                scores.data(), int(s.skv));
#pragma omp parallel for
    for (int64_t i = 0; i < s.sq; ++i) {
      float *row = scores.data() + i * s.skv;
      int64_t end = s.causal ? std::min<int64_t>(s.skv, i + off + 1) : s.skv;
      float mx = -INFINITY;
      for (int64_t j = 0; j < end; ++j)
        mx = std::max(mx, row[j]);
      float sum = 0;
      for (int64_t j = 0; j < end; ++j)
        sum += (row[j] = std::exp(row[j] - mx));
      for (int64_t j = 0; j < end; ++j)
        row[j] /= sum;
      for (int64_t j = end; j < s.skv; ++j)
        row[j] = 0;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(s.sq), int(s.d),
                int(s.skv), 1.f, scores.data(), int(s.skv), v, int(s.d), 0.f,
                out.data() + h * s.sq * s.d, int(s.d));
  }
}

//===----------------------------------------------------------------------===//
// Compiling the shapes
//===----------------------------------------------------------------------===//

std::string compileShared(const std::string &dir, const Shape &s,
                          const std::string &kvDtype = "f32") {
  std::string json = std::string("{\"model_type\": \"") +
                     (s.causal ? "llama" : "bert") +
                     "\", \"hidden_size\": " + std::to_string(s.hq * s.d) +
                     ", \"num_attention_heads\": " + std::to_string(s.hq) +
                     ", \"num_key_value_heads\": " + std::to_string(s.hkv) +
                     ", \"num_hidden_layers\": 1}";
  if (kvDtype != "f32")
    return compileConfig(dir, s.name + "_" + kvDtype, json,
                         {"--kv-dtype=" + kvDtype});
  return compileConfig(dir, s.name, json);
}

/// The OpenBLAS kernel family the baseline must run: the best this CPU
/// supports. OpenBLAS 0.3.21 picks by CPU model and does not know recent
/// Xeons (nor some EPYCs), falling back to SSE3 "Prescott" kernels, and
/// images may pin OPENBLAS_CORETYPE to Haswell: either flatters us.
const char *bestOpenBLASCore() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
  return nullptr; // let OpenBLAS detect
}

/// OpenBLAS reads OPENBLAS_CORETYPE when it is loaded, before main: set it
/// (and drop OPENBLAS_L2_SIZE, which goes with a pinned core) and run this
/// program again, once. `forced` is the user's --openblas-core choice.
void reexecWithOpenBLASCore(char **argv, const std::string &forced) {
  if (std::getenv("ATTN_BENCH_OPENBLAS_SET"))
    return;
  const char *core = forced.empty() ? bestOpenBLASCore() : forced.c_str();
  if (!core || forced == "auto")
    return;
  setenv("OPENBLAS_CORETYPE", core, 1);
  unsetenv("OPENBLAS_L2_SIZE");
  setenv("ATTN_BENCH_OPENBLAS_SET", core, 1);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "attn-bench: warning: cannot re-run itself with "
                       "OPENBLAS_CORETYPE=%s; the baseline keeps OpenBLAS's "
                       "own choice\n", core);
}

/// Parses argv into `o`; returns -1 to go on, else the exit code (usage).
int parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "attn-bench: error: %s needs a value\n",
                     a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads")
      o.threads = std::max(1, std::atoi(next().c_str()));
    else if (a == "--repeats")
      o.repeats = std::max(1, std::atoi(next().c_str()));
    else if (a == "--csv")
      o.csv = next();
    else if (a == "--shape")
      o.only = next();
    else if (a == "--long")
      o.longSeq = true;
    else if (a == "--openblas-core")
      o.openblasCore = next();
    else if (a == "--openblas-info")
      o.openblasInfo = true;
    else if (a == "--linear")
      o.linear = true;
    else if (a == "--decode")
      o.linearDecodeOnly = true;
    else if (a == "--layers")
      o.layers = true;
    else if (a == "--mla")
      o.mla = true;
    else if (a == "--variants")
      o.variants = true;
    else if (a == "--ceiling")
      o.ceiling = true;
    else if (a == "--config")
      o.layerConfig = next();
    else if (a == "--seq")
      o.layerSeq = std::max(1, std::atoi(next().c_str()));
    else if (a == "--svg")
      o.svg = next();
    else if (a == "--cpu")
      o.cpu = next();
    else if (a == "--keep")
      o.keepDir = next();
    else {
      std::printf(
          "usage: attn-bench [--threads T] [--repeats R] [--csv FILE] "
          "[--shape P1|P2|P3|P4|D1|D2|D3|D4] [--long] [--linear [--svg FILE] "
          "[--decode]] "
          "[--layers [--seq S] [--shape MODEL | --config FILE]] "
          "[--mla [--shape M1|M2|M3|M4|MP]] [--variants [--shape S1..S5|C1]] "
          "[--ceiling] [--openblas-core NAME|auto] [--cpu CPU] [--keep DIR]\n"
          "  --cpu: attn-compile --cpu for the kernels (default "
          "native; e.g. x86-64-v3 runs the AVX2 kernels here)\n"
          "  --keep DIR: compile the kernels into DIR and leave them "
          "there (for perf report; default: a temporary folder, "
          "removed)\n"
          "  --openblas-core: the baseline's OPENBLAS_CORETYPE "
          "(default: SkylakeX with AVX-512, Haswell with AVX2; auto: "
          "OpenBLAS's own detection)\n"
          "  --openblas-info: print the baseline's OpenBLAS kernels "
          "and exit\n"
          "  --long adds S = 8k..64k causal (Hq=8 Hkv=2 D=128, fused "
          "only): time ~ S^2, flat memory\n"
          "  --linear [--svg FILE]: Gated DeltaNet (linear attention) "
          "instead: the seed's and Qwen3-Next-80B's linear layers and "
          "Granite-4.0-H-Small's and Nemotron-3-Nano's Mamba2 SSD, "
          "prefill S = 1k..64k and decode, next to their full-"
          "attention layers, the crossover and a plot (default "
          "attn-bench-linear.svg; --decode: the decode rows only; "
          "--shape seed|qwen3-next-80b|granite-4.0-h-s|kimi-linear|"
          "nemotron-3-nano: one "
          "model)\n"
          "  --layers [--seq S]: whole transformer layers instead "
          "(Llama 3.2 1B's, Qwen3-Next-80B's linear and full-"
          "attention ones with 128 experts): prefill of S tokens "
          "(default 512) and decode, the time split into attention, "
          "projections and feed-forward, the GEMMs next to OpenBLAS "
          "sgemm (--shape llama-3.2-1b|qwen3-next-80b: one model; --config "
          "FILE: that config.json instead, random weights)\n"
          "  --mla: DeepSeek-V3's multi-head latent attention instead: "
          "absorbed decode over a bf16 latent cache at 4k and 32k tokens, "
          "batch 1 and 8 (M1-M4; contiguous, pages of 64, OpenBLAS "
          "unfused, the expanded form on the same step), expanded prefill "
          "S = 4096 (MP); CSV default attn-bench-mla.csv\n"
          "  --variants: gpt-oss-20b's attention with its attention sinks "
          "next to the same kernels without (full and window-128 layers; "
          "prefill S = 4096, decode over 32k keys at batch 1 and 4k at batch "
          "8: S1-S5), Llama 4's chunked attention (chunks of 2k over 8k "
          "tokens) next to the causal kernel of the same work (C1); CSV "
          "default attn-bench-variants.csv\n"
          "  --ceiling: the micro-kernel's register tiles (and neighbours) "
          "with every operand in L1, one thread, as %% of FMAs alone: what "
          "the prefill loops can reach on this core; CSV default "
          "attn-bench-ceiling.csv\n");
      return a == "--help" ? 0 : 2;
    }
  }
  return -1;
}

/// Decode reads K and V once: its figure is a fraction of the read
/// bandwidth, which varies on a shared machine. Five rounds of (bandwidth,
/// `call`) close in time; medians of each and of the per-round ratios.
/// Sets rf's time; returns (K+V GB/s, bandwidth, ratio).
template <typename F>
std::array<double, 3> measureDecode(const Shape &s, const Options &o,
                                    const Machine &mc, F call, Result &rf,
                                    int64_t elementBytes = 4) {
  double bytes = 2.0 * s.hkv * s.skv * s.d * elementBytes;
  std::vector<double> ms, bws, ratios;
  for (int round = 0; round < 5; ++round) {
    double bw =
        valueInChild([&] { return readBandwidth(o.threads, mc.avx512); });
    Result r = inChild(o.repeats, call);
    ms.push_back(r.ms);
    bws.push_back(bw);
    ratios.push_back(bytes / r.ms / 1e6 / bw);
  }
  rf.ms = median(ms);
  return {bytes / rf.ms / 1e6, median(bws), median(ratios)};
}

/// The shape's K/V in a paged cache of `kvDtype` (f32, bf16 or f16): pools
/// laid out as `layout` says (attn_rt::poolStrides: "hnd", "nhd" or
/// "head-major") whose pages the one sequence uses in a
/// shuffled order (as a serving engine's allocator leaves them) or, with
/// `inOrder`, in the pool's order (a fresh allocator's runs), and its
/// block table.
struct PagedCache {
  attn_rt::Buf<char> k, v;
  std::vector<int32_t> table;
  int64_t pages, eb;
  std::array<int64_t, 4> strides;
  PagedCache(const Shape &s, const Inputs &in, int64_t page,
             const std::string &kvDtype, const std::string &layout = "hnd",
             bool inOrder = false)
      : pages((s.skv + page - 1) / page), eb(kvDtype == "f32" ? 4 : 2),
        strides(attn_rt::poolStrides(layout, pages, s.hkv, page, s.d)) {
    k.assign(pages * s.hkv * page * s.d * eb, 0);
    v.assign(k.size(), 0);
    table.resize(pages);
    for (int64_t p = 0; p < pages; ++p)
      table[p] = int32_t(p);
    if (!inOrder)
      std::shuffle(table.begin(), table.end(), std::mt19937(11));
    bool half = kvDtype == "f16";
    for (int64_t h = 0; h < s.hkv; ++h)
      for (int64_t j = 0; j < s.skv; ++j) {
        int64_t at = table[j / page] * strides[0] + h * strides[1] +
                     j % page * strides[2];
        for (int64_t e = 0; e < s.d; ++e)
          for (auto [dst, src] : {std::pair{&k, &in.k}, {&v, &in.v}}) {
            float x = (*src)[(h * s.skv + j) * s.d + e];
            if (eb == 4) {
              std::memcpy(dst->data() + (at + e) * 4, &x, 4);
            } else {
              uint16_t b = attn_rt::narrowBits(x, half);
              std::memcpy(dst->data() + (at + e) * 2, &b, 2);
            }
          }
      }
  }
};

/// One call of a kind's paged kernel over `c` into `o`.
void runPaged(attn_rt_paged_fn fn, const Shape &s, Inputs &in, PagedCache &c,
              int64_t page, attn_rt::Buf<float> &o) {
  attn_rt_memref_f32_4 out = view(o.data(), s.hq, s.sq, s.d),
                       q = view(in.q.data(), s.hq, s.sq, s.d);
  // (A 2-byte cache's descriptor: the same addresses, 2-byte elements.)
  auto *kp = reinterpret_cast<float *>(c.k.data()),
       *vp = reinterpret_cast<float *>(c.v.data());
  attn_rt_memref_f32_4 k = {kp,
                            kp,
                            0,
                            {c.pages, s.hkv, page, s.d},
                            {c.strides[0], c.strides[1], c.strides[2], 1}};
  attn_rt_memref_f32_4 v = k;
  v.allocated = v.aligned = vp;
  attn_rt_memref_i32_2 t = {c.table.data(), c.table.data(), 0,
                            {1, c.pages}, {c.pages, 1}};
  int64_t len = s.skv;
  attn_rt_memref_i64_1 lens{&len, &len, 0, {1}, {1}};
  fn(&out, &q, &k, &v, &t, &lens);
}

/// The tiling the shape's kind was compiled with (its description's
/// cpu_tiles, from attn-compile's heuristics and --cpu).
void printTiles(const Shape &s, const attn_rt_model *m) {
  auto j = nlohmann::json::parse(m->describe_json, nullptr, false);
  if (j.is_discarded() || !j.contains("layer_kinds"))
    return;
  for (const auto &k : j["layer_kinds"]) {
    if (!k.contains("cpu_tiles"))
      continue;
    const auto &t = k["cpu_tiles"];
    auto get = [&](const char *key) {
      return (long long)t.value(key, int64_t(0));
    };
    std::printf(
        "%-6s tiles: %lld query rows per head x %lld keys (decode "
        "%lld keys), chunks of %lld keys; registers: scores %lld "
        "rows (in %lld-lane vectors) x %lld keys, P.V %lld rows x "
        "%lld vectors\n",
        s.name.c_str(), get("q_block"), get("kv_block"), get("decode_kv_block"),
        get("chunk_keys"), get("score_tile_rows"), get("vector_lanes"),
        get("score_tile_keys"), get("pv_tile_rows"), get("pv_tile_vectors"));
    return;
  }
}

/// One shape: compile, load, time the fused kernel (and decode's read
/// rate, contiguous and paged) and the OpenBLAS unfused baseline; print and
/// append to the CSV.
bool benchShape(const Shape &s, const Options &o, const Machine &mc,
                const std::string &dir, CsvFile &out) {
  std::string lib = compileShared(dir, s);
  void *h = nullptr;
  const attn_rt_model *m = loadModel(lib, h);
  if (!m)
    return false;
  auto fused = reinterpret_cast<attn_rt_sdpa_fn>(m->kinds[0].fused);
  printTiles(s, m);
  Inputs in(s);
  double f = flops(s);
  attn_rt::Buf<float> fusedOut(s.hq * s.sq * s.d);
  Result rf = inChild(o.repeats, [&] { runFused(fused, s, in, fusedOut); });
  bool decode = s.sq < 16;
  std::array<double, 3> kv = {0, mc.bandwidth, 0};
  if (decode)
    kv = measureDecode(
        s, o, mc, [&] { runFused(fused, s, in, fusedOut); }, rf);
  Result ru{NAN, 0};
  bool unfusedFits = double(s.sq) * s.skv * 4 < 8e9;
  if (unfusedFits && s.name[0] != 'L') {
    attn_rt::Buf<float> scores(s.sq * s.skv), res(s.hq * s.sq * s.d);
    ru = inChild(o.repeats, [&] { runUnfused(s, in, scores, res); });
  }
  // The same shape with K/V in bf16 (a library compiled with
  // --kv-dtype=bf16): prefill next to fp32; decode's read rate below.
  void *hb = nullptr;
  const attn_rt_model *mb =
      s.name[0] == 'L' ? nullptr : loadModel(compileShared(dir, s, "bf16"), hb);
  Result rb{NAN, 0};
  std::array<double, 3> kvb = {0, mc.bandwidth, 0};
  std::unique_ptr<Bf16KV> bkv;
  if (mb) {
    auto fb = reinterpret_cast<attn_rt_sdpa_fn>(mb->kinds[0].fused);
    bkv = std::make_unique<Bf16KV>(in);
    auto call = [&] { runFused(fb, s, in, fusedOut, bkv.get()); };
    rb = inChild(o.repeats, call);
    if (decode)
      kvb = measureDecode(s, o, mc, call, rb, 2);
  }
  char desc[64];
  std::snprintf(desc, sizeof(desc), "%lld/%lld %lldx%lld %lld%s",
                (long long)s.hq, (long long)s.hkv, (long long)s.sq,
                (long long)s.skv, (long long)s.d, s.causal ? " causal" : "");
  // Rows: fused (fp32 K/V), fused with bf16 K/V, the OpenBLAS baseline.
  const char *names[3] = {"fused", "bf16-kv", "openblas"};
  const char *methods[3] = {"fused", "fused_bf16_kv", "openblas_unfused"};
  for (int which = 0; which < 3; ++which) {
    const Result &r = which == 0 ? rf : which == 1 ? rb : ru;
    if (std::isnan(r.ms))
      continue;
    double gf = f / r.ms / 1e6;
    double speedup = which == 2 ? NAN : ru.ms / r.ms;
    std::printf("%-6s %-32s %-8s %10.2f %10.1f %7.1f%% %10s %10.1f\n",
                s.name.c_str(), desc, names[which], r.ms, gf,
                100 * gf / mc.peak,
                std::isnan(speedup)
                    ? "-"
                    : (std::to_string(speedup).substr(0, 5) + "x").c_str(),
                r.rssKb / 1024.0);
    out.row() << s.name << "," << s.hq << "," << s.hkv << "," << s.sq << ","
        << s.skv << "," << s.d << "," << s.causal << "," << methods[which]
        << "," << r.ms << "," << gf << "," << 100 * gf / mc.peak << ","
        << speedup << "," << r.rssKb / 1024.0 << "\n";
  }
  if (mb && !decode)
    std::printf("%-6s K/V bf16: x%.2f the fp32 fused time\n", "",
                rb.ms / rf.ms);
  if (decode) {
    std::printf("%-6s K+V read: %.1f GB/s by the fused kernel, %.1f%% of "
                "the read bandwidth measured next to it (median of 5 "
                "rounds; %.1f GB/s, %d threads)\n",
                "", kv[0], 100 * kv[2], kv[1], o.threads);
    // method fused_kv_read: gflops column = GB/s, pct_peak = % of the
    // measured read bandwidth.
    out.row() << s.name << "," << s.hq << "," << s.hkv << "," << s.sq << ","
        << s.skv << "," << s.d << "," << s.causal << ",fused_kv_read,"
        << rf.ms << "," << kv[0] << "," << 100 * kv[2] << ",,"
        << rf.rssKb / 1024.0 << "\n";
    if (mb) {
      std::printf("%-6s contiguous bf16 K/V: %8.3f ms, K+V read %5.1f GB/s, "
                  "%5.1f%% of the read bandwidth (%.1f GB/s); x%.2f the fp32 "
                  "contiguous time\n",
                  "", rb.ms, kvb[0], 100 * kvb[2], kvb[1], rb.ms / rf.ms);
      out.row() << s.name << "," << s.hq << "," << s.hkv << "," << s.sq << ","
          << s.skv << "," << s.d << "," << s.causal << ",fused_bf16_kv_read,"
          << rb.ms << "," << kvb[0] << "," << 100 * kvb[2] << ","
          << rb.ms / rf.ms << "," << rb.rssKb / 1024.0 << "\n";
    }
    // The same K/V in a paged cache (pages of 16 and 256 tokens, shuffled)
    // of f32, bf16 and f16 (libraries compiled with --kv-dtype): the paged
    // kernel's read rate (bytes actually read), and its time over the fp32
    // contiguous kernel's.
    for (std::string dt : {"f32", "bf16", "f16"}) {
      void *hd = nullptr;
      const attn_rt_model *md =
          dt == "f32"    ? m
          : dt == "bf16" ? mb
                         : loadModel(compileShared(dir, s, dt), hd);
      attn_rt_paged_fn paged = md ? md->kinds[0].paged : nullptr;
      // Pages of 16 and 256 in the C API's layout, shuffled; pages of 16
      // also in vLLM's layout (shuffled) and head-major with the pages in
      // order (each head's rows one run: what a sequence's pages allocated
      // in runs read like).
      struct Pool {
        int64_t page;
        const char *layout;
        bool inOrder;
        const char *how, *tag; // the report's words, the CSV method's
      };
      for (Pool p : {Pool{16, "hnd", false, "shuffled", ""},
                     Pool{256, "hnd", false, "shuffled", ""},
                     Pool{16, "nhd", false, "nhd, shuffled", "_nhd"},
                     Pool{16, "head-major", true, "head-major, in order",
                          "_headmajor_inorder"}}) {
        if (!paged)
          break;
        int64_t page = p.page;
        PagedCache c(s, in, page, dt, p.layout, p.inOrder);
        Result rp;
        std::array<double, 3> pk = measureDecode(
            s, o, mc, [&] { runPaged(paged, s, in, c, page, fusedOut); }, rp,
            c.eb);
        std::printf("%-6s paged %-4s (page %3lld, %s): %8.3f ms, K+V "
                    "read %5.1f GB/s, %5.1f%% of the read bandwidth (%.1f "
                    "GB/s); x%.2f the fp32 contiguous time\n",
                    "", dt.c_str(), (long long)page, p.how, rp.ms, pk[0],
                    100 * pk[2], pk[1], rp.ms / rf.ms);
        out.row() << s.name << "," << s.hq << "," << s.hkv << "," << s.sq << ","
                  << s.skv << "," << s.d << "," << s.causal << ",paged_" << dt
                  << "_p" << page << p.tag << "_kv_read," << rp.ms << ","
                  << pk[0] << "," << 100 * pk[2] << "," << rp.ms / rf.ms << ","
                  << rp.rssKb / 1024.0 << "\n";
      }
      if (hd)
        dlclose(hd);
    }
  }
  if (hb)
    dlclose(hb);
  dlclose(h);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (int code = parseArgs(argc, argv, o); code >= 0)
    return code;
  if (!o.layerConfig.empty() && !o.layers) {
    std::fprintf(stderr, "attn-bench: error: --config applies to --layers\n");
    return 2;
  }
  // Before any measurement: a bad config fails at once.
  if (!o.layerConfig.empty()) {
    std::string error;
    if (!readLayerConfig(o, error)) {
      std::fprintf(stderr, "attn-bench: error: %s\n", error.c_str());
      return 1;
    }
  }
  reexecWithOpenBLASCore(argv, o.openblasCore);
  const char *set = std::getenv("ATTN_BENCH_OPENBLAS_SET");
  std::string blas = std::string(openblas_get_config()) + ", kernels " +
                     openblas_get_corename() + " (" +
                     (set ? std::string("forced: OPENBLAS_CORETYPE=") + set
                          : std::string("OpenBLAS's own choice")) +
                     ")";
  if (o.openblasInfo) {
    std::printf("OpenBLAS: %s\n", blas.c_str());
    return 0;
  }
  // Before any measurement (and after the re-exec above): the folder the libraries are compiled into
  // (--keep's, kept; else a temporary one, removed at the end).
  char tmpl[] = "/tmp/attn-bench-XXXXXX";
  std::string dir = o.keepDir;
  if (dir.empty()) {
    const char *made = mkdtemp(tmpl);
    if (!made) {
      std::fprintf(stderr, "attn-bench: error: cannot create %s: %s\n", tmpl,
                   std::strerror(errno));
      return 1;
    }
    dir = made;
  } else if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr,
                 "attn-bench: error: --keep %s: cannot create it: %s\n",
                 dir.c_str(), std::strerror(errno));
    return 1;
  }
  auto removeDir = [&] {
    if (!o.keepDir.empty())
      return;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  if (!o.cpu.empty())
    gCompileFlags = {"--cpu=" + o.cpu};
  // Before any OpenMP runtime starts: the compiled kernels read it too.
  setenv("OMP_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
  omp_set_num_threads(o.threads);
  openblas_set_num_threads(o.threads);
  Machine mc;
  mc.cpu = cpuModelName();
  mc.date = utcDate();
  mc.peak = fmaPeak(o.threads, mc.avx512);
  mc.bandwidth = readBandwidth(o.threads, mc.avx512);
  std::printf("FMA peak (%s, %d threads): %.1f GFLOP/s; read bandwidth: "
              "%.1f GB/s\nOpenBLAS: %s\n%s\n",
              mc.avx512 ? "AVX-512" : "AVX2", o.threads, mc.peak, mc.bandwidth,
              blas.c_str(), hugePagesLine().c_str());

  if (o.ceiling) {
    bool ok = benchCeiling(o, mc);
    removeDir();
    return ok ? 0 : 1;
  }
  if (o.linear || o.layers || o.mla || o.variants) {
    bool ok = o.linear     ? benchLinear(o, mc, dir)
              : o.mla      ? benchLatent(o, mc, dir)
              : o.variants ? benchVariants(o, mc, dir)
                           : benchLayers(o, mc, dir);
    removeDir();
    return ok ? 0 : 1;
  }
  std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
  if (o.longSeq)
    for (int64_t s : {8192, 16384, 32768, 65536})
      shapes.push_back({"L" + std::to_string(s / 1024) + "k", 8, 2, s, s, 128,
                        true});
  CsvFile out(o.csv,
              "shape,hq,hkv,sq,skv,d,causal,method,ms,gflops,pct_peak,"
              "fused_over_unfused,peak_rss_mb",
              mc, o.threads);
  std::printf("%-6s %-32s %-8s %10s %10s %8s %10s %10s\n", "shape",
              "Hq/Hkv Sq x Skv D", "method", "ms", "GFLOP/s", "%peak",
              "speedup", "RSS MB");
  for (const Shape &s : shapes)
    if ((o.only.empty() || s.name == o.only) &&
        !benchShape(s, o, mc, dir, out)) {
      removeDir();
      return 1;
    }
  std::printf("CSV: %s\n", o.csv.c_str());
  removeDir();
  return 0;
}
