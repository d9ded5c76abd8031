"""Float64 reference for IBM Granite-4.0-H's two layer types (a
granitemoehybrid config), as transformers' modeling_granitemoehybrid.py
writes them, against an executable's `block`.

The config's own fields (with GraniteMoeHybridConfig's defaults) give the
shapes, so nothing comes from the compiler. Random weights under their
checkpoint names go into a .safetensors file.

Mamba2 layers (GraniteMoeHybridMambaLayer.torch_forward after
input_layernorm): in_proj (bias with mamba_proj_bias) giving [gate (I),
x B C (I + 2 G N), dt (H)]; the causal depthwise conv1d over x B C with its
bias and SiLU (its state: the last K - 1 inputs); dt = softplus(dt +
dt_bias), clamped to time_step_limit; A = -exp(A_log); the SSD token by
token, per head h reading group
h // (H / G): S <- exp(dt A) S + B (dt x)^T, y = S^T C (the state [N, P],
N = d_state, P = the head dim: the transpose of transformers'
ssm_states [P, N]); y + D x; GraniteMoeHybridRMSNormGated over the whole
intermediate size, the gate first: u = y silu(gate), u / rms(u) * w;
out_proj; the residual with residual_multiplier.

Attention layers (GraniteMoeHybridAttention): q/k/v/o projections,
rotate-half RoPE over the whole head with position_embedding_type "rope"
(none otherwise), scores scaled by attention_multiplier, causal GQA, the
residual with residual_multiplier.

With --entry layer, the whole decoder layer (`layer`): the block, then
post_attention_layernorm and the mixture of experts (GraniteMoeHybridMoE:
the router's top-k logits softmaxed among themselves, each expert's
input_linear [2I, H] halves as gate and up, SiLU(gate) * up,
output_linear) plus the shared MLP (input_linear [2S, H] halves,
output_linear), or the shared MLP alone with num_local_experts 0, the sum
scaled by residual_multiplier.

For a Mamba2 layer the states are passed along: prefill in one call, split
in two calls, and prefill then token-by-token decode must all match the
float64 layer run over the whole sequence (outputs and final states).

With --entry model, `model` over every layer from fresh states against the
float64 layers in sequence (--layer is then ignored).

usage: granite_block_ref.py EXE CONFIG --layer L [--seq S] [--batch B]
       [--entry block|layer|model]
Prints one `ok`/`FAIL` line per case; exit 1 on a failure.
"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from block_ref import (attention, check_stateful, mamba2_mixer,  # noqa: E402
                       rel, rms_norm, rope, run_entry, run_model_entry, silu,
                       stateful_args, write_safetensors)

TOL = 1e-5


def layer_types(cfg):
    return cfg.get("layer_types") or ["mamba"] * cfg["num_hidden_layers"]


def mamba_dims(cfg):
    H = cfg["hidden_size"]
    inner = cfg.get("mamba_expand", 2) * H
    heads = cfg.get("mamba_n_heads", 128)
    dh = cfg.get("mamba_d_head", "auto")
    p = inner // heads if dh == "auto" else dh
    g = cfg.get("mamba_n_groups", 1)
    n = cfg.get("mamba_d_state", 256)
    return heads, g, n, p, cfg.get("mamba_d_conv", 4)


def attention_layer(cfg, t, pre, x):
    H = cfg["hidden_size"]
    hq = cfg["num_attention_heads"]
    hkv = cfg.get("num_key_value_heads", hq)
    d = H // hq
    eps = cfg.get("rms_norm_eps", 1e-6)
    rm = cfg.get("residual_multiplier", 1.0)
    B, S, _ = x.shape
    a = pre + "self_attn."
    h = rms_norm(x, t[pre + "input_layernorm.weight"], eps, False)
    heads = lambda y, n: y.reshape(B, S, n, d).transpose(0, 2, 1, 3)
    q = heads(h @ t[a + "q_proj.weight"].T, hq)
    k = heads(h @ t[a + "k_proj.weight"].T, hkv)
    v = heads(h @ t[a + "v_proj.weight"].T, hkv)
    if cfg.get("position_embedding_type") == "rope":
        theta = cfg.get("rope_theta", 10000.0)
        q, k = rope(q, theta, d), rope(k, theta, d)
    o = attention(q, k, v, cfg.get("attention_multiplier", 1.0), 0, 0)
    o = o.transpose(0, 2, 1, 3).reshape(B, S, hq * d)
    return x + (o @ t[a + "o_proj.weight"].T) * rm


def mamba_layer(cfg, t, pre, x, conv_state, state):
    """x [B, S, H], conv_state [B, C, K-1], state [B, heads, N, P] ->
    y, conv_state', state'."""
    heads, g, n, p, K = mamba_dims(cfg)
    eps = cfg.get("rms_norm_eps", 1e-6)
    rm = cfg.get("residual_multiplier", 1.0)
    h = rms_norm(x, t[pre + "input_layernorm.weight"], eps, False)
    lo, hi = cfg.get("time_step_limit", [0.0, np.inf])
    o, new_conv, st = mamba2_mixer(t, pre + "mamba.", h, (heads, g, n, p, K),
                                   conv_state, state, (lo, hi), eps, 1)
    return x + o * rm, new_conv, st


def weights(cfg, L, mamba, rng):
    H = cfg["hidden_size"]
    pre = f"model.layers.{L}."
    w = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
    small = lambda n: (rng.standard_normal(n) * 0.1).astype(np.float32)
    t = {pre + "input_layernorm.weight": (1 + small(H)).astype(np.float32)}
    if mamba:
        heads, g, n, p, K = mamba_dims(cfg)
        inner = heads * p
        C = inner + 2 * g * n
        a = pre + "mamba."
        t[a + "in_proj.weight"] = w(inner + C + heads, H)
        t[a + "conv1d.weight"] = (rng.standard_normal((C, 1, K)) * 0.5).astype(np.float32)
        if cfg.get("mamba_conv_bias", True):
            t[a + "conv1d.bias"] = small(C)
        if cfg.get("mamba_proj_bias", False):
            t[a + "in_proj.bias"] = small(inner + C + heads)
            t[a + "out_proj.bias"] = small(H)
        t[a + "dt_bias"] = small(heads)
        t[a + "A_log"] = (rng.standard_normal(heads) * 0.5 - 1).astype(np.float32)
        t[a + "D"] = (1 + small(heads)).astype(np.float32)
        t[a + "norm.weight"] = (1 + small(inner)).astype(np.float32)
        t[a + "out_proj.weight"] = w(H, inner)
    else:
        hq = cfg["num_attention_heads"]
        hkv = cfg.get("num_key_value_heads", hq)
        d = H // hq
        a = pre + "self_attn."
        t[a + "q_proj.weight"] = w(hq * d, H)
        t[a + "k_proj.weight"] = w(hkv * d, H)
        t[a + "v_proj.weight"] = w(hkv * d, H)
        t[a + "o_proj.weight"] = w(H, hq * d)
    return t, pre


def feed_forward(cfg, t, pre, x):
    """GraniteMoeHybridDecoderLayer after the mixer's residual."""
    eps = cfg.get("rms_norm_eps", 1e-6)
    rm = cfg.get("residual_multiplier", 1.0)
    E = cfg.get("num_local_experts", 8)
    k = cfg.get("num_experts_per_tok", 2)
    h = rms_norm(x, t[pre + "post_attention_layernorm.weight"], eps, False)

    def glu(v, w_in, w_out):
        gu = v @ w_in.T
        half = gu.shape[-1] // 2
        return (silu(gu[..., :half]) * gu[..., half:]) @ w_out.T

    s = pre + "shared_mlp."
    y = glu(h, t[s + "input_linear.weight"], t[s + "output_linear.weight"])
    if E > 0:
        m = pre + "block_sparse_moe."
        logits = h @ t[m + "router.layer.weight"].T            # [B, S, E]
        top = np.argsort(-logits, -1, kind="stable")[..., :k]
        tl = np.take_along_axis(logits, top, -1)
        gates = np.exp(tl - tl.max(-1, keepdims=True))
        gates /= gates.sum(-1, keepdims=True)
        for b in range(h.shape[0]):
            for i in range(h.shape[1]):
                for j in range(k):
                    e = top[b, i, j]
                    y[b, i] += gates[b, i, j] * glu(
                        h[b, i], t[m + "input_linear.weight"][e],
                        t[m + "output_linear.weight"][e])
    return x + y * rm


def ffn_weights(cfg, L, rng, t):
    H = cfg["hidden_size"]
    pre = f"model.layers.{L}."
    w = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
    E = cfg.get("num_local_experts", 8)
    inter = cfg.get("intermediate_size", 11008)
    S = cfg.get("shared_intermediate_size", 1024)
    t[pre + "post_attention_layernorm.weight"] = (1 + rng.standard_normal(H) * 0.1).astype(np.float32)
    t[pre + "shared_mlp.input_linear.weight"] = w(2 * S, H)
    t[pre + "shared_mlp.output_linear.weight"] = w(H, S)
    if E > 0:
        m = pre + "block_sparse_moe."
        t[m + "router.layer.weight"] = w(E, H)
        t[m + "input_linear.weight"] = w(E, 2 * inter, H)
        t[m + "output_linear.weight"] = w(E, H, inter)


def model(args, cfg):
    """`model --from 0 --to N-1` over every layer (fresh states) against the
    float64 layers one after the other."""
    n = cfg["num_hidden_layers"]
    rng = np.random.default_rng(3)
    t = {}
    for L in range(n):
        tl, _ = weights(cfg, L, layer_types(cfg)[L] == "mamba", rng)
        ffn_weights(cfg, L, rng, tl)
        t.update(tl)
    T = {k: v.astype(np.float64) for k, v in t.items()}
    B, S, H = args.batch, args.seq, cfg["hidden_size"]
    x = rng.standard_normal((B, S, H)).astype(np.float32)
    ref = x.astype(np.float64)
    for L in range(n):
        pre = f"model.layers.{L}."
        if layer_types(cfg)[L] == "mamba":
            heads, g, nn_, p, K = mamba_dims(cfg)
            C = heads * p + 2 * g * nn_
            ref, _, _ = mamba_layer(cfg, T, pre, ref, np.zeros((B, C, K - 1)),
                                    np.zeros((B, heads, nn_, p)))
        else:
            ref = attention_layer(cfg, T, pre, ref)
        ref = feed_forward(cfg, T, pre, ref)
    return run_model_entry(args.exe, t, x, ref, n, TOL)


def main():
    args = stateful_args()
    cfg = json.load(open(args.config))
    if args.entry == "model":
        return model(args, cfg)
    L = args.layer
    mamba = layer_types(cfg)[L] == "mamba"
    rng = np.random.default_rng(L + 11)
    t, pre = weights(cfg, L, mamba, rng)
    whole = args.entry == "layer"
    if whole:
        ffn_weights(cfg, L, rng, t)
    T = {k: v.astype(np.float64) for k, v in t.items()}
    B, S, H = args.batch, args.seq, cfg["hidden_size"]
    x = rng.standard_normal((B, S, H)).astype(np.float32)
    ok = True
    what = args.entry

    def report(name, err):
        nonlocal ok
        good = err <= TOL
        ok = ok and good
        print(f"{'ok' if good else 'FAIL'} {name} max_rel_err={err:.3e}")

    def ffn(y):
        return feed_forward(cfg, T, pre, y) if whole else y

    def mamba_ref(xs, conv, state):
        y, c, s = mamba_layer(cfg, T, pre, xs, conv, state)
        return ffn(y), c, s

    with tempfile.TemporaryDirectory() as work:
        wpath = os.path.join(work, "w.safetensors")
        write_safetensors(wpath, t)
        calls = iter(range(1, 1 << 20))
        run = lambda *a: run_entry(args.exe, what, L, wpath, work,
                                   next(calls), *a)
        if not mamba:
            ref = ffn(attention_layer(cfg, T, pre, x.astype(np.float64)))
            report(f"attention {what} B={B} S={S}", rel(run(x), ref))
            return 0 if ok else 1
        heads, g, n, p, K = mamba_dims(cfg)
        C = heads * p + 2 * g * n
        zc, zs = np.zeros((B, C, K - 1)), np.zeros((B, heads, n, p))
        check_stateful(report, run, mamba_ref, x, zc, zs, rng,
                       f"mamba {what}", "ssm")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
