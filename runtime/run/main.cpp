//===- main.cpp - the command line of compiled executables ----------------===//
//
// This file implements attn_rt_main: `info`, `sdpa` and `block` over the
// kernels of the generated model table, and the dispatch to `check`
// (check.cpp) and `bench` (bench.cpp); argument parsing, kernel calls and the
// float64 reference are in args.cpp, device.cpp and reference.cpp. Every error
// names the file, the argument or the shape at fault and exits non-zero
// without writing output.
//
//===----------------------------------------------------------------------===//

#include "attn_runtime.h"
#include "cli.h"
#include "narrow.h"
#include "npy.h"
#include "resources.h"
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

using namespace attn_rt;
using namespace attn_rt::cli;

namespace {

const char *kUsage =
    "usage: %s <command> [options]\n"
    "\n"
    "commands:\n"
    "  info                       the compiled model's description (JSON)\n"
    "  sdpa --layer L --q Q.npy --k K.npy --v V.npy --out O.npy\n"
    "       [--kv-lengths LENS.npy] [--bias-table T.npy] [--sinks S.npy]\n"
    "                             fused attention of layer L's kind; Q is\n"
    "                             [B, Hq, Sq, D] float32, K and V [B, Hkv,\n"
    "                             Skv, D/Dv] in the kind's --kv-dtype "
    "(float32\n"
    "                             '<f4', float16 '<f2', bfloat16 bits '<u2');\n"
    "                             LENS int64 [B]; S float32 [Hq] (kinds\n"
    "                             with attention sinks)\n"
    "  block --layer L --weights W.safetensors --x X.npy --out Y.npy\n"
    "        [--memory M.npy] [--lengths LENS.npy]\n"
    "        [--conv-state-in C0.npy] [--state-in S0.npy]\n"
    "        [--conv-state-out C1.npy] [--state-out S1.npy]\n"
    "        [--cache-in C0.npy] [--cache-out C1.npy]\n"
    "                             the whole attention block of layer L (norm,\n"
    "                             projections, RoPE at positions 0..S-1,\n"
    "                             attention, output projection, residual);\n"
    "                             X and Y are float32 [B, S, hidden]; cross\n"
    "                             attention reads the encoder's output M\n"
    "                             [B, Sm, hidden]; LENS (int64 [B]) masks the\n"
    "                             keys past each row's length (bidirectional\n"
    "                             and cross attention); a\n"
    "                             linear-attention layer also takes and gives\n"
    "                             its states (conv [B, C, K-1], recurrent\n"
    "                             [B, Hv, dk, dv]; zeros when not given); a\n"
    "                             latent-attention layer (DeepSeek) reads\n"
    "                             the latent rows of the tokens before X\n"
    "                             (C0 float32 [B, P, r + dr], X at positions\n"
    "                             P..P+S-1) and gives all P + S (C1)\n"
    "  layer --layer L --weights W.safetensors --x X.npy --out Y.npy\n"
    "        [--memory M.npy] [--lengths LENS.npy] [state and cache\n"
    "        options as for block]\n"
    "                             the whole transformer layer holding layer\n"
    "                             L: its attention sub-blocks (a decoder's\n"
    "                             self and cross attention) and the\n"
    "                             feed-forward network with its norm and\n"
    "                             residual\n"
    "  model --from A --to B --weights W.safetensors --x X.npy --out Y.npy\n"
    "        [--memory M.npy] [--lengths LENS.npy]\n"
    "                             the transformer layers A..B in order\n"
    "  gdn --layer L --q Q.npy --k K.npy --v V.npy --g G.npy --beta B.npy\n"
    "      --out O.npy [--state-in S0.npy] [--state-out S1.npy]\n"
    "      [--lengths LENS.npy]\n"
    "                             Gated DeltaNet (linear attention) of layer\n"
    "                             L's kind: Q, K [B, Hk, S, dk], V [B, Hv, S,\n"
    "                             dv], G, B [B, Hv, S], states [B, Hv, dk, "
    "dv],\n"
    "                             float32; the initial state defaults to 0;\n"
    "                             LENS int64 [B]: row b is its first LENS[b]\n"
    "                             tokens (right padding: outputs 0, state "
    "kept)\n"
    "  mla --layer L --q Q.npy --cache C.npy --out O.npy\n"
    "      [--kv-lengths LENS.npy]\n"
    "                             multi-head latent attention's absorbed\n"
    "                             form: Q float32 [B, H, Sq, r + dr] (the\n"
    "                             queries in the latent space, then their\n"
    "                             rotary part), C the latent rows [B, Skv,\n"
    "                             r + dr] in the kind's --kv-dtype, O\n"
    "                             [B, H, Sq, r]\n"
    "  check [--seed N]           fused kernels against the unfused reference\n"
    "                             for every layer kind on several shapes; the\n"
    "                             paged kernels (if compiled) over shuffled\n"
    "                             block tables against the same reference\n"
    "  bench [--layer L] [--batch B] [--seq S] [--kv-len N] [--threads T]\n"
    "        [--repeats R] [--page-size P [--pool-layout hnd|nhd|head-major]\n"
    "        [--pages-in-order]] [--json]\n"
    "                             median time and GFLOP/s, fused and unfused\n"
    "                             (defaults: B 1, S 512, N = S; linear kinds\n"
    "                             take no --kv-len);\n"
    "                             with --page-size, the paged kernel over a\n"
    "                             cache in pages of P tokens (of the kind's\n"
    "                             --kv-dtype; pools [pages, Hkv, P, d], or\n"
    "                             [pages, P, Hkv, d], [Hkv, pages, P, d]\n"
    "                             through strides; pages shuffled, or in\n"
    "                             order): ms, K+V GB/s, peak RSS\n"
    "\n"
    "Executables compiled with --distributed=mpi run sdpa, check and bench\n"
    "over MPI (mpirun -np N ./model ...): sdpa --mode decode|ring "
    "[--page-size\n"
    "P] shards the KV cache (decode) or Q, K and V (ring attention) across\n"
    "the ranks, rank 0 writes --out; check compares the distributed kernels\n"
    "with the single-process kernel and a float64 reference; bench [--kv-len\n"
    "N] [--seq S] [--batch B] times a sharded decode step and a ring prefill.\n"
    "\n"
    "Executables compiled with --target=cuda run sdpa, check and bench on the\n"
    "first NVIDIA GPU (check against a float64 reference); without one they\n"
    "say why and exit 1.\n";

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

int cmdSdpa(const attn_rt_model *m, int argc, char **argv) {
  auto args = parseArgs(argc, argv, 2,
                        {"layer", "q", "k", "v", "out", "kv-lengths",
                         "bias-table", "sinks"});
  for (const char *req : {"layer", "q", "k", "v", "out"})
    if (!args.count(req))
      fail(std::string("sdpa needs --") + req);
  int64_t layer = intArg(args, "layer", 0, 0, 1 << 30);
  const attn_rt_kind &kind = kindOfLayer(m, layer);
  if (kind.op != ATTN_RT_OP_SDPA)
    fail("layer " + std::to_string(layer) + " (kind '" + kind.name +
         "') is Gated DeltaNet linear attention: use `gdn`");
  NpyArray q, k, v;
  std::string err;
  // q is float32; K and V are in the kind's --kv-dtype: float32, float16
  // ('<f2') or bfloat16 as its bits ('<u2', e.g. x.view(np.uint16) of an
  // ml_dtypes.bfloat16 array or a torch.bfloat16 tensor).
  std::string kvNpy = kind.kv_dtype == ATTN_RT_KV_F32   ? "f4"
                      : kind.kv_dtype == ATTN_RT_KV_F16 ? "f2"
                                                        : "u2";
  std::string kvWhat =
      kind.kv_dtype == ATTN_RT_KV_F32   ? "float32"
      : kind.kv_dtype == ATTN_RT_KV_F16 ? "float16 ('<f2')"
                                        : "bfloat16 bits as uint16 ('<u2')";
  // q (and the output) are float32, or with --qo-dtype the cache's type.
  bool narrowQ = qoNarrow(kind);
  for (auto [arr, name] : {std::pair<NpyArray *, const char *>{&q, "q"},
                           {&k, "k"},
                           {&v, "v"}}) {
    if (!readNpy(args[name], *arr, err))
      fail(err);
    bool isQ = arr == &q, f32Q = isQ && !narrowQ;
    if (arr->dtype != (f32Q ? "f4" : kvNpy))
      fail(args[name] + ": dtype " + arr->dtypeName() + "; --" + name +
           " must be " + (f32Q ? std::string("float32") : kvWhat) +
           (f32Q ? std::string()
                 : std::string(" (layer kind '") + kind.name + "' is " +
                       "compiled with --" + (isQ ? "qo" : "kv") + "-dtype=" +
                       (isQ ? qoDtypeName(kind) : kvDtypeName(kind)) + ")"));
    if (arr->shape.size() != 4)
      fail(args[name] + ": rank " + std::to_string(arr->shape.size()) +
           "; --" + name + " must be [batch, heads, seq, head_dim]");
  }
  auto expect = [&](bool ok, const std::string &what) {
    if (!ok)
      fail(what);
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
  expect(q.shape[0] <= kMaxBatch,
         args["q"] + ": batch " + std::to_string(q.shape[0]) + " exceeds " +
             std::to_string(kMaxBatch));
  {
    // The output and the per-batch lengths, before allocating them.
    unsigned __int128 outBytes = (unsigned __int128)4 * q.shape[0] *
                                     q.shape[1] * q.shape[2] * v.shape[3] +
                                 8 * (unsigned __int128)q.shape[0];
    if (!fitsInMemory(outBytes, "sdpa's output for q " + shapeStr(q.shape),
                      err))
      fail(err);
  }
  std::vector<int64_t> lens =
      keyLengths(args, "kv-lengths", q.shape[0], k.shape[2]);
  Buf<float> table;
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
  } else {
    expect(!args.count("bias-table"),
           std::string("layer kind '") + kind.name +
               "' has no relative-position bias: --bias-table is not "
               "accepted");
  }
  if (kind.has_sinks)
    table = readSinks(kind, args);
  else
    expect(!args.count("sinks"),
           std::string("layer kind '") + kind.name +
               "' has no attention sinks: --sinks is not accepted");
  requireDevice("sdpa");
  // A 16-bit q goes through the calls as its exact fp32 values (narrowed
  // back bit for bit); the output is written in q's type.
  if (narrowQ)
    widenFromQO(kind, q.u16, q.f32);
  Buf<float> out;
  if (kind.kv_dtype == ATTN_RT_KV_F32) {
    run(kind.fused, kind, q.f32, q.shape, k.f32, k.shape, v.f32, v.shape, lens,
        &table, out);
  } else if (gCuda) { // the file's bf16/f16 bits as they are (--kv-dtype)
    out.resize(q.shape[0] * q.shape[1] * q.shape[2] * v.shape[3]);
    DeviceCall(kind, q.f32, q.shape, k.u16, k.shape, v.u16, v.shape, lens,
               int64_t(out.size()))
        .callInto(kind.fused, kind, out);
  } else {
    HostCall c(kind, q.f32, q.shape, std::move(k.u16), k.shape,
               std::move(v.u16), v.shape, lens, &table, out);
    c.call(kind.fused, kind);
    c.finish();
  }
  std::vector<int64_t> outShape = {q.shape[0], q.shape[1], q.shape[2],
                                   v.shape[3]};
  if (!narrowQ) {
    writeOut(args, "out", outShape, out.data());
    return 0;
  }
  Buf<uint16_t> out16 = narrowToQO(kind, out);
  writeOut(args, "out", outShape, out16.data(),
           kind.qo_dtype == ATTN_RT_KV_F16);
  return 0;
}

} // namespace

/// A part of gpt-oss's fused expert tensors (attn_rt_weight.source), in
/// the layout the kernels take: [E, I, H] gate or up (even or odd features
/// of gate_up_proj), [E, out, in] from a tensor stored x·W, [E, I] gate or
/// up biases. The fused tensors are read as BF16/F32 (stored x·W) or as
/// their MXFP4 blocks (stored [E, out, in]).
static bool readFusedExperts(const SafeTensors &st, const std::string &name,
                             int64_t source, const std::vector<int64_t> &shape,
                             Buf<float> &out, std::string &err) {
  bool mxfp4 = !st.has(name) && st.has(name + "_blocks");
  Buf<float> full;
  if (source == ATTN_RT_WEIGHT_GATE_OF_BIAS ||
      source == ATTN_RT_WEIGHT_UP_OF_BIAS) {
    int64_t E = shape[0], I = shape[1];
    if (!st.readF32(name, {E, 2 * I}, full, err))
      return false;
    int64_t par = source == ATTN_RT_WEIGHT_UP_OF_BIAS;
    out.resize(size_t(E * I));
    for (int64_t e = 0; e < E; ++e)
      for (int64_t r = 0; r < I; ++r)
        out[e * I + r] = full[(e * 2 * I) + 2 * r + par];
    return true;
  }
  if (shape.size() != 3) {
    err = name + ": a fused expert weight must be [experts, ., .]";
    return false;
  }
  int64_t E = shape[0], R = shape[1], C = shape[2];
  if (source == ATTN_RT_WEIGHT_EXPERTS_IN_OUT) {
    if (mxfp4)
      return st.readMXFP4(name, {E, R, C}, out, err);
    if (!st.readF32(name, {E, C, R}, full, err))
      return false;
    out.resize(size_t(E * R * C));
    for (int64_t e = 0; e < E; ++e)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < R; ++r)
          out[(e * R + r) * C + c] = full[(e * C + c) * R + r];
    return true;
  }
  bool halves = source == ATTN_RT_WEIGHT_GATE_OF_GATE_UP_HALVES ||
                source == ATTN_RT_WEIGHT_UP_OF_GATE_UP_HALVES;
  if (!halves && source != ATTN_RT_WEIGHT_GATE_OF_GATE_UP &&
      source != ATTN_RT_WEIGHT_UP_OF_GATE_UP) {
    err = name + ": unknown weight source " + std::to_string(source) +
          " (a model table of another runtime version?)";
    return false;
  }
  bool up = source == ATTN_RT_WEIGHT_UP_OF_GATE_UP ||
            source == ATTN_RT_WEIGHT_UP_OF_GATE_UP_HALVES;
  // Feature r of gate (or up) among the 2I: interleaved (gpt-oss) or the
  // two halves (Llama 4).
  auto feature = [&](int64_t r) {
    return halves ? r + (up ? R : 0) : 2 * r + (up ? 1 : 0);
  };
  out.resize(size_t(E * R * C));
  if (mxfp4) { // [E, 2I, H]
    if (!st.readMXFP4(name, {E, 2 * R, C}, full, err))
      return false;
    for (int64_t e = 0; e < E; ++e)
      for (int64_t r = 0; r < R; ++r)
        std::copy_n(&full[(e * 2 * R + feature(r)) * C], C,
                    &out[(e * R + r) * C]);
    return true;
  }
  // Stored x·W: [E, H, 2I].
  if (!st.readF32(name, {E, C, 2 * R}, full, err))
    return false;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t r = 0; r < R; ++r)
        out[(e * R + r) * C + c] = full[(e * C + c) * 2 * R + feature(r)];
  return true;
}

BlockWeights::BlockWeights(const attn_rt_kind &kind, int64_t layerInStack,
                           const std::string &path, int64_t count)
    : data(count), d1(count), d2(count), d3(count), d4(count), ptrs(count) {
  std::string err;
  SafeTensors st;
  if (!st.open(path, err))
    fail(err);
  auto substitute = [](std::string name, const std::string &key,
                       int64_t value) {
    size_t at = name.find(key);
    if (at != std::string::npos)
      name = name.substr(0, at) + std::to_string(value) +
             name.substr(at + key.size());
    return name;
  };
  for (int64_t i = 0; i < count; ++i) {
    const attn_rt_weight &w = kind.weights[i];
    // "{i}": the layer's number in its stack; "{i+1}": the next block's
    // (Nemotron-H's layers close with the MLP or MoE block that follows).
    std::string name = substitute(substitute(w.pattern, "{i}", layerInStack),
                                  "{i+1}", layerInStack + 1);
    std::vector<int64_t> shape(w.shape, w.shape + w.rank);
    if (w.source != ATTN_RT_WEIGHT_AS_STORED) {
      if (!readFusedExperts(st, name, w.source, shape, data[i], err))
        fail(err);
    } else if (name.find("{e}") == std::string::npos) {
      if (!st.readF32(name, shape, data[i], err))
        fail(err);
    } else {
      // A mixture of experts' stacked weights [E, ., .]: expert e's
      // tensor [., .] is the pattern with "{e}" = e.
      std::vector<int64_t> one(shape.begin() + 1, shape.end());
      int64_t n = one[0] * one[1];
      if (!fitsInMemory((unsigned __int128)4 * n * shape[0],
                        "the " + std::to_string(shape[0]) + " experts of '" +
                            name + "'",
                        err))
        fail(err);
      data[i].resize(size_t(n * shape[0]));
      Buf<float> expert;
      for (int64_t e = 0; e < shape[0]; ++e) {
        if (!st.readF32(substitute(name, "{e}", e), one, expert, err))
          fail(err);
        std::copy(expert.begin(), expert.end(), data[i].begin() + e * n);
      }
    }
    float *p = data[i].data();
    if (w.rank == 1) {
      d1[i] = {p, p, 0, {shape[0]}, {1}};
      ptrs[i] = &d1[i];
    } else if (w.rank == 2) {
      d2[i] = {p, p, 0, {shape[0], shape[1]}, {shape[1], 1}};
      ptrs[i] = &d2[i];
    } else if (w.rank == 3) {
      d3[i] = view3(p, shape);
      ptrs[i] = &d3[i];
    } else {
      d4[i] = view4(p, shape);
      ptrs[i] = &d4[i];
    }
  }
}

namespace {

int cmdBlock(const attn_rt_model *m, int argc, char **argv) {
  auto args = parseArgs(argc, argv, 2,
                        {"layer", "weights", "x", "out", "memory", "lengths",
                         "conv-state-in", "state-in", "conv-state-out",
                         "state-out", "cache-in", "cache-out"});
  for (const char *req : {"layer", "weights", "x", "out"})
    if (!args.count(req))
      fail(std::string("block needs --") + req);
  int64_t layer = intArg(args, "layer", 0, 0, 1 << 30);
  const attn_rt_kind &kind = kindOfLayer(m, layer);
  bool linear = kind.op == ATTN_RT_OP_GATED_DELTA;
  requireBlocks(kind);
  std::string where = layerName(kind, layer);
  if (!linear)
    for (const char *opt :
         {"conv-state-in", "state-in", "conv-state-out", "state-out"})
      if (args.count(opt))
        fail(std::string("--") + opt +
             " applies to linear-attention layers only; " + where +
             " is softmax attention");
  if (!kind.latent_block)
    for (const char *opt : {"cache-in", "cache-out"})
      if (args.count(opt))
        fail(std::string("--") + opt +
             " applies to multi-head latent attention layers only; " + where +
             " caches no latent rows");
  int inputs = linear ? 0 : kind.block_inputs;
  checkBlockOptions(args, inputs, inputs, where, m->hidden_size);
  NpyArray x = readHiddenStates(args, "x", m->hidden_size, "the hidden states");
  NpyArray mem;
  if (inputs & ATTN_RT_BLOCK_MEMORY)
    mem = readMemory(args, x, m->hidden_size);
  int64_t b = x.shape[0], s = x.shape[1];
  std::vector<int64_t> shape = {b, s, m->hidden_size};
  if (!linear)
    blockLengths(kind, args, shape, mem); // checked before the weights load
  BlockWeights weights(kind, m->layer_in_stack[layer], args["weights"],
                       kind.num_weights);
  Buf<float> yv(b * s * m->hidden_size), cache;
  std::vector<int64_t> cacheShape;
  LinearStates states;
  if (s == 0 && !args.count("state-out") && !args.count("conv-state-out") &&
      !args.count("cache-out")) {
    // No token and no state asked for: the output is empty, nothing runs
    // (rows of no token would only loop).
    writeOut(args, "out", shape, yv.data());
    return 0;
  }
  if (kind.latent_block) {
    cache = runLatentBlock(kind, kind.latent_block, args, x.f32, shape, yv,
                           weights, cacheShape);
  } else if (linear) {
    attn_rt_memref_f32_3 dx = view3(x.f32.data(), shape);
    attn_rt_memref_f32_3 y = view3(yv.data(), shape);
    runLinearBlock(kind, kind.linear_block, args, y, dx, weights, states);
  } else {
    callBlock(kind, kind.block, weights, args, x.f32, shape, mem, yv);
  }
  writeBlockOutputs(args, shape, yv.data(), cacheShape, cache, states);
  return 0;
}

} // namespace

// Executables compiled with --distributed=mpi link runtime/distributed/mpi.cpp, whose
// sdpa, check and bench run over MPI ranks.
extern "C" __attribute__((weak)) int
attn_rt_mpi_main(const attn_rt_model *m, int argc, char **argv);

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
  if (attn_rt_mpi_main && (cmd == "sdpa" || cmd == "check" || cmd == "bench"))
    return attn_rt_mpi_main(m, argc, argv);
  if (cmd == "info") {
    parseArgs(argc, argv, 2, {}); // no options: refuses any
    std::printf("%s\n", m->describe_json);
    return 0;
  }
  if (cmd == "sdpa")
    return cmdSdpa(m, argc, argv);
  if (cmd == "block")
    return cmdBlock(m, argc, argv);
  if (cmd == "layer" || cmd == "model")
    return cmdLayer(m, argc, argv, cmd == "model");
  if (cmd == "gdn")
    return cmdGdn(m, argc, argv);
  if (cmd == "mla")
    return cmdMla(m, argc, argv);
  if (cmd == "check")
    return cmdCheck(m, argc, argv);
  if (cmd == "bench")
    return cmdBench(m, argc, argv);
  std::fprintf(stderr, "error: unknown command '%s'\n", cmd.c_str());
  std::fprintf(stderr, kUsage, argv[0]);
  return 1;
}
