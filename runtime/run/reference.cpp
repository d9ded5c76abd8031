//===- reference.cpp - the executables' float64 attention reference -------===//
//
// This file implements attention in float64 by its definition, the
// independent reference `check` uses where no compiled reference exists
// (CUDA executables), and the random inputs of `check` and `bench`.
//
//===----------------------------------------------------------------------===//

#include "cli.h"
#include "npy.h"

#include <algorithm>
#include <cmath>

namespace attn_rt {
namespace cli {

void referenceF64(const attn_rt_kind &kind, const Buf<float> &q,
                  const std::vector<int64_t> &qs, const Buf<float> &k,
                  const std::vector<int64_t> &ks, const Buf<float> &v,
                  const std::vector<int64_t> &vs,
                  const std::vector<int64_t> &lens, double scale,
                  double softcap, Buf<float> &out,
                  const std::vector<int64_t> *qStart,
                  const Buf<float> *sinks) {
  int64_t B = qs[0], Hq = qs[1], Sq = qs[2], D = qs[3], Hkv = ks[1],
          Skv = ks[2], Dv = vs[3], G = Hq / Hkv;
  out.assign(B * Hq * Sq * Dv, 0.0f);
  std::vector<double> s(Skv), acc(Dv);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        const float *qr = &q[((b * Hq + h) * Sq + i) * D];
        int64_t pos = qStart ? (*qStart)[b] + i : i + Skv - Sq;
        double mx = -INFINITY;
        for (int64_t j = 0; j < Skv; ++j) {
          bool vis = j < lens[b];
          if (kind.causal)
            vis = vis && j <= pos;
          if (kind.window)
            vis = vis && j > pos - kind.window;
          if (kind.chunk > 0) // the query's own chunk
            vis = vis && j >= pos - ((pos % kind.chunk) + kind.chunk) %
                                        kind.chunk;
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
          // A NaN score (a NaN in q or K) makes the row NaN, as in
          // PyTorch: it becomes the max (which std::max then keeps), and
          // every exp is NaN.
          mx = std::isnan(dot) ? dot : std::max(mx, dot);
        }
        // A sink is one more logit whose probability is dropped.
        double sink = sinks ? double((*sinks)[h]) : -INFINITY;
        mx = std::max(mx, sink);
        if (mx == -INFINITY)
          continue;
        double sum = sink == -INFINITY ? 0.0 : std::exp(sink - mx);
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

Buf<float> randomExtraInput(const attn_rt_kind &kind, std::mt19937 &rng) {
  if (!kind.has_sinks)
    return randomVec(rng, kind.bias_buckets * kind.num_heads, 1);
  // Scores of unit inputs at scale 1/sqrt(D) are O(1): a sink near them,
  // one that outweighs every key (1e4: rows of almost 0), one that no key
  // notices (-1e4), no sink (-inf), and a large one (30).
  const float kinds[] = {0.0f, 1e4f, -1e4f, -INFINITY, 30.0f};
  Buf<float> s = randomVec(rng, kind.num_heads, 2);
  for (int64_t h = 0; h < kind.num_heads; ++h)
    if (h % 6 != 5)
      s[h] = h % 6 == 0 ? s[h] : kinds[h % 6];
  return s;
}

Buf<float> readSinks(const attn_rt_kind &kind, Args &args) {
  if (!kind.has_sinks) {
    if (args.count("sinks"))
      fail(std::string("layer kind '") + kind.name +
           "' has no attention sinks: --sinks is not accepted");
    return {};
  }
  if (!args.count("sinks"))
    fail(std::string("layer kind '") + kind.name +
         "' has attention sinks: pass them with --sinks S.npy (float32 [" +
         std::to_string(kind.num_heads) + "], one logit per query head)");
  NpyArray t;
  std::string err;
  if (!readNpy(args["sinks"], t, err))
    fail(err);
  if (t.dtype != "f4" || t.shape.size() != 1 || t.shape[0] != kind.num_heads)
    fail(args["sinks"] + ": must be float32 [" +
         std::to_string(kind.num_heads) + "], one logit per query head");
  for (float s : t.f32)
    if (std::isnan(s) || s == INFINITY)
      fail(args["sinks"] + ": holds " + (std::isnan(s) ? "NaN" : "+inf") +
           "; accepted: finite sinks or -inf (no sink)");
  return Buf<float>(t.f32.begin(), t.f32.end());
}

Buf<float> randomVec(std::mt19937 &rng, int64_t n, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  Buf<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

std::vector<int32_t> shuffledTable(std::mt19937 &rng, int64_t pages,
                                   int64_t entries) {
  std::vector<int32_t> ids(pages);
  for (int64_t p = 0; p < pages; ++p)
    ids[p] = int32_t(p);
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize(entries);
  return ids;
}

} // namespace cli
} // namespace attn_rt
