//===- linear.cpp - Gated DeltaNet commands: gdn, check, bench ------------===//
//
// This file implements what the executables do with linear-attention
// (Gated DeltaNet) kinds: the `gdn` command (one kernel call on .npy
// tensors, state in and out), their part of `check` (the fused chunked
// kernel against a float64 recurrence written here from the definition,
// against the compiled eager chunked algorithm, and against itself with the
// prefill split in two or run token by token, the state passed along) and
// of `bench` (fused against the compiled eager chunked algorithm).
//
//===----------------------------------------------------------------------===//

#include "cli.h"
#include "flops.h"
#include "npy.h"
#include "resources.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace attn_rt {
namespace cli {

GdnShapes::GdnShapes(const attn_rt_kind &kind, int64_t b, int64_t s)
    : b(b), s(s), channel(kind.channel_gate != 0),
      q{b, kind.num_kv_heads, s, kind.head_dim}, v{b, kind.num_heads, s,
                                                   kind.head_dim_v},
      g(channel ? std::vector<int64_t>{b, kind.num_heads, s, kind.head_dim}
                : std::vector<int64_t>{b, kind.num_heads, s}),
      beta{b, kind.num_heads, s}, state{b, kind.num_heads, kind.head_dim,
                                        kind.head_dim_v} {}

namespace {
/// The kernel's call on descriptors of `in`'s buffers at the given
/// addresses (host, or their device copies).
void callGdn(void (*fn)(void), const GdnShapes &sh, float *out, float *state,
             float *q, float *k, float *v, float *g, float *beta, float *s0,
             int64_t *lengths) {
  attn_rt_memref_f32_4 dOut = view4(out, sh.v), dState = view4(state, sh.state),
                       dq = view4(q, sh.q), dk = view4(k, sh.q),
                       dv = view4(v, sh.v), dS0 = view4(s0, sh.state);
  attn_rt_memref_f32_3 db = view3(beta, sh.beta);
  attn_rt_memref_i64_1 dl{lengths, lengths, 0, {sh.b}, {1}};
  if (sh.channel) {
    attn_rt_memref_f32_4 dg = view4(g, sh.g);
    reinterpret_cast<attn_rt_kda_fn>(fn)(&dOut, &dState, &dq, &dk, &dv, &dg,
                                         &db, &dS0, &dl);
    return;
  }
  attn_rt_memref_f32_3 dg = view3(g, sh.g);
  reinterpret_cast<attn_rt_gdn_fn>(fn)(&dOut, &dState, &dq, &dk, &dv, &dg,
                                       &db, &dS0, &dl);
}

/// `in`'s lengths, or S for every row.
std::vector<int64_t> lengthsOf(const GdnShapes &sh, const GdnData &in) {
  return in.lengths.empty() ? std::vector<int64_t>(sh.b, sh.s) : in.lengths;
}

/// Device copies of a call's inputs and room for its outputs (CUDA
/// executables): made once, called as often as needed.
struct GdnDevice {
  std::vector<int64_t> hostLengths;
  DeviceBuffer q, k, v, g, beta, s0, lengths, out, state;
  GdnDevice(const GdnShapes &sh, GdnData &in)
      : hostLengths(lengthsOf(sh, in)), q(in.q.data(), bytes(in.q)),
        k(in.k.data(), bytes(in.k)), v(in.v.data(), bytes(in.v)),
        g(in.g.data(), bytes(in.g)), beta(in.beta.data(), bytes(in.beta)),
        s0(in.state.data(), bytes(in.state)),
        lengths(hostLengths.data(), 8 * sh.b),
        out(nullptr, 4 * NpyArray::numelOf(sh.v)),
        state(nullptr, 4 * NpyArray::numelOf(sh.state)) {}
  void call(void (*fn)(void), const GdnShapes &sh) {
    callGdn(fn, sh, f(out), f(state), f(q), f(k), f(v), f(g), f(beta), f(s0),
            static_cast<int64_t *>(lengths.ptr));
  }
  static int64_t bytes(const Buf<float> &x) { return 4 * int64_t(x.size()); }
  static float *f(DeviceBuffer &x) { return static_cast<float *>(x.ptr); }
};
} // namespace

void runGdn(void (*fn)(void), const GdnShapes &sh, GdnData &in, Buf<float> &out,
            Buf<float> &stateOut) {
  out.resize(NpyArray::numelOf(sh.v));
  stateOut.resize(NpyArray::numelOf(sh.state));
  if (!gCuda) {
    std::vector<int64_t> lengths = lengthsOf(sh, in);
    callGdn(fn, sh, out.data(), stateOut.data(), in.q.data(), in.k.data(),
            in.v.data(), in.g.data(), in.beta.data(), in.state.data(),
            lengths.data());
    return;
  }
  // CUDA: device copies of the inputs, the kernel, the results back.
  GdnDevice d(sh, in);
  d.call(fn, sh);
  attn_rt_cuda_to_host(out.data(), d.out.ptr, d.out.bytes);
  attn_rt_cuda_to_host(stateOut.data(), d.state.ptr, d.state.bytes);
}

void gdnReferenceF64(const attn_rt_kind &kind, const GdnShapes &sh,
                     const GdnData &in, Buf<float> &out, Buf<float> &stateOut) {
  int64_t hv = kind.num_heads, hk = kind.num_kv_heads, dk = kind.head_dim,
          dv = kind.head_dim_v, r = hv / hk, S = sh.s;
  out.assign(NpyArray::numelOf(sh.v), 0.0f);
  stateOut.assign(NpyArray::numelOf(sh.state), 0.0f);
  std::vector<double> st(dk * dv), kv(dv), decay(dk);
  for (int64_t b = 0; b < sh.b; ++b)
    for (int64_t h = 0; h < hv; ++h) {
      const float *s0 = &in.state[((b * hv + h) * dk) * dv];
      for (int64_t i = 0; i < dk * dv; ++i)
        st[i] = s0[i];
      int64_t hq = h / r;
      // Tokens past the row's length are padding: not run, outputs 0.
      int64_t len = in.lengths.empty()
                        ? S
                        : std::clamp<int64_t>(in.lengths[b], 0, S);
      for (int64_t t = 0; t < len; ++t) {
        const float *q = &in.q[((b * hk + hq) * S + t) * dk];
        const float *k = &in.k[((b * hk + hq) * S + t) * dk];
        const float *v = &in.v[((b * hv + h) * S + t) * dv];
        // One decay per state row: e^g, or e^{g[i]} per key channel (KDA).
        for (int64_t i = 0; i < dk; ++i)
          decay[i] =
              std::exp(double(sh.channel ? in.g[((b * hv + h) * S + t) * dk + i]
                                         : in.g[(b * hv + h) * S + t]));
        double beta = in.beta[(b * hv + h) * S + t];
        // S ← S·e^g; kv = Sᵀk; S ← S + k ⊗ β(v − kv); o = Sᵀ(scale·q).
        // Without the delta correction (Mamba2's SSD) kv = 0.
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j)
            st[i * dv + j] *= decay[i];
        std::fill(kv.begin(), kv.end(), 0.0);
        for (int64_t i = 0; i < dk && !kind.no_delta; ++i)
          for (int64_t j = 0; j < dv; ++j)
            kv[j] += st[i * dv + j] * k[i];
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j)
            st[i * dv + j] += k[i] * beta * (v[j] - kv[j]);
        float *o = &out[((b * hv + h) * S + t) * dv];
        for (int64_t j = 0; j < dv; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < dk; ++i)
            acc += st[i * dv + j] * kind.scale * q[i];
          o[j] = float(acc);
        }
      }
      float *sOut = &stateOut[((b * hv + h) * dk) * dv];
      for (int64_t i = 0; i < dk * dv; ++i)
        sOut[i] = float(st[i]);
    }
}

GdnData randomGdn(std::mt19937 &rng, const GdnShapes &sh, GateMode mode,
                  bool withState, bool noDelta) {
  bool extreme = mode != GateMode::Model;
  GdnData d;
  int64_t dk = sh.q[3];
  d.q = randomVec(rng, NpyArray::numelOf(sh.q), 1);
  d.k = randomVec(rng, NpyArray::numelOf(sh.q), 1);
  // Gated DeltaNet L2-normalizes q and k (eps 1e-6) before the rule;
  // Mamba2's C and B come from the convolution as they are.
  for (Buf<float> *x : {&d.q, &d.k})
    for (size_t row = 0; row < x->size() && !noDelta; row += dk) {
      double n = 0;
      for (int64_t i = 0; i < dk; ++i)
        n += double((*x)[row + i]) * (*x)[row + i];
      float inv = float(1.0 / std::sqrt(n + 1e-6));
      for (int64_t i = 0; i < dk; ++i)
        (*x)[row + i] *= inv;
    }
  d.v = randomVec(rng, NpyArray::numelOf(sh.v), 1);
  int64_t n = NpyArray::numelOf(sh.beta);
  Buf<float> a = randomVec(rng, n, 1), c = randomVec(rng, n, 1);
  d.g.resize(n);
  d.beta.resize(n);
  std::uniform_int_distribution<int> pick(0, 9);
  if (sh.channel) {
    // KDA: each key channel's own decay −e^{A_h}·softplus(f + dt_bias);
    // with `extreme`, some channels reset (g = −60) or keep (g = 0) the
    // rows they decay, and β is sometimes 0 or 1.
    int64_t nc = NpyArray::numelOf(sh.g);
    Buf<float> f = randomVec(rng, nc, 2);
    d.g.resize(nc);
    for (int64_t i = 0; i < nc; ++i) {
      d.g[i] = -std::exp(-1.0f + 0.5f * c[i / dk]) * std::log1p(std::exp(f[i]));
      // Banded: tokens by runs of 16 (the kernel's bands from a chunk's
      // start), a calm run with every eighth channel decaying by 2.45 a
      // token (15 steps: 36.75, within the kernel's narrow bound of 40),
      // then a run with the extreme gates.
      int64_t t = i / dk % sh.s, x = i % dk;
      bool calm = mode == GateMode::Banded && t / 16 % 2 == 0;
      if (calm && x % 8 == 0)
        d.g[i] = -2.45f;
      if (extreme && !calm && pick(rng) == 0)
        d.g[i] = (i % 2) ? -60.0f : 0.0f;
    }
    for (int64_t i = 0; i < n; ++i) {
      d.beta[i] = 1.0f / (1.0f + std::exp(-c[i]));
      int p = extreme ? pick(rng) : 9;
      if (p == 2)
        d.beta[i] = 0.0f;
      else if (p == 3)
        d.beta[i] = 1.0f;
    }
    n = 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    // g = −exp(A_log)·softplus(a + dt_bias), β = sigmoid(b), as the model
    // computes them; with `extreme`, some gates reset the state (g = −60,
    // e^g ≈ 1e-26), some keep it (g = 0), and β is sometimes 0 or 1.
    // Mamba2: dt = softplus(dt + dt_bias) is both β and g's factor.
    float dt = std::log1p(std::exp(a[i]));
    d.g[i] = -std::exp(-1.0f + 0.5f * c[i]) * dt;
    d.beta[i] = noDelta ? dt : 1.0f / (1.0f + std::exp(-c[i]));
    if (extreme) {
      int p = pick(rng);
      if (p == 0)
        d.g[i] = -60.0f;
      else if (p == 1)
        d.g[i] = 0.0f;
      else if (p == 2)
        d.beta[i] = 0.0f;
      else if (p == 3)
        d.beta[i] = 1.0f;
    }
  }
  d.state = withState ? randomVec(rng, NpyArray::numelOf(sh.state), 0.5)
                      : Buf<float>(NpyArray::numelOf(sh.state), 0.f);
  return d;
}

namespace {

/// Tokens [t0, t0 + n) of every head of `x` ([B, H, S, d] or [B, H, S]).
Buf<float> tokens(const Buf<float> &x, int64_t bh, int64_t s, int64_t d,
                  int64_t t0, int64_t n) {
  Buf<float> r(bh * n * d);
  for (int64_t i = 0; i < bh; ++i)
    std::copy_n(&x[(i * s + t0) * d], n * d, &r[i * n * d]);
  return r;
}

/// Writes tokens [t0, t0 + n) of every head back into `x`.
void putTokens(Buf<float> &x, const Buf<float> &part, int64_t bh, int64_t s,
               int64_t d, int64_t t0, int64_t n) {
  for (int64_t i = 0; i < bh; ++i)
    std::copy_n(&part[i * n * d], n * d, &x[(i * s + t0) * d]);
}

/// The fused kernel over the sequence in consecutive calls of `lens`
/// tokens, the state passed from one call to the next.
void runInParts(const attn_rt_kind &kind, const GdnShapes &sh, GdnData &in,
                const std::vector<int64_t> &lens, Buf<float> &out,
                Buf<float> &state) {
  out.assign(NpyArray::numelOf(sh.v), 0.0f);
  state = in.state;
  int64_t t0 = 0, bk = sh.b * kind.num_kv_heads, bv = sh.b * kind.num_heads;
  for (int64_t n : lens) {
    GdnShapes part(kind, sh.b, n);
    GdnData p;
    p.q = tokens(in.q, bk, sh.s, kind.head_dim, t0, n);
    p.k = tokens(in.k, bk, sh.s, kind.head_dim, t0, n);
    p.v = tokens(in.v, bv, sh.s, kind.head_dim_v, t0, n);
    p.g = tokens(in.g, bv, sh.s, sh.channel ? kind.head_dim : 1, t0, n);
    p.beta = tokens(in.beta, bv, sh.s, 1, t0, n);
    p.state = state;
    Buf<float> o;
    runGdn(kind.fused, part, p, o, state);
    putTokens(out, o, bv, sh.s, kind.head_dim_v, t0, n);
    t0 += n;
  }
}

} // namespace

bool checkLinearKind(const attn_rt_kind &kind, std::mt19937 &rng) {
  struct Case {
    int64_t b, s;
    GateMode gates;
    bool state;
    std::vector<int64_t> lengths = {};
  };
  // Decode (1 token), the recurrent form's limit (16) and past it, one
  // chunk (64) and around it, several chunks, a long prefill; a batch of
  // different lengths (right-padded: one past the recurrent form's limit,
  // one short, one token, one empty), each row's outputs and final state
  // its own sequence's, padding outputs 0.
  // KDA also gets banded gates: narrow and wide bands in one chunk.
  constexpr GateMode M = GateMode::Model, X = GateMode::Extreme,
                     Bd = GateMode::Banded;
  std::vector<Case> cases = {
      {1, 1, M, true},    {2, 3, M, false},
      {1, 16, X, true},   {1, 17, M, true},
      {2, 63, X, false},  {1, 64, M, true},
      {2, 65, X, true},   {1, 200, M, false},
      {1, 1000, X, true}, {4, 150, X, true, {150, 37, 1, 0}}};
  if (kind.channel_gate)
    cases.push_back({2, 130, Bd, true});
  bool allOk = true;
  for (const Case &c : cases) {
    GdnShapes sh(kind, c.b, c.s);
    GdnData in = randomGdn(rng, sh, c.gates, c.state, kind.no_delta);
    in.lengths = c.lengths;
    Buf<float> out, st, rOut, rSt, eOut, eSt;
    runGdn(kind.fused, sh, in, out, st);
    gdnReferenceF64(kind, sh, in, rOut, rSt);
    MaxError e;
    e.add(out, rOut);
    e.add(st, rSt);
    // The compiled eager chunked algorithm (the reference path of bench; CPU
    // executables only).
    MaxError eager;
    if (kind.reference) {
      runGdn(kind.reference, sh, in, eOut, eSt);
      eager.add(eOut, rOut);
      eager.add(eSt, rSt);
    }
    bool ok = e.ok(kind.tolerance) && eager.ok(kind.tolerance);
    allOk = allOk && ok;
    char eagerNote[64] = "";
    if (kind.reference)
      std::snprintf(eagerNote, sizeof(eagerNote), " (eager chunked %.3e)",
                    eager.maxAbs);
    std::string lens;
    for (int64_t n : c.lengths)
      lens += (lens.empty() ? " lengths " : ",") + std::to_string(n);
    std::printf("%-4s %-32s B=%lld S=%-5lld%s%s%s max_abs_err=%.3e "
                "max_rel_err=%.3e%s\n",
                ok ? "ok" : "FAIL", kind.name, (long long)c.b, (long long)c.s,
                c.state ? " state-in" : "",
                c.gates == X    ? " extreme-gates"
                : c.gates == Bd ? " banded-gates"
                                : "",
                lens.c_str(), e.maxAbs, e.rel(), eagerNote);
  }
  // The same prefill in one call, split in two calls, and as a prefill
  // followed by token-by-token decode, the state passed along.
  {
    GdnShapes sh(kind, 2, 150);
    GdnData in = randomGdn(rng, sh, GateMode::Model, true, kind.no_delta);
    Buf<float> whole, wholeSt;
    runGdn(kind.fused, sh, in, whole, wholeSt);
    std::vector<int64_t> split = {77, 73}, decode = {100};
    decode.insert(decode.end(), 50, 1);
    for (auto [name, lens] :
         {std::pair<const char *, std::vector<int64_t> &>{"split 77+73",
                                                          split},
          {"prefill 100 + 50 decode steps", decode}}) {
      Buf<float> out, st;
      runInParts(kind, sh, in, lens, out, st);
      MaxError e;
      e.add(out, whole);
      e.add(st, wholeSt);
      bool ok = e.ok(kind.tolerance);
      allOk = allOk && ok;
      std::printf("%-4s %-32s B=2 S=150 %s = one call: max_abs_err=%.3e\n",
                  ok ? "ok" : "FAIL", kind.name, name, e.maxAbs);
    }
  }
  return allOk;
}

int cmdGdn(const attn_rt_model *m, int argc, char **argv) {
  auto args = parseArgs(argc, argv, 2,
                        {"layer", "q", "k", "v", "g", "beta", "state-in",
                         "lengths", "out", "state-out"});
  for (const char *req : {"layer", "q", "k", "v", "g", "beta", "out"})
    if (!args.count(req))
      fail(std::string("gdn needs --") + req);
  int64_t layer = intArg(args, "layer", 0, 0, 1 << 30);
  const attn_rt_kind &kind = kindOfLayer(m, layer);
  if (kind.op != ATTN_RT_OP_GATED_DELTA)
    fail("layer " + std::to_string(layer) + " (kind '" + kind.name +
         "') is softmax attention: use `sdpa`");
  std::string err;
  auto read = [&](const char *name, size_t rank) {
    NpyArray a;
    if (!readNpy(args[name], a, err))
      fail(err);
    if (a.dtype != "f4")
      fail(args[name] + ": dtype " + a.dtypeName() + "; --" + name +
           " must be float32");
    if (a.shape.size() != rank)
      fail(args[name] + ": rank " + std::to_string(a.shape.size()) +
           "; --" + name + " must have rank " + std::to_string(rank));
    return a;
  };
  NpyArray q = read("q", 4), k = read("k", 4), v = read("v", 4),
           g = read("g", kind.channel_gate ? 4 : 3), beta = read("beta", 3);
  GdnShapes sh(kind, q.shape[0], q.shape[2]);
  std::string kindDesc = " for layer kind '" + std::string(kind.name) +
                         (kind.no_delta       ? "' (Mamba2 SSD, heads="
                          : kind.channel_gate ? "' (Kimi Delta Attention, Hv="
                                              : "' (Gated DeltaNet, Hv=") +
                         std::to_string(kind.num_heads) +
                         ", Hk=" + std::to_string(kind.num_kv_heads) +
                         ", dk=" + std::to_string(kind.head_dim) +
                         ", dv=" + std::to_string(kind.head_dim_v) + ")";
  auto expect = [&](const NpyArray &a, const char *name,
                    const std::vector<int64_t> &want, const char *what) {
    if (a.shape != want)
      fail(args[name] + ": shape " + shapeStr(a.shape) + " must be " + what +
           " = " + shapeStr(want) + kindDesc);
  };
  expect(q, "q", sh.q, "[B, Hk, S, dk]");
  expect(k, "k", sh.q, "[B, Hk, S, dk]");
  expect(v, "v", sh.v, "[B, Hv, S, dv]");
  expect(g, "g", sh.g, sh.channel ? "[B, Hv, S, dk]" : "[B, Hv, S]");
  expect(beta, "beta", sh.beta, "[B, Hv, S]");
  if (sh.b > kMaxBatch)
    fail(args["q"] + ": batch " + std::to_string(sh.b) + " exceeds " +
         std::to_string(kMaxBatch));
  unsigned __int128 bytes =
      (unsigned __int128)4 *
      (NpyArray::numelOf(sh.v) + 2 * NpyArray::numelOf(sh.state));
  if (!fitsInMemory(bytes, "gdn's output and states", err))
    fail(err);
  GdnData in{q.f32, k.f32, v.f32, g.f32, beta.f32, {}, {}};
  if (args.count("state-in")) {
    NpyArray s0 = read("state-in", 4);
    expect(s0, "state-in", sh.state, "[B, Hv, dk, dv]");
    in.state = s0.f32;
  } else {
    in.state.assign(NpyArray::numelOf(sh.state), 0.0f);
  }
  if (args.count("lengths")) {
    NpyArray lens;
    if (!readNpy(args["lengths"], lens, err))
      fail(err);
    if (lens.dtype != "i8" || lens.shape != std::vector<int64_t>{sh.b})
      fail(args["lengths"] + ": " +
           (lens.dtype != "i8" ? "dtype " + lens.dtypeName()
                               : "shape " + shapeStr(lens.shape)) +
           "; --lengths must be int64 [B] = [" + std::to_string(sh.b) + "]");
    for (int64_t i = 0; i < sh.b; ++i)
      if (lens.i64[i] < 0 || lens.i64[i] > sh.s)
        fail(args["lengths"] + ": length " + std::to_string(lens.i64[i]) +
             " of batch row " + std::to_string(i) + " outside [0, S = " +
             std::to_string(sh.s) + "]");
    in.lengths = lens.i64;
  }
  Buf<float> out, state;
  runGdn(kind.fused, sh, in, out, state);
  NpyOutputs outs;
  outs.add(args["out"], sh.v, out.data());
  if (args.count("state-out"))
    outs.add(args["state-out"], sh.state, state.data());
  if (!outs.commit(inputsOf(args, {"out", "state-out"}), err))
    fail(err);
  return 0;
}

void runLinearBlock(const attn_rt_kind &kind, attn_rt_linear_block_fn fn,
                    Args &args, attn_rt_memref_f32_3 &y,
                    attn_rt_memref_f32_3 &x, BlockWeights &weights,
                    LinearStates &states) {
  int64_t b = x.sizes[0];
  int64_t conv = 2 * kind.num_kv_heads * kind.head_dim +
                 kind.num_heads * kind.head_dim_v;
  std::vector<int64_t> convShape = {b, conv, kind.conv_kernel - 1};
  GdnShapes sh(kind, b, x.sizes[1]);
  std::string err;
  // The states in and out, checked before any is allocated.
  unsigned __int128 stateBytes =
      (unsigned __int128)8 * (NpyArray::numelOf(convShape) +
                              NpyArray::numelOf(sh.state));
  if (!fitsInMemory(stateBytes,
                    "the states of " + std::to_string(b) + " sequences (" +
                        kind.name + ")",
                    err))
    fail(err);
  // A state from --<name>, or zeros (a fresh sequence).
  auto state = [&](const char *name, const std::vector<int64_t> &shape,
                   const char *what) {
    Buf<float> v(NpyArray::numelOf(shape), 0.0f);
    if (!args.count(name))
      return v;
    NpyArray a;
    if (!readNpy(args[name], a, err))
      fail(err);
    if (a.dtype != "f4" || a.shape != shape)
      fail(args[name] + ": " + (a.dtype != "f4" ? "dtype " + a.dtypeName() :
                                "shape " + shapeStr(a.shape)) +
           "; --" + name + " must be float32 " + what + " = " +
           shapeStr(shape) + " for layer kind '" + kind.name + "'");
    return a.f32;
  };
  Buf<float> convIn = state("conv-state-in", convShape, "[B, C, K-1]"),
             stateIn = state("state-in", sh.state, "[B, Hv, dk, dv]");
  Buf<float> convOut(convIn.size()), stateOut(stateIn.size());
  attn_rt_memref_f32_3 dci = view3(convIn.data(), convShape),
                       dco = view3(convOut.data(), convShape);
  attn_rt_memref_f32_4 dsi = view4(stateIn.data(), sh.state),
                       dso = view4(stateOut.data(), sh.state);
  fn(&y, &dco, &dso, &x, &dci, &dsi, weights.ptrs.data());
  states.conv = std::move(convOut);
  states.state = std::move(stateOut);
  states.convShape = convShape;
  states.stateShape = sh.state;
}

void writeBlockOutputs(Args &args, const std::vector<int64_t> &shape,
                       const float *y, const std::vector<int64_t> &cacheShape,
                       const Buf<float> &cache, const LinearStates &states) {
  NpyOutputs outs;
  outs.add(args["out"], shape, y);
  if (args.count("cache-out") && !cache.empty())
    outs.add(args["cache-out"], cacheShape, cache.data());
  if (args.count("conv-state-out") && !states.conv.empty())
    outs.add(args["conv-state-out"], states.convShape, states.conv.data());
  if (args.count("state-out") && !states.state.empty())
    outs.add(args["state-out"], states.stateShape, states.state.data());
  std::string err;
  if (!outs.commit(
          inputsOf(args, {"out", "cache-out", "conv-state-out", "state-out"}),
          err))
    fail(err);
}

void benchLinearKind(const attn_rt_kind &kind, int64_t b, int64_t s,
                     int64_t repeats, bool json, bool first) {
  GdnShapes sh(kind, b, s);
  std::mt19937 rng(7);
  GdnData in = randomGdn(rng, sh, GateMode::Model, false, kind.no_delta);
  Buf<float> out, state;
  auto median = [&](void (*fn)(void)) {
    return medianMs(repeats, [&] { runGdn(fn, sh, in, out, state); });
  };
  // Kimi Delta Attention's chunk has Gated DeltaNet's products (its
  // per-channel exponentials are not counted).
  double f =
      kind.no_delta
          ? attn_rt_ssd_flops(b, kind.num_heads, s, kind.head_dim,
                              kind.head_dim_v, 64)
          : attn_rt_gated_delta_flops(b, kind.num_heads, s, kind.head_dim,
                                      kind.head_dim_v, 64);
  double fr = kind.no_delta
                  ? attn_rt_ssd_recurrent_flops(b, kind.num_heads, s,
                                                kind.head_dim, kind.head_dim_v)
                  : attn_rt_gated_delta_recurrent_flops(
                        b, kind.num_heads, s, kind.head_dim, kind.head_dim_v);
  if (gCuda) {
    // The GPU kernels: device buffers once, each call launches and waits.
    // FLOPs counted as the recurrence's (what the recurrent kernel
    // computes; decode) and as the chunked algorithm's (the tensor-core
    // kernel of a bf16/f16 build, 32 tokens or more), the latter against
    // the dense bf16 tensor peak.
    GdnDevice d(sh, in);
    double wallMs = 0;
    double fusedMs = deviceMedianMs(
        repeats, [&] { d.call(kind.fused, sh); }, wallMs);
    // The fp32 state read and written once per call: what bounds decode
    // (S = 1), against the copy bandwidth.
    double stateBytes = 4.0 * 2 * double(NpyArray::numelOf(sh.state));
    double stateGbps = stateBytes / fusedMs / 1e6;
    double pctCopy = 100 * stateGbps / gDevice.copyGbps;
    double pctTensor = 100 * f / fusedMs / 1e9 / gDevice.tensorTflops;
    if (json)
      std::printf("%s\n  {\"kind\": \"%s\", \"op\": \"gated_delta\", "
                  "\"device\": \"%s\", \"batch\": %lld, \"seq\": %lld, "
                  "\"recurrent_flops\": %.0f, \"fused_ms\": %.4f, "
                  "\"wall_ms\": %.4f, "
                  "\"fused_tflops\": %.4f, \"us_per_token\": %.4f, "
                  "\"state_gbps\": %.1f, \"pct_copy_bandwidth\": %.2f, "
                  "\"chunked_flops\": %.0f, \"chunked_tflops\": %.4f, "
                  "\"pct_bf16_tensor_peak\": %.2f}",
                  first ? "" : ",", kind.name, gDevice.name.c_str(),
                  (long long)b, (long long)s, fr, fusedMs, wallMs,
                  fr / fusedMs / 1e9, 1e3 * fusedMs / double(b * s), stateGbps,
                  pctCopy, f, f / fusedMs / 1e9, pctTensor);
    else
      std::printf("%-30s B=%lld S=%lld: fused %9.3f ms "
                  "(events; wall %.3f ms) %8.3f TFLOP/s (recurrent count), "
                  "%.3f TFLOP/s chunked count, %.2f%% of the dense bf16 "
                  "tensor peak, %.3f us/token, state in+out %.1f MB at %.1f "
                  "GB/s, %.1f%% of the copy bandwidth\n",
                  kind.name, (long long)b, (long long)s, fusedMs, wallMs,
                  fr / fusedMs / 1e9, f / fusedMs / 1e9, pctTensor,
                  1e3 * fusedMs / double(b * s), stateBytes / 1e6, stateGbps,
                  pctCopy);
    return;
  }
  double fusedMs = median(kind.fused);
  double usPerToken = 1e3 * fusedMs / double(b * s);
  // The eager copy, unless attn-compile --entries left it out (then null
  // in JSON).
  char ref[96] = "null", refRate[32] = "null";
  if (kind.reference) {
    double refMs = median(kind.reference);
    if (json) {
      std::snprintf(ref, sizeof(ref), "%.4f", refMs);
      std::snprintf(refRate, sizeof(refRate), "%.4f", f / refMs / 1e6);
    } else {
      std::snprintf(ref, sizeof(ref),
                    "eager chunked %9.3f ms %8.2f GFLOP/s | x%.2f", refMs,
                    f / refMs / 1e6, refMs / fusedMs);
    }
  } else if (!json) {
    std::snprintf(ref, sizeof(ref), "no eager chunked copy (compiled "
                                    "without it)");
  }
  if (json)
    std::printf("%s\n  {\"kind\": \"%s\", \"op\": \"gated_delta\", "
                "\"batch\": %lld, \"seq\": %lld, \"threads\": %d, "
                "\"chunked_flops\": %.0f, \"recurrent_flops\": %.0f, "
                "\"fused_ms\": %.4f, \"fused_gflops\": %.4f, "
                "\"unfused_ms\": %s, \"unfused_gflops\": %s, "
                "\"us_per_token\": %.4f}",
                first ? "" : ",", kind.name, (long long)b, (long long)s,
                ompThreads(), f, fr, fusedMs, f / fusedMs / 1e6, ref, refRate,
                usPerToken);
  else
    std::printf("%-30s B=%lld S=%lld threads=%d: fused %9.3f ms %8.2f "
                "GFLOP/s (chunked count) %.3f us/token | %s\n",
                kind.name, (long long)b, (long long)s, ompThreads(), fusedMs,
                f / fusedMs / 1e6, usPerToken, ref);
}

} // namespace cli
} // namespace attn_rt
