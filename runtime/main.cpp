//===- main.cpp - the command line of compiled executables ----------------===//
//
// This file implements attn_rt_main: `info`, `sdpa`, `check` and `bench` over
// the kernels of the generated model table. Every error names the file, the
// argument or the shape at fault and exits non-zero without writing output.
//
//===----------------------------------------------------------------------===//

#include "attn_runtime.h"
#include "flops.h"
#include "npy.h"
#include "safetensors.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

// Weak: CUDA executables do not link the OpenMP runtime (a GPU machine may
// have none); CPU executables do, and the kernels' threads follow these.
extern "C" __attribute__((weak)) void omp_set_num_threads(int);
extern "C" __attribute__((weak)) int omp_get_max_threads(void);

using namespace attn_rt;

namespace {

int ompThreads() { return omp_get_max_threads ? omp_get_max_threads() : 1; }

const char *kUsage =
    "usage: %s <command> [options]\n"
    "\n"
    "commands:\n"
    "  info                       the compiled model's description (JSON)\n"
    "  sdpa --layer L --q Q.npy --k K.npy --v V.npy --out O.npy\n"
    "       [--kv-lengths LENS.npy] [--bias-table T.npy]\n"
    "                             fused attention of layer L's kind; Q is\n"
    "                             [B, Hq, Sq, D], K and V [B, Hkv, Skv, D/Dv],\n"
    "                             float32; LENS int64 [B]\n"
    "  block --layer L --weights W.safetensors --x X.npy --out Y.npy\n"
    "                             the whole attention block of layer L (norm,\n"
    "                             projections, RoPE at positions 0..S-1,\n"
    "                             attention, output projection, residual);\n"
    "                             X and Y are float32 [B, S, hidden]\n"
    "  check [--seed N]           fused kernels against the unfused reference\n"
    "                             for every layer kind on several shapes\n"
    "  bench [--layer L] [--batch B] [--seq S] [--kv-len N] [--threads T]\n"
    "        [--repeats R] [--json]\n"
    "                             median time and GFLOP/s, fused and unfused\n"
    "\n"
    "Executables compiled with --target=cuda run sdpa, check and bench on the\n"
    "first NVIDIA GPU (check against a float64 reference); without one they\n"
    "say why and exit 1.\n";

[[noreturn]] void fail(const std::string &msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  std::exit(1);
}

/// Parses `--name value` pairs; flags listed in `flags` take no value.
std::map<std::string, std::string>
parseArgs(int argc, char **argv, int first,
          const std::vector<std::string> &known,
          const std::vector<std::string> &flags = {}) {
  std::map<std::string, std::string> args;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0)
      fail("unexpected argument '" + a + "'; options start with --");
    std::string name = a.substr(2);
    if (std::find(flags.begin(), flags.end(), name) != flags.end()) {
      args[name] = "1";
      continue;
    }
    if (std::find(known.begin(), known.end(), name) == known.end())
      fail("unknown option '" + a + "'");
    if (i + 1 >= argc)
      fail("option '" + a + "' needs a value");
    args[name] = argv[++i];
  }
  return args;
}

int64_t intArg(const std::map<std::string, std::string> &args,
               const std::string &name, int64_t dflt, int64_t lo, int64_t hi) {
  auto it = args.find(name);
  if (it == args.end())
    return dflt;
  char *end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (!end || *end || v < lo || v > hi)
    fail("--" + name + " must be an integer in [" + std::to_string(lo) +
         ", " + std::to_string(hi) + "], got '" + it->second + "'");
  return v;
}

const attn_rt_kind &kindOfLayer(const attn_rt_model *m, int64_t layer) {
  if (layer < 0 || layer >= m->num_layers)
    fail("--layer " + std::to_string(layer) + " is out of range: the model "
         "has layers 0.." + std::to_string(m->num_layers - 1));
  int64_t k = m->layer_kind[layer];
  if (k < 0)
    fail("layer " + std::to_string(layer) +
         " is not softmax attention (see `info`); it is not compiled");
  return m->kinds[k];
}

attn_rt_memref_f32_4 view4(float *data, const std::vector<int64_t> &s) {
  attn_rt_memref_f32_4 d;
  d.allocated = d.aligned = data;
  d.offset = 0;
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    d.sizes[i] = s[i];
    d.strides[i] = stride;
    stride *= s[i];
  }
  return d;
}

/// The kernels launch CUDA kernels on device buffers (attn_rt_model.device).
bool gCuda = false;

/// The GPU and its peaks: fp32 FMA lanes (128 per SM on sm_90, 64 on
/// sm_80) and dense bf16 tensor-core FLOP per clock (4096 per SM on sm_90,
/// 2048 on sm_80) at the device's reported clock.
struct DeviceInfo {
  std::string name;
  int sms = 0, major = 0, minor = 0;
  double mhz = 0, fp32Tflops = 0, tensorTflops = 0;
} gDevice;

void describeDevice() {
  char name[256] = {0};
  int khz = 0;
  attn_rt_cuda_describe(name, sizeof(name), &gDevice.sms, &khz,
                        &gDevice.major, &gDevice.minor);
  gDevice.name = name;
  gDevice.mhz = khz / 1000.0;
  bool hopper = gDevice.major >= 9;
  double clk = khz * 1e3;
  gDevice.fp32Tflops = gDevice.sms * clk * (hopper ? 256 : 128) / 1e12;
  gDevice.tensorTflops = gDevice.sms * clk * (hopper ? 4096 : 2048) / 1e12;
}

/// Exits with the reason when the CUDA kernels cannot run here.
void requireDevice(const char *command) {
  if (!gCuda)
    return;
  char why[1024];
  if (attn_rt_cuda_init(why, sizeof(why)) != 0)
    fail(std::string(command) +
         ": this executable runs its attention on an NVIDIA GPU (compiled "
         "with --target=cuda) and none is usable here: " + why);
}

/// A device copy of a host buffer, freed with the object.
struct DeviceBuffer {
  void *ptr = nullptr;
  int64_t bytes = 0;
  DeviceBuffer(const void *host, int64_t n) : bytes(n) {
    ptr = attn_rt_cuda_alloc(n);
    if (host)
      attn_rt_cuda_to_device(ptr, host, n);
  }
  ~DeviceBuffer() { attn_rt_cuda_free(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

void callKernel(void (*fn)(void), const attn_rt_kind &kind,
                attn_rt_memref_f32_4 *out, attn_rt_memref_f32_4 *q,
                attn_rt_memref_f32_4 *k, attn_rt_memref_f32_4 *v,
                attn_rt_memref_i64_1 *lens, std::vector<float> *table);

/// One call of a CUDA kernel: inputs to the device, the kernel, the output
/// back into `out`.
void runOnDevice(void (*fn)(void), const attn_rt_kind &kind,
                 std::vector<float> &q, const std::vector<int64_t> &qs,
                 std::vector<float> &k, const std::vector<int64_t> &ks,
                 std::vector<float> &v, const std::vector<int64_t> &vs,
                 std::vector<int64_t> &lens, std::vector<float> &out);

/// One call of a kernel into `out` (resized to [B, Hq, Sq, Dv]).
void run(void (*fn)(void), const attn_rt_kind &kind, std::vector<float> &q,
         const std::vector<int64_t> &qs, std::vector<float> &k,
         const std::vector<int64_t> &ks, std::vector<float> &v,
         const std::vector<int64_t> &vs, std::vector<int64_t> &lens,
         std::vector<float> *table, std::vector<float> &out) {
  std::vector<int64_t> os = {qs[0], qs[1], qs[2], vs[3]};
  out.resize(os[0] * os[1] * os[2] * os[3]);
  if (gCuda)
    return runOnDevice(fn, kind, q, qs, k, ks, v, vs, lens, out);
  attn_rt_memref_f32_4 dout = view4(out.data(), os), dq = view4(q.data(), qs),
                       dk = view4(k.data(), ks), dv = view4(v.data(), vs);
  attn_rt_memref_i64_1 dl{lens.data(), lens.data(), 0, {int64_t(lens.size())},
                          {1}};
  callKernel(fn, kind, &dout, &dq, &dk, &dv, &dl, table);
}

void callKernel(void (*fn)(void), const attn_rt_kind &kind,
                attn_rt_memref_f32_4 *out, attn_rt_memref_f32_4 *q,
                attn_rt_memref_f32_4 *k, attn_rt_memref_f32_4 *v,
                attn_rt_memref_i64_1 *lens, std::vector<float> *table) {
  if (kind.bias_buckets > 0) {
    attn_rt_memref_f32_2 dt{table->data(), table->data(), 0,
                            {kind.bias_buckets, kind.num_heads},
                            {kind.num_heads, 1}};
    reinterpret_cast<attn_rt_sdpa_bias_fn>(fn)(out, q, k, v, lens, &dt);
  } else {
    reinterpret_cast<attn_rt_sdpa_fn>(fn)(out, q, k, v, lens);
  }
}

/// Device descriptors of the same shapes as the host ones.
struct DeviceCall {
  DeviceBuffer out, q, k, v, lens;
  attn_rt_memref_f32_4 dout, dq, dk, dv;
  attn_rt_memref_i64_1 dl;
  DeviceCall(std::vector<float> &hq, const std::vector<int64_t> &qs,
             std::vector<float> &hk, const std::vector<int64_t> &ks,
             std::vector<float> &hv, const std::vector<int64_t> &vs,
             std::vector<int64_t> &hl, int64_t outElems)
      : out(nullptr, 4 * outElems), q(hq.data(), 4 * int64_t(hq.size())),
        k(hk.data(), 4 * int64_t(hk.size())),
        v(hv.data(), 4 * int64_t(hv.size())),
        lens(hl.data(), 8 * int64_t(hl.size())) {
    std::vector<int64_t> os = {qs[0], qs[1], qs[2], vs[3]};
    dout = view4(static_cast<float *>(out.ptr), os);
    dq = view4(static_cast<float *>(q.ptr), qs);
    dk = view4(static_cast<float *>(k.ptr), ks);
    dv = view4(static_cast<float *>(v.ptr), vs);
    auto *l = static_cast<int64_t *>(lens.ptr);
    dl = {l, l, 0, {int64_t(hl.size())}, {1}};
  }
  void call(void (*fn)(void), const attn_rt_kind &kind) {
    callKernel(fn, kind, &dout, &dq, &dk, &dv, &dl, nullptr);
  }
};

void runOnDevice(void (*fn)(void), const attn_rt_kind &kind,
                 std::vector<float> &q, const std::vector<int64_t> &qs,
                 std::vector<float> &k, const std::vector<int64_t> &ks,
                 std::vector<float> &v, const std::vector<int64_t> &vs,
                 std::vector<int64_t> &lens, std::vector<float> &out) {
  DeviceCall c(q, qs, k, ks, v, vs, lens, int64_t(out.size()));
  c.call(fn, kind);
  attn_rt_cuda_to_host(out.data(), c.out.ptr, 4 * int64_t(out.size()));
}

/// Attention in float64 by its definition, one query row at a time: the
/// independent reference of `check` for kernels without a compiled
/// reference (CUDA). Causal is bottom-right aligned; a row that sees no key
/// is 0.
void referenceF64(const attn_rt_kind &kind, const std::vector<float> &q,
                  const std::vector<int64_t> &qs, const std::vector<float> &k,
                  const std::vector<int64_t> &ks, const std::vector<float> &v,
                  const std::vector<int64_t> &vs,
                  const std::vector<int64_t> &lens, double scale,
                  double softcap, std::vector<float> &out) {
  int64_t B = qs[0], Hq = qs[1], Sq = qs[2], D = qs[3], Hkv = ks[1],
          Skv = ks[2], Dv = vs[3], G = Hq / Hkv;
  out.assign(B * Hq * Sq * Dv, 0.0f);
  std::vector<double> s(Skv), acc(Dv);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        const float *qr = &q[((b * Hq + h) * Sq + i) * D];
        int64_t pos = i + Skv - Sq;
        double mx = -INFINITY;
        for (int64_t j = 0; j < Skv; ++j) {
          bool vis = j < lens[b];
          if (kind.causal)
            vis = vis && j <= pos;
          if (kind.window)
            vis = vis && j > pos - kind.window;
          if (!vis) {
            s[j] = -INFINITY;
            continue;
          }
          const float *kr = &k[((b * Hkv + h / G) * Skv + j) * D];
          double dot = 0;
          for (int64_t e = 0; e < D; ++e)
            dot += double(qr[e]) * double(kr[e]);
          dot *= scale;
          if (softcap > 0)
            dot = softcap * std::tanh(dot / softcap);
          s[j] = dot;
          mx = std::max(mx, dot);
        }
        if (mx == -INFINITY)
          continue;
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < Skv; ++j) {
          if (s[j] == -INFINITY)
            continue;
          double p = std::exp(s[j] - mx);
          sum += p;
          const float *vr = &v[((b * Hkv + h / G) * Skv + j) * Dv];
          for (int64_t e = 0; e < Dv; ++e)
            acc[e] += p * double(vr[e]);
        }
        float *o = &out[((b * Hq + h) * Sq + i) * Dv];
        for (int64_t e = 0; e < Dv; ++e)
          o[e] = float(acc[e] / sum);
      }
}

std::vector<float> randomVec(std::mt19937 &rng, int64_t n, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

double flops(const attn_rt_kind &k, int64_t b, int64_t sq, int64_t skv) {
  return attn_rt_attention_flops(b, k.num_heads, sq, skv, k.head_dim,
                                 k.head_dim_v, k.causal, k.window);
}

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

int cmdSdpa(const attn_rt_model *m, int argc, char **argv) {
  auto args = parseArgs(argc, argv, 2,
                        {"layer", "q", "k", "v", "out", "kv-lengths",
                         "bias-table"});
  for (const char *req : {"layer", "q", "k", "v", "out"})
    if (!args.count(req))
      fail(std::string("sdpa needs --") + req);
  const attn_rt_kind &kind =
      kindOfLayer(m, intArg(args, "layer", 0, 0, 1 << 30));
  NpyArray q, k, v;
  std::string err;
  for (auto [arr, name] : {std::pair<NpyArray *, const char *>{&q, "q"},
                           {&k, "k"},
                           {&v, "v"}}) {
    if (!readNpy(args[name], *arr, err))
      fail(err);
    if (arr->dtype != "f4")
      fail(args[name] + ": dtype int64; --" + name + " must be float32");
    if (arr->shape.size() != 4)
      fail(args[name] + ": rank " + std::to_string(arr->shape.size()) +
           "; --" + name + " must be [batch, heads, seq, head_dim]");
  }
  auto expect = [&](bool ok, const std::string &what) {
    if (!ok)
      fail(what);
  };
  auto shapeStr = [](const std::vector<int64_t> &s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i)
      r += std::to_string(s[i]) + (i + 1 < s.size() ? ", " : "]");
    return r;
  };
  std::string kindDesc = " for layer kind '" + std::string(kind.name) +
                         "' (Hq=" + std::to_string(kind.num_heads) +
                         ", Hkv=" + std::to_string(kind.num_kv_heads) +
                         ", D=" + std::to_string(kind.head_dim) +
                         ", Dv=" + std::to_string(kind.head_dim_v) + ")";
  expect(q.shape[1] == kind.num_heads && q.shape[3] == kind.head_dim,
         args["q"] + ": shape " + shapeStr(q.shape) + " must be [B, " +
             std::to_string(kind.num_heads) + ", Sq, " +
             std::to_string(kind.head_dim) + "]" + kindDesc);
  expect(k.shape[1] == kind.num_kv_heads && k.shape[3] == kind.head_dim,
         args["k"] + ": shape " + shapeStr(k.shape) + " must be [B, " +
             std::to_string(kind.num_kv_heads) + ", Skv, " +
             std::to_string(kind.head_dim) + "]" + kindDesc);
  expect(v.shape[1] == kind.num_kv_heads && v.shape[3] == kind.head_dim_v,
         args["v"] + ": shape " + shapeStr(v.shape) + " must be [B, " +
             std::to_string(kind.num_kv_heads) + ", Skv, " +
             std::to_string(kind.head_dim_v) + "]" + kindDesc);
  expect(k.shape[0] == q.shape[0] && v.shape[0] == q.shape[0],
         "batch sizes differ: q " + shapeStr(q.shape) + ", k " +
             shapeStr(k.shape) + ", v " + shapeStr(v.shape));
  expect(k.shape[2] == v.shape[2], "k and v sequence lengths differ: k " +
                                       shapeStr(k.shape) + ", v " +
                                       shapeStr(v.shape));
  std::vector<int64_t> lens(q.shape[0], k.shape[2]);
  if (args.count("kv-lengths")) {
    NpyArray l;
    if (!readNpy(args["kv-lengths"], l, err))
      fail(err);
    expect(l.dtype == "i8" && l.shape.size() == 1 && l.shape[0] == q.shape[0],
           args["kv-lengths"] + ": must be int64 [" +
               std::to_string(q.shape[0]) + "] (one length per batch)");
    for (int64_t x : l.i64)
      expect(x >= 0 && x <= k.shape[2],
             args["kv-lengths"] + ": length " + std::to_string(x) +
                 " outside [0, kv_len = " + std::to_string(k.shape[2]) + "]");
    lens = l.i64;
  }
  std::vector<float> table;
  if (kind.bias_buckets > 0) {
    expect(args.count("bias-table"),
           std::string("layer kind '") + kind.name +
               "' adds T5's relative-position bias: pass its table with "
               "--bias-table T.npy (float32 [" +
               std::to_string(kind.bias_buckets) + ", " +
               std::to_string(kind.num_heads) + "])");
    NpyArray t;
    if (!readNpy(args["bias-table"], t, err))
      fail(err);
    expect(t.dtype == "f4" && t.shape.size() == 2 &&
               t.shape[0] == kind.bias_buckets && t.shape[1] == kind.num_heads,
           args["bias-table"] + ": must be float32 [" +
               std::to_string(kind.bias_buckets) + ", " +
               std::to_string(kind.num_heads) + "]");
    table = t.f32;
  }
  requireDevice("sdpa");
  std::vector<float> out;
  run(kind.fused, kind, q.f32, q.shape, k.f32, k.shape, v.f32, v.shape, lens,
      &table, out);
  std::vector<int64_t> outShape = {q.shape[0], q.shape[1], q.shape[2],
                                   v.shape[3]};
  if (!writeNpyF32(args["out"], outShape, out.data(), err))
    fail(err);
  return 0;
}

int cmdBlock(const attn_rt_model *m, int argc, char **argv) {
  auto args = parseArgs(argc, argv, 2, {"layer", "weights", "x", "out"});
  for (const char *req : {"layer", "weights", "x", "out"})
    if (!args.count(req))
      fail(std::string("block needs --") + req);
  int64_t layer = intArg(args, "layer", 0, 0, 1 << 30);
  const attn_rt_kind &kind = kindOfLayer(m, layer);
  if (!kind.block)
    fail(std::string("block is not supported yet for the ") + m->family +
         " family (supported: llama, mistral, qwen2, qwen3, gemma2); `sdpa` "
         "runs its attention kernels");
  std::string err;
  NpyArray x;
  if (!readNpy(args["x"], x, err))
    fail(err);
  if (x.dtype != "f4" || x.shape.size() != 3 || x.shape[2] != m->hidden_size)
    fail(args["x"] + ": must be float32 [batch, seq, " +
         std::to_string(m->hidden_size) + "] (the hidden states)");
  SafeTensors st;
  if (!st.open(args["weights"], err))
    fail(err);
  std::vector<std::vector<float>> data(kind.num_weights);
  std::vector<attn_rt_memref_f32_1> d1(kind.num_weights);
  std::vector<attn_rt_memref_f32_2> d2(kind.num_weights);
  std::vector<void *> ptrs(kind.num_weights);
  for (int64_t i = 0; i < kind.num_weights; ++i) {
    const attn_rt_weight &w = kind.weights[i];
    std::string name = w.pattern;
    size_t at = name.find("{i}");
    if (at != std::string::npos)
      name = name.substr(0, at) + std::to_string(layer) + name.substr(at + 3);
    std::vector<int64_t> shape(w.shape, w.shape + w.rank);
    if (!st.readF32(name, shape, data[i], err))
      fail(err);
    float *p = data[i].data();
    if (w.rank == 1) {
      d1[i] = {p, p, 0, {shape[0]}, {1}};
      ptrs[i] = &d1[i];
    } else {
      d2[i] = {p, p, 0, {shape[0], shape[1]}, {shape[1], 1}};
      ptrs[i] = &d2[i];
    }
  }
  int64_t b = x.shape[0], s = x.shape[1];
  std::vector<int64_t> pos(b * s);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < s; ++j)
      pos[i * s + j] = j;
  attn_rt_memref_f32_3 dx{x.f32.data(), x.f32.data(), 0,
                          {b, s, m->hidden_size},
                          {s * m->hidden_size, m->hidden_size, 1}};
  attn_rt_memref_i64_2 dp{pos.data(), pos.data(), 0, {b, s}, {s, 1}};
  std::vector<float> yv(b * s * m->hidden_size);
  attn_rt_memref_f32_3 y{yv.data(), yv.data(), 0, {b, s, m->hidden_size},
                         {s * m->hidden_size, m->hidden_size, 1}};
  kind.block(&y, &dx, &dp, ptrs.data());
  if (!writeNpyF32(args["out"], {b, s, m->hidden_size}, yv.data(), err))
    fail(err);
  return 0;
}

int cmdCheck(const attn_rt_model *m, int argc, char **argv) {
  auto args = parseArgs(argc, argv, 2, {"seed"});
  std::mt19937 rng(uint32_t(intArg(args, "seed", 1, 0, 1ll << 31)));
  struct Shape {
    int64_t b, sq, skv;
  };
  requireDevice("check");
  std::vector<Shape> shapes = {{1, 1, 1},   {2, 3, 3},  {1, 17, 17},
                               {1, 5, 33},  {1, 33, 7}, {2, 70, 70}};
  // On the GPU also several thread blocks and key tiles, decode against a
  // long cache, and more rows than one block.
  if (gCuda)
    shapes.insert(shapes.end(), {{1, 1, 1000}, {2, 130, 130}, {1, 300, 1000}});
  bool allOk = true;
  for (int64_t i = 0; i < m->num_kinds; ++i) {
    const attn_rt_kind &kind = m->kinds[i];
    for (const Shape &s : shapes) {
      std::vector<int64_t> qs = {s.b, kind.num_heads, s.sq, kind.head_dim},
                           ks = {s.b, kind.num_kv_heads, s.skv, kind.head_dim},
                           vs = {s.b, kind.num_kv_heads, s.skv,
                                 kind.head_dim_v};
      auto q = randomVec(rng, s.b * kind.num_heads * s.sq * kind.head_dim, 1);
      auto k = randomVec(rng, s.b * kind.num_kv_heads * s.skv * kind.head_dim,
                         1);
      auto v = randomVec(rng,
                         s.b * kind.num_kv_heads * s.skv * kind.head_dim_v, 1);
      std::vector<int64_t> lens(s.b, s.skv);
      if (s.b > 1)
        lens[1] = s.skv / 2; // key padding on the second sequence
      auto table = randomVec(rng, kind.bias_buckets * kind.num_heads, 1);
      std::vector<float> fused, ref;
      run(kind.fused, kind, q, qs, k, ks, v, vs, lens, &table, fused);
      if (kind.reference)
        run(kind.reference, kind, q, qs, k, ks, v, vs, lens, &table, ref);
      else
        referenceF64(kind, q, qs, k, ks, v, vs, lens, kind.scale,
                     kind.softcap, ref);
      double maxAbs = 0, maxRef = 0;
      bool finite = true;
      for (size_t j = 0; j < ref.size(); ++j) {
        finite = finite && std::isfinite(fused[j]);
        maxAbs = std::max(maxAbs, double(std::fabs(fused[j] - ref[j])));
        maxRef = std::max(maxRef, double(std::fabs(ref[j])));
      }
      double rel = maxAbs / std::max(maxRef, 1e-30);
      bool ok = finite && maxAbs <= kind.tolerance * (1 + maxRef);
      allOk = allOk && ok;
      std::printf("%-4s %-32s B=%lld Sq=%-3lld Skv=%-3lld max_abs_err=%.3e "
                  "max_rel_err=%.3e\n",
                  ok ? "ok" : "FAIL", kind.name, (long long)s.b,
                  (long long)s.sq, (long long)s.skv, maxAbs, rel);
    }
  }
  if (m->num_kinds == 0)
    std::printf("check: the model has no softmax-attention layer kinds to "
                "check\n");
  else
    std::printf("check: %s\n", allOk ? "all kernels match the reference"
                                     : "MISMATCH");
  return allOk ? 0 : 1;
}

int cmdBench(const attn_rt_model *m, int argc, char **argv) {
  auto args = parseArgs(argc, argv, 2,
                        {"layer", "batch", "seq", "kv-len", "threads",
                         "repeats"},
                        {"json"});
  int64_t b = intArg(args, "batch", 1, 1, 1 << 16);
  int64_t sq = intArg(args, "seq", 512, 1, 1 << 24);
  int64_t skv = intArg(args, "kv-len", sq, 1, 1 << 24);
  int64_t repeats = intArg(args, "repeats", 5, 1, 10000);
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
  double physical = double(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  for (int64_t ki : kinds) {
    const attn_rt_kind &k = m->kinds[ki];
    double bytes = 4.0 * b *
                   (2.0 * k.num_heads * sq * std::max(k.head_dim, k.head_dim_v) +
                    2.0 * k.num_kv_heads * skv *
                        std::max(k.head_dim, k.head_dim_v));
    if (bytes > 0.8 * physical)
      fail("bench: --batch/--seq/--kv-len need " +
           std::to_string(int64_t(bytes / 1e9)) + " GB of tensors; this "
           "machine has " + std::to_string(int64_t(physical / 1e9)) + " GB");
  }
  requireDevice("bench");
  if (gCuda) {
    describeDevice();
    if (!json)
      std::printf("device: %s, %d SMs at %.0f MHz, sm_%d%d: fp32 peak %.1f "
                  "TFLOP/s, dense bf16 tensor peak %.1f TFLOP/s\n",
                  gDevice.name.c_str(), gDevice.sms, gDevice.mhz,
                  gDevice.major, gDevice.minor, gDevice.fp32Tflops,
                  gDevice.tensorTflops);
  }
  std::mt19937 rng(7);
  if (json)
    std::printf("[");
  for (size_t ki = 0; ki < kinds.size(); ++ki) {
    const attn_rt_kind &kind = m->kinds[kinds[ki]];
    std::vector<int64_t> qs = {b, kind.num_heads, sq, kind.head_dim},
                         ks = {b, kind.num_kv_heads, skv, kind.head_dim},
                         vs = {b, kind.num_kv_heads, skv, kind.head_dim_v};
    auto q = randomVec(rng, b * kind.num_heads * sq * kind.head_dim, 1);
    auto k = randomVec(rng, b * kind.num_kv_heads * skv * kind.head_dim, 1);
    auto v = randomVec(rng, b * kind.num_kv_heads * skv * kind.head_dim_v, 1);
    std::vector<int64_t> lens(b, skv);
    auto table = randomVec(rng, kind.bias_buckets * kind.num_heads, 1);
    std::vector<float> out;
    // Median ms of `repeats` calls after a warm-up (which also allocates
    // and touches the output, reused after).
    auto median = [&](auto call) {
      call();
      std::vector<double> ms;
      for (int64_t r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        call();
        auto t1 = std::chrono::steady_clock::now();
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0)
                         .count());
      }
      std::sort(ms.begin(), ms.end());
      return ms[ms.size() / 2];
    };
    auto time = [&](void (*fn)(void)) {
      return median(
          [&] { run(fn, kind, q, qs, k, ks, v, vs, lens, &table, out); });
    };
    double f = flops(kind, b, sq, skv);
    if (gCuda) {
      // Device buffers once; each call is the host stub: launch on a
      // stream and wait for it.
      int64_t outElems = b * kind.num_heads * sq * kind.head_dim_v;
      DeviceCall c(q, qs, k, ks, v, vs, lens, outElems);
      double fusedMs = median([&] { c.call(kind.fused, kind); });
      double tflops = f / fusedMs / 1e9;
      double pctFp32 = 100 * tflops / gDevice.fp32Tflops;
      double pctTensor = 100 * tflops / gDevice.tensorTflops;
      if (json)
        std::printf("%s\n  {\"kind\": \"%s\", \"device\": \"%s\", "
                    "\"batch\": %lld, \"seq\": %lld, \"kv_len\": %lld, "
                    "\"flops\": %.0f, \"fused_ms\": %.4f, "
                    "\"fused_tflops\": %.3f, \"pct_fp32_peak\": %.2f, "
                    "\"pct_bf16_tensor_peak\": %.2f}",
                    ki ? "," : "", kind.name, gDevice.name.c_str(),
                    (long long)b, (long long)sq, (long long)skv, f, fusedMs,
                    tflops, pctFp32, pctTensor);
      else
        std::printf("%-30s B=%lld Sq=%lld Skv=%lld: fused %9.3f ms %8.3f "
                    "TFLOP/s, %.1f%% of the fp32 peak, %.1f%% of the dense "
                    "bf16 tensor peak\n",
                    kind.name, (long long)b, (long long)sq, (long long)skv,
                    fusedMs, tflops, pctFp32, pctTensor);
      continue;
    }
    double fusedMs = time(kind.fused);
    // The unfused reference holds [B, Hq, Sq, Skv] scores (several copies):
    // skipped past a quarter of the memory.
    double scoreBytes = 4.0 * b * kind.num_heads * double(sq) * double(skv);
    double refMs = scoreBytes * 3 < 0.25 * physical ? time(kind.reference)
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
      std::printf("%s\n  {\"kind\": \"%s\", \"batch\": %lld, \"seq\": %lld, "
                  "\"kv_len\": %lld, \"threads\": %d, \"flops\": %.0f, "
                  "\"fused_ms\": %s, \"fused_gflops\": %s, "
                  "\"unfused_ms\": %s, \"unfused_gflops\": %s}",
                  ki ? "," : "", kind.name, (long long)b, (long long)sq,
                  (long long)skv, ompThreads(), f,
                  num(fusedMs).c_str(), num(f / fusedMs / 1e6).c_str(),
                  num(refMs).c_str(), num(f / refMs / 1e6).c_str());
    } else {
      std::printf("%-30s B=%lld Sq=%lld Skv=%lld threads=%d: fused %9.3f ms "
                  "%8.2f GFLOP/s | unfused reference %9.3f ms %8.2f GFLOP/s "
                  "| fused/unfused x%.2f\n",
                  kind.name, (long long)b, (long long)sq, (long long)skv,
                  ompThreads(), fusedMs, f / fusedMs / 1e6, refMs,
                  f / refMs / 1e6, refMs / fusedMs);
    }
  }
  if (json)
    std::printf("\n]\n");
  return 0;
}

} // namespace

extern "C" int attn_rt_main(int argc, char **argv) {
  const attn_rt_model *m = attn_rt_get_model();
  if (m->abi_version != ATTN_RT_ABI_VERSION)
    fail("the model table has ABI version " +
         std::to_string(m->abi_version) + ", the runtime " +
         std::to_string(ATTN_RT_ABI_VERSION));
  if (argc < 2 || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::printf(kUsage, argv[0]);
    return argc < 2 ? 1 : 0;
  }
  gCuda = m->device == 1;
  std::string cmd = argv[1];
  if (cmd == "info") {
    std::printf("%s\n", m->describe_json);
    return 0;
  }
  if (cmd == "sdpa")
    return cmdSdpa(m, argc, argv);
  if (cmd == "block")
    return cmdBlock(m, argc, argv);
  if (cmd == "check")
    return cmdCheck(m, argc, argv);
  if (cmd == "bench")
    return cmdBench(m, argc, argv);
  std::fprintf(stderr, "error: unknown command '%s'\n", cmd.c_str());
  std::fprintf(stderr, kUsage, argv[0]);
  return 1;
}
