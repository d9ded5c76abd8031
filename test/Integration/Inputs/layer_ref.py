"""Float64 reference for the attention block of any of the 13 families, as
transformers' modeling code writes it, against an executable's `block`.

Everything comes from the config.json itself, read with the defaults of the
family's transformers config class (nothing from the compiler): which layer
is which (T5 and Whisper: the encoder's layers, then each decoder layer's
self and cross attention), heads, head size, norms, scales, windows, RoPE,
biases and the checkpoint tensor names. Random weights under those names go
into a .safetensors file (F32, or BF16 / F16 with --weights-dtype, in which
case the reference uses the rounded weights), the block runs on random
hidden states, and the output must be within --tol of the float64 block,
relative to max |reference|.

Family by family (transformers' modeling_<family>.py):
  llama, mistral, qwen2, qwen3, gemma2, gemma3, phi3, qwen3_next (full
  attention): RMSNorm (Gemma, Qwen3-Next: (1 + w)), q/k/v projections (Qwen2:
  biases; Phi-3: one qkv_proj [q | k | v]; Qwen3-Next: q_proj gives per head
  [query, gate]), q/k RMSNorm per head (Qwen3, Gemma 3, Qwen3-Next),
  rotate-half RoPE on the first partial_rotary_factor of each head (Gemma 3's
  sliding layers with rope_local_base_freq), causal GQA with the family's
  sliding window, Gemma's 1/sqrt(query_pre_attn_scalar) and soft-capping,
  Qwen3-Next's sigmoid output gate, o_proj, Gemma's post-norm, residual.
  glm4_moe: q/k/v biases with attention_bias (o_proj none), q/k RMSNorm per
  head with use_qk_norm, RoPE on the first half of each head; its mixture
  of experts: Glm4MoeMoE (sigmoid scores, e_score_correction_bias for the
  selection, groups by their best two, shared experts) after
  first_k_dense_replace dense layers.
  gpt2: ln_1, Conv1D c_attn ([in, out] weight, bias), causal MHA (1/sqrt(d),
  / (layer + 1) with scale_attn_by_inverse_layer_idx), c_proj, residual.
  bert: query/key/value with biases, bidirectional with key padding,
  output.dense, LayerNorm(x + attention) (post-norm).
  falcon: LayerNorm (ln_attn in the new architecture), query_key_value laid
  out as multi-query [q heads, k, v], grouped per KV head [q.., k, v] (new
  architecture) or per head [q, k, v], RoPE, dense, residual (the parallel
  MLP is the feed-forward half).
  t5: T5LayerNorm (RMS, no bias), q/k/v/o without bias or scaling, the
  bucketed relative-position bias of block 0's table (bidirectional in the
  encoder, causal in the decoder; none in cross attention), key padding.
  whisper: LayerNorm, q_proj (bias) scaled by d^-0.5, k_proj (no bias),
  v_proj, out_proj, residual; encoder bidirectional, decoder causal, cross
  attention on the encoder's output with key padding.

With --mode layer (the executable's `layer`) the whole transformer layer
holding L: its attention sub-blocks (a decoder's self then cross attention)
and the feed-forward network with its norm and residual, as each family's
decoder/encoder layer class composes them (SwiGLU / GeGLU gate_proj,
up_proj, down_proj, Phi-3's gate_up_proj; GPT-2's Conv1D c_fc / c_proj with
gelu_new; BERT's intermediate / output with its post LayerNorm; Falcon's
dense_h_to_4h / dense_4h_to_h in parallel with the attention; T5's
DenseReluDense (relu, or gated-gelu with wi_0 / wi_1); Whisper's fc1 / fc2;
Gemma's pre/post feed-forward norms). --mode model runs layers L..--to.

usage: layer_ref.py EXE CONFIG [--mode block|layer|model] --layer L
       [--to B] [--seq S] [--batch B] [--mem-seq M] [--lengths N,N,...]
       [--weights-dtype F32|BF16|F16]
Prints one `ok`/`FAIL` line; exit 1 on a failure.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import qwen3_next_block_ref as qnb  # noqa: E402
from block_ref import rope  # noqa: E402

ROPE_FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "qwen3",
                 "qwen3_moe", "qwen3_next", "glm4_moe", "gpt_oss", "olmo2",
                 "minimax_m2", "cohere2", "llama4",
                 "gemma2", "gemma3", "phi3")


# ---------------------------------------------------------------------------
# What the config says about layer L (the family's config class defaults).
# ---------------------------------------------------------------------------

def text_config(cfg):
    if cfg.get("model_type") in ("gemma3", "llama4") and "text_config" in cfg:
        return cfg["text_config"], "language_model.model.layers.{i}."
    return cfg, "model.layers.{i}."


def family(cfg):
    fam = cfg["model_type"]
    return "llama4" if fam == "llama4_text" else fam


def llama3_inv_freq(theta, dim, rs):
    """transformers' _compute_llama3_parameters: wavelengths past the old
    context divided by factor, those under old/high kept, the band between
    interpolated (none when the two factors are equal)."""
    inv = 1.0 / theta ** (np.arange(0, dim, 2) / dim)
    factor, low, high = rs["factor"], rs["low_freq_factor"], \
        rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    out = np.where(wavelen > old / low, inv / factor, inv)
    if high > low:
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        out = np.where(medium, smoothed, out)
    return out


def yarn_inv_freq(theta, dim, rs, max_pos):
    """transformers' _compute_yarn_parameters: inverse frequencies blended
    between extrapolation and interpolation by a linear ramp over the
    correction range, and the attention factor (mscale)."""
    factor = rs["factor"]
    orig = rs.get("original_max_position_embeddings") or max_pos
    beta_fast = rs.get("beta_fast") or 32
    beta_slow = rs.get("beta_slow") or 1
    truncate = rs.get("truncate", True)

    def get_mscale(scale, mscale=1):
        return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0
    attn = rs.get("attention_factor")
    if attn is None:
        if rs.get("mscale") and rs.get("mscale_all_dim"):
            attn = get_mscale(factor, rs["mscale"]) / \
                get_mscale(factor, rs["mscale_all_dim"])
        else:
            attn = get_mscale(factor)

    def corr_dim(rot):
        return dim * math.log(orig / (rot * 2 * math.pi)) / \
            (2 * math.log(theta))
    low, high = corr_dim(beta_fast), corr_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    pos = theta ** (np.arange(0, dim, 2) / dim)
    ramp = np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)
    extra = 1 - ramp
    inv = (1 / (factor * pos)) * (1 - extra) + (1 / pos) * extra
    return inv, attn


def rope_layer(cfg, fam, L):
    c, prefix = text_config(cfg)
    H = c.get("hidden_size", 2304 if fam.startswith("gemma") else
              2048 if fam == "qwen3_moe" else 2880 if fam == "gpt_oss"
              else 3072 if fam == "minimax_m2" else
              5120 if fam == "llama4" else 4096)
    hq = c.get("num_attention_heads", 8 if fam.startswith("gemma") else
               96 if fam == "glm4_moe" else 64 if fam == "gpt_oss" else
               48 if fam == "minimax_m2" else 40 if fam == "llama4" else 32)
    hkv = c.get("num_key_value_heads",
                {"gemma2": 4, "gemma3": 4, "mistral": 8, "mixtral": 8,
                 "qwen3_moe": 4, "glm4_moe": 8, "gpt_oss": 8,
                 "minimax_m2": 8, "llama4": 8}.get(fam, hq))
    dflt_d = {"qwen3": 128, "qwen3_next": 256, "gemma2": 256,
              "gemma3": 256, "glm4_moe": 128, "gpt_oss": 64,
              "minimax_m2": 128, "llama4": 128}.get(fam, H // hq)
    d = c.get("head_dim") or dflt_d
    n = c.get("num_hidden_layers", 26 if fam.startswith("gemma") else
              24 if fam == "qwen3_moe" else 46 if fam == "glm4_moe" else
              36 if fam == "gpt_oss" else 62 if fam == "minimax_m2" else
              48 if fam == "llama4" else 32)
    # Layer types, as each config class derives them.
    types = c.get("layer_types")
    window = c.get("sliding_window")
    if types is None:
        if fam == "mixtral":  # MixtralConfig: sliding_window None
            window = c.get("sliding_window")
            types = ["sliding_attention" if window else "full_attention"] * n
        elif fam == "qwen3_moe":  # every layer slides with use_sliding_window
            window = (c.get("sliding_window", 4096)
                      if c.get("use_sliding_window", False) else None)
            types = ["sliding_attention" if window else "full_attention"] * n
        elif fam == "mistral" or fam == "phi3":
            window = c.get("sliding_window", 4096 if fam == "mistral" else None)
            types = ["sliding_attention" if window else "full_attention"] * n
        elif fam in ("qwen2", "qwen3"):
            use = c.get("use_sliding_window", False)
            mwl = c.get("max_window_layers", 28)
            window = c.get("sliding_window", 4096)
            types = ["sliding_attention" if use and i >= mwl else
                     "full_attention" for i in range(n)]
        elif fam == "gpt_oss":  # GptOssConfig: (i + 1) % 2 slides
            window = c.get("sliding_window", 128)
            types = ["sliding_attention" if (i + 1) % 2 else
                     "full_attention" for i in range(n)]
        elif fam == "gemma2":
            window = c.get("sliding_window", 4096)
            types = ["sliding_attention" if i % 2 == 0 else "full_attention"
                     for i in range(n)]
        elif fam in ("gemma3", "cohere2"):
            window = c.get("sliding_window", 4096)
            pat = c.get("sliding_window_pattern",
                        4 if fam == "cohere2" else 6)
            types = ["sliding_attention" if (i + 1) % pat else
                     "full_attention" for i in range(n)]
        elif fam == "llama4":
            pass  # from no_rope_layers below
        elif fam == "qwen3_next":
            k = c.get("full_attention_interval", 4)
            types = ["linear_attention" if (i + 1) % k else "full_attention"
                     for i in range(n)]
        else:
            types = ["full_attention"] * n
    elif window is None and fam in ("gemma2", "gemma3", "mistral", "cohere2"):
        window = 4096
    use_rope = True
    if fam == "llama4":
        # Llama4TextConfig: no_rope_layers (1: RoPE), default every 4th
        # layer NoPE; layer_types: chunked on RoPE layers, full on NoPE.
        nr = c.get("no_rope_layers") or [
            int((i + 1) % c.get("no_rope_layer_interval", 4) != 0)
            for i in range(n)]
        use_rope = bool(nr[L])
        if types is None:
            types = ["chunked_attention" if r else "full_attention"
                     for r in nr]
    t = types[L]
    gemma = fam in ("gemma2", "gemma3")
    if t == "linear_attention":
        # Qwen3NextGatedDeltaNet: qwen3_next_block_ref.linear_layer.
        return dict(H=H, linear=True, pre=prefix.replace("{i}", str(L)),
                    eps=c.get("rms_norm_eps", 1e-6), norm="rms1",
                    norm_w=prefix.replace("{i}", str(L))
                    + "input_layernorm.weight", cross=False, causal=True)
    pre = prefix.replace("{i}", str(L))
    a = pre + "self_attn."
    theta = c.get("rope_theta",
                  1e6 if fam in ("gemma3", "mixtral") else
                  150000.0 if fam == "gpt_oss" else
                  5e6 if fam == "minimax_m2" else
                  500000.0 if fam == "llama4" else 10000.0)
    if fam == "gemma3" and t == "sliding_attention":
        theta = c.get("rope_local_base_freq", 10000.0)
    prf = c.get("partial_rotary_factor", 0.25 if fam == "qwen3_next" else
                0.5 if fam == "glm4_moe" else 1.0)
    if fam == "minimax_m2" and "rotary_dim" in c:  # MiniMax: in features
        prf = c["rotary_dim"] / d
    rs = c.get("rope_scaling") or {}
    if fam == "gpt_oss" and not rs:
        # GptOssConfig's rope_parameters when the config gives none.
        rs = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
              "beta_slow": 1.0, "truncate": False,
              "original_max_position_embeddings": 4096}
    rd = int(d * prf)
    longrope = None
    if rs.get("rope_type", rs.get("type")) == "yarn":
        # _compute_yarn_parameters, as a table both sides of no switch.
        inv, attn = yarn_inv_freq(theta, rd, rs, c.get(
            "max_position_embeddings", 131072))
        longrope = dict(short=None, long=None, inv=inv, orig=None, attn=attn)
    if rs.get("rope_type", rs.get("type")) == "llama3":
        longrope = dict(short=None, long=None, orig=None, attn=1.0,
                        inv=llama3_inv_freq(theta, rd, rs))
    if rs.get("rope_type", rs.get("type")) in ("longrope", "su"):
        # _compute_longrope_parameters: the top-level
        # original_max_position_embeddings first (Phi-3), factor by default
        # max / original, attention factor sqrt(1 + ln factor / ln original).
        mp = c.get("max_position_embeddings", 4096)
        orig = (c.get("original_max_position_embeddings")
                or rs.get("original_max_position_embeddings") or mp)
        factor = rs.get("factor") or mp / orig
        attn = rs.get("attention_factor") or (
            1.0 if factor <= 1.0
            else math.sqrt(1 + math.log(factor) / math.log(orig)))
        longrope = dict(short=rs["short_factor"], long=rs["long_factor"],
                        orig=orig, attn=attn, inv=None)
    desc = dict(
        H=H, hq=hq, hkv=hkv, d=d, causal=True,
        window=window if t == "sliding_attention" else None,
        scale=(c.get("query_pre_attn_scalar", 256) ** -0.5 if gemma
               else d ** -0.5),
        softcap=(c.get("attn_logit_softcapping", 50.0) if fam == "gemma2"
                 else c.get("attn_logit_softcapping") if fam == "gemma3"
                 else None),
        rope=(None if (fam == "cohere2" and t != "sliding_attention") or
              not use_rope else (theta, int(d * prf))),
        # Cohere2: rotate_half over (x[2i], x[2i+1]) pairs; Llama 4: the
        # complex pairs (x[2i], x[2i+1]) likewise.
        interleaved=fam in ("cohere2", "llama4"),
        longrope=longrope if use_rope else None,
        # Llama 4: chunked attention, the weightless L2 norm on RoPE
        # layers, the temperature on NoPE ones.
        chunk=(c.get("attention_chunk_size", 8192)
               if fam == "llama4" and t == "chunked_attention" else None),
        l2_qk=fam == "llama4" and use_rope and c.get("use_qk_norm", True),
        temperature=((c.get("floor_scale", 8192), c.get("attn_scale", 0.1))
                     if fam == "llama4" and not use_rope and
                     c.get("attn_temperature_tuning", True) else None),
        eps=(c.get("layer_norm_eps", 1e-5) if fam == "cohere2" else
             c.get("rms_norm_eps",
                   1e-5 if fam in ("phi3", "mixtral", "glm4_moe", "olmo2",
                                   "llama4")
                   else 1e-6)),
        # Cohere2LayerNorm: mean-centred, weight only.
        norm="rms1" if gemma or fam == "qwen3_next" else
        "layer" if fam == "cohere2" else "rms",
        norm_w=None if fam == "olmo2" else pre + "input_layernorm.weight",
        post_norm_w=(pre + "post_attention_layernorm.weight"
                     if gemma or fam == "olmo2" else None),
        # Olmo2RMSNorm is w * x; Gemma's (1 + w) * x.
        post_norm="rms" if fam == "olmo2" else "rms1",
        qk_norm=("rms1" if fam in ("gemma3", "qwen3_next") else
                 "rms" if fam in ("qwen3", "qwen3_moe", "olmo2", "minimax_m2")
                 else
                 "rms" if fam == "glm4_moe" and c.get("use_qk_norm", False)
                 else None),
        q_norm=a + "q_norm.weight", k_norm=a + "k_norm.weight",
        # Olmo2Attention: q_norm/k_norm over the whole projection.
        qk_flat=fam in ("olmo2", "minimax_m2"),
        gate=fam == "qwen3_next",
        placement="output" if fam == "olmo2" else "pre", cross=False,
        sinks=a + "sinks" if fam == "gpt_oss" else None)
    bias = (fam == "qwen2" or
            (fam in ("llama", "qwen3", "qwen3_moe", "gemma2", "gemma3",
                     "qwen3_next", "glm4_moe", "olmo2", "cohere2")
             and c.get("attention_bias", False)) or
            (fam == "gpt_oss" and c.get("attention_bias", True)))
    # Glm4MoeAttention: o_proj never has a bias.
    obias = fam not in ("qwen2", "glm4_moe") and bias
    if fam == "phi3":
        desc["qkv"] = dict(w=a + "qkv_proj.weight", layout="concat")
    else:
        for r in "qkv":
            desc[r] = dict(w=a + f"{r}_proj.weight",
                           b=a + f"{r}_proj.bias" if bias else None)
    desc["o"] = dict(w=a + "o_proj.weight",
                     b=a + "o_proj.bias" if obias else None)
    return desc


def gpt2_layer(cfg, L):
    H = cfg.get("n_embd", cfg.get("hidden_size", 768))
    hq = cfg.get("n_head", cfg.get("num_attention_heads", 12))
    d = H // hq
    scale = d ** -0.5 if cfg.get("scale_attn_weights", True) else 1.0
    if cfg.get("scale_attn_by_inverse_layer_idx", False):
        scale /= L + 1
    p = f"h.{L}."
    return dict(H=H, hq=hq, hkv=hq, d=d, causal=True, window=None,
                scale=scale, softcap=None, rope=None,
                eps=cfg.get("layer_norm_epsilon", 1e-5), norm="layer",
                norm_w=p + "ln_1.weight", norm_b=p + "ln_1.bias",
                qkv=dict(w=p + "attn.c_attn.weight", b=p + "attn.c_attn.bias",
                         layout="concat", conv1d=True),
                o=dict(w=p + "attn.c_proj.weight", b=p + "attn.c_proj.bias",
                       conv1d=True),
                placement="pre", cross=False)


def bert_layer(cfg, L):
    H = cfg.get("hidden_size", 768)
    hq = cfg.get("num_attention_heads", 12)
    p = f"bert.encoder.layer.{L}.attention."
    return dict(H=H, hq=hq, hkv=hq, d=H // hq,
                causal=cfg.get("is_decoder", False), window=None,
                scale=(H // hq) ** -0.5, softcap=None, rope=None,
                eps=cfg.get("layer_norm_eps", 1e-12), norm="layer",
                norm_w=p + "output.LayerNorm.weight",
                norm_b=p + "output.LayerNorm.bias",
                q=dict(w=p + "self.query.weight", b=p + "self.query.bias"),
                k=dict(w=p + "self.key.weight", b=p + "self.key.bias"),
                v=dict(w=p + "self.value.weight", b=p + "self.value.bias"),
                o=dict(w=p + "output.dense.weight", b=p + "output.dense.bias"),
                placement="post", cross=False)


def falcon_layer(cfg, L):
    H = cfg.get("hidden_size", 4544)
    hq = cfg.get("num_attention_heads", 71)
    new = cfg.get("new_decoder_architecture", False)
    mq = cfg.get("multi_query", True)
    hkv = cfg.get("num_kv_heads", hq) if new else 1 if mq else hq
    layout = "grouped" if new else "concat" if mq else "per_head"
    bias = cfg.get("bias", False)
    nln = cfg.get("num_ln_in_parallel_attn") or 2
    ln = ("ln_attn" if new and cfg.get("parallel_attn", True) and nln == 2
          else "input_layernorm")
    p = f"transformer.h.{L}."
    d = H // hq
    a = p + "self_attention."
    return dict(H=H, hq=hq, hkv=hkv, d=d, causal=True, window=None,
                scale=d ** -0.5, softcap=None,
                rope=(cfg.get("rope_theta", 10000.0), d),
                eps=cfg.get("layer_norm_epsilon", 1e-5), norm="layer",
                norm_w=p + ln + ".weight", norm_b=p + ln + ".bias",
                qkv=dict(w=a + "query_key_value.weight",
                         b=a + "query_key_value.bias" if bias else None,
                         layout=layout),
                o=dict(w=a + "dense.weight",
                       b=a + "dense.bias" if bias else None),
                placement="pre", cross=False)


def encdec_layer(cfg, fam, L):
    """T5 and Whisper: the encoder's self-attention layers, then each decoder
    layer's self and cross attention."""
    if fam == "t5":
        E = cfg.get("num_layers", cfg.get("num_hidden_layers"))
        H = cfg.get("d_model", cfg.get("hidden_size"))
        hq = cfg.get("num_heads", cfg.get("num_attention_heads"))
        d = cfg.get("d_kv", cfg.get("head_dim"))
    else:
        E = cfg["encoder_layers"]
        H = cfg["d_model"]
    if L < E:
        stack, i, role = "encoder", L, "self"
    else:
        stack, i, role = "decoder", (L - E) // 2, ("self", "cross")[(L - E) % 2]
    if fam == "whisper":
        hq = cfg[f"{stack}_attention_heads"]
        d = H // hq
        p = f"model.{stack}.layers.{i}."
        a = p + ("self_attn." if role == "self" else "encoder_attn.")
        ln = p + ("self_attn_layer_norm." if role == "self"
                  else "encoder_attn_layer_norm.")
        return dict(H=H, hq=hq, hkv=hq, d=d,
                    causal=stack == "decoder" and role == "self", window=None,
                    scale=1.0, q_scale=d ** -0.5, softcap=None, rope=None,
                    eps=1e-5, norm="layer", norm_w=ln + "weight",
                    norm_b=ln + "bias",
                    q=dict(w=a + "q_proj.weight", b=a + "q_proj.bias"),
                    k=dict(w=a + "k_proj.weight", b=None),
                    v=dict(w=a + "v_proj.weight", b=a + "v_proj.bias"),
                    o=dict(w=a + "out_proj.weight", b=a + "out_proj.bias"),
                    placement="pre", cross=role == "cross")
    p = f"{stack}.block.{i}.layer.{0 if role == 'self' else 1}."
    a = p + ("SelfAttention." if role == "self" else "EncDecAttention.")
    desc = dict(H=H, hq=hq, hkv=hq, d=d,
                causal=stack == "decoder" and role == "self", window=None,
                scale=1.0, softcap=None, rope=None,
                eps=cfg.get("layer_norm_epsilon", 1e-6), norm="rms",
                norm_w=p + "layer_norm.weight",
                q=dict(w=a + "q.weight"), k=dict(w=a + "k.weight"),
                v=dict(w=a + "v.weight"), o=dict(w=a + "o.weight"),
                placement="pre", cross=role == "cross")
    if role == "self":
        desc["t5"] = dict(
            table=f"{stack}.block.0.layer.0.SelfAttention."
                  "relative_attention_bias.weight",
            buckets=cfg.get("relative_attention_num_buckets", 32),
            max_distance=cfg.get("relative_attention_max_distance", 128),
            bidirectional=stack == "encoder")
    return desc


def layer_desc(cfg, L):
    fam = family(cfg)
    if fam in ROPE_FAMILIES:
        return rope_layer(cfg, fam, L)
    if fam == "gpt2":
        return gpt2_layer(cfg, L)
    if fam == "bert":
        return bert_layer(cfg, L)
    if fam == "falcon":
        return falcon_layer(cfg, L)
    if fam in ("t5", "whisper"):
        return encdec_layer(cfg, fam, L)
    raise SystemExit(f"layer_ref: unknown model_type {fam}")


# ---------------------------------------------------------------------------
# The feed-forward network that closes the layer (None: a decoder's
# self-attention, which cross attention follows).
# ---------------------------------------------------------------------------

ACT = {"silu": "silu", "swish": "silu", "gelu": "gelu", "relu": "relu",
       "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}


def ffn_desc(cfg, desc, L):
    fam = family(cfg)
    H = desc["H"]
    if fam in ROPE_FAMILIES:
        c, _ = text_config(cfg)
        gemma = fam in ("gemma2", "gemma3")
        pre = desc["q"]["w"][: -len("self_attn.q_proj.weight")] \
            if fam == "olmo2" else \
            desc["norm_w"][: -len("input_layernorm.weight")]
        inter = c.get("intermediate_size", {
            "llama": 11008, "mistral": 14336, "mixtral": 14336,
            "qwen2": 22016, "qwen3": 22016, "qwen3_moe": 6144,
            "glm4_moe": 10944, "olmo2": 11008, "minimax_m2": 1536,
            "cohere2": 22528, "llama4": 8192, "gpt_oss": 2880,
            "gemma2": 9216, "gemma3": 9216,
            "phi3": 8192, "qwen3_next": 5632}[fam])
        act = ACT[c.get("hidden_activation", "gelu_pytorch_tanh") if gemma
                  else c.get("hidden_act", "silu")]
        next_ = fam == "qwen3_next"
        sparse = (fam in ("qwen3_next", "qwen3_moe")
                  and c.get("num_experts", 512 if next_ else 128) > 0
                  and (L + 1) % c.get("decoder_sparse_step", 1) == 0
                  and L not in (c.get("mlp_only_layers") or []))
        if fam == "gpt_oss":
            # GptOssMLP: router with bias, top-k logits softmaxed; experts
            # gate_up_proj [E, H, 2I] (gate, up interleaved) and down_proj
            # [E, I, H] (x @ W) with biases; the clamped SwiGLU.
            m = pre + "mlp."
            return dict(kind="gptoss", norm="rms", placement="pre",
                        norm_w=pre + "post_attention_layernorm.weight",
                        experts=c.get("num_local_experts", 128),
                        top_k=c.get("num_experts_per_tok", 4), inter=inter,
                        limit=c.get("swiglu_limit", 7.0),
                        alpha=c.get("swiglu_alpha", 1.702),
                        router=m + "router.weight", router_b=m + "router.bias",
                        gate_up=m + "experts.gate_up_proj",
                        gate_up_b=m + "experts.gate_up_proj_bias",
                        down=m + "experts.down_proj",
                        down_b=m + "experts.down_proj_bias")
        if fam == "llama4":
            # Llama4TextDecoderLayer: Llama4TextMoe on moe_layers, a SwiGLU
            # of intermediate_size_mlp on the others.
            step = c.get("interleave_moe_layer_step", 1)
            moe_layers = c.get("moe_layers") or list(
                range(step - 1, c.get("num_hidden_layers", 48), step))
            m = pre + "feed_forward."
            if L in moe_layers:
                return dict(kind="llama4moe", act=act, norm="rms",
                            placement="pre",
                            norm_w=pre + "post_attention_layernorm.weight",
                            experts=c.get("num_local_experts", 16),
                            top_k=c.get("num_experts_per_tok", 1),
                            inter=inter, router=m + "router.weight",
                            gate_up=m + "experts.gate_up_proj",
                            down=m + "experts.down_proj",
                            shared=m + "shared_expert.{p}_proj.weight")
            return dict(kind="gated", act=act, norm="rms", placement="pre",
                        norm_w=pre + "post_attention_layernorm.weight",
                        inter=c.get("intermediate_size_mlp", 16384),
                        gate=dict(w=m + "gate_proj.weight"),
                        up=dict(w=m + "up_proj.weight"),
                        down=dict(w=m + "down_proj.weight"))
        if fam == "minimax_m2":
            # MiniMaxM2SparseMoeBlock: sigmoid scores, the selection by
            # scores + e_score_correction_bias, the k scores / their sum.
            m = pre + "block_sparse_moe."
            return dict(kind="moe", act=act, norm="rms", placement="pre",
                        norm_w=pre + "post_attention_layernorm.weight",
                        experts=c.get("num_local_experts", 256),
                        top_k=c.get("num_experts_per_tok", 8),
                        norm_topk=True, inter=inter, scoring="sigmoid",
                        score_bias=m + "e_score_correction_bias",
                        groups=1, topk_groups=1, routed_scale=1.0,
                        norm_eps=0.0, router=m + "gate.weight",
                        expert=m + "experts.{e}.{p}.weight",
                        expert_roles=dict(gate="w1", up="w3", down="w2"))
        if fam == "mixtral":  # MixtralSparseMoeBlock: renormalized top-k
            m = pre + "block_sparse_moe."
            return dict(kind="moe", act=act, norm="rms", placement="pre",
                        norm_w=pre + "post_attention_layernorm.weight",
                        experts=c.get("num_local_experts", 8),
                        top_k=c.get("num_experts_per_tok", 2),
                        norm_topk=True, inter=inter,
                        router=m + "gate.weight",
                        expert=m + "experts.{e}.{p}.weight",
                        expert_roles=dict(gate="w1", up="w3", down="w2"))
        if fam == "glm4_moe" and L >= c.get("first_k_dense_replace", 1):
            # Glm4MoeMoE: DeepSeek-V3's sigmoid router with the selection
            # bias and groups, shared experts added unscaled.
            m = pre + "mlp."
            mi = c.get("moe_intermediate_size", 1408)
            return dict(kind="moe", act=act, norm="rms", placement="pre",
                        norm_w=pre + "post_attention_layernorm.weight",
                        experts=c.get("n_routed_experts", 128),
                        top_k=c.get("num_experts_per_tok", 8),
                        norm_topk=c.get("norm_topk_prob", True), inter=mi,
                        scoring="sigmoid",
                        score_bias=m + "gate.e_score_correction_bias",
                        groups=c.get("n_group", 1),
                        topk_groups=c.get("topk_group", 1),
                        routed_scale=c.get("routed_scaling_factor", 1.0),
                        shared_inter=mi * c.get("n_shared_experts", 1),
                        router=m + "gate.weight",
                        expert=m + "experts.{e}.{p}_proj.weight",
                        shared=m + "shared_experts.{p}_proj.weight")
        if sparse and not next_:  # Qwen3MoeSparseMoeBlock: no shared one
            m = pre + "mlp."
            return dict(kind="moe", act=act, norm="rms", placement="pre",
                        norm_w=pre + "post_attention_layernorm.weight",
                        experts=c.get("num_experts", 128),
                        top_k=c.get("num_experts_per_tok", 8),
                        norm_topk=c.get("norm_topk_prob", False),
                        inter=c.get("moe_intermediate_size", 768),
                        router=m + "gate.weight",
                        expert=m + "experts.{e}.{p}_proj.weight")
        if sparse:  # Qwen3NextSparseMoeBlock
            m = pre + "mlp."
            return dict(kind="moe", act=act, norm="rms1", placement="pre",
                        norm_w=pre + "post_attention_layernorm.weight",
                        experts=c.get("num_experts", 512),
                        top_k=c.get("num_experts_per_tok", 10),
                        norm_topk=c.get("norm_topk_prob", True),
                        inter=c.get("moe_intermediate_size", 512),
                        shared_inter=c.get("shared_expert_intermediate_size",
                                           512),
                        router=m + "gate.weight",
                        expert=m + "experts.{e}.{p}_proj.weight",
                        shared=m + "shared_expert.{p}_proj.weight",
                        shared_gate=m + "shared_expert_gate.weight")
        f = dict(kind="gated", inter=inter, act=act, norm=desc["norm"],
                 placement="prepost" if gemma else
                 "output" if fam == "olmo2" else
                 "parallel" if fam == "cohere2" else "pre",
                 post_norm="rms" if fam == "olmo2" else "rms1",
                 down=dict(w=pre + "mlp.down_proj.weight"))
        if gemma:
            f["norm_w"] = pre + "pre_feedforward_layernorm.weight"
            f["post_norm_w"] = pre + "post_feedforward_layernorm.weight"
        elif fam == "olmo2":  # Olmo2DecoderLayer: the MLP's output normed
            f["post_norm_w"] = pre + "post_feedforward_layernorm.weight"
        elif fam == "cohere2":  # the MLP of the attention's normed input
            pass
        else:
            f["norm_w"] = pre + "post_attention_layernorm.weight"
        if fam == "phi3":
            f["gate_up"] = dict(w=pre + "mlp.gate_up_proj.weight")
        else:
            f["gate"] = dict(w=pre + "mlp.gate_proj.weight")
            f["up"] = dict(w=pre + "mlp.up_proj.weight")
        return f
    if fam == "gpt2":
        p = f"h.{L}."
        return dict(kind="dense", inter=cfg.get("n_inner") or 4 * H,
                    act=ACT[cfg.get("activation_function", "gelu_new")],
                    norm="layer", placement="pre", norm_w=p + "ln_2.weight",
                    norm_b=p + "ln_2.bias",
                    up=dict(w=p + "mlp.c_fc.weight", b=p + "mlp.c_fc.bias",
                            conv1d=True),
                    down=dict(w=p + "mlp.c_proj.weight",
                              b=p + "mlp.c_proj.bias", conv1d=True))
    if fam == "bert":
        p = f"bert.encoder.layer.{L}."
        return dict(kind="dense", inter=cfg.get("intermediate_size", 3072),
                    act=ACT[cfg.get("hidden_act", "gelu")], norm="layer",
                    placement="post", norm_w=p + "output.LayerNorm.weight",
                    norm_b=p + "output.LayerNorm.bias",
                    up=dict(w=p + "intermediate.dense.weight",
                            b=p + "intermediate.dense.bias"),
                    down=dict(w=p + "output.dense.weight",
                              b=p + "output.dense.bias"))
    if fam == "falcon":
        # FalconDecoderLayer.forward.
        p = f"transformer.h.{L}."
        new = cfg.get("new_decoder_architecture", False)
        parallel = cfg.get("parallel_attn", True)
        bias = cfg.get("bias", False)
        nln = cfg.get("num_ln_in_parallel_attn") or (2 if new else 1)
        f = dict(kind="dense", inter=cfg.get("ffn_hidden_size") or 4 * H,
                 act=ACT[cfg.get("activation", "gelu")], norm="layer",
                 up=dict(w=p + "mlp.dense_h_to_4h.weight",
                         b=p + "mlp.dense_h_to_4h.bias" if bias else None),
                 down=dict(w=p + "mlp.dense_4h_to_h.weight",
                           b=p + "mlp.dense_4h_to_h.bias" if bias else None))
        if new and nln == 2:
            f.update(placement="parallel", norm_w=p + "ln_mlp.weight",
                     norm_b=p + "ln_mlp.bias")
        elif new or parallel:
            f.update(placement="parallel")  # the attention's normed input
        else:
            f.update(placement="pre",
                     norm_w=p + "post_attention_layernorm.weight",
                     norm_b=p + "post_attention_layernorm.bias")
        return f
    # T5, Whisper: the encoder's layers and the decoder's cross attention.
    E = cfg.get("num_layers", cfg.get("num_hidden_layers")) if fam == "t5" \
        else cfg["encoder_layers"]
    if L >= E and (L - E) % 2 == 0:
        return None
    stack, i = ("encoder", L) if L < E else ("decoder", (L - E) // 2)
    if fam == "whisper":
        p = f"model.{stack}.layers.{i}."
        return dict(kind="dense", inter=cfg.get(f"{stack}_ffn_dim", 1536),
                    act=ACT[cfg.get("activation_function", "gelu")],
                    norm="layer", placement="pre",
                    norm_w=p + "final_layer_norm.weight",
                    norm_b=p + "final_layer_norm.bias",
                    up=dict(w=p + "fc1.weight", b=p + "fc1.bias"),
                    down=dict(w=p + "fc2.weight", b=p + "fc2.bias"))
    proj = cfg.get("feed_forward_proj", "relu")
    gated = proj.startswith("gated-")
    act = proj.split("-")[-1]
    if proj == "gated-gelu":
        act = "gelu_new"  # T5Config
    p = f"{stack}.block.{i}.layer.{1 if stack == 'encoder' else 2}."
    d = p + "DenseReluDense."
    f = dict(kind="gated" if gated else "dense", inter=cfg.get("d_ff", 2048),
             act=ACT[act], norm="rms", placement="pre",
             norm_w=p + "layer_norm.weight", down=dict(w=d + "wo.weight"))
    if gated:
        f.update(gate=dict(w=d + "wi_0.weight"), up=dict(w=d + "wi_1.weight"))
    else:
        f["up"] = dict(w=d + "wi.weight")
    return f


def make_ffn_weights(desc, f, rng):
    H, n = desc["H"], f["inter"]
    t = {}
    mat = lambda o, i: rng.standard_normal((o, i)) / np.sqrt(i)
    vec = lambda k, s=0.1: rng.standard_normal(k) * s
    one = 0.0 if f["norm"] == "rms1" else 1.0
    if f.get("norm_w"):
        t[f["norm_w"]] = one + vec(H)
    if f.get("norm_b"):
        t[f["norm_b"]] = vec(H)
    if f.get("post_norm_w"):
        t[f["post_norm_w"]] = vec(H)
    if f["kind"] == "gptoss":
        E = f["experts"]
        t[f["router"]] = mat(E, H)
        t[f["router_b"]] = vec(E, 1.0)
        # x @ W layouts; gate/up large enough that the clamp at swiglu_limit
        # bites on some features.
        t[f["gate_up"]] = rng.standard_normal((E, H, 2 * n)) * 6 / np.sqrt(H)
        t[f["gate_up_b"]] = vec((E, 2 * n), 1.0)
        t[f["down"]] = rng.standard_normal((E, n, H)) / np.sqrt(n)
        t[f["down_b"]] = vec((E, H), 0.5)
        return t
    if f["kind"] == "llama4moe":
        E = f["experts"]
        t[f["router"]] = mat(E, H) * 2  # logits spread: sigmoids far from 1/2
        t[f["gate_up"]] = rng.standard_normal((E, H, 2 * n)) / np.sqrt(H)
        t[f["down"]] = rng.standard_normal((E, n, H)) / np.sqrt(n)
        for p, o, i in (("gate", n, H), ("up", n, H), ("down", H, n)):
            t[f["shared"].replace("{p}", p)] = mat(o, i)
        return t
    if f["kind"] == "moe":
        t[f["router"]] = mat(f["experts"], H)
        for e in range(f["experts"]):
            t[expert_name(f, e, "gate")] = mat(n, H)
            t[expert_name(f, e, "up")] = mat(n, H)
            t[expert_name(f, e, "down")] = mat(H, n)
        if f.get("shared"):
            si = f["shared_inter"]
            t[f["shared"].replace("{p}", "gate")] = mat(si, H)
            t[f["shared"].replace("{p}", "up")] = mat(si, H)
            t[f["shared"].replace("{p}", "down")] = mat(H, si)
            if f.get("shared_gate"):
                t[f["shared_gate"]] = mat(1, H)
        if f.get("score_bias"):
            # Sigmoid scores sit near 0.5; 0.05 moves a few selections.
            t[f["score_bias"]] = vec(f["experts"], 0.05)
        return t
    for role, o, i in (("gate", n, H), ("up", n, H), ("gate_up", 2 * n, H),
                       ("down", H, n)):
        if role in f:
            w = mat(o, i)
            t[f[role]["w"]] = w.T if f[role].get("conv1d") else w
            if f[role].get("b"):
                t[f[role]["b"]] = vec(o)
    return t


def activation(x, act):
    if act == "silu":
        return x / (1.0 + np.exp(-x))
    if act == "relu":
        return np.maximum(x, 0.0)
    if act == "gelu":
        return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi)
                                    * (x + 0.044715 * x ** 3)))


ROUTING = []  # tokens per expert, one list per MoE layer run


def expert_name(f, e, role):
    """Expert e's tensor of `role` (gate, up, down): the checkpoint's name
    (Mixtral's w1, w3, w2)."""
    p = f.get("expert_roles", {}).get(role, role)
    return f["expert"].replace("{e}", str(e)).replace("{p}", p)


def sigmoid_route(f, t, s):
    """Glm4MoeMoE.route_tokens_to_experts for one token's sigmoid scores s:
    the choice scores s + e_score_correction_bias, each group scored by its
    best two, the topk_group best groups kept (the others' experts at 0.0,
    masked_fill), the top_k experts of those; their weights are the scores
    without the bias, renormalized (sum + 1e-20) with norm_topk_prob, times
    routed_scaling_factor. Ties: the lower index first."""
    choice = s + t[f["score_bias"]]
    G = f["groups"]
    per = f["experts"] // G
    gscore = [np.sort(choice[g * per:(g + 1) * per])[-2:].sum()
              for g in range(G)]
    keep = np.argsort(-np.array(gscore), kind="stable")[: f["topk_groups"]]
    masked = np.zeros_like(choice)
    for g in keep:
        masked[g * per:(g + 1) * per] = choice[g * per:(g + 1) * per]
    idx = np.argsort(-masked, kind="stable")[: f["top_k"]]
    w = s[idx]
    if f["norm_topk"]:
        w = w / (w.sum() + f.get("norm_eps", 1e-20))
    return list(zip(idx.tolist(), (w * f["routed_scale"]).tolist()))


def moe(f, t, h):
    """transformers' Qwen3NextSparseMoeBlock, Qwen3MoeSparseMoeBlock and
    MixtralSparseMoeBlock: softmax router, top-k (the first expert on ties),
    norm_topk_prob (Mixtral: always), each expert a SwiGLU network, the
    shared expert (Qwen3-Next only) scaled by sigmoid(shared_expert_gate(x));
    Glm4MoeMoE: sigmoid_route, the shared experts added as they are."""
    tok = h.reshape(-1, h.shape[-1])
    logits = tok @ t[f["router"]].T
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    if f.get("scoring") == "sigmoid":
        p = 1.0 / (1.0 + np.exp(-logits))
    out = np.zeros_like(tok)
    counts = [0] * f["experts"]
    ROUTING.append(counts)
    swiglu = lambda v, name: (activation(v @ t[name("gate")].T, f["act"])
                              * (v @ t[name("up")].T)) @ t[name("down")].T
    for i in range(tok.shape[0]):
        if f.get("scoring") == "sigmoid":
            picks = sigmoid_route(f, t, p[i])
            total = 1.0
        else:
            q = p[i].copy()
            picks = []
            for _ in range(f["top_k"]):
                e = int(np.argmax(q))
                picks.append((e, p[i, e]))
                q[e] = -np.inf
            total = sum(w for _, w in picks) if f["norm_topk"] else 1.0
        for e, w in picks:
            counts[e] += 1
            out[i] += w / total * swiglu(
                tok[i], lambda role, e=e: expert_name(f, e, role))
    if f.get("shared"):
        shared = swiglu(tok, lambda role: f["shared"].replace("{p}", role))
        if f.get("shared_gate"):
            shared = shared / (1.0 + np.exp(-(tok @ t[f["shared_gate"]].T)))
        out += shared
    return out.reshape(h.shape)


FP4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def mxfp4(rng, shape, scale_lo=122, scale_hi=127):
    """Random MXFP4 [.., C] (C a multiple of 32): the blocks (U8 [.., C/32,
    16], two FP4 E2M1 codes a byte, the low nibble first), the E8M0 scales
    (U8 [.., C/32]) and the values they stand for (float64 [.., C])."""
    *lead, C = shape
    codes = rng.integers(0, 16, size=(*lead, C // 32, 32))
    scales = rng.integers(scale_lo, scale_hi + 1, size=(*lead, C // 32))
    values = FP4[codes] * np.ldexp(1.0, scales - 127)[..., None]
    blocks = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    return blocks, scales.astype(np.uint8), values.reshape(*lead, C)


def to_mxfp4(f, t, rng):
    """gpt-oss's experts stored as the MXFP4 checkpoints store them
    (gate_up_proj_blocks [E, 2I, H/32, 16]: rows interleaved gate/up;
    down_proj_blocks [E, H, I/32, 16]); the reference takes their values
    in transformers' layout ([E, H, 2I], [E, I, H])."""
    E, H, n2 = t[f["gate_up"]].shape
    n = n2 // 2
    views = {}
    for name, rows, cols in ((f["gate_up"], 2 * n, H), (f["down"], H, n)):
        blocks, scales, values = mxfp4(rng, (E, rows, cols))
        del t[name]
        t[name + "_blocks"], t[name + "_scales"] = blocks, scales
        views[name] = values.transpose(0, 2, 1)  # the reference's view
    return views


def gptoss_moe(f, t, h):
    """transformers' GptOssMLP (GptOssTopKRouter, GptOssExperts) in
    float64: top-k router logits softmaxed over the k (the first expert on
    ties), each chosen expert's (clamp(up) + 1) * g * sigmoid(alpha g),
    g = min(gate, limit), weighted."""
    tok = h.reshape(-1, h.shape[-1])
    logits = tok @ t[f["router"]].T + t[f["router_b"]]
    out = np.zeros_like(tok)
    counts = [0] * f["experts"]
    ROUTING.append(counts)
    lim, alpha = f["limit"], f["alpha"]
    for i in range(tok.shape[0]):
        idx = np.argsort(-logits[i], kind="stable")[: f["top_k"]]
        top = logits[i, idx]
        w = np.exp(top - top.max())
        w /= w.sum()
        for e, we in zip(idx, w):
            counts[e] += 1
            gu = tok[i] @ t[f["gate_up"]][e] + t[f["gate_up_b"]][e]
            g, u = gu[::2], gu[1::2]
            g = np.minimum(g, lim)
            u = np.clip(u, -lim, lim)
            glu = g / (1.0 + np.exp(-g * alpha))
            y = ((u + 1) * glu) @ t[f["down"]][e] + t[f["down_b"]][e]
            out[i] += we * y
    return out.reshape(h.shape)


def llama4_moe(f, t, h):
    """transformers' Llama4TextMoe in float64: Llama4Router's top-k logits
    (the first expert on ties) through a sigmoid, the others -inf (0); each
    expert on its input scaled by that score (gate_up_proj [E, H, 2I]
    chunked into gate and up halves, down_proj [E, I, H], x @ W); the
    shared expert (a SwiGLU of intermediate_size) on the unscaled input,
    added."""
    tok = h.reshape(-1, h.shape[-1])
    logits = tok @ t[f["router"]].T
    counts = [0] * f["experts"]
    ROUTING.append(counts)
    n = f["inter"]
    sw = lambda name: t[f["shared"].replace("{p}", name)]
    out = (activation(tok @ sw("gate").T, f["act"]) * (tok @ sw("up").T)) \
        @ sw("down").T
    for i in range(tok.shape[0]):
        idx = np.argsort(-logits[i], kind="stable")[: f["top_k"]]
        for e in idx:
            counts[e] += 1
            v = tok[i] / (1.0 + np.exp(-logits[i, e]))
            gu = v @ t[f["gate_up"]][e]
            g, u = gu[:n], gu[n:]
            out[i] += (activation(g, f["act"]) * u) @ t[f["down"]][e]
    return out.reshape(h.shape)


def ffn(desc, f, t, x, h_attn, r):
    """The layer's output from the attention block's output r (x: the
    layer's input, h_attn: the attention's normed input)."""
    nb = lambda name: t[name] if name else 0.0
    fnorm = lambda v: norm(v, f["norm"], t[f["norm_w"]], nb(f.get("norm_b")),
                           desc["eps"])
    if f["placement"] == "parallel":
        h = fnorm(x) if f.get("norm_w") else h_attn
    elif f["placement"] in ("post", "output"):
        h = r
    else:
        h = fnorm(r)

    def lin(inp, p):
        w = t[p["w"]]
        y = inp @ w if p.get("conv1d") else inp @ w.T
        return y + (t[p["b"]] if p.get("b") else 0.0)

    if f["kind"] == "gptoss":
        y = gptoss_moe(f, t, h)
    elif f["kind"] == "llama4moe":
        y = llama4_moe(f, t, h)
    elif f["kind"] == "moe":
        y = moe(f, t, h)
    elif f["kind"] == "gated":
        if "gate_up" in f:
            gu = lin(h, f["gate_up"])
            g, u = gu[..., : f["inter"]], gu[..., f["inter"]:]
        else:
            g, u = lin(h, f["gate"]), lin(h, f["up"])
        y = lin(activation(g, f["act"]) * u, f["down"])
    else:
        y = lin(activation(lin(h, f["up"]), f["act"]), f["down"])
    if f.get("post_norm_w"):
        y = norm(y, f.get("post_norm", "rms1"), t[f["post_norm_w"]], 0.0,
                 desc["eps"])
    out = r + y
    if f["placement"] == "post":
        out = fnorm(out)
    return out


# ---------------------------------------------------------------------------
# Weights and the float64 block.
# ---------------------------------------------------------------------------

def make_weights(desc, rng):
    H, hq, hkv, d = desc["H"], desc["hq"], desc["hkv"], desc["d"]
    t = {}
    mat = lambda o, i: rng.standard_normal((o, i)) / np.sqrt(i)
    vec = lambda n, s=0.1: rng.standard_normal(n) * s
    one = 0.0 if desc["norm"] == "rms1" else 1.0
    if desc.get("norm_w"):
        t[desc["norm_w"]] = one + vec(H)
    if desc.get("norm_b"):
        t[desc["norm_b"]] = vec(H)
    if desc.get("post_norm_w"):
        t[desc["post_norm_w"]] = (0.0 if desc.get("post_norm", "rms1") ==
                                  "rms1" else 1.0) + vec(H)
    qw = hq * d * (2 if desc.get("gate") else 1)
    if "qkv" in desc:
        out = qw + 2 * hkv * d
        w = mat(out, H)
        t[desc["qkv"]["w"]] = w.T if desc["qkv"].get("conv1d") else w
        if desc["qkv"].get("b"):
            t[desc["qkv"]["b"]] = vec(out)
    else:
        for r, width in (("q", qw), ("k", hkv * d), ("v", hkv * d)):
            t[desc[r]["w"]] = mat(width, H)
            if desc[r].get("b"):
                t[desc[r]["b"]] = vec(width)
    o = mat(H, hq * d)
    t[desc["o"]["w"]] = o.T if desc["o"].get("conv1d") else o
    if desc["o"].get("b"):
        t[desc["o"]["b"]] = vec(H)
    if desc.get("qk_norm"):
        off = 0.0 if desc["qk_norm"] == "rms1" else 1.0
        flat = desc.get("qk_flat")
        t[desc["q_norm"]] = off + vec(hq * d if flat else d)
        t[desc["k_norm"]] = off + vec(hkv * d if flat else d)
    if desc.get("sinks"):
        # Sinks near the scores, one that outweighs every key, one that no
        # key notices, and -inf (no sink), heads cycling through them.
        sv = rng.standard_normal(hq)
        for h in range(hq):
            sv[h] = [sv[h], 1e4, -1e4, -np.inf, 3.0][h % 5]
        t[desc["sinks"]] = sv
    if desc.get("t5"):
        t[desc["t5"]["table"]] = rng.standard_normal(
            (desc["t5"]["buckets"], hq))
    return t


def norm(x, kind, w, b, eps):
    if kind == "layer":
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w + b
    x = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x * ((1.0 + w) if kind == "rms1" else w)


def t5_bucket(rel, bidirectional, num_buckets, max_distance):
    """transformers' T5Attention._relative_position_bucket."""
    buckets = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0) * num_buckets
        rel = np.abs(rel)
    else:
        rel = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    small = rel < max_exact
    with np.errstate(divide="ignore"):
        large = max_exact + (np.log(rel.astype(np.float64) / max_exact)
                             / math.log(max_distance / max_exact)
                             * (num_buckets - max_exact))
    large = np.minimum(np.where(small, 0, large).astype(np.int64),
                       num_buckets - 1)
    return buckets + np.where(small, rel, large)


def attention(q, k, v, desc, lens):
    """[B, H, S, d] heads; lens: valid keys per batch row."""
    B, hq, sq, _ = q.shape
    skv = k.shape[2]
    group = hq // k.shape[1]
    i = np.arange(sq)[:, None] + (skv - sq)
    j = np.arange(skv)[None, :]
    bias = None
    if desc.get("t5"):
        t5 = desc["t5"]
        bk = t5_bucket(j - i, t5["bidirectional"], t5["buckets"],
                       t5["max_distance"])
        bias = desc["table"][bk].transpose(2, 0, 1)  # [H, sq, skv]
    out = np.zeros(q.shape[:3] + (v.shape[3],))
    for b in range(B):
        vis = j < lens[b]
        if desc["causal"]:
            vis = vis & (j <= i)
        if desc["window"]:
            vis = vis & (j > i - desc["window"])
        if desc.get("chunk"):  # the query's own chunk
            vis = vis & (j // desc["chunk"] == i // desc["chunk"])
        for h in range(hq):
            s = q[b, h] @ k[b, h // group].T * desc["scale"]
            if desc["softcap"]:
                s = desc["softcap"] * np.tanh(s / desc["softcap"])
            if bias is not None:
                s = s + bias[h]
            s = np.where(vis, s, -np.inf)
            # gpt-oss: the head's sink joins the softmax, its share dropped.
            sink = desc["sink_vals"][h] if desc.get("sink_vals") is not None \
                else -np.inf
            m = np.maximum(s.max(-1, keepdims=True), sink)
            m0 = np.where(np.isfinite(m), m, 0)
            e = np.where(vis, np.exp(s - m0), 0)
            den = e.sum(-1, keepdims=True) + (np.exp(sink - m0)
                                              if np.isfinite(sink) else 0)
            out[b, h] = np.where(den > 0, e / np.where(den > 0, den, 1), 0) @ \
                v[b, h // group]
    return out


def block(desc, t, x, mem, lens, with_normed=False):
    H, hq, hkv, d = desc["H"], desc["hq"], desc["hkv"], desc["d"]
    B, S, _ = x.shape
    nb = lambda name: t[name] if name else 0.0
    h = x
    if desc["placement"] not in ("post", "output"):
        h = norm(x, desc["norm"], t[desc["norm_w"]], nb(desc.get("norm_b")),
                 desc["eps"])
    src = mem if desc["cross"] else h

    def lin(inp, p):
        w = t[p["w"]]
        y = inp @ w if p.get("conv1d") else inp @ w.T
        return y + (t[p["b"]] if p.get("b") else 0.0)

    gate = None
    if "qkv" in desc:
        y = lin(h, desc["qkv"])
        lay = desc["qkv"]["layout"]
        if lay == "concat":
            q = y[..., : hq * d]
            k = y[..., hq * d: (hq + hkv) * d]
            v = y[..., (hq + hkv) * d:]
        elif lay == "grouped":
            g = hq // hkv
            y = y.reshape(B, S, hkv, g + 2, d)
            q = y[:, :, :, :g].reshape(B, S, hq * d)
            k = y[:, :, :, g].reshape(B, S, hkv * d)
            v = y[:, :, :, g + 1].reshape(B, S, hkv * d)
        else:  # per head [q, k, v]
            y = y.reshape(B, S, hq, 3, d)
            q, k, v = (y[:, :, :, r].reshape(B, S, hq * d) for r in range(3))
    else:
        q = lin(h, desc["q"])
        if desc.get("gate"):
            qg = q.reshape(B, S, hq, 2 * d)
            q = qg[..., :d].reshape(B, S, hq * d)
            gate = qg[..., d:].reshape(B, S, hq * d)
        k, v = lin(src, desc["k"]), lin(src, desc["v"])
    if desc.get("q_scale"):
        q = q * desc["q_scale"]
    heads = lambda y, n: y.reshape(y.shape[0], y.shape[1], n, d).transpose(
        0, 2, 1, 3)
    if desc.get("qk_norm") and desc.get("qk_flat"):
        q = norm(q, desc["qk_norm"], t[desc["q_norm"]], 0.0, desc["eps"])
        k = norm(k, desc["qk_norm"], t[desc["k_norm"]], 0.0, desc["eps"])
    q, k, v = heads(q, hq), heads(k, hkv), heads(v, hkv)
    if desc.get("qk_norm") and not desc.get("qk_flat"):
        q = norm(q, desc["qk_norm"], t[desc["q_norm"]], 0.0, desc["eps"])
        k = norm(k, desc["qk_norm"], t[desc["k_norm"]], 0.0, desc["eps"])
    if desc.get("rope"):
        theta, rd = desc["rope"]
        lr, attn = desc.get("longrope"), 1.0
        if lr and lr["inv"] is not None:  # yarn, llama3: one table
            inv, attn = lr["inv"], lr["attn"]
        elif lr:
            # longrope_frequency_update: the long factors for the whole
            # call once max(position_ids) + 1 > original_max_pos.
            ext = np.array(lr["long"] if S > lr["orig"] else lr["short"])
            inv, attn = 1.0 / (ext * theta ** (np.arange(0, rd, 2) / rd)), \
                lr["attn"]
        else:
            inv = 1.0 / theta ** (np.arange(0, rd, 2) / rd)
        ang = np.arange(S)[:, None] * inv[None, :]
        if desc.get("interleaved"):
            # Pairs (x[2i], x[2i+1]) (Cohere's rotate_half, Llama 4's
            # complex view).
            cos = np.repeat(np.cos(ang), 2, -1) * attn
            sin = np.repeat(np.sin(ang), 2, -1) * attn
        else:
            cos = np.concatenate([np.cos(ang)] * 2, -1) * attn
            sin = np.concatenate([np.sin(ang)] * 2, -1) * attn

        def rot(x):
            xr, xp = x[..., :rd], x[..., rd:]
            if desc.get("interleaved"):
                turned = np.stack([-xr[..., 1::2], xr[..., ::2]],
                                  -1).reshape(xr.shape)
            else:
                h = rd // 2
                turned = np.concatenate([-xr[..., h:], xr[..., :h]], -1)
            return np.concatenate([xr * cos + turned * sin, xp], -1)
        q, k = rot(q), rot(k)
    if desc.get("l2_qk"):  # Llama4TextL2Norm after RoPE: no weight
        l2 = lambda x: x / np.sqrt((x * x).mean(-1, keepdims=True)
                                   + desc["eps"])
        q, k = l2(q), l2(k)
    if desc.get("temperature"):
        # log1p(floor((pos + 1) / floor_scale)) * attn_scale + 1 per row.
        fs, sc = desc["temperature"]
        pos = np.arange(S)
        q = q * (np.log1p(np.floor((pos + 1) / fs)) * sc + 1.0)[
            None, None, :, None]
    if desc.get("t5"):
        desc = dict(desc, table=t[desc["t5"]["table"]])
    if desc.get("sinks"):
        desc = dict(desc, sink_vals=t[desc["sinks"]])
    o = attention(q, k, v, desc, lens)
    o = o.transpose(0, 2, 1, 3).reshape(B, S, hq * d)
    if gate is not None:
        o = o / (1.0 + np.exp(-gate))
    y = lin(o, desc["o"])
    if desc.get("post_norm_w"):
        y = norm(y, desc.get("post_norm", "rms1"), t[desc["post_norm_w"]],
                 0.0, desc["eps"])
    r = x + y
    if desc["placement"] == "post":
        r = norm(r, desc["norm"], t[desc["norm_w"]], nb(desc.get("norm_b")),
                 desc["eps"])
    return (r, h) if with_normed else r


# ---------------------------------------------------------------------------
# safetensors and the run.
# ---------------------------------------------------------------------------

def round_to(arr, dtype):
    """float64 -> the stored element type's values, and their bytes."""
    a32 = np.ascontiguousarray(arr, dtype=np.float32)
    if dtype == "F32":
        return a32.astype(np.float64), a32.tobytes()
    if dtype == "F16":
        a16 = a32.astype(np.float16)
        return a16.astype(np.float64), a16.tobytes()
    bits = a32.view(np.uint32)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    back = (bits.astype(np.uint32) << 16).view(np.float32)
    return back.astype(np.float64), bits.tobytes()


def write_safetensors(path, tensors, dtype):
    """Writes `tensors` as `dtype`; returns their stored values (float64)."""
    header, blobs, offset, stored = {}, [], 0, {}
    for name, arr in tensors.items():
        if arr.dtype == np.uint8:  # MXFP4 blocks and scales, as they are
            data, kind = arr.tobytes(), "U8"
        else:
            stored[name], data = round_to(arr, dtype)
            kind = dtype
        header[name] = {"dtype": kind, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)
    return stored


def layer_group(cfg, L):
    """The attention layers of the transformer layer holding L."""
    fam = cfg["model_type"]
    if fam not in ("t5", "whisper"):
        return [L]
    E = cfg.get("num_layers", cfg.get("num_hidden_layers")) if fam == "t5" \
        else cfg["encoder_layers"]
    if L < E:
        return [L]
    first = L - (L - E) % 2
    return [first, first + 1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("exe")
    p.add_argument("config")
    p.add_argument("--mode", default="block", choices=["block", "layer",
                                                       "model"])
    p.add_argument("--layer", type=int, default=0)
    p.add_argument("--to", type=int, help="model: the last layer")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=7)
    p.add_argument("--mem-seq", type=int, default=11)
    p.add_argument("--lengths", help="keys per batch row (comma-separated)")
    p.add_argument("--weights-dtype", default="F32",
                   choices=["F32", "BF16", "F16"])
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", help="also write the weights file here")
    p.add_argument("--mxfp4", action="store_true",
                   help="gpt-oss: store the experts as MXFP4 blocks")
    p.add_argument("--degenerate-routing", action="store_true",
                   help="MoE: the first top_k experts take every token, "
                        "the others none")
    a = p.parse_args()
    with open(a.config) as f:
        cfg = json.load(f)
    if a.mode == "block":
        layers = [a.layer]
    elif a.mode == "layer":
        layers = layer_group(cfg, a.layer)
    else:
        layers = list(range(a.layer, a.to + 1))
    rng = np.random.default_rng(a.seed + 101 * a.layer + 7)
    steps, t, views = [], {}, {}
    for L in layers:
        desc = layer_desc(cfg, L)
        f = ffn_desc(cfg, desc, L) if a.mode != "block" else None
        if desc.get("linear"):
            lt, _ = qnb.weights(cfg, L, True, rng)
            t.update({k: v.astype(np.float64) for k, v in lt.items()})
        else:
            t.update(make_weights(desc, rng))
        if f:
            t.update(make_ffn_weights(desc, f, rng))
            if a.mxfp4 and f["kind"] == "gptoss":
                views.update(to_mxfp4(f, t, rng))
            if a.degenerate_routing and f["kind"] == "moe":
                # Only feature 0 survives the (1 + w) norm; x's feature 0
                # is large and positive, so every token's router logits are
                # h0 * router[:, 0]: the same order for all.
                w = np.full(desc["H"], -1.0)
                w[0] = 0.0
                t[f["norm_w"]] = w
                col = -10.0 - np.arange(f["experts"], dtype=np.float64)
                col[: f["top_k"]] = 10.0 - np.arange(f["top_k"])
                t[f["router"]][:, 0] = col
        steps.append((desc, f))
    H = steps[0][0]["H"]
    x = rng.standard_normal((a.batch, a.seq, H)).astype(np.float32)
    if a.degenerate_routing:
        x[..., 0] = 100.0
    cross = any(d["cross"] for d, _ in steps)
    mem = (rng.standard_normal((a.batch, a.mem_seq, H)).astype(np.float32)
           if cross else None)
    keys = a.mem_seq if cross else a.seq
    lens = ([int(n) for n in a.lengths.split(",")] if a.lengths
            else [keys] * a.batch)
    with tempfile.TemporaryDirectory() as work:
        path = lambda n: os.path.join(work, n)
        stored = write_safetensors(path("w.safetensors"), t, a.weights_dtype)
        stored.update(views)  # MXFP4 tensors: the values their blocks hold
        if a.keep:
            write_safetensors(a.keep, t, a.weights_dtype)
        np.save(path("x.npy"), x)
        where = (["--from", str(a.layer), "--to", str(a.to)]
                 if a.mode == "model" else ["--layer", str(a.layer)])
        cmd = [a.exe, a.mode] + where + [
            "--weights", path("w.safetensors"), "--x", path("x.npy"),
            "--out", path("y.npy")]
        if mem is not None:
            np.save(path("m.npy"), mem)
            cmd += ["--memory", path("m.npy")]
        if a.lengths:
            np.save(path("lens.npy"), np.array(lens, dtype=np.int64))
            cmd += ["--lengths", path("lens.npy")]
        subprocess.run(cmd, check=True)
        out = np.load(path("y.npy"))
    h = x.astype(np.float64)
    m64 = None if mem is None else mem.astype(np.float64)
    for desc, f in steps:
        own = lens if desc["cross"] or not desc["causal"] else [h.shape[1]] * a.batch
        if desc.get("linear"):
            hk, hv, dk, dv, K = qnb.linear_dims(cfg)
            conv0 = np.zeros((a.batch, 2 * hk * dk + hv * dv, K - 1))
            state0 = np.zeros((a.batch, hv, dk, dv))
            r = qnb.linear_layer(cfg, stored, desc["pre"], h, conv0, state0)[0]
            h = ffn(desc, f, stored, h, None, r) if f else r
        elif f:
            r, normed = block(desc, stored, h, m64, own, with_normed=True)
            h = ffn(desc, f, stored, h, normed, r)
        else:
            h = block(desc, stored, h, m64, own)
    ref = h
    rel = (np.abs(out - ref).max() / np.abs(ref).max()
           if out.shape == ref.shape else np.inf)
    ok = out.shape == ref.shape and np.isfinite(out).all() and rel <= a.tol
    span = (f"layers {layers[0]}..{layers[-1]}" if len(layers) > 1
            else f"layer {layers[0]}")
    print(f"{'ok' if ok else 'FAIL'} {cfg['model_type']} {span} {a.mode} "
          f"max_rel_err={rel:.3e} shape={list(out.shape)}")
    for counts in ROUTING:
        print(f"tokens per expert: {counts}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
