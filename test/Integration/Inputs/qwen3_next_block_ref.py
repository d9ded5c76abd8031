"""Float64 reference for Qwen3-Next's two layer types, as transformers'
modeling_qwen3_next.py writes them, against an executable's `block`.

The config's own fields (with Qwen3NextConfig's defaults) give the shapes,
so nothing comes from the compiler. Random weights under their checkpoint
names go into a .safetensors file.

Full attention (Qwen3NextAttention after input_layernorm): (1 + w) RMSNorm,
q_proj giving per head [query (d), gate (d)], q/k (1 + w) RMSNorm per head,
rotate-half RoPE on the first partial_rotary_factor * d features, causal
GQA, output times sigmoid(gate), o_proj, residual.

Linear attention (Qwen3NextGatedDeltaNet after input_layernorm):
in_proj_qkvz / in_proj_ba per key head ([q, k, v (r dv), z (r dv)] and
[b (r), a (r)]), causal depthwise conv1d over [q | k | v] with SiLU (its
state: the last K - 1 inputs), q and k L2-normalized, beta = sigmoid(b),
g = -exp(A_log) softplus(a + dt_bias), the gated delta rule (gdn_ref's
recurrence), the gated RMSNorm (plain w times silu(z)), out_proj, residual.
For a linear layer the states are passed along: prefill in one call, split
in two calls, and prefill then token-by-token decode must all match the
float64 layer run over the whole sequence (outputs and final states).

usage: qwen3_next_block_ref.py EXE CONFIG --layer L [--seq S] [--batch B]
       [--write-to DIR]
Prints one `ok`/`FAIL` line per case; exit 1 on a failure.
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from block_ref import (attention, rel, rms_norm, rope,  # noqa: E402
                       run_entry, silu, write_safetensors)
from gdn_ref import recurrent  # noqa: E402

TOL = 1e-5


def full_layer(cfg, t, pre, x):
    H = cfg["hidden_size"]
    hq, hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg.get("head_dim", H // hq)
    eps = cfg.get("rms_norm_eps", 1e-6)
    rd = int(d * cfg.get("partial_rotary_factor", 0.25))
    theta = cfg.get("rope_theta", 10000.0)
    B, S, _ = x.shape
    a = pre + "self_attn."
    h = rms_norm(x, t[pre + "input_layernorm.weight"], eps, True)
    qg = (h @ t[a + "q_proj.weight"].T).reshape(B, S, hq, 2 * d)
    q, gate = qg[..., :d], qg[..., d:].reshape(B, S, hq * d)
    heads = lambda y, n: y.reshape(B, S, n, d).transpose(0, 2, 1, 3)
    q = heads(q, hq)
    k = heads(h @ t[a + "k_proj.weight"].T, hkv)
    v = heads(h @ t[a + "v_proj.weight"].T, hkv)
    q = rms_norm(q, t[a + "q_norm.weight"], eps, True)
    k = rms_norm(k, t[a + "k_norm.weight"], eps, True)
    q, k = rope(q, theta, rd), rope(k, theta, rd)
    o = attention(q, k, v, 1 / np.sqrt(d), 0, 0)
    o = o.transpose(0, 2, 1, 3).reshape(B, S, hq * d)
    o = o / (1.0 + np.exp(-gate))
    return x + o @ t[a + "o_proj.weight"].T


def linear_dims(cfg):
    hk, hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    return hk, hv, dk, dv, cfg.get("linear_conv_kernel_dim", 4)


def linear_layer(cfg, t, pre, x, conv_state, state):
    """x [B, S, H], conv_state [B, C, K-1], state [B, Hv, dk, dv] ->
    y, conv_state', state'."""
    hk, hv, dk, dv, K = linear_dims(cfg)
    r = hv // hk
    eps = cfg.get("rms_norm_eps", 1e-6)
    B, S, _ = x.shape
    a = pre + "linear_attn."
    h = rms_norm(x, t[pre + "input_layernorm.weight"], eps, True)
    qkvz = (h @ t[a + "in_proj_qkvz.weight"].T).reshape(B, S, hk, 2 * dk + 2 * r * dv)
    ba = (h @ t[a + "in_proj_ba.weight"].T).reshape(B, S, hk, 2 * r)
    q, k = qkvz[..., :dk], qkvz[..., dk:2 * dk]
    v = qkvz[..., 2 * dk:2 * dk + r * dv].reshape(B, S, hv * dv)
    z = qkvz[..., 2 * dk + r * dv:].reshape(B, S, hv, dv)
    b, aa = ba[..., :r].reshape(B, S, hv), ba[..., r:].reshape(B, S, hv)
    mixed = np.concatenate([q.reshape(B, S, -1), k.reshape(B, S, -1), v], -1)
    xs = np.concatenate([conv_state.transpose(0, 2, 1), mixed], 1)
    w = t[a + "conv1d.weight"][:, 0, :]                     # [C, K]
    y = sum(w[:, j] * xs[:, j:j + S, :] for j in range(K))
    y = silu(y)
    new_conv = xs[:, S:, :].transpose(0, 2, 1)
    qc = y[..., :hk * dk].reshape(B, S, hk, dk).transpose(0, 2, 1, 3)
    kc = y[..., hk * dk:2 * hk * dk].reshape(B, S, hk, dk).transpose(0, 2, 1, 3)
    vc = y[..., 2 * hk * dk:].reshape(B, S, hv, dv).transpose(0, 2, 1, 3)
    qc = qc / np.sqrt((qc * qc).sum(-1, keepdims=True) + 1e-6)
    kc = kc / np.sqrt((kc * kc).sum(-1, keepdims=True) + 1e-6)
    beta = (1.0 / (1.0 + np.exp(-b))).transpose(0, 2, 1)
    sp = aa + t[a + "dt_bias"]
    sp = np.where(sp > 20, sp, np.log1p(np.exp(np.minimum(sp, 20))))
    g = (-np.exp(t[a + "A_log"]) * sp).transpose(0, 2, 1)
    o, new_state = recurrent(qc, kc, vc, g, beta, 1 / np.sqrt(dk), state)
    o = o.transpose(0, 2, 1, 3)                             # [B, S, Hv, dv]
    o = o / np.sqrt((o * o).mean(-1, keepdims=True) + eps)
    o = (o * t[a + "norm.weight"] * silu(z)).reshape(B, S, hv * dv)
    return x + o @ t[a + "out_proj.weight"].T, new_conv, new_state


def weights(cfg, L, linear, rng):
    H = cfg["hidden_size"]
    pre = f"model.layers.{L}."
    w = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
    small = lambda n: (rng.standard_normal(n) * 0.1).astype(np.float32)
    t = {pre + "input_layernorm.weight": small(H)}
    if linear:
        hk, hv, dk, dv, K = linear_dims(cfg)
        a = pre + "linear_attn."
        t[a + "in_proj_qkvz.weight"] = w(2 * hk * dk + 2 * hv * dv, H)
        t[a + "in_proj_ba.weight"] = w(2 * hv, H)
        t[a + "conv1d.weight"] = (rng.standard_normal((2 * hk * dk + hv * dv, 1, K)) * 0.5).astype(np.float32)
        t[a + "dt_bias"] = small(hv)
        t[a + "A_log"] = (rng.standard_normal(hv) * 0.5 - 1).astype(np.float32)
        t[a + "norm.weight"] = (1 + small(dv)).astype(np.float32)
        t[a + "out_proj.weight"] = w(H, hv * dv)
    else:
        hq, hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        d = cfg.get("head_dim", H // hq)
        a = pre + "self_attn."
        t[a + "q_proj.weight"] = w(2 * hq * d, H)
        t[a + "k_proj.weight"] = w(hkv * d, H)
        t[a + "v_proj.weight"] = w(hkv * d, H)
        t[a + "q_norm.weight"] = small(d)
        t[a + "k_norm.weight"] = small(d)
        t[a + "o_proj.weight"] = w(H, hq * d)
    return t, pre


class Exe:
    def __init__(self, exe, layer, wpath, work):
        self.exe, self.layer, self.wpath, self.work = exe, layer, wpath, work
        self.n = 0

    def block(self, x, conv=None, state=None):
        """Runs `block`; returns y (and the states when conv is given)."""
        self.n += 1
        return run_entry(self.exe, "block", self.layer, self.wpath, self.work,
                         self.n, x, conv, state)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("config")
    ap.add_argument("--layer", type=int, required=True)
    ap.add_argument("--seq", type=int, default=37)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--write-to", help="only write w.safetensors and x.npy "
                    "there (for the error tests)")
    args = ap.parse_args()
    cfg = json.load(open(args.config))
    L = args.layer
    linear = (L + 1) % cfg.get("full_attention_interval", 4) != 0
    rng = np.random.default_rng(L + 5)
    t, pre = weights(cfg, L, linear, rng)
    T = {k: v.astype(np.float64) for k, v in t.items()}
    B, S, H = args.batch, args.seq, cfg["hidden_size"]
    x = rng.standard_normal((B, S, H)).astype(np.float32)
    ok = True
    if args.write_to:
        write_safetensors(os.path.join(args.write_to, "w.safetensors"), t)
        np.save(os.path.join(args.write_to, "x.npy"), x)
        return 0

    def report(name, err):
        nonlocal ok
        good = err <= TOL
        ok = ok and good
        print(f"{'ok' if good else 'FAIL'} {name} max_rel_err={err:.3e}")

    with tempfile.TemporaryDirectory() as work:
        wpath = os.path.join(work, "w.safetensors")
        write_safetensors(wpath, t)
        exe = Exe(args.exe, L, wpath, work)
        if not linear:
            ref = full_layer(cfg, T, pre, x.astype(np.float64))
            report(f"full-attention block B={B} S={S}", rel(exe.block(x), ref))
            return 0 if ok else 1
        hk, hv, dk, dv, K = linear_dims(cfg)
        C = 2 * hk * dk + hv * dv
        zc, zs = np.zeros((B, C, K - 1)), np.zeros((B, hv, dk, dv))
        ref, rc, rs = linear_layer(cfg, T, pre, x.astype(np.float64), zc, zs)
        # A fresh sequence without state options: zeros.
        report(f"linear block B={B} S={S} (no state given)",
               rel(exe.block(x), ref))
        y, c1, s1 = exe.block(x, zc, zs)
        report(f"linear block B={B} S={S} output", rel(y, ref))
        report(f"linear block B={B} S={S} conv state", rel(c1, rc))
        report(f"linear block B={B} S={S} recurrent state", rel(s1, rs))
        if S < 2:
            return 0 if ok else 1
        # Prefill split in two calls, the states passed.
        cut = S // 2 + 1
        y1, c, s = exe.block(x[:, :cut], zc, zs)
        y2, c, s = exe.block(x[:, cut:], c, s)
        report(f"linear block split {cut}+{S - cut}",
               max(rel(np.concatenate([y1, y2], 1), ref), rel(c, rc), rel(s, rs)))
        # Prefill, then token by token.
        steps = min(6, S - 1)
        ys = [exe.block(x[:, :S - steps], zc, zs)]
        c, s = ys[0][1], ys[0][2]
        ys = [ys[0][0]]
        for i in range(S - steps, S):
            yi, c, s = exe.block(x[:, i:i + 1], c, s)
            ys.append(yi)
        report(f"linear block prefill {S - steps} + {steps} decode steps",
               max(rel(np.concatenate(ys, 1), ref), rel(c, rc), rel(s, rs)))
        # A decode step against random (nonzero) states.
        c0 = rng.standard_normal((B, C, K - 1))
        s0 = rng.standard_normal((B, hv, dk, dv)) * 0.3
        r1, rc1, rs1 = linear_layer(cfg, T, pre, x[:, :1].astype(np.float64), c0, s0)
        y, c, s = exe.block(x[:, :1], c0, s0)
        report("linear block S=1 from random states",
               max(rel(y, r1), rel(c, rc1), rel(s, rs1)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
