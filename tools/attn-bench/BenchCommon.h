//===- BenchCommon.h - what attn-bench's benchmarks share -------*- C++ -*-===//
//
// Timing in child processes (each measurement's peak RSS its own, no
// OpenMP workers left spinning), medians, the read-bandwidth probe, the
// options and the machine figures: shared by the softmax benchmarks
// (attn-bench.cpp) and the linear-attention ones (LinearBench.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_ATTN_BENCH_BENCHCOMMON_H
#define ATTN_TOOLS_ATTN_BENCH_BENCHCOMMON_H

#include "attn_runtime.h"
#include "buffer.h"

#include <dlfcn.h>
#include <spawn.h>
#include <immintrin.h>
#include <omp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cerrno>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace attn_bench {

inline double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}


struct Result {
  double ms = 0;
  long rssKb = 0;
};

/// Runs `body` `repeats` times after a warm-up in a child process; returns
/// the median ms and the child's peak RSS.
template <typename F> inline Result inChild(int repeats, F body) {
  int fds[2];
  if (pipe(fds) != 0)
    return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    body(); // warm-up
    std::vector<double> ms;
    for (int r = 0; r < repeats; ++r) {
      double t0 = nowMs();
      body();
      ms.push_back(nowMs() - t0);
    }
    double m = median(ms);
    if (write(fds[1], &m, sizeof(m)) != sizeof(m))
      _exit(1);
    _exit(0);
  }
  close(fds[1]);
  Result r;
  if (read(fds[0], &r.ms, sizeof(r.ms)) != sizeof(r.ms))
    r.ms = NAN;
  close(fds[0]);
  int status = 0;
  struct rusage ru;
  wait4(pid, &status, 0, &ru);
  r.rssKb = ru.ru_maxrss;
  return r;
}

/// Runs `f` in a child process and returns its value: the parent's OpenMP
/// workers would otherwise keep spinning (libomp's block time) on the cores
/// the next measurement needs.
template <typename F> inline double valueInChild(F f) {
  int fds[2];
  if (pipe(fds) != 0)
    return NAN;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    double v = f();
    if (write(fds[1], &v, sizeof(v)) != sizeof(v))
      _exit(1);
    _exit(0);
  }
  close(fds[1]);
  double v = NAN;
  if (read(fds[0], &v, sizeof(v)) != sizeof(v))
    v = NAN;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return v;
}

__attribute__((target("avx512f"))) inline float sumFloats512(const float *p,
                                                       int64_t n) {
  __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
  for (int64_t i = 0; i + 64 <= n; i += 64) {
    a = _mm512_add_ps(a, _mm512_loadu_ps(p + i));
    b = _mm512_add_ps(b, _mm512_loadu_ps(p + i + 16));
    c = _mm512_add_ps(c, _mm512_loadu_ps(p + i + 32));
    d = _mm512_add_ps(d, _mm512_loadu_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(
      _mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)));
}

/// 12 independent chains of AVX-512 FMAs, `iters` times (the FMA peak
/// loop: attn-bench's machine figures, attn-bench --ceiling).
__attribute__((target("avx512f"))) inline double fmaLoop512(int64_t iters) {
  __m512 a[12], b = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < 12; ++i)
    a[i] = _mm512_set1_ps(float(i));
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i)
      a[i] = _mm512_fmadd_ps(a[i], b, c);
  float sum = 0;
  for (int i = 0; i < 12; ++i)
    sum += _mm512_reduce_add_ps(a[i]);
  return sum;
}

__attribute__((target("avx2"))) inline float sumFloats256(const float *p,
                                                   int64_t n) {
  __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
  for (int64_t i = 0; i + 32 <= n; i += 32) {
    a = _mm256_add_ps(a, _mm256_loadu_ps(p + i));
    b = _mm256_add_ps(b, _mm256_loadu_ps(p + i + 8));
    c = _mm256_add_ps(c, _mm256_loadu_ps(p + i + 16));
    d = _mm256_add_ps(d, _mm256_loadu_ps(p + i + 24));
  }
  float out[8], sum = 0;
  _mm256_storeu_ps(out,
                   _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
  for (float x : out)
    sum += x;
  return sum;
}

/// GB/s of streaming reads of a 512 MiB buffer (far past the caches) on
/// all threads, each its own contiguous part; median of 5.
inline double readBandwidth(int threads, bool avx512) {
  int64_t n = int64_t(1) << 27;
  attn_rt::Buf<float> buf(n, 1.0f);
  std::vector<double> rates;
  volatile float sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = nowMs();
    float s = 0;
#pragma omp parallel num_threads(threads) reduction(+ : s)
    {
      int64_t part = n / omp_get_num_threads();
      const float *p = buf.data() + omp_get_thread_num() * part;
      s += avx512 ? sumFloats512(p, part) : sumFloats256(p, part);
    }
    sink = sink + s;
    rates.push_back(double(n) * 4 / (nowMs() - t0) / 1e6);
  }
  return median(rates);
}

/// What the kernel does with the runtime's huge-page advice for buffers
/// of 4 MiB and more (K/V caches, weights, the bandwidth loop's buffer):
/// its THP mode, which decode figures depend on (docs/benchmarks.md,
/// "Huge pages").
inline std::string hugePagesLine() {
  std::string mode = attn_rt::thpMode();
  if (mode == "always" || mode == "madvise")
    return "huge pages: buffers of 4 MiB and more on 2 MiB pages (THP " + mode +
           ")";
  return "huge pages: none (THP " + (mode.empty() ? "absent" : mode) +
         "): every buffer on 4 KiB pages, decode slower than with THP "
         "\"madvise\"";
}

/// attn-bench's command line.
struct Options {
  int threads = 2, repeats = 5;
  std::string csv = "attn-bench.csv", only, openblasCore;
  /// attn-compile --cpu for every kernel compiled (default native).
  std::string cpu;
  /// --keep: compile into this folder and leave it there (perf report needs
  /// the libraries it sampled); default a temporary folder, removed.
  std::string keepDir;
  bool longSeq = false, openblasInfo = false, linear = false, layers = false,
       mla = false, variants = false, ceiling = false;
  /// --linear --decode: the linear decode rows only (no prefill, no
  /// full-attention layer, no crossover), for a baseline script.
  bool linearDecodeOnly = false;
  /// --layers: the prefill's tokens, and a config to measure instead of
  /// the built-in models.
  int64_t layerSeq = 512;
  std::string layerConfig;
  /// --config's text and routed experts per token (readLayerConfig).
  std::string layerConfigText;
  int64_t layerTopK = 0;
  std::string svg = "attn-bench-linear.svg";
};

/// The machine's figures every row is quoted against, and the machine
/// itself: its CPU's model name (/proc/cpuinfo) and the run's date (UTC).
struct Machine {
  bool avx512 = false;
  double peak = 0, bandwidth = 0;
  std::string cpu, date;
};

/// The CPU as /proc/cpuinfo gives it: its model name and, since a VM's
/// name may be as bare as "AMD EPYC", its family and model numbers (which
/// name the microarchitecture: AMD family 26 is Zen 5).
inline std::string cpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name = "unknown CPU", family, model;
  auto value = [&] {
    std::string v = line.substr(line.find(':') + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  };
  while (std::getline(in, line) && line.find(':') != std::string::npos) {
    if (line.rfind("model name", 0) == 0)
      name = value();
    else if (line.rfind("cpu family", 0) == 0)
      family = value();
    else if (line.rfind("model\t", 0) == 0 || line.rfind("model ", 0) == 0)
      model = value();
  }
  if (!family.empty())
    name += " (family " + family + " model " + model + ")";
  return name;
}

/// Today's date (UTC), YYYY-MM-DD.
inline std::string utcDate() {
  std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

/// A benchmark's CSV: every row starts with the machine it was measured on
/// (date, cpu, threads, the FMA peak and read bandwidth of the same run),
/// so that rows of different machines can sit in one data file
/// (docs/bench-data/, rendered by tools/render-benchmarks.py).
class CsvFile {
public:
  CsvFile(const std::string &path, const std::string &columns,
          const Machine &mc, int threads)
      : out(path) {
    out << "date,cpu,threads,peak_gflops,bandwidth_gbs," << columns << "\n";
    std::string cpu = mc.cpu;
    for (char &c : cpu)
      if (c == '"')
        c = '\'';
    char figures[64];
    std::snprintf(figures, sizeof(figures), "%.1f,%.1f,", mc.peak,
                  mc.bandwidth);
    prefix = mc.date + ",\"" + cpu + "\"," + std::to_string(threads) + "," +
             figures;
  }
  /// The stream at a new row, its machine columns written.
  std::ostream &row() { return out << prefix; }
  explicit operator bool() const { return bool(out); }

private:
  std::ofstream out;
  std::string prefix;
};

/// Runs `argv[0]` with the arguments `argv` (no shell: no string of the
/// user's is ever parsed as a command) and waits for it; true when it exits
/// with status 0. A program that cannot start is reported by name.
inline bool runProgram(const std::vector<std::string> &argv) {
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int err = posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (err != 0) {
    std::fprintf(stderr, "attn-bench: error: cannot run %s: %s\n", args[0],
                 std::strerror(err));
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// Flags every compileConfig passes (attn-bench --cpu).
inline std::vector<std::string> gCompileFlags;

/// Writes `json` as DIR/NAME.json and compiles it with attn-compile into
/// DIR/libNAME.so (--emit=shared), attn-compile started with an argument
/// vector; exits on failure.
inline std::string compileConfig(const std::string &dir,
                                 const std::string &name,
                                 const std::string &json,
                                 const std::vector<std::string> &flags = {}) {
  std::string cfg = dir + "/" + name + ".json";
  {
    std::ofstream out(cfg);
    out << json;
    out.close();
    if (!out) {
      std::fprintf(stderr, "attn-bench: error: cannot write %s\n",
                   cfg.c_str());
      std::exit(1);
    }
  }
  std::string lib = dir + "/lib" + name + ".so";
  std::vector<std::string> argv = {ATTN_COMPILE, cfg, "--emit=shared"};
  argv.insert(argv.end(), gCompileFlags.begin(), gCompileFlags.end());
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-o", lib});
  if (!runProgram(argv)) {
    std::string cmd;
    for (const std::string &a : argv)
      cmd += (cmd.empty() ? "" : " ") + a;
    std::fprintf(stderr, "attn-bench: error: '%s' failed\n", cmd.c_str());
    std::exit(1);
  }
  return lib;
}

/// Loads a library compileConfig made: its model table, with `handle` set
/// for dlclose; null (the error printed) when it does not load.
inline const attn_rt_model *loadModel(const std::string &lib,
                                      void *&handle) {
  handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "attn-bench: error: %s\n", dlerror());
    return nullptr;
  }
  auto get = reinterpret_cast<const attn_rt_model *(*)()>(
      dlsym(handle, "attn_rt_get_model"));
  return get();
}

/// The attention shapes of a model: a linear (Gated DeltaNet) layer's
/// heads and head dims, a full-attention layer's, the hidden size and the
/// number of linear layers.
struct LinearModel {
  std::string name;
  int64_t hk, hv, dk, dv;  ///< linear attention
  int64_t hq, hkv, d;      ///< full attention
  int64_t hidden, linearLayers;
  /// Mamba2's SSD (the rule without the delta correction; a
  /// granitemoehybrid config): hk is n_groups, dk d_state, dv the head dim.
  bool noDelta = false;
  /// Kimi Delta Attention (a kimi_linear config): one decay per key
  /// channel, g [1, hv, S, dk]; the full layer is its NoPE multi-head
  /// latent attention's expanded form, head dims d (q/k) and dvFull (v).
  bool channelGate = false;
  int64_t dvFull = 0;
  int64_t fullDv() const { return dvFull ? dvFull : d; }
  /// A Mamba2 model compiled from a nemotron_h config (its intermediate
  /// size heads x head dim need not be a multiple of the hidden size).
  bool nemotron = false;
};

inline attn_rt::Buf<float> normal(std::mt19937 &rng, size_t n,
                                  float scale = 1) {
  std::normal_distribution<float> dist(0.f, scale);
  attn_rt::Buf<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

inline attn_rt_memref_f32_4 view4(float *p, int64_t a, int64_t b, int64_t c,
                           int64_t d) {
  return {p, p, 0, {a, b, c, d}, {b * c * d, c * d, d, 1}};
}
inline attn_rt_memref_f32_3 view3(float *p, int64_t a, int64_t b, int64_t c) {
  return {p, p, 0, {a, b, c}, {b * c, c, 1}};
}

/// One linear layer's inputs and outputs at sequence length S, batch 1.
struct GdnCall {
  int64_t s;
  attn_rt::Buf<float> q, k, v, g, beta, out;
  GdnCall(const LinearModel &m, int64_t s, std::mt19937 &rng) : s(s) {
    q = normal(rng, size_t(m.hk * s * m.dk));
    k = normal(rng, q.size());
    // The layer L2-normalizes q and k.
    for (attn_rt::Buf<float> *x : {&q, &k})
      for (size_t r = 0; r < x->size(); r += m.dk) {
        double n = 0;
        for (int64_t i = 0; i < m.dk; ++i)
          n += double((*x)[r + i]) * (*x)[r + i];
        float inv = float(1 / std::sqrt(n + 1e-6));
        for (int64_t i = 0; i < m.dk; ++i)
          (*x)[r + i] *= inv;
      }
    v = normal(rng, size_t(m.hv * s * m.dv));
    attn_rt::Buf<float> a = normal(rng, size_t(m.hv * s));
    g.resize(a.size());
    beta.resize(a.size());
    if (m.channelGate) {
      // KDA: each key channel's own decay.
      attn_rt::Buf<float> f = normal(rng, size_t(m.hv * s * m.dk));
      g.resize(f.size());
      for (size_t i = 0; i < f.size(); ++i)
        g[i] = -0.3f * std::log1p(std::exp(f[i]));
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (!m.channelGate)
        g[i] = -0.3f * std::log1p(std::exp(a[i]));
      // Mamba2: β is dt itself (softplus).
      beta[i] =
          m.noDelta ? std::log1p(std::exp(a[i])) : 1 / (1 + std::exp(-a[i]));
    }
    out.resize(v.size());
  }
  void run(void (*fn)(void), const LinearModel &m, float *s0, float *s1) {
    attn_rt_memref_f32_4 dOut = view4(out.data(), 1, m.hv, s, m.dv),
                         dSt = view4(s1, 1, m.hv, m.dk, m.dv),
                         dq = view4(q.data(), 1, m.hk, s, m.dk),
                         dk = view4(k.data(), 1, m.hk, s, m.dk),
                         dv = view4(v.data(), 1, m.hv, s, m.dv),
                         dS0 = view4(s0, 1, m.hv, m.dk, m.dv);
    attn_rt_memref_f32_3 db = view3(beta.data(), 1, m.hv, s);
    int64_t len = s; // one whole sequence
    attn_rt_memref_i64_1 dl{&len, &len, 0, {1}, {1}};
    if (m.channelGate) {
      attn_rt_memref_f32_4 dg = view4(g.data(), 1, m.hv, s, m.dk);
      reinterpret_cast<attn_rt_kda_fn>(fn)(&dOut, &dSt, &dq, &dk, &dv, &dg, &db,
                                           &dS0, &dl);
      return;
    }
    attn_rt_memref_f32_3 dg = view3(g.data(), 1, m.hv, s);
    reinterpret_cast<attn_rt_gdn_fn>(fn)(&dOut, &dSt, &dq, &dk, &dv, &dg, &db,
                                         &dS0, &dl);
  }
};

/// One causal softmax-attention call: q [1, Hq, sq, d] against skv keys.
struct SdpaCall {
  int64_t sq, skv;
  attn_rt::Buf<float> q, k, v, out;
  int64_t len;
  SdpaCall(const LinearModel &m, int64_t sq, int64_t skv, std::mt19937 &rng)
      : sq(sq), skv(skv), len(skv) {
    q = normal(rng, size_t(m.hq * sq * m.d));
    k = normal(rng, size_t(m.hkv * skv * m.d));
    v = normal(rng, size_t(m.hkv * skv * m.fullDv()));
    out.resize(size_t(m.hq * sq * m.fullDv()));
  }
  void run(void (*fn)(void), const LinearModel &m) {
    attn_rt_memref_f32_4 dOut = view4(out.data(), 1, m.hq, sq, m.fullDv()),
                         dq = view4(q.data(), 1, m.hq, sq, m.d),
                         dk = view4(k.data(), 1, m.hkv, skv, m.d),
                         dv = view4(v.data(), 1, m.hkv, skv, m.fullDv());
    attn_rt_memref_i64_1 lens{&len, &len, 0, {1}, {1}};
    reinterpret_cast<attn_rt_sdpa_fn>(fn)(&dOut, &dq, &dk, &dv, &lens);
  }
};

/// The linear-attention (Gated DeltaNet) benchmarks (LinearBench.cpp):
/// prefill and decode of the seed model's and Qwen3-Next-80B's linear
/// layers next to their full-attention layers, with the crossover and an
/// SVG plot. Returns false on an error (printed).
bool benchLinear(const Options &o, const Machine &mc, const std::string &dir);

/// The whole-layer benchmarks (LayerBench.cpp): prefill and decode of a
/// dense and a mixture-of-experts model's layers, the time split into
/// attention, projections and feed-forward network, the GEMMs next to
/// OpenBLAS sgemm. Returns false on an error (printed).
bool benchLayers(const Options &o, const Machine &mc, const std::string &dir);
/// attn-bench --mla: DeepSeek-V3's multi-head latent attention, absorbed
/// decode (contiguous and paged, OpenBLAS unfused, the expanded form on the
/// same step) and expanded prefill (LatentBench.cpp).
bool benchLatent(const Options &o, const Machine &mc, const std::string &dir);
/// attn-bench --variants: gpt-oss's attention with its sinks next to the
/// same kernels without, prefill and decode, and Llama 4's chunked
/// attention next to the causal kernel of the same work
/// (VariantsBench.cpp).
bool benchVariants(const Options &o, const Machine &mc,
                   const std::string &dir);
/// attn-bench --ceiling: the micro-kernel's register tiles with every
/// operand in L1, one thread, as % of FMAs alone (CeilingBench.cpp).
bool benchCeiling(const Options &o, const Machine &mc);
/// Reads and checks --config (a JSON object; num_experts_per_tok, when
/// present, a non-negative integer) into `o`; false with `error` set.
bool readLayerConfig(Options &o, std::string &error);

} // namespace attn_bench

#endif // ATTN_TOOLS_ATTN_BENCH_BENCHCOMMON_H
