"""Float64 reference for NVIDIA Nemotron-H's blocks (a nemotron_h config),
as transformers' modeling_nemotron_h.py writes them (vLLM's nemotron_h.py
as the second reading), against an executable's `block`, `layer` and
`model`.

The config's own fields (with NemotronHConfig's defaults) give the shapes,
so nothing comes from the compiler. Random weights under their checkpoint
names (backbone.layers.{i}.*) go into a .safetensors file.

Every block is x + mixer(norm(x)) (NemotronHBlock, RMSNorm with
layer_norm_epsilon), its mixer one of hybrid_override_pattern's:
  M  NemotronHMamba2Mixer: block_ref.mamba2_mixer with intermediate size
     mamba_num_heads x mamba_head_dim, dt clamped to time_step_limit, the
     gated norm per group of intermediate / n_groups channels;
  *  NemotronHAttention: q/k/v/o without biases, no position embedding,
     scores scaled by head_dim^-1/2, causal GQA;
  -  NemotronHMLP: down(relu2(up(h))), relu2 = relu(x)^2, biased with
     mlp_bias, intermediate_size one size or (vLLM) one per MLP block;
  E  NemotronHMoE: p = sigmoid(h W_gate^T), c = p + e_score_correction_bias,
     groups (n_group) scored by the sum of their best two c, the topk_group
     best kept and the others' c set to -inf, the num_experts_per_tok
     largest c chosen, weighted by their p (divided by their sum + 1e-20
     with norm_topk_prob) times routed_scaling_factor; each expert
     down(relu2(up(h))); plus the shared expert's MLP.

The executable's layer L is a mixer block (M or *) with the MLP or MoE
block after it, if any: `block` runs the mixer block, `layer` both.

For a Mamba2 layer the states are passed along: prefill in one call, split
in two calls, and prefill then token-by-token decode must all match the
float64 layer run over the whole sequence (outputs and final states).

With --entry model, `model` over every layer from fresh states against the
float64 blocks in sequence (--layer is then ignored).

usage: nemotron_block_ref.py EXE CONFIG --layer L [--seq S] [--batch B]
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
                       rel, rms_norm, run_entry, run_model_entry,
                       stateful_args, write_safetensors)

TOL = 1e-5


def blocks(cfg):
    if "hybrid_override_pattern" in cfg:
        return cfg["hybrid_override_pattern"]
    names = {"linear_attention": "M", "mamba": "M", "full_attention": "*",
             "attention": "*", "mlp": "-", "moe": "E"}
    return "".join(names[n] for n in cfg["layers_block_type"])


def layers(cfg):
    """(mixer block, feed-forward block or None) per compiled layer."""
    b = blocks(cfg)
    out = []
    for i, c in enumerate(b):
        if c in "M*":
            nxt = i + 1 if i + 1 < len(b) and b[i + 1] in "-E" else None
            out.append((i, nxt))
    return out


def mamba_dims(cfg):
    return (cfg.get("mamba_num_heads", 128), cfg.get("n_groups", 8),
            cfg.get("ssm_state_size", 128), cfg.get("mamba_head_dim", 64),
            cfg.get("conv_kernel", 4))


def relu2(x):
    return np.maximum(x, 0.0) ** 2


def pre(i):
    return f"backbone.layers.{i}."


def block(cfg, t, i, x, conv=None, state=None):
    """Block i on x [B, S, H]; a Mamba2 block also returns its states."""
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    kind = blocks(cfg)[i]
    h = rms_norm(x, t[pre(i) + "norm.weight"], eps, False)
    a = pre(i) + "mixer."
    B, S, _ = x.shape
    if kind == "M":
        lo, hi = cfg.get("time_step_limit", [0.0, np.inf])
        o, c, s = mamba2_mixer(t, a, h, mamba_dims(cfg), conv, state,
                               (lo, hi), eps, cfg.get("n_groups", 8))
        return x + o, c, s
    if kind == "*":
        hq = cfg.get("num_attention_heads", 32)
        hkv = cfg.get("num_key_value_heads", hq)
        d = cfg.get("head_dim", cfg.get("attention_head_dim", 128))
        heads = lambda y, n: y.reshape(B, S, n, d).transpose(0, 2, 1, 3)
        q = heads(h @ t[a + "q_proj.weight"].T, hq)
        k = heads(h @ t[a + "k_proj.weight"].T, hkv)
        v = heads(h @ t[a + "v_proj.weight"].T, hkv)
        o = attention(q, k, v, d ** -0.5, 0, 0)
        o = o.transpose(0, 2, 1, 3).reshape(B, S, hq * d)
        return x + o @ t[a + "o_proj.weight"].T
    mlp = lambda v, up, down: relu2(v @ up.T) @ down.T
    if kind == "-":
        bias = lambda name: t.get(a + name, 0.0)
        u = relu2(h @ t[a + "up_proj.weight"].T + bias("up_proj.bias"))
        return x + u @ t[a + "down_proj.weight"].T + bias("down_proj.bias")
    E = cfg.get("n_routed_experts", 8)
    k = cfg.get("num_experts_per_tok", 2)
    G = cfg.get("n_group", 1)
    kg = cfg.get("topk_group", 1)
    p = 1.0 / (1.0 + np.exp(-(h @ t[a + "gate.weight"].T)))     # [B, S, E]
    c = p + t[a + "gate.e_score_correction_bias"]
    grouped = c.reshape(B, S, G, E // G)
    gs = np.sort(grouped, -1)[..., -2:].sum(-1)                  # [B, S, G]
    keep = np.argsort(-gs, -1, kind="stable")[..., :kg]
    mask = np.zeros((B, S, G), bool)
    np.put_along_axis(mask, keep, True, -1)
    c = np.where(np.repeat(mask, E // G, -1), c, -np.inf)
    top = np.argsort(-c, -1, kind="stable")[..., :k]
    wts = np.take_along_axis(p, top, -1)
    if cfg.get("norm_topk_prob", True):
        wts = wts / (wts.sum(-1, keepdims=True) + 1e-20)
    wts = wts * cfg.get("routed_scaling_factor", 1.0)
    y = mlp(h, t[a + "shared_experts.up_proj.weight"],
            t[a + "shared_experts.down_proj.weight"])
    for b in range(B):
        for s in range(S):
            for j in range(k):
                e = top[b, s, j]
                y[b, s] += wts[b, s, j] * mlp(
                    h[b, s], t[a + f"experts.{e}.up_proj.weight"],
                    t[a + f"experts.{e}.down_proj.weight"])
    return x + y


def block_weights(cfg, i, rng, t):
    H = cfg["hidden_size"]
    w = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
    small = lambda n: (rng.standard_normal(n) * 0.1).astype(np.float32)
    t[pre(i) + "norm.weight"] = (1 + small(H)).astype(np.float32)
    a = pre(i) + "mixer."
    kind = blocks(cfg)[i]
    if kind == "M":
        heads, g, n, p, K = mamba_dims(cfg)
        inner = heads * p
        C = inner + 2 * g * n
        t[a + "in_proj.weight"] = w(inner + C + heads, H)
        t[a + "conv1d.weight"] = (rng.standard_normal((C, 1, K)) * 0.5).astype(np.float32)
        if cfg.get("use_conv_bias", True):
            t[a + "conv1d.bias"] = small(C)
        if cfg.get("use_bias", False):
            t[a + "in_proj.bias"] = small(inner + C + heads)
            t[a + "out_proj.bias"] = small(H)
        t[a + "dt_bias"] = small(heads)
        t[a + "A_log"] = (rng.standard_normal(heads) * 0.5 - 1).astype(np.float32)
        t[a + "D"] = (1 + small(heads)).astype(np.float32)
        t[a + "norm.weight"] = (1 + small(inner)).astype(np.float32)
        t[a + "out_proj.weight"] = w(H, inner)
    elif kind == "*":
        hq = cfg.get("num_attention_heads", 32)
        hkv = cfg.get("num_key_value_heads", hq)
        d = cfg.get("head_dim", cfg.get("attention_head_dim", 128))
        t[a + "q_proj.weight"] = w(hq * d, H)
        t[a + "k_proj.weight"] = w(hkv * d, H)
        t[a + "v_proj.weight"] = w(hkv * d, H)
        t[a + "o_proj.weight"] = w(H, hq * d)
    elif kind == "-":
        inter = cfg.get("intermediate_size", 21504)
        if isinstance(inter, list):     # one size per MLP block (vLLM)
            inter = inter[0] if len(inter) == 1 else \
                inter[blocks(cfg)[:i].count("-")]
        t[a + "up_proj.weight"] = w(inter, H)
        t[a + "down_proj.weight"] = w(H, inter)
        if cfg.get("mlp_bias", False):
            t[a + "up_proj.bias"] = small(inter)
            t[a + "down_proj.bias"] = small(H)
    else:
        E = cfg.get("n_routed_experts", 8)
        inter = cfg.get("moe_intermediate_size", 7688)
        S = cfg.get("moe_shared_expert_intermediate_size", 7688)
        t[a + "gate.weight"] = w(E, H)
        # Mostly negative selection scores c = p + bias: the groups not kept
        # must lose to them (-inf), not win (0).
        t[a + "gate.e_score_correction_bias"] = small(E) - 0.6
        for e in range(E):
            t[a + f"experts.{e}.up_proj.weight"] = w(inter, H)
            t[a + f"experts.{e}.down_proj.weight"] = w(H, inter)
        t[a + "shared_experts.up_proj.weight"] = w(S, H)
        t[a + "shared_experts.down_proj.weight"] = w(H, S)


def zero_states(cfg, B):
    heads, g, n, p, K = mamba_dims(cfg)
    C = heads * p + 2 * g * n
    return np.zeros((B, C, K - 1)), np.zeros((B, heads, n, p))


def model(args, cfg):
    """`model` over every layer (fresh states) against the float64 blocks
    one after the other."""
    rng = np.random.default_rng(3)
    t = {}
    for i in range(len(blocks(cfg))):
        block_weights(cfg, i, rng, t)
    T = {k: v.astype(np.float64) for k, v in t.items()}
    B, S, H = args.batch, args.seq, cfg["hidden_size"]
    x = rng.standard_normal((B, S, H)).astype(np.float32)
    ref = x.astype(np.float64)
    for i, c in enumerate(blocks(cfg)):
        if c == "M":
            ref, _, _ = block(cfg, T, i, ref, *zero_states(cfg, B))
        else:
            ref = block(cfg, T, i, ref)
    return run_model_entry(args.exe, t, x, ref, len(layers(cfg)), TOL)


def main():
    args = stateful_args()
    cfg = json.load(open(args.config))
    if args.entry == "model":
        return model(args, cfg)
    L = args.layer
    mixer, ffn = layers(cfg)[L]
    whole = args.entry == "layer"
    rng = np.random.default_rng(L + 11)
    t = {}
    block_weights(cfg, mixer, rng, t)
    if whole and ffn is not None:
        block_weights(cfg, ffn, rng, t)
    T = {k: v.astype(np.float64) for k, v in t.items()}
    B, S, H = args.batch, args.seq, cfg["hidden_size"]
    x = rng.standard_normal((B, S, H)).astype(np.float32)
    ok = True
    what = args.entry
    kind = {"M": "mamba", "*": "attention"}[blocks(cfg)[mixer]]
    closer = {None: "", "-": " + mlp", "E": " + moe"}[
        blocks(cfg)[ffn] if whole and ffn is not None else None]

    def report(name, err):
        nonlocal ok
        good = err <= TOL
        ok = ok and good
        print(f"{'ok' if good else 'FAIL'} {name} max_rel_err={err:.3e}")

    def close(y):
        return block(cfg, T, ffn, y) if whole and ffn is not None else y

    def mamba_ref(xs, conv, state):
        y, c, s = block(cfg, T, mixer, xs, conv, state)
        return close(y), c, s

    with tempfile.TemporaryDirectory() as work:
        wpath = os.path.join(work, "w.safetensors")
        write_safetensors(wpath, t)
        calls = iter(range(1, 1 << 20))
        run = lambda *a: run_entry(args.exe, what, L, wpath, work,
                                   next(calls), *a)
        label = f"{kind}{closer} {what}"
        if kind == "attention":
            ref = close(block(cfg, T, mixer, x.astype(np.float64)))
            report(f"{label} B={B} S={S}", rel(run(x), ref))
            return 0 if ok else 1
        zc, zs = zero_states(cfg, B)
        check_stateful(report, run, mamba_ref, x, zc, zs, rng, label, "ssm")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
