//===- LinearBench.cpp - attn-bench --linear: Gated DeltaNet
//---------------===//
//
// This file implements attn-bench --linear: for the seed model's linear
// layers (H_k 32, H_v 64, d 128), Qwen3-Next-80B's (16/32/128) and IBM
// Granite-4.0-H-Small's Mamba2 layers (the SSD: 1 group, 128 heads, d_state
// 128, head dim 64; the chunked count of attn_rt_ssd_flops) it
// compiles a two-layer config (one linear, one full-attention layer of the
// same model) and measures, in the same run as the machine's FMA peak and
// read bandwidth:
//
//   - linear prefill at S = 256 .. 64k: median ms, GFLOP/s of the chunked
//     algorithm's count (runtime/run/flops.h), % of the FMA peak, µs per token,
//     and the compiled eager chunked algorithm (the unfused reference) up
//     to 4k;
//   - linear decode (one token against the state), one step over every
//     linear layer of the model, each with its own state (so the states come
//     from memory, as in serving, not from the caches): state bytes read and
//     written per second as % of the read bandwidth;
//   - the full-attention layer: causal prefill at S = 256 .. 4k and decode
//     against a context of 256 .. 64k keys, µs per token;
//   - the crossover: the context past which a full-attention layer costs
//     more per token than a linear one (prefill and decode), and both curves
//     as an SVG plot.
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"

#include "attn_runtime.h"
#include "flops.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

namespace attn_bench {
namespace {

const LinearModel kModels[] = {
    {"seed", 32, 64, 128, 128, 64, 4, 256, 8192, 69},
    {"qwen3-next-80b", 16, 32, 128, 128, 16, 2, 256, 2048, 36},
    // IBM Granite-4.0-H-Small's Mamba2 layers (128 heads of 64, d_state
    // 128, one group) and attention (32/8 heads of 128, NoPE): 36 + 4.
    {"granite-4.0-h-s", 1, 128, 128, 64, 32, 8, 128, 4096, 36, true},
    // Kimi-Linear-48B-A3B's KDA layers (32 heads of 128, one decay per key
    // channel; the recurrent form at every length) and its NoPE latent
    // layers' expanded attention (32 heads, q/k 192, v 128): 20 + 7.
    {"kimi-linear", 32, 32, 128, 128, 32, 32, 192, 2304, 20, false, true, 128},
    // NVIDIA Nemotron-3-Nano-30B-A3B's Mamba2 blocks (64 heads of 64,
    // d_state 128, 8 groups of B and C) and NoPE attention (32/2 heads of
    // 128): 23 + 6.
    {"nemotron-3-nano", 8, 64, 128, 64, 32, 2, 128, 2688, 23, true, false, 0,
     true},
};

/// A measured curve: µs per token at each sequence length / context.
using Curve = std::map<int64_t, double>;

/// The context past which `grows` (per-token time rising with S) exceeds
/// `flat`, interpolated linearly between the measured points; 0 when it is
/// already above at the first point, -1 when never within the range.
double crossover(const Curve &grows, const Curve &flat) {
  double ref = 0;
  for (auto [s, us] : flat)
    ref += us;
  ref /= double(flat.size());
  int64_t prevS = -1;
  double prevUs = 0;
  for (auto [s, us] : grows) {
    if (us >= ref) {
      if (prevS < 0)
        return 0;
      return double(prevS) +
             (ref - prevUs) / (us - prevUs) * double(s - prevS);
    }
    prevS = s;
    prevUs = us;
  }
  return -1;
}

std::string crossoverText(double x, const Curve &grows) {
  char buf[96];
  if (x == 0)
    std::snprintf(buf, sizeof(buf), "below %lld tokens",
                  (long long)grows.begin()->first);
  else if (x < 0)
    std::snprintf(buf, sizeof(buf), "past %lld tokens",
                  (long long)grows.rbegin()->first);
  else
    std::snprintf(buf, sizeof(buf), "%.0f tokens", x);
  return buf;
}

/// The four curves as an SVG line plot: log2 context on x, log10 µs per
/// token on y.
void writeSvg(const std::string &path, const std::string &title,
              const std::vector<std::pair<std::string, Curve>> &curves,
              const std::string &note) {
  const double W = 760, H = 460, left = 70, right = 230, top = 40,
               bottom = 50;
  double xmin = 1e30, xmax = -1e30, ymin = 1e30, ymax = -1e30;
  for (auto &[name, c] : curves)
    for (auto [s, us] : c) {
      xmin = std::min(xmin, std::log2(double(s)));
      xmax = std::max(xmax, std::log2(double(s)));
      ymin = std::min(ymin, std::log10(us));
      ymax = std::max(ymax, std::log10(us));
    }
  ymin = std::floor(ymin);
  ymax = std::ceil(ymax);
  if (ymax <= ymin)
    ymax = ymin + 1;
  auto X = [&](double s) {
    return left + (std::log2(s) - xmin) / (xmax - xmin) * (W - left - right);
  };
  auto Y = [&](double us) {
    return H - bottom -
           (std::log10(us) - ymin) / (ymax - ymin) * (H - top - bottom);
  };
  const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"};
  const char *dashes[] = {"", "", "6,4", "6,4"};
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W
     << "\" height=\"" << H << "\" font-family=\"sans-serif\" "
     << "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
     << "fill=\"white\"/>\n<text x=\"" << left << "\" y=\"22\" "
     << "font-size=\"14\">" << title << "</text>\n";
  // Axes, ticks and grid.
  for (int e = int(ymin); e <= int(ymax); ++e) {
    double y = Y(std::pow(10.0, e));
    os << "<line x1=\"" << left << "\" x2=\"" << W - right << "\" y1=\"" << y
       << "\" y2=\"" << y << "\" stroke=\"#ddd\"/>\n<text x=\"" << left - 8
       << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
       << (e >= 0 ? std::to_string(int64_t(std::pow(10.0, e)))
                  : "1e" + std::to_string(e))
       << "</text>\n";
  }
  for (int p = int(xmin); p <= int(xmax); ++p) {
    double x = X(std::pow(2.0, p));
    int64_t s = int64_t(1) << p;
    std::string label = s >= 1024 ? std::to_string(s / 1024) + "k"
                                  : std::to_string(s);
    os << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << top
       << "\" y2=\"" << H - bottom << "\" stroke=\"#eee\"/>\n<text x=\"" << x
       << "\" y=\"" << H - bottom + 16 << "\" text-anchor=\"middle\">" << label
       << "</text>\n";
  }
  os << "<text x=\"" << (left + W - right) / 2 << "\" y=\"" << H - 12
     << "\" text-anchor=\"middle\">tokens (prefill length / decode "
        "context)</text>\n<text transform=\"translate(18," << (top + H - bottom) / 2
     << ") rotate(-90)\" text-anchor=\"middle\">µs per token (one layer, 2 "
        "threads)</text>\n";
  for (size_t i = 0; i < curves.size(); ++i) {
    const auto &[name, c] = curves[i];
    os << "<polyline fill=\"none\" stroke=\"" << colors[i % 4]
       << "\" stroke-width=\"2\"";
    if (*dashes[i % 4])
      os << " stroke-dasharray=\"" << dashes[i % 4] << "\"";
    os << " points=\"";
    for (auto [s, us] : c)
      os << X(double(s)) << "," << Y(us) << " ";
    os << "\"/>\n";
    for (auto [s, us] : c)
      os << "<circle cx=\"" << X(double(s)) << "\" cy=\"" << Y(us)
         << "\" r=\"3\" fill=\"" << colors[i % 4] << "\"/>\n";
    double ly = top + 20 + 22 * double(i);
    os << "<line x1=\"" << W - right + 15 << "\" x2=\"" << W - right + 45
       << "\" y1=\"" << ly << "\" y2=\"" << ly << "\" stroke=\""
       << colors[i % 4] << "\" stroke-width=\"2\"";
    if (*dashes[i % 4])
      os << " stroke-dasharray=\"" << dashes[i % 4] << "\"";
    os << "/>\n<text x=\"" << W - right + 52 << "\" y=\"" << ly + 4 << "\">"
       << name << "</text>\n";
  }
  os << "<text x=\"" << W - right + 15 << "\" y=\"" << top + 120
     << "\" font-size=\"11\">";
  std::istringstream lines(note);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    os << "<tspan x=\"" << W - right + 15 << "\" dy=\"" << (first ? 0 : 15)
       << "\">" << line << "</tspan>";
    first = false;
  }
  os << "</text>\n</svg>\n";
  std::ofstream(path) << os.str();
}

} // namespace

bool benchLinear(const Options &o, const Machine &mc, const std::string &dir) {
  // Long: one benchmark table, rows measured in the order they print.
  CsvFile csv(o.csv,
              "model,kind,phase,tokens,ms,gflops,pct_peak,us_per_token,"
              "unfused_ms,fused_over_unfused,gbps,pct_read_bw",
              mc, o.threads);
  std::printf("%-15s %-8s %-8s %7s %10s %9s %7s %10s %10s %8s\n", "model",
              "kind", "phase", "tokens", "ms", "GFLOP/s", "%peak", "us/token",
              "unfused", "speedup");
  for (const LinearModel &m : kModels) {
    if (!o.only.empty() && o.only != m.name)
      continue;
    std::string json =
        m.channelGate
            ? "{\"model_type\": \"kimi_linear\", \"hidden_size\": " +
                  std::to_string(m.hidden) +
                  ", \"num_hidden_layers\": 2, \"num_attention_heads\": " +
                  std::to_string(m.hq) +
                  ", \"mla_use_nope\": true, \"kv_lora_rank\": 512, "
                  "\"qk_nope_head_dim\": " +
                  std::to_string(m.d - 64) +
                  ", \"qk_rope_head_dim\": 64, \"v_head_dim\": " +
                  std::to_string(m.fullDv()) +
                  ", \"linear_attn_config\": {\"num_heads\": " +
                  std::to_string(m.hv) +
                  ", \"head_dim\": " + std::to_string(m.dk) +
                  ", \"short_conv_kernel_size\": 4, \"kda_layers\": [1], "
                  "\"full_attn_layers\": [2]}}"
        : m.nemotron
            ? "{\"model_type\": \"nemotron_h\", \"hidden_size\": " +
                  std::to_string(m.hidden) +
                  ", \"hybrid_override_pattern\": \"M*\", "
                  "\"num_attention_heads\": " +
                  std::to_string(m.hq) +
                  ", \"num_key_value_heads\": " + std::to_string(m.hkv) +
                  ", \"head_dim\": " + std::to_string(m.d) +
                  ", \"mamba_num_heads\": " + std::to_string(m.hv) +
                  ", \"n_groups\": " + std::to_string(m.hk) +
                  ", \"ssm_state_size\": " + std::to_string(m.dk) +
                  ", \"mamba_head_dim\": " + std::to_string(m.dv) + "}"
        : m.noDelta
            ? "{\"model_type\": \"granitemoehybrid\", \"hidden_size\": " +
                  std::to_string(m.hidden) +
                  ", \"num_hidden_layers\": 2, \"layer_types\": "
                  "[\"mamba\", \"attention\"], \"num_attention_heads\": " +
                  std::to_string(m.hq) +
                  ", \"num_key_value_heads\": " + std::to_string(m.hkv) +
                  ", \"mamba_n_heads\": " + std::to_string(m.hv) +
                  ", \"mamba_n_groups\": " + std::to_string(m.hk) +
                  ", \"mamba_d_state\": " + std::to_string(m.dk) +
                  ", \"mamba_d_head\": " + std::to_string(m.dv) +
                  ", \"mamba_expand\": " +
                  std::to_string(m.hv * m.dv / m.hidden) + "}"
            : "{\"model_type\": \"qwen3_next\", \"hidden_size\": " +
                  std::to_string(m.hidden) +
                  ", \"num_hidden_layers\": 2, \"full_attention_interval\": 2, "
                  "\"num_attention_heads\": " +
                  std::to_string(m.hq) +
                  ", \"num_key_value_heads\": " + std::to_string(m.hkv) +
                  ", \"head_dim\": " + std::to_string(m.d) +
                  ", \"linear_num_key_heads\": " + std::to_string(m.hk) +
                  ", \"linear_num_value_heads\": " + std::to_string(m.hv) +
                  ", \"linear_key_head_dim\": " + std::to_string(m.dk) +
                  ", \"linear_value_head_dim\": " + std::to_string(m.dv) + "}";
    std::string lib = compileConfig(dir, m.name, json);
    void *h = nullptr;
    const attn_rt_model *model = loadModel(lib, h);
    if (!model)
      return false;
    const attn_rt_kind *lin = nullptr, *full = nullptr;
    for (int64_t i = 0; i < model->num_kinds; ++i)
      (model->kinds[i].op == ATTN_RT_OP_GATED_DELTA ? lin : full) =
          &model->kinds[i];
    if (!lin || !full) {
      std::fprintf(stderr, "attn-bench: error: %s: expected one linear and "
                           "one full-attention kind\n", lib.c_str());
      return false;
    }
    std::mt19937 rng(11);
    auto row = [&](const char *kind, const char *phase, int64_t tokens,
                   double ms, double flops, double unfusedMs, double gbps,
                   double usPerToken) {
      double gf = flops / ms / 1e6;
      std::printf("%-15s %-8s %-8s %7lld %10.3f %9.1f %6.1f%% %10.3f ",
                  m.name.c_str(), kind, phase, (long long)tokens, ms, gf,
                  100 * gf / mc.peak, usPerToken);
      if (std::isnan(unfusedMs))
        std::printf("%10s %8s\n", "-", "-");
      else
        std::printf("%10.2f %7.2fx\n", unfusedMs, unfusedMs / ms);
      csv.row() << m.name << "," << kind << "," << phase << "," << tokens << ","
          << ms << "," << gf << "," << 100 * gf / mc.peak << "," << usPerToken
          << "," << unfusedMs << "," << unfusedMs / ms << "," << gbps << ","
          << (std::isnan(gbps) ? NAN : 100 * gbps / mc.bandwidth) << "\n";
    };
    Curve linPrefill, fullPrefill, linDecode, fullDecode;
    attn_rt::Buf<float> s0(size_t(m.hv * m.dk * m.dv), 0.f), s1(s0.size());
    // Linear prefill.
    for (int64_t s : {256, 1024, 4096, 16384, 65536}) {
      if (o.linearDecodeOnly)
        break;
      GdnCall call(m, s, rng);
      Result r = inChild(o.repeats, [&] {
        call.run(lin->fused, m, s0.data(), s1.data());
      });
      double ref = NAN;
      if (s <= 4096)
        ref = inChild(std::min(o.repeats, 3), [&] {
                call.run(lin->reference, m, s0.data(), s1.data());
              }).ms;
      // KDA's chunk has Gated DeltaNet's products (its per-channel
      // exponentials are not counted).
      double f = m.noDelta
                     ? attn_rt_ssd_flops(1, m.hv, s, m.dk, m.dv, 64)
                     : attn_rt_gated_delta_flops(1, m.hv, s, m.dk, m.dv, 64);
      double us = 1e3 * r.ms / double(s);
      linPrefill[s] = us;
      row("linear", "prefill", s, r.ms, f, ref, NAN, us);
    }
    // Linear decode: one step over every linear layer of the model, each
    // with its own state (from memory, as in serving); 5 rounds of
    // (bandwidth, step) close in time.
    {
      GdnCall call(m, 1, rng);
      size_t n = s0.size();
      attn_rt::Buf<float> states = normal(rng, n * m.linearLayers, 0.1f),
                          outStates(states.size());
      std::vector<double> ms, ratios;
      double bytes = 2.0 * 4 * double(n) * double(m.linearLayers);
      for (int round = 0; round < 5; ++round) {
        double bw =
            valueInChild([&] { return readBandwidth(o.threads, mc.avx512); });
        Result r = inChild(o.repeats, [&] {
          for (int64_t l = 0; l < m.linearLayers; ++l)
            call.run(lin->fused, m, states.data() + l * n,
                     outStates.data() + l * n);
        });
        ms.push_back(r.ms);
        ratios.push_back(bytes / r.ms / 1e6 / bw);
      }
      double step = median(ms), perLayer = step / double(m.linearLayers);
      double gbps = bytes / step / 1e6;
      double f = m.noDelta ? attn_rt_ssd_recurrent_flops(1, m.hv, 1, m.dk, m.dv)
                           : attn_rt_gated_delta_recurrent_flops(1, m.hv, 1,
                                                                 m.dk, m.dv);
      row("linear", "decode", 1, perLayer, f, NAN, gbps, 1e3 * perLayer);
      std::printf("%-15s linear decode: one step over %lld layers %.3f ms; "
                  "state read+written %.1f GB/s, %.1f%% of the read "
                  "bandwidth measured next to it (median of 5 rounds; the "
                  "same for any context consumed: the state's size is "
                  "fixed)\n",
                  m.name.c_str(), (long long)m.linearLayers, step, gbps,
                  100 * median(ratios));
      for (int64_t c : {256, 1024, 4096, 16384, 65536})
        linDecode[c] = 1e3 * perLayer;
    }
    if (o.linearDecodeOnly) {
      dlclose(h);
      continue;
    }
    // The full-attention layer of the same model.
    for (int64_t s : {256, 512, 1024, 2048, 4096}) {
      SdpaCall call(m, s, s, rng);
      Result r = inChild(o.repeats, [&] { call.run(full->fused, m); });
      double f = attn_rt_attention_flops(1, m.hq, s, s, m.d, m.fullDv(), 1, 0);
      double us = 1e3 * r.ms / double(s);
      fullPrefill[s] = us;
      row("full", "prefill", s, r.ms, f, NAN, NAN, us);
    }
    for (int64_t c : {256, 512, 1024, 4096, 16384, 65536}) {
      SdpaCall call(m, 1, c, rng);
      Result r = inChild(o.repeats, [&] { call.run(full->fused, m); });
      double f = attn_rt_attention_flops(1, m.hq, 1, c, m.d, m.fullDv(), 1, 0);
      double gbps = 4.0 * m.hkv * double(c) * (m.d + m.fullDv()) / r.ms / 1e6;
      fullDecode[c] = 1e3 * r.ms;
      row("full", "decode", c, r.ms, f, NAN, gbps, 1e3 * r.ms);
    }
    // Flat within 15% from 1k to 64k?
    double lo = 1e30, hi = 0;
    for (auto [s, us] : linPrefill)
      if (s >= 1024) {
        lo = std::min(lo, us);
        hi = std::max(hi, us);
      }
    double xPrefill = crossover(fullPrefill, linPrefill);
    double xDecode = crossover(fullDecode, linDecode);
    std::printf("%-15s linear prefill per token, 1k..64k: %.2f..%.2f us "
                "(spread %.1f%%); crossover with the full-attention layer: "
                "prefill %s, decode %s\n",
                m.name.c_str(), lo, hi, 100 * (hi - lo) / lo,
                crossoverText(xPrefill, fullPrefill).c_str(),
                crossoverText(xDecode, fullDecode).c_str());
    {
      // One plot per model: the seed's at --svg, the others' next to it
      // (attn-bench-linear-<model>.svg).
      std::string path = o.svg;
      if (m.name != "seed") {
        size_t dot = path.rfind(".svg");
        path = (dot == std::string::npos ? path : path.substr(0, dot)) + "-" +
               m.name + ".svg";
      }
      char note[512];
      std::snprintf(note, sizeof(note),
                    "crossover (per token):\nprefill %s\ndecode %s\nFMA "
                    "peak %.0f GFLOP/s\nread bandwidth %.1f GB/s",
                    crossoverText(xPrefill, fullPrefill).c_str(),
                    crossoverText(xDecode, fullDecode).c_str(), mc.peak,
                    mc.bandwidth);
      std::string title =
          m.name == "seed"
              ? "Seed model, one layer: Gated DeltaNet vs full attention "
                "(64 heads, d 256)"
              : m.name + ", one layer: " +
                    (m.channelGate ? "Kimi Delta Attention"
                     : m.noDelta   ? "Mamba2 SSD"
                                   : "Gated DeltaNet") +
                    " vs its full attention";
      writeSvg(path, title,
               {{"linear prefill", linPrefill},
                {"full prefill", fullPrefill},
                {"linear decode", linDecode},
                {"full decode", fullDecode}},
               note);
      std::printf("plot: %s\n", path.c_str());
    }
    dlclose(h);
  }
  std::printf("CSV: %s\n", o.csv.c_str());
  return true;
}

} // namespace attn_bench
