"""Float64 reference for the DeepSeek-V2 / DeepSeek-V3 / Kimi-K2 decoder
layer (multi-head latent attention, then a dense SwiGLU network or a mixture
of experts), as transformers' modeling_deepseek_v3.py and
modeling_deepseek_v2.py write it, against an executable's `layer` / `model`.

Everything comes from the config.json, read with the defaults of the
family's transformers config class (DeepseekV3Config for model_type
deepseek_v3 and kimi_k2, DeepseekV2Config for deepseek_v2); nothing from the
compiler. Random weights under the checkpoints' tensor names go into a
.safetensors file (F32, BF16, or FP8 as the DeepSeek-V3 checkpoints store
it: every linear weight of the attention and of the networks as F8_E4M3 with
a F32 `.weight_scale_inv` per 128x128 block; the reference uses the values
as stored), the layer runs on random hidden states, and the output must be
within --tol of the float64 layer, relative to max |reference|.

The layer (DeepseekV{2,3}DecoderLayer): x + attn(input_layernorm(x)), then
r + mlp(post_attention_layernorm(r)); RMSNorm w * x / sqrt(mean(x^2) + eps),
eps = rms_norm_eps for the two layer norms but the RMSNorm default 1e-6 for
q_a_layernorm and kv_a_layernorm (both classes build those without eps).

Attention (DeepseekV{2,3}Attention), positions 0..S-1, causal:
  q = q_b_proj(q_a_layernorm(q_a_proj(h))), or q_proj(h) when q_lora_rank is
  null; per head [q_nope (qk_nope_head_dim) | q_pe (qk_rope_head_dim)].
  kv_a_proj_with_mqa(h) = [latent (kv_lora_rank) | k_pe (qk_rope_head_dim),
  one key shared by every head]; kv_b_proj(kv_a_layernorm(latent)) = per
  head [k_nope | v (v_head_dim)]. attention_bias puts biases on q_a_proj,
  kv_a_proj_with_mqa and o_proj only (never q_proj, q_b_proj, kv_b_proj).
  RoPE on q_pe and k_pe with inv_freq over qk_rope_head_dim (the config
  classes set head_dim = qk_rope_head_dim) and cos/sin times YaRN's
  attention factor:
    V3 (rope_interleave, default true): apply_rotary_pos_emb_interleave:
      (x0, x1, x2, ...) -> [x_even, x_odd], then rotate-half, so the result
      is laid out [even*cos - odd*sin | odd*cos + even*sin];
      rope_interleave false: plain rotate-half on x.
    V2: complex pairs (x[2i] + i x[2i+1]) * freqs_cis[i] * attention factor;
      the result stays interleaved.
  scale = (qk_nope + qk_rope) ** -0.5; V3 only (any rope type but default):
  times yarn_get_mscale(factor, mscale_all_dim) ** 2 when mscale_all_dim is
  set, yarn_get_mscale(s, m) = 0.1 m ln s + 1 (1 for s <= 1). V2's
  transformers port applies no such factor (DeepSeek's own V2 code did).
  YaRN (modeling_rope_utils._compute_yarn_parameters): original =
  original_max_position_embeddings (else max_position_embeddings), factor
  from the config (newer transformers; some releases replaced it by
  max_position_embeddings / original: a warning says when the two differ),
  attention factor = attention_factor, else mscale(factor, mscale) /
  mscale(factor, mscale_all_dim) when both are set, else mscale(factor, 1);
  beta_fast (or 32), beta_slow (or 1), truncate (default true) for the
  correction range; inv_freq = interpolation * (1 - e) + extrapolation * e.

Feed-forward: layers < first_k_dense_replace the dense SwiGLU network
(intermediate_size), every other layer the mixture of experts (both
families: moe_layer_freq and a null n_routed_experts are not read), experts
and shared experts SwiGLU with moe_intermediate_size and
moe_intermediate_size * n_shared_experts, the shared experts added ungated.
  V3 router (DeepseekV3MoE.route_tokens_to_experts): s = sigmoid(gate(h));
  c = s + e_score_correction_bias (selection only); group score = sum of the
  group's two largest c, topk_group groups kept, the others' c set to 0.0
  (masked_fill 0.0, not -inf: a kept expert with c < 0 loses to a masked
  one); top num_experts_per_tok of c; weights = s at those experts,
  / (sum + 1e-20) when norm_topk_prob, times routed_scaling_factor.
  V2 router (DeepseekV2Moe.route_tokens_to_experts): p = softmax(gate(h));
  greedy: top-k of p; group_limited_greedy: group score = max p of the
  group, topk_group groups kept, the others' p set to 0.0, top-k of that;
  weights = the (masked) p picked, times routed_scaling_factor, never
  normalized (norm_topk_prob is not read), no correction bias.

usage: mla_ref.py EXE CONFIG [--mode layer|model] --layer L [--to B]
       [--seq S] [--batch B] [--weights-dtype F32|BF16|FP8] [--tol T]
       [--seed N] [--bias-std 0.1] [--keep W.safetensors]
       [--dump-ref OUT.npz] [--no-exe]
       mla_ref.py --fp8-selftest
Weights as layer_ref.py's (matrices N(0,1)/sqrt(in), norms 1 + 0.1 N,
biases 0.1 N), e_score_correction_bias N(0, bias-std): 0.1 changes about
two thirds of the selections; 0.5 outweighs the sigmoid scores' spread and
sends every token to the same few experts. Routing prints, per mixture of
experts layer: tokens per expert, (V3) how many selections the bias changed,
and a WARNING when a selection was decided by a gap < 1e-6 (group scores
included) or took an expert of a masked group.
Prints one `ok`/`FAIL` line (with --no-exe a `ref` line), then per mixture
of experts layer run its routing; exit 1 on a failure.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layer_ref import ACT, activation, round_to  # noqa: E402

V3_TYPES = ("deepseek_v3", "kimi_k2")

# DeepseekV3Config's defaults (configuration_deepseek_v3.py).
V3_DEFAULTS = dict(
    hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048,
    num_hidden_layers=61, num_attention_heads=128, num_key_value_heads=128,
    n_shared_experts=1, n_routed_experts=256, routed_scaling_factor=2.5,
    kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64, v_head_dim=128,
    qk_nope_head_dim=128, n_group=8, topk_group=4, num_experts_per_tok=8,
    first_k_dense_replace=3, norm_topk_prob=True, hidden_act="silu",
    max_position_embeddings=4096, rms_norm_eps=1e-6, rope_interleave=True,
    attention_bias=False, mlp_bias=False)

# DeepseekV2Config's defaults (configuration_deepseek_v2.py).
V2_DEFAULTS = dict(
    hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=None, hidden_act="silu",
    max_position_embeddings=2048, rms_norm_eps=1e-6, attention_bias=False,
    mlp_bias=False, first_k_dense_replace=0, kv_lora_rank=512,
    q_lora_rank=1536, n_group=None, n_routed_experts=64, n_shared_experts=2,
    qk_nope_head_dim=128, qk_rope_head_dim=64, routed_scaling_factor=1.0,
    topk_group=None, topk_method="greedy", norm_topk_prob=False,
    v_head_dim=128, num_experts_per_tok=None, moe_intermediate_size=1407)

LATENT_EPS = 1e-6  # q_a_layernorm / kv_a_layernorm: the RMSNorm default
TIE = 1e-6         # routing gaps below this are reported as near-ties


def note(msg):
    print(f"note: {msg}", file=sys.stderr)


# ---------------------------------------------------------------------------
# The config, with the family's defaults.
# ---------------------------------------------------------------------------

def resolve(cfg):
    mt = cfg.get("model_type")
    if mt in V3_TYPES:
        c, fam = dict(V3_DEFAULTS), "v3"
    elif mt == "deepseek_v2":
        c, fam = dict(V2_DEFAULTS), "v2"
    else:
        raise SystemExit(f"mla_ref.py: model_type {mt!r} is not one of "
                         "deepseek_v3, kimi_k2, deepseek_v2")
    c.update({k: v for k, v in cfg.items() if k in c})
    c["fam"], c["model_type"] = fam, mt
    if c["num_key_value_heads"] is None:
        c["num_key_value_heads"] = c["num_attention_heads"]
    if c["num_key_value_heads"] != c["num_attention_heads"]:
        # eager_attention_forward would repeat_kv the per-head keys.
        raise SystemExit("mla_ref.py: num_key_value_heads must equal "
                         "num_attention_heads for MLA")
    if c["mlp_bias"]:
        raise SystemExit("mla_ref.py: mlp_bias is not supported (the "
                         "transformers releases differ on the experts)")
    # rope_scaling (checkpoints) or rope_parameters (transformers 5 saves).
    rp = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    c["rope"] = dict(rp)
    c["rope_theta"] = float(rp.get("rope_theta", cfg.get("rope_theta",
                                                          10000.0)))
    c["rope_type"] = rp.get("rope_type", rp.get("type", "default")) or \
        "default"
    if cfg.get("moe_layer_freq", 1) != 1:
        note("moe_layer_freq is not read by transformers: every layer >= "
             "first_k_dense_replace is a mixture of experts")
    if fam == "v3":
        if cfg.get("scoring_func", "sigmoid") != "sigmoid" or \
                cfg.get("topk_method", "noaux_tc") != "noaux_tc":
            note("DeepseekV3 always routes with sigmoid / noaux_tc; "
                 "scoring_func and topk_method are not read")
        E, G = c["n_routed_experts"], c["n_group"]
        if E % G or E // G < 2:
            raise SystemExit("mla_ref.py: n_routed_experts must be n_group "
                             "groups of at least 2 (the top-2 group score)")
    else:
        if c["topk_method"] not in ("greedy", "group_limited_greedy"):
            raise SystemExit(f"mla_ref.py: DeepseekV2 has no topk_method "
                             f"{c['topk_method']!r}")
        if c["num_experts_per_tok"] is None or c["n_shared_experts"] is None:
            raise SystemExit("mla_ref.py: DeepseekV2Moe needs "
                             "num_experts_per_tok and n_shared_experts")
        if c["topk_method"] == "group_limited_greedy" and (
                not c["n_group"] or not c["topk_group"]
                or c["n_routed_experts"] % c["n_group"]):
            raise SystemExit("mla_ref.py: group_limited_greedy needs n_group "
                             "dividing n_routed_experts and topk_group")
        if c["norm_topk_prob"]:
            note("DeepseekV2Moe does not read norm_topk_prob: the weights "
                 "stay unnormalized")
    if c["rope_type"] not in ("default", "yarn", "linear"):
        raise SystemExit(f"mla_ref.py: rope type {c['rope_type']!r} is not "
                         "supported")
    return c


# ---------------------------------------------------------------------------
# RoPE: inverse frequencies, YaRN, the softmax scale.
# ---------------------------------------------------------------------------

def yarn_get_mscale(scale=1.0, mscale=1.0):
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def rope_params(c):
    """(inv_freq [d/2], attention factor on cos/sin, softmax scale)."""
    d = c["qk_rope_head_dim"]
    base = c["rope_theta"]
    rp, kind = c["rope"], c["rope_type"]
    pos_freqs = base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    inv = 1.0 / pos_freqs
    att = 1.0
    if kind == "linear":
        inv = inv / float(rp["factor"])
    elif kind == "yarn":
        maxpos = c["max_position_embeddings"]
        orig = rp.get("original_max_position_embeddings") or maxpos
        factor = rp.get("factor")
        if factor is None:
            factor = maxpos / orig
        factor = float(factor)
        if "original_max_position_embeddings" in rp and \
                abs(factor - maxpos / orig) > 1e-9 * factor:
            note(f"YaRN factor {factor} != max_position_embeddings / "
                 f"original_max_position_embeddings = {maxpos / orig}: "
                 "transformers releases differ on which one they use; "
                 "this reference uses the factor")
        att = rp.get("attention_factor")
        if att is None:
            ms, msa = rp.get("mscale"), rp.get("mscale_all_dim")
            if ms and msa:
                att = yarn_get_mscale(factor, ms) / yarn_get_mscale(factor,
                                                                    msa)
            else:
                att = yarn_get_mscale(factor)
        att = float(att)
        beta_fast = rp.get("beta_fast") or 32
        beta_slow = rp.get("beta_slow") or 1
        truncate = rp.get("truncate", True)

        def corr_dim(rot):
            return (d * math.log(orig / (rot * 2 * math.pi))) / \
                (2 * math.log(base))

        low, high = corr_dim(beta_fast), corr_dim(beta_slow)
        if truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, d - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low)
                       / (high - low), 0.0, 1.0)
        extra = 1.0 - ramp
        inv = (1.0 / (factor * pos_freqs)) * (1.0 - extra) + \
            (1.0 / pos_freqs) * extra
    scale = (c["qk_nope_head_dim"] + c["qk_rope_head_dim"]) ** -0.5
    if c["fam"] == "v3" and kind != "default":
        # DeepseekV3Attention: rope_parameters["factor"] as given.
        msa = rp.get("mscale_all_dim", 0)
        if msa:
            f = rp.get("factor")
            if f is None:
                f = c["max_position_embeddings"] / (
                    rp.get("original_max_position_embeddings")
                    or c["max_position_embeddings"])
            m = yarn_get_mscale(float(f), msa)
            scale *= m * m
    return inv, att, scale


def rope_layout(c):
    if c["fam"] == "v2":
        return "complex"
    return "interleave" if c["rope_interleave"] else "rotate_half"


def apply_rope(x, cos, sin, layout):
    """x [..., S, d]; cos, sin [S, d/2] (the attention factor included)."""
    h = x.shape[-1] // 2
    if layout == "complex":  # V2: view_as_complex pairs, stays interleaved
        xr, xi = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = xr * cos - xi * sin
        out[..., 1::2] = xr * sin + xi * cos
        return out
    if layout == "interleave":  # V3: [even | odd], then rotate-half
        x1, x2 = x[..., 0::2], x[..., 1::2]
    else:
        x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


# ---------------------------------------------------------------------------
# Weights.
# ---------------------------------------------------------------------------

def is_moe(c, L):
    return L >= c["first_k_dense_replace"]


def make_weights(c, L, rng, bias_std):
    """float64 tensors of layer L under the checkpoint names, and the names
    of the linear weights (those FP8 checkpoints store in F8_E4M3)."""
    t, linear = {}, set()
    p = f"model.layers.{L}."
    a = p + "self_attn."
    H, nh = c["hidden_size"], c["num_attention_heads"]
    dn, dr, dv = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    r, qr = c["kv_lora_rank"], c["q_lora_rank"]
    ab = c["attention_bias"]

    def mat(name, o, i, lin=True):
        t[name] = rng.standard_normal((o, i)) / np.sqrt(i)
        if lin:
            linear.add(name)

    def norm(name, n):
        t[name] = 1.0 + 0.1 * rng.standard_normal(n)

    def bias(name, n):
        t[name] = 0.1 * rng.standard_normal(n)

    norm(p + "input_layernorm.weight", H)
    if qr is None:
        mat(a + "q_proj.weight", nh * (dn + dr), H)
    else:
        mat(a + "q_a_proj.weight", qr, H)
        if ab:
            bias(a + "q_a_proj.bias", qr)
        norm(a + "q_a_layernorm.weight", qr)
        mat(a + "q_b_proj.weight", nh * (dn + dr), qr)
    mat(a + "kv_a_proj_with_mqa.weight", r + dr, H)
    if ab:
        bias(a + "kv_a_proj_with_mqa.bias", r + dr)
    norm(a + "kv_a_layernorm.weight", r)
    mat(a + "kv_b_proj.weight", nh * (dn + dv), r)
    mat(a + "o_proj.weight", H, nh * dv)
    if ab:
        bias(a + "o_proj.bias", H)
    norm(p + "post_attention_layernorm.weight", H)
    m = p + "mlp."

    def swiglu(pre, n):
        mat(pre + "gate_proj.weight", n, H)
        mat(pre + "up_proj.weight", n, H)
        mat(pre + "down_proj.weight", H, n)

    if not is_moe(c, L):
        swiglu(m, c["intermediate_size"])
        return t, linear
    E = c["n_routed_experts"]
    mat(m + "gate.weight", E, H, lin=False)
    if c["fam"] == "v3":
        t[m + "gate.e_score_correction_bias"] = \
            bias_std * rng.standard_normal(E)
    for e in range(E):
        swiglu(m + f"experts.{e}.", c["moe_intermediate_size"])
    swiglu(m + "shared_experts.",
           c["moe_intermediate_size"] * c["n_shared_experts"])
    return t, linear


# ---------------------------------------------------------------------------
# FP8 (OCP E4M3, "e4m3fn"): 1 sign, 4 exponent bits (bias 7), 3 mantissa
# bits, no infinities, S.1111.111 NaN, largest finite 448.
# ---------------------------------------------------------------------------

E4M3_MAX = 448.0


def e4m3_table():
    """The value of each of the 256 codes (NaN for 0x7F and 0xFF)."""
    v = np.empty(256)
    for code in range(256):
        s, e, m = code >> 7, (code >> 3) & 0xF, code & 7
        if e == 15 and m == 7:
            x = np.nan
        elif e == 0:
            x = m * 2.0 ** -9  # subnormal: m/8 * 2^(1-7)
        else:
            x = (1.0 + m / 8.0) * 2.0 ** (e - 7)
        v[code] = -x if s else x
    return v


E4M3 = e4m3_table()


def e4m3_encode(x):
    """float64 -> e4m3fn codes (uint8), rounding to nearest, ties to even;
    |x| must be <= 448 (no saturation or NaN needed here)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    if not np.all(a <= E4M3_MAX):
        raise ValueError("e4m3_encode: |x| > 448")
    # The binade 2^k <= a < 2^(k+1), k >= -6 (below: the subnormal spacing).
    _, ex = np.frexp(a)            # a = f * 2^ex, 0.5 <= f < 1
    k = np.maximum(ex - 1, -6)
    quantum = np.ldexp(1.0, k - 3)  # 3 mantissa bits
    q = np.round(a / quantum)       # exact division; numpy rounds half-even
    v = q * quantum                 # the rounded magnitude (maybe 2^(k+1))
    _, ev = np.frexp(v)
    kv = ev - 1
    normal = (v > 0) & (kv >= -6)
    e_field = np.where(normal, kv + 7, 0)
    m_field = np.where(normal, np.round(v / np.ldexp(1.0, kv) * 8) - 8,
                       np.round(v / 2.0 ** -9))
    code = (e_field.astype(np.int64) << 3) | m_field.astype(np.int64)
    code |= np.where(np.signbit(x), 0x80, 0)
    return code.astype(np.uint8)


def fp8_quantize(w, block=128):
    """Per 128x128 block: scale_inv = blockmax / 448 (F32), codes =
    e4m3(w / scale_inv); returns (codes, scale_inv, dequantized float64)."""
    o, i = w.shape
    nbo, nbi = -(-o // block), -(-i // block)
    codes = np.zeros((o, i), np.uint8)
    scale = np.zeros((nbo, nbi), np.float32)
    deq = np.zeros((o, i))
    for bo in range(nbo):
        for bi in range(nbi):
            rs = slice(bo * block, (bo + 1) * block)
            cs = slice(bi * block, (bi + 1) * block)
            blk = w[rs, cs]
            amax = float(np.abs(blk).max())
            s = np.float32(amax / E4M3_MAX) if amax > 0 else np.float32(1.0)
            scale[bo, bi] = s
            cb = e4m3_encode(np.clip(blk / float(s), -E4M3_MAX, E4M3_MAX))
            codes[rs, cs] = cb
            deq[rs, cs] = E4M3[cb] * float(s)
    return codes, scale, deq


def fp8_selftest():
    """The encoder against a brute-force search over all 256 codes."""
    table = E4M3
    fin = np.array([c for c in range(256) if np.isfinite(table[c])])
    # Every finite code encodes to itself (+0 and -0 included).
    got = e4m3_encode(table[fin])
    bad = int(np.sum(got != fin))
    pos = np.array(sorted(c for c in fin if c < 0x80), dtype=np.int64)
    pv = table[pos]

    def brute(v):
        a = abs(v)
        dist = np.abs(pv - a)
        best = np.flatnonzero(dist == dist.min())
        if len(best) > 1:   # a tie: the even mantissa (even code)
            best = [b for b in best if pos[b] % 2 == 0]
        code = int(pos[best[0]])
        return code | (0x80 if np.signbit(v) else 0)

    rng = np.random.default_rng(1)
    mids = (pv[1:] + pv[:-1]) / 2          # every halfway point
    near = np.concatenate([mids, np.nextafter(mids, 0), np.nextafter(mids,
                                                                      1e9)])
    rand = np.concatenate([
        rng.uniform(0, 448, 20000),
        np.exp2(rng.uniform(-12, 9, 20000)).clip(0, 448),
        rng.uniform(0, 2.0 ** -6, 5000)])
    probe = np.concatenate([near, rand])
    probe = np.concatenate([probe, -probe])
    got = e4m3_encode(probe)
    want = np.array([brute(v) for v in probe], dtype=np.uint8)
    bad += int(np.sum(got != want))
    # Specific values.
    checks = {0.0: 0x00, 448.0: 0x7E, 2.0 ** -9: 0x01, 2.0 ** -10: 0x00,
              1.5 * 2.0 ** -10: 0x01, 2.0 ** -6: 0x08, 1.0: 0x38,
              -1.0: 0xB8, 0.875 * 2.0 ** -6: 0x07, 1.0625: 0x38,
              1.1875: 0x3A, 240.0: 0x77, 432.0: 0x7E, 431.9: 0x7D}
    for v, want_code in checks.items():
        if int(e4m3_encode(np.array([v]))[0]) != want_code:
            bad += 1
            print(f"e4m3({v!r}) = {int(e4m3_encode(np.array([v]))[0]):#04x}"
                  f", want {want_code:#04x}")
    n = len(fin) + len(probe) + len(checks)
    assert np.isnan(table[0x7F]) and np.isnan(table[0xFF])
    assert table[0x7E] == 448.0 and table[0x01] == 2.0 ** -9
    print(f"{'ok' if bad == 0 else 'FAIL'} e4m3 encoder: {n} values against "
          f"the 256-code table, {bad} wrong")
    return 0 if bad == 0 else 1


# ---------------------------------------------------------------------------
# safetensors with a dtype per tensor.
# ---------------------------------------------------------------------------

def store(t, linear, dtype):
    """The tensors as the file holds them: [(name, dtype, shape, bytes)] and
    their stored values (float64). FP8: the linear weights as F8_E4M3 plus
    F32 `.weight_scale_inv`, everything else F32. The correction bias is
    F32 always (transformers keeps it in float32)."""
    entries, stored = [], {}
    for name, arr in t.items():
        if dtype == "FP8" and name in linear:
            codes, scale, deq = fp8_quantize(arr)
            stored[name] = deq
            entries.append((name, "F8_E4M3", arr.shape, codes.tobytes()))
            entries.append((name[: -len(".weight")] + ".weight_scale_inv",
                            "F32", scale.shape, scale.tobytes()))
            continue
        d = dtype
        if dtype == "FP8" or name.endswith("e_score_correction_bias"):
            d = "F32"
        stored[name], data = round_to(arr, d)
        entries.append((name, d, arr.shape, data))
    return entries, stored


def write_safetensors(path, entries):
    header, offset = {}, 0
    for name, dt, shape, data in entries:
        header[name] = {"dtype": dt, "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for _, _, _, data in entries:
            f.write(data)


# ---------------------------------------------------------------------------
# The float64 layer.
# ---------------------------------------------------------------------------

def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def attention(c, t, L, h, dump=None):
    B, S, _ = h.shape
    a = f"model.layers.{L}.self_attn."
    nh = c["num_attention_heads"]
    dn, dr, dv = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    r = c["kv_lora_rank"]

    def lin(x, name):
        y = x @ t[a + name + ".weight"].T
        b = t.get(a + name + ".bias")
        return y if b is None else y + b

    if c["q_lora_rank"] is None:
        q = lin(h, "q_proj")
    else:
        q = lin(rms(lin(h, "q_a_proj"), t[a + "q_a_layernorm.weight"],
                    LATENT_EPS), "q_b_proj")
    q = q.reshape(B, S, nh, dn + dr).transpose(0, 2, 1, 3)
    q_nope, q_pe = q[..., :dn], q[..., dn:]
    ckv = lin(h, "kv_a_proj_with_mqa")
    latent = rms(ckv[..., :r], t[a + "kv_a_layernorm.weight"], LATENT_EPS)
    k_pe = ckv[..., r:]                                   # [B, S, dr]
    kv = lin(latent, "kv_b_proj").reshape(B, S, nh, dn + dv).transpose(
        0, 2, 1, 3)
    k_nope, v = kv[..., :dn], kv[..., dn:]
    inv, att, scale = rope_params(c)
    freqs = np.arange(S, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(freqs) * att, np.sin(freqs) * att
    layout = rope_layout(c)
    q_pe = apply_rope(q_pe, cos, sin, layout)             # [B, nh, S, dr]
    k_pe = apply_rope(k_pe, cos, sin, layout)             # [B, S, dr]
    s = (q_nope @ k_nope.transpose(0, 1, 3, 2)
         + q_pe @ k_pe[:, None].transpose(0, 1, 3, 2)) * scale
    causal = np.arange(S)[None, :] <= np.arange(S)[:, None]
    s = np.where(causal, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(B, S, nh * dv)
    if dump is not None:
        dump.update(h_norm=h, q_nope=q_nope, q_pe=q_pe, latent=latent,
                    k_pe=k_pe, k_nope=k_nope, value=v, attn_out=o,
                    inv_freq=inv, attention_factor=np.float64(att),
                    softmax_scale=np.float64(scale),
                    rope_layout=np.array(layout))
    return lin(o, "o_proj")


def swiglu(c, t, pre, x):
    g = x @ t[pre + "gate_proj.weight"].T
    u = x @ t[pre + "up_proj.weight"].T
    return (activation(g, ACT[c["hidden_act"]]) * u) @ \
        t[pre + "down_proj.weight"].T


def topk_desc(v, k):
    """Indices of the k largest per row (ties: the lower index first) and
    the gap between the k-th and the (k+1)-th value (inf when k = all)."""
    order = np.argsort(-v, axis=-1, kind="stable")
    vs = np.take_along_axis(v, order, -1)
    gap = (vs[:, k - 1] - vs[:, k]) if v.shape[1] > k else \
        np.full(v.shape[0], np.inf)
    return order[:, :k], gap


def group_mask(gscore, keep, per):
    idx, gap = topk_desc(gscore, keep)
    m = np.zeros(gscore.shape, bool)
    np.put_along_axis(m, idx, True, -1)
    return np.repeat(m, per, axis=1), gap


def route_v3(c, scores, bias):
    """DeepseekV3MoE.route_tokens_to_experts; returns (idx, weights, gap,
    masked experts picked)."""
    T, E = scores.shape
    G, per = c["n_group"], c["n_routed_experts"] // c["n_group"]
    choice = scores + bias[None, :]
    gscore = np.sort(choice.reshape(T, G, per), -1)[..., -2:].sum(-1)
    emask, ggap = group_mask(gscore, c["topk_group"], per)
    masked = np.where(emask, choice, 0.0)
    idx, egap = topk_desc(masked, c["num_experts_per_tok"])
    w = np.take_along_axis(scores, idx, -1)
    if c["norm_topk_prob"]:
        w = w / (w.sum(-1, keepdims=True) + 1e-20)
    w = w * c["routed_scaling_factor"]
    fill = ~np.take_along_axis(emask, idx, -1)
    return idx, w, np.minimum(ggap, egap), fill.any(-1)


def route_v2(c, scores):
    """DeepseekV2Moe.route_tokens_to_experts."""
    T, E = scores.shape
    gap = np.full(T, np.inf)
    fill = np.zeros(T, bool)
    masked = scores
    if c["topk_method"] == "group_limited_greedy":
        G = c["n_group"]
        per = E // G
        gscore = scores.reshape(T, G, per).max(-1)
        emask, gap = group_mask(gscore, c["topk_group"], per)
        masked = np.where(emask, scores, 0.0)
    idx, egap = topk_desc(masked, c["num_experts_per_tok"])
    if c["topk_method"] == "group_limited_greedy":
        fill = (~np.take_along_axis(emask, idx, -1)).any(-1)
    w = np.take_along_axis(masked, idx, -1) * c["routed_scaling_factor"]
    return idx, w, np.minimum(gap, egap), fill


ROUTING = []  # one dict per mixture-of-experts layer run


def moe(c, t, L, h):
    m = f"model.layers.{L}.mlp."
    tok = h.reshape(-1, h.shape[-1])
    T, E = tok.shape[0], c["n_routed_experts"]
    logits = tok @ t[m + "gate.weight"].T
    info = dict(layer=L, tokens=T)
    if c["fam"] == "v3":
        scores = 1.0 / (1.0 + np.exp(-logits))
        bias = t[m + "gate.e_score_correction_bias"]
        idx, w, gap, fill = route_v3(c, scores, bias)
        idx0 = route_v3(c, scores, np.zeros(E))[0]
        info["bias_changed"] = int(np.sum(
            np.any(np.sort(idx, -1) != np.sort(idx0, -1), -1)))
    else:
        z = np.exp(logits - logits.max(-1, keepdims=True))
        scores = z / z.sum(-1, keepdims=True)
        idx, w, gap, fill = route_v2(c, scores)
    info["counts"] = np.bincount(idx.ravel(), minlength=E).tolist()
    info["ties"] = int(np.sum(gap < TIE))
    info["min_gap"] = float(gap.min())
    info["fill"] = int(np.sum(fill))
    ROUTING.append(info)
    out = np.zeros_like(tok)
    for e in range(E):
        rows, slot = np.nonzero(idx == e)
        if len(rows):
            out[rows] += w[rows, slot][:, None] * swiglu(
                c, t, m + f"experts.{e}.", tok[rows])
    out += swiglu(c, t, m + "shared_experts.", tok)
    return out.reshape(h.shape)


def layer(c, t, L, x, dump=None):
    p = f"model.layers.{L}."
    eps = c["rms_norm_eps"]
    h = rms(x, t[p + "input_layernorm.weight"], eps)
    r = x + attention(c, t, L, h, dump)
    h = rms(r, t[p + "post_attention_layernorm.weight"], eps)
    y = moe(c, t, L, h) if is_moe(c, L) else swiglu(c, t, p + "mlp.", h)
    return r + y


# ---------------------------------------------------------------------------
# The run.
# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*", help="EXE CONFIG (CONFIG alone "
                    "with --no-exe)")
    ap.add_argument("--mode", default="layer", choices=["layer", "model"])
    ap.add_argument("--layer", type=int, default=0)
    ap.add_argument("--to", type=int, help="model: the last layer")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=7)
    ap.add_argument("--weights-dtype", default="F32",
                    choices=["F32", "BF16", "FP8"])
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bias-std", type=float, default=0.1,
                    help="std of the random e_score_correction_bias")
    ap.add_argument("--decode", type=int, default=0,
                    help="layer mode: the executable runs the first seq - N "
                    "tokens (a prefill, --cache-out), then the last N in "
                    "steps of --step tokens, each after the latent cache of "
                    "the tokens before it (--cache-in/--cache-out); the "
                    "outputs, concatenated, against the reference over the "
                    "whole sequence")
    ap.add_argument("--step", type=int, default=1,
                    help="tokens per decode step (--decode)")
    ap.add_argument("--keep", help="also write the weights file here")
    ap.add_argument("--dump-ref", help="write x, the reference output and "
                    "layer L's attention intermediates to this .npz")
    ap.add_argument("--no-exe", action="store_true",
                    help="only compute the reference and print its summary")
    ap.add_argument("--fp8-selftest", action="store_true",
                    help="test the e4m3 encoder against all 256 codes")
    a = ap.parse_args()
    if a.fp8_selftest:
        return fp8_selftest()
    if a.no_exe and len(a.paths) in (1, 2):
        exe, cfg_path = None, a.paths[-1]
    elif len(a.paths) == 2:
        exe, cfg_path = a.paths
    else:
        ap.error("give EXE CONFIG (or CONFIG with --no-exe)")
    with open(cfg_path) as f:
        cfg = json.load(f)
    c = resolve(cfg)
    if a.mode == "layer":
        layers = [a.layer]
    else:
        if a.to is None or a.to < a.layer:
            ap.error("--mode model needs --to >= --layer")
        layers = list(range(a.layer, a.to + 1))
    if layers[-1] >= c["num_hidden_layers"] or layers[0] < 0:
        ap.error(f"the config has {c['num_hidden_layers']} layers")
    rng = np.random.default_rng(a.seed + 101 * a.layer + 7)
    t, linear = {}, set()
    for L in layers:
        lt, ll = make_weights(c, L, rng, a.bias_std)
        t.update(lt)
        linear |= ll
    x = rng.standard_normal((a.batch, a.seq, c["hidden_size"])).astype(
        np.float32)
    entries, stored = store(t, linear, a.weights_dtype)
    if a.keep:
        write_safetensors(a.keep, entries)
    out = None
    if exe is not None and not a.no_exe:
        with tempfile.TemporaryDirectory() as work:
            path = lambda n: os.path.join(work, n)  # noqa: E731
            write_safetensors(path("w.safetensors"), entries)
            np.save(path("x.npy"), x)
            where = (["--from", str(a.layer), "--to", str(a.to)]
                     if a.mode == "model" else ["--layer", str(a.layer)])
            cmd = [exe, a.mode] + where + [
                "--weights", path("w.safetensors"), "--x", path("x.npy"),
                "--out", path("y.npy")]
            if a.decode:
                if a.mode != "layer" or not 0 < a.decode < a.seq:
                    ap.error("--decode N needs --mode layer and 0 < N < seq")
                # The prefill, then the decode steps, each reading the
                # cache the step before wrote (two files in turn: no
                # output is an input).
                first = a.seq - a.decode
                np.save(path("x.npy"), x[:, :first])
                subprocess.run(cmd + ["--cache-out", path("c0.npy")],
                               check=True)
                outs, t, n = [np.load(path("y.npy"))], first, 0
                while t < a.seq:
                    e = min(a.seq, t + a.step)
                    np.save(path("x.npy"), x[:, t:e])
                    subprocess.run(cmd + ["--cache-in", path(f"c{n % 2}.npy"),
                                          "--cache-out",
                                          path(f"c{(n + 1) % 2}.npy")],
                                   check=True)
                    outs.append(np.load(path("y.npy")))
                    t, n = e, n + 1
                cache = np.load(path(f"c{n % 2}.npy"))
                if cache.shape != (a.batch, a.seq, c["kv_lora_rank"]
                                   + c["qk_rope_head_dim"]):
                    print(f"FAIL latent cache shape {list(cache.shape)}")
                    return 1
                out = np.concatenate(outs, axis=1)
            else:
                subprocess.run(cmd, check=True)
                out = np.load(path("y.npy"))
    h = x.astype(np.float64)
    dump = {} if a.dump_ref else None
    for L in layers:
        h = layer(c, stored, L, h, dump if L == a.layer else None)
    ref = h
    if a.dump_ref:
        np.savez(a.dump_ref, x=x, out=ref, layer=np.int64(a.layer), **dump)
    span = (f"layers {layers[0]}..{layers[-1]}" if len(layers) > 1
            else f"layer {layers[0]}")
    if out is None:
        ok = bool(np.isfinite(ref).all())
        print(f"{'ref' if ok else 'FAIL'} {c['model_type']} {span} {a.mode} "
              f"max|ref|={np.abs(ref).max():.4g} shape={list(ref.shape)} "
              f"weights={a.weights_dtype} (no executable)")
    else:
        rel = (np.abs(out - ref).max() / np.abs(ref).max()
               if out.shape == ref.shape else np.inf)
        ok = out.shape == ref.shape and np.isfinite(out).all() and \
            rel <= a.tol
        steps = (f" decode {a.decode} in steps of {a.step}" if a.decode
                 else "")
        print(f"{'ok' if ok else 'FAIL'} {c['model_type']} {span} {a.mode}"
              f"{steps} max_rel_err={rel:.3e} shape={list(out.shape)}")
    for info in ROUTING:
        print(f"tokens per expert: {info['counts']}")
        if "bias_changed" in info:
            print(f"bias changed {info['bias_changed']} of {info['tokens']} "
                  f"selections (layer {info['layer']})")
        if info["ties"]:
            print(f"WARNING: near-tie in routing: layer {info['layer']}, "
                  f"{info['ties']} of {info['tokens']} selections decided by "
                  f"a gap < {TIE:g} (min gap {info['min_gap']:.3g}); the "
                  "executable may pick differently")
        if info["fill"]:
            print(f"WARNING: layer {info['layer']}: {info['fill']} of "
                  f"{info['tokens']} selections took an expert of a masked "
                  "group (score filled with 0.0)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
