"""Float64 reference for Kimi-Linear's two layer types (a kimi_linear
config), as its modeling_kimi.py writes them (with flash-linear-attention's
naive_recurrent_kda and naive_kda_gate for the kernels it calls), against
an executable's `block`, `layer` and `model`.

The config's own fields (with KimiLinearConfig's defaults) give the shapes,
so nothing comes from the compiler. Random weights under their checkpoint
names go into a .safetensors file.

KDA layers (KimiDeltaAttention after input_layernorm; a layer is KDA when
its 1-based number is in linear_attn_config.kda_layers): q_proj, k_proj,
v_proj, each through its own causal depthwise conv1d (no bias) and SiLU
(the states: the last K - 1 inputs of q, k and v, stacked [q | k | v] as
the executable's conv state); q and k L2-normalized (eps 1e-6); the gate
g = -exp(A_log[h]) softplus(f_b(f_a(x)) + dt_bias) per key channel
(A_log stored [1, 1, H, 1]); beta = sigmoid(b_proj(x)); the delta rule
token by token, S <- diag(e^g) S, S <- S + (beta k)(v - k^T S)^T,
o = S^T (q / sqrt(d)); o_norm: RMSNorm over each head's d (eps
rms_norm_eps) times its weight times sigmoid(g_b(g_a(x))); o_proj; the
residual.

MLA layers (KimiMLAAttention, mla_use_nope): q_proj per head
[nope | rope]; kv_a_proj_with_mqa -> [latent | k_rot]; the latent through
kv_a_layernorm (eps 1e-6, KimiRMSNorm's default) and kv_b_proj per head
[k_nope | v]; keys [k_nope | k_rot] (k_rot shared by every head, not
rotated); causal softmax scaled by (nope + rope)^-1/2; o_proj; the residual.

With --entry layer the feed-forward network follows (post_attention_
layernorm): KimiMLP (gate_proj, up_proj, down_proj) before
first_k_dense_replace, else KimiSparseMoeBlock: sigmoid scores, the top-k
of scores + e_score_correction_bias within the topk_group best groups
(a group scored by its best two), the chosen scores (without the bias, as
DeepSeek-V3 and vLLM weigh them) renormalized (+ 1e-20) and scaled by
routed_scaling_factor, experts w1 (gate), w3 (up), w2 (down), plus the
shared experts.

For a KDA layer the states are passed along: one call, split in two calls,
prefill then token-by-token decode, and one step from random states must
match the float64 layer over the whole sequence (outputs and states).
With --entry model, `model` over every layer from fresh states.

usage: kimi_block_ref.py EXE CONFIG --layer L [--seq S] [--batch B]
       [--entry block|layer|model]
Prints one `ok`/`FAIL` line per case; exit 1 on a failure.
"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from block_ref import (check_stateful, rel, rms_norm,  # noqa: E402
                       run_entry, run_model_entry, silu, softplus,
                       stateful_args, write_safetensors)

TOL = 1e-5


def is_kda(cfg, L):
    lin = cfg.get("linear_attn_config")
    return lin is not None and (L + 1) in lin["kda_layers"]


def kda_dims(cfg):
    lin = cfg["linear_attn_config"]
    return lin["num_heads"], lin["head_dim"], lin["short_conv_kernel_size"]


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def kda_layer(cfg, t, pre, x, conv_state, state):
    """x [B, S, hidden], conv_state [B, 3 H d, K - 1], state [B, H, d, d]
    -> y, conv_state', state'."""
    H, d, K = kda_dims(cfg)
    eps = cfg.get("rms_norm_eps", 1e-6)
    B, S, _ = x.shape
    a = pre + "self_attn."
    h = rms_norm(x, t[pre + "input_layernorm.weight"], eps, False)
    qkv = np.concatenate([h @ t[a + n + "_proj.weight"].T for n in "qkv"], -1)
    xs = np.concatenate([conv_state.transpose(0, 2, 1), qkv], 1)
    w = np.concatenate([t[a + n + "_conv1d.weight"][:, 0, :] for n in "qkv"])
    y = silu(sum(w[:, j] * xs[:, j:j + S, :] for j in range(K)))
    new_conv = xs[:, S:, :].transpose(0, 2, 1)
    q, k, v = (y[..., i * H * d:(i + 1) * H * d].reshape(B, S, H, d)
               for i in range(3))
    l2 = lambda u: u / np.sqrt((u * u).sum(-1, keepdims=True) + 1e-6)
    q, k = l2(q), l2(k)
    f = (h @ t[a + "f_a_proj.weight"].T) @ t[a + "f_b_proj.weight"].T
    g = -np.exp(t[a + "A_log"].reshape(H))[:, None] * softplus(
        f.reshape(B, S, H, d) + t[a + "dt_bias"].reshape(H, d))
    beta = sigmoid(h @ t[a + "b_proj.weight"].T)              # [B, S, H]
    st = state.copy()
    o = np.zeros((B, S, H, d))
    for b in range(B):
        for hh in range(H):
            for s in range(S):
                st[b, hh] *= np.exp(g[b, s, hh])[:, None]
                kv = k[b, s, hh] @ st[b, hh]
                st[b, hh] += np.outer(beta[b, s, hh] * k[b, s, hh],
                                      v[b, s, hh] - kv)
                o[b, s, hh] = (q[b, s, hh] / np.sqrt(d)) @ st[b, hh]
    gate = (h @ t[a + "g_a_proj.weight"].T) @ t[a + "g_b_proj.weight"].T
    o = o / np.sqrt((o * o).mean(-1, keepdims=True) + eps)
    o = o * t[a + "o_norm.weight"] * sigmoid(gate.reshape(B, S, H, d))
    return x + o.reshape(B, S, H * d) @ t[a + "o_proj.weight"].T, new_conv, st


def mla_layer(cfg, t, pre, x):
    hq = cfg["num_attention_heads"]
    dn, dr = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"]
    dv, r = cfg["v_head_dim"], cfg["kv_lora_rank"]
    eps = cfg.get("rms_norm_eps", 1e-6)
    B, S, _ = x.shape
    a = pre + "self_attn."
    h = rms_norm(x, t[pre + "input_layernorm.weight"], eps, False)
    q = (h @ t[a + "q_proj.weight"].T).reshape(B, S, hq, dn + dr)
    ckv = h @ t[a + "kv_a_proj_with_mqa.weight"].T
    lat = rms_norm(ckv[..., :r], t[a + "kv_a_layernorm.weight"], 1e-6, False)
    kv = (lat @ t[a + "kv_b_proj.weight"].T).reshape(B, S, hq, dn + dv)
    krot = np.broadcast_to(ckv[:, :, None, r:], (B, S, hq, dr))
    k = np.concatenate([kv[..., :dn], krot], -1)
    v = kv[..., dn:]
    o = np.zeros((B, S, hq, dv))
    causal = np.tril(np.ones((S, S), bool))
    for b in range(B):
        for hh in range(hq):
            sc = q[b, :, hh] @ k[b, :, hh].T / np.sqrt(dn + dr)
            sc = np.where(causal, sc, -np.inf)
            e = np.exp(sc - sc.max(-1, keepdims=True))
            o[b, :, hh] = (e / e.sum(-1, keepdims=True)) @ v[b, :, hh]
    return x + o.reshape(B, S, hq * dv) @ t[a + "o_proj.weight"].T


def is_moe(cfg, L):
    return (cfg.get("num_experts") is not None
            and L >= cfg.get("first_k_dense_replace", 0)
            and L % cfg.get("moe_layer_freq", 1) == 0)


def glu(v, wg, wu, wd):
    return (silu(v @ wg.T) * (v @ wu.T)) @ wd.T


def feed_forward(cfg, t, pre, L, x):
    eps = cfg.get("rms_norm_eps", 1e-6)
    h = rms_norm(x, t[pre + "post_attention_layernorm.weight"], eps, False)
    if not is_moe(cfg, L):
        m = pre + "mlp."
        return x + glu(h, t[m + "gate_proj.weight"], t[m + "up_proj.weight"],
                       t[m + "down_proj.weight"])
    m = pre + "block_sparse_moe."
    E, k = cfg["num_experts"], cfg["num_experts_per_token"]
    G, keep = cfg.get("num_expert_group", 1), cfg.get("topk_group", 1)
    logits = h @ t[m + "gate.weight"].T
    scores = sigmoid(logits) if cfg.get(
        "moe_router_activation_func", "sigmoid") == "sigmoid" else (
        np.exp(logits - logits.max(-1, keepdims=True)) /
        np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True))
    choice = scores + t[m + "gate.e_score_correction_bias"]
    per = E // G
    gs = np.sort(choice.reshape(*choice.shape[:-1], G, per), -1)[..., -2:]
    gs = gs.sum(-1)
    kept = np.argsort(-gs, -1, kind="stable")[..., :keep]
    gmask = np.zeros_like(gs, bool)
    np.put_along_axis(gmask, kept, True, -1)
    emask = np.repeat(gmask, per, -1)
    top = np.argsort(-np.where(emask, choice, 0.0), -1, kind="stable")[..., :k]
    wts = np.take_along_axis(scores, top, -1)
    if k > 1 and cfg.get("moe_renormalize", True):
        wts = wts / (wts.sum(-1, keepdims=True) + 1e-20)
    wts = wts * cfg.get("routed_scaling_factor", 1.0)
    y = np.zeros_like(h)
    for b in range(h.shape[0]):
        for i in range(h.shape[1]):
            for j in range(k):
                e = m + f"experts.{top[b, i, j]}."
                y[b, i] += wts[b, i, j] * glu(h[b, i], t[e + "w1.weight"],
                                              t[e + "w3.weight"],
                                              t[e + "w2.weight"])
    if cfg.get("num_shared_experts", 0):
        s = m + "shared_experts."
        y += glu(h, t[s + "gate_proj.weight"], t[s + "up_proj.weight"],
                 t[s + "down_proj.weight"])
    return x + y


def weights(cfg, L, rng, ffn):
    hid = cfg["hidden_size"]
    pre = f"model.layers.{L}."
    a = pre + "self_attn."
    w = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
    small = lambda *n: (rng.standard_normal(n) * 0.1).astype(np.float32)
    t = {pre + "input_layernorm.weight": 1 + small(hid)}
    if is_kda(cfg, L):
        H, d, K = kda_dims(cfg)
        for n in "qkv":
            t[a + n + "_proj.weight"] = w(H * d, hid)
            t[a + n + "_conv1d.weight"] = (rng.standard_normal((H * d, 1, K)) * 0.5).astype(np.float32)
        t[a + "f_a_proj.weight"] = w(d, hid)
        t[a + "f_b_proj.weight"] = w(H * d, d)
        t[a + "dt_bias"] = small(H * d)
        t[a + "A_log"] = (rng.standard_normal((1, 1, H, 1)) * 0.5 - 1).astype(np.float32)
        t[a + "b_proj.weight"] = w(H, hid)
        t[a + "g_a_proj.weight"] = w(d, hid)
        t[a + "g_b_proj.weight"] = w(H * d, d)
        t[a + "o_norm.weight"] = 1 + small(d)
        t[a + "o_proj.weight"] = w(hid, H * d)
    else:
        hq = cfg["num_attention_heads"]
        dn, dr = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"]
        dv, r = cfg["v_head_dim"], cfg["kv_lora_rank"]
        t[a + "q_proj.weight"] = w(hq * (dn + dr), hid)
        t[a + "kv_a_proj_with_mqa.weight"] = w(r + dr, hid)
        t[a + "kv_a_layernorm.weight"] = 1 + small(r)
        t[a + "kv_b_proj.weight"] = w(hq * (dn + dv), r)
        t[a + "o_proj.weight"] = w(hid, hq * dv)
    if ffn:
        t[pre + "post_attention_layernorm.weight"] = 1 + small(hid)
        if is_moe(cfg, L):
            m = pre + "block_sparse_moe."
            E, n = cfg["num_experts"], cfg["moe_intermediate_size"]
            t[m + "gate.weight"] = w(E, hid)
            t[m + "gate.e_score_correction_bias"] = small(E)
            for e in range(E):
                p = m + f"experts.{e}."
                t[p + "w1.weight"] = w(n, hid)
                t[p + "w3.weight"] = w(n, hid)
                t[p + "w2.weight"] = w(hid, n)
            ns = n * cfg.get("num_shared_experts", 0)
            if ns:
                s = m + "shared_experts."
                t[s + "gate_proj.weight"] = w(ns, hid)
                t[s + "up_proj.weight"] = w(ns, hid)
                t[s + "down_proj.weight"] = w(hid, ns)
        else:
            n = cfg.get("intermediate_size", 11008)
            m = pre + "mlp."
            t[m + "gate_proj.weight"] = w(n, hid)
            t[m + "up_proj.weight"] = w(n, hid)
            t[m + "down_proj.weight"] = w(hid, n)
    return t, pre


def fresh_states(cfg, B):
    H, d, K = kda_dims(cfg)
    return np.zeros((B, 3 * H * d, K - 1)), np.zeros((B, H, d, d))


def model(args, cfg):
    """`model --from 0 --to N-1` (fresh states) against the float64 layers
    one after the other."""
    n = cfg["num_hidden_layers"]
    rng = np.random.default_rng(5)
    t = {}
    for L in range(n):
        t.update(weights(cfg, L, rng, True)[0])
    T = {k: v.astype(np.float64) for k, v in t.items()}
    B, S, hid = args.batch, args.seq, cfg["hidden_size"]
    x = rng.standard_normal((B, S, hid)).astype(np.float32)
    ref = x.astype(np.float64)
    for L in range(n):
        pre = f"model.layers.{L}."
        if is_kda(cfg, L):
            ref = kda_layer(cfg, T, pre, ref, *fresh_states(cfg, B))[0]
        else:
            ref = mla_layer(cfg, T, pre, ref)
        ref = feed_forward(cfg, T, pre, L, ref)
    return run_model_entry(args.exe, t, x, ref, n, TOL)


def main():
    args = stateful_args()
    cfg = json.load(open(args.config))
    if args.entry == "model":
        return model(args, cfg)
    L = args.layer
    rng = np.random.default_rng(L + 17)
    whole = args.entry == "layer"
    t, pre = weights(cfg, L, rng, whole)
    T = {k: v.astype(np.float64) for k, v in t.items()}
    B, S, hid = args.batch, args.seq, cfg["hidden_size"]
    x = rng.standard_normal((B, S, hid)).astype(np.float32)
    ok = True
    what = args.entry

    def report(name, err):
        nonlocal ok
        good = err <= TOL
        ok = ok and good
        print(f"{'ok' if good else 'FAIL'} {name} max_rel_err={err:.3e}")

    def ffn(y):
        return feed_forward(cfg, T, pre, L, y) if whole else y

    def kda_ref(xs, conv, state):
        y, c, s = kda_layer(cfg, T, pre, xs, conv, state)
        return ffn(y), c, s

    with tempfile.TemporaryDirectory() as work:
        wpath = os.path.join(work, "w.safetensors")
        write_safetensors(wpath, t)
        calls = iter(range(1, 1 << 20))
        run = lambda *a: run_entry(args.exe, what, L, wpath, work,
                                   next(calls), *a)
        if not is_kda(cfg, L):
            ref = ffn(mla_layer(cfg, T, pre, x.astype(np.float64)))
            report(f"mla {what} B={B} S={S}", rel(run(x), ref))
            return 0 if ok else 1
        zc, zs = fresh_states(cfg, B)
        check_stateful(report, run, kda_ref, x, zc, zs, rng, f"kda {what}",
                       "recurrent")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
