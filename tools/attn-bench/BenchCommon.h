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

#include <dlfcn.h>
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
#include <fstream>
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
  std::vector<float> buf(n, 1.0f);
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

/// attn-bench's command line.
struct Options {
  int threads = 2, repeats = 5;
  std::string csv = "attn-bench.csv", only, openblasCore;
  /// attn-compile --cpu for every kernel compiled (default native).
  std::string cpu;
  bool longSeq = false, openblasInfo = false, linear = false;
  std::string svg = "attn-bench-linear.svg";
};

/// The machine's figures every row is quoted against.
struct Machine {
  bool avx512 = false;
  double peak = 0, bandwidth = 0;
};

/// Writes `json` as DIR/NAME.json and compiles it with attn-compile into
/// DIR/libNAME.so (--emit=shared); exits on failure.
/// Flags every compileConfig passes (attn-bench --cpu).
inline std::string gCompileFlags;

inline std::string compileConfig(const std::string &dir,
                                 const std::string &name,
                                 const std::string &json,
                                 const std::string &flags = "") {
  std::string cfg = dir + "/" + name + ".json";
  std::ofstream(cfg) << json;
  std::string lib = dir + "/lib" + name + ".so";
  std::string cmd = std::string(ATTN_COMPILE) + " " + cfg +
                    " --emit=shared " + gCompileFlags + " " + flags + " -o " +
                    lib;
  if (std::system(cmd.c_str()) != 0) {
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

/// The linear-attention (Gated DeltaNet) benchmarks (LinearBench.cpp):
/// prefill and decode of the seed model's and Qwen3-Next-80B's linear
/// layers next to their full-attention layers, with the crossover and an
/// SVG plot. Returns false on an error (printed).
bool benchLinear(const Options &o, const Machine &mc, const std::string &dir);

} // namespace attn_bench

#endif // ATTN_TOOLS_ATTN_BENCH_BENCHCOMMON_H
