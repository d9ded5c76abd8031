"""Float64 reference for a whole attention block, as Hugging Face writes it.

Writes random weights as a .safetensors file under their checkpoint names and
random hidden states, runs `EXE block`, computes the block in float64 with
NumPy (RMSNorm, projections with bias, q/k norm, rotate-half RoPE at
positions 0..S-1, grouped-query attention with the family's mask, scale and
softcap, output projection, Gemma's post-norm, residual), and compares.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def write_safetensors(path, tensors, pad_bytes=0):
    """With pad_bytes, a last tensor of that size the block does not use,
    left as a hole in a sparse file (a checkpoint far larger than memory)."""
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if pad_bytes:
        header["unused.padding"] = {"dtype": "F32", "shape": [pad_bytes // 4],
                                    "data_offsets": [offset,
                                                     offset + pad_bytes]}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)
        if pad_bytes:
            f.truncate(8 + len(h) + offset + pad_bytes)


def rms_norm(x, w, eps, unit_offset):
    x = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x * ((1.0 + w) if unit_offset else w)


def rope(x, theta, rd):
    s = x.shape[2]
    inv = 1.0 / theta ** (np.arange(0, rd, 2) / rd)
    ang = np.arange(s)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang), np.cos(ang)], -1)
    sin = np.concatenate([np.sin(ang), np.sin(ang)], -1)
    xr, xp = x[..., :rd], x[..., rd:]
    x1, x2 = xr[..., : rd // 2], xr[..., rd // 2:]
    rot = np.concatenate([-x2, x1], -1)
    return np.concatenate([xr * cos + rot * sin, xp], -1)


def attention(q, k, v, scale, window, softcap):
    b, hq, s, d = q.shape
    group = hq // k.shape[1]
    out = np.zeros(q.shape[:3] + (v.shape[3],))
    for h in range(hq):
        sc = q[:, h] @ k[:, h // group].transpose(0, 2, 1) * scale
        if softcap:
            sc = softcap * np.tanh(sc / softcap)
        i = np.arange(s)[:, None]
        j = np.arange(s)[None, :]
        visible = j <= i
        if window:
            visible &= j > i - window
        sc = np.where(visible, sc, -np.inf)
        e = np.exp(sc - sc.max(-1, keepdims=True))
        out[:, h] = (e / e.sum(-1, keepdims=True)) @ v[:, h // group]
    return out


def rel(a, b):
    """max |a - b| / max |b|; inf for a shape mismatch or a non-finite a."""
    if a.shape != b.shape or not np.all(np.isfinite(a)):
        return np.inf
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def silu(x):
    return x / (1.0 + np.exp(-x))


def softplus(x):
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


def mamba2_mixer(t, a, h, dims, conv_state, state, limit, eps, norm_groups):
    """The Mamba2 mixer (transformers' torch_forward) on the normed hidden
    states h [B, S, H], its weights under prefix `a`, dims (heads, n_groups,
    d_state N, head dim P, conv kernel K): in_proj (with its bias if
    present) giving [gate (I), x B C (I + 2 G N), dt (heads)]; the causal
    depthwise conv1d over x B C with its bias and SiLU (its state: the last
    K - 1 inputs); dt = softplus(dt + dt_bias) clamped to `limit` (lo, hi);
    A = -exp(A_log); the SSD token by token, head h reading group
    h // (heads / G): S <- exp(dt A) S + B (dt x)^T, y = S^T C (the state
    [N, P], the transpose of transformers' ssm_states [P, N]); y + D x; the
    gated RMSNorm, gate first, over each of `norm_groups` groups of the
    intermediate size (u = y silu(gate), u / rms(u) * w); out_proj.
    conv_state [B, C, K-1], state [B, heads, N, P] -> (out, conv', state')."""
    heads, g, n, p, K = dims
    inner = heads * p
    C = inner + 2 * g * n
    B, S, _ = h.shape
    bias = lambda name: t.get(a + name, 0.0)
    proj = h @ t[a + "in_proj.weight"].T + bias("in_proj.bias")
    gate, xbc, dt = proj[..., :inner], proj[..., inner:inner + C], proj[..., inner + C:]
    xs = np.concatenate([conv_state.transpose(0, 2, 1), xbc], 1)
    w = t[a + "conv1d.weight"][:, 0, :]                     # [C, K]
    y = sum(w[:, j] * xs[:, j:j + S, :] for j in range(K)) + bias("conv1d.bias")
    y = silu(y)
    new_conv = xs[:, S:, :].transpose(0, 2, 1)
    xh = y[..., :inner].reshape(B, S, heads, p)
    Bm = y[..., inner:inner + g * n].reshape(B, S, g, n)
    Cm = y[..., inner + g * n:].reshape(B, S, g, n)
    dt = softplus(dt + t[a + "dt_bias"])                    # [B, S, heads]
    dt = np.clip(dt, float(limit[0]), float(limit[1]))
    A = -np.exp(t[a + "A_log"])
    st = state.copy()
    out = np.zeros((B, S, heads, p))
    r = heads // g
    for b in range(B):
        for hh in range(heads):
            for s in range(S):
                st[b, hh] = (st[b, hh] * np.exp(dt[b, s, hh] * A[hh]) +
                             np.outer(Bm[b, s, hh // r], dt[b, s, hh] * xh[b, s, hh]))
                out[b, s, hh] = st[b, hh].T @ Cm[b, s, hh // r]
    out = out + t[a + "D"][:, None] * xh
    u = (out.reshape(B, S, inner) * silu(gate)).reshape(B, S, norm_groups, -1)
    u = u / np.sqrt((u * u).mean(-1, keepdims=True) + eps)
    u = u.reshape(B, S, inner) * t[a + "norm.weight"]
    o = u @ t[a + "out_proj.weight"].T + bias("out_proj.bias")
    return o, new_conv, st


def run_entry(exe, entry, layer, wpath, work, n, x, conv=None, state=None):
    """Runs `entry` (block or layer); returns y (and the states when conv
    is given)."""
    p = lambda name: os.path.join(work, f"{name}{n}.npy")
    np.save(p("x"), x.astype(np.float32))
    cmd = [exe, entry, "--layer", str(layer), "--weights", wpath,
           "--x", p("x"), "--out", p("y")]
    if conv is not None:
        np.save(p("c0"), conv.astype(np.float32))
        np.save(p("s0"), state.astype(np.float32))
        cmd += ["--conv-state-in", p("c0"), "--state-in", p("s0"),
                "--conv-state-out", p("c1"), "--state-out", p("s1")]
    subprocess.run(cmd, check=True)
    y = np.load(p("y"))
    if conv is None:
        return y
    return y, np.load(p("c1")), np.load(p("s1"))


def run_model_entry(exe, tensors, x, ref, n, tol):
    """`model --from 0 --to n-1` of `exe` over every layer (fresh states),
    weights `tensors`, input x, against the float64 output `ref`; prints
    one line, returns the exit code."""
    with tempfile.TemporaryDirectory() as work:
        wpath = os.path.join(work, "w.safetensors")
        write_safetensors(wpath, tensors)
        np.save(os.path.join(work, "x.npy"), x)
        subprocess.run([exe, "model", "--from", "0", "--to", str(n - 1),
                        "--weights", wpath, "--x", os.path.join(work, "x.npy"),
                        "--out", os.path.join(work, "y.npy")], check=True)
        err = rel(np.load(os.path.join(work, "y.npy")), ref)
    good = err <= tol
    B, S = x.shape[:2]
    print(f"{'ok' if good else 'FAIL'} model layers 0..{n - 1} B={B} S={S} "
          f"max_rel_err={err:.3e}")
    return 0 if good else 1


def stateful_args():
    """The command line of the hybrid references: EXE CONFIG [--layer L]
    [--seq S] [--batch B] [--entry block|layer|model]."""
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("config")
    ap.add_argument("--layer", type=int, default=0)
    ap.add_argument("--seq", type=int, default=37)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--entry", choices=["block", "layer", "model"],
                    default="block")
    return ap.parse_args()


def check_stateful(report, run, ref, x, zc, zs, rng, label, state_name):
    """A linear layer's `block`/`layer` with its convolution and recurrent
    states passed along, against the float64 layer `ref(x, conv, state)`
    -> (y, conv', state') over the whole sequence: no state given, states
    in and out, the sequence split in two calls, prefill then decode steps,
    and one step from random (nonzero) states. `run(x[, conv, state])` runs
    the executable; `report(name, err)` prints one line."""
    B, S = x.shape[:2]
    ref_y, rc, rs = ref(x.astype(np.float64), zc, zs)
    report(f"{label} B={B} S={S} (no state given)", rel(run(x), ref_y))
    y, c1, s1 = run(x, zc, zs)
    report(f"{label} B={B} S={S} output", rel(y, ref_y))
    report(f"{label} B={B} S={S} conv state", rel(c1, rc))
    report(f"{label} B={B} S={S} {state_name} state", rel(s1, rs))
    if S >= 2:
        cut = S // 2 + 1
        y1, c, st = run(x[:, :cut], zc, zs)
        y2, c, st = run(x[:, cut:], c, st)
        report(f"{label} split {cut}+{S - cut}",
               max(rel(np.concatenate([y1, y2], 1), ref_y), rel(c, rc),
                   rel(st, rs)))
        steps = min(6, S - 1)
        y0, c, st = run(x[:, :S - steps], zc, zs)
        ys = [y0]
        for i in range(S - steps, S):
            yi, c, st = run(x[:, i:i + 1], c, st)
            ys.append(yi)
        report(f"{label} prefill {S - steps} + {steps} decode steps",
               max(rel(np.concatenate(ys, 1), ref_y), rel(c, rc),
                   rel(st, rs)))
    c0 = rng.standard_normal(zc.shape)
    s0 = rng.standard_normal(zs.shape) * 0.3
    r1, rc1, rs1 = ref(x[:, :1].astype(np.float64), c0, s0)
    y, c, st = run(x[:, :1], c0, s0)
    report(f"{label} S=1 from random states",
           max(rel(y, r1), rel(c, rc1), rel(st, rs1)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("exe")
    p.add_argument("--family", required=True,
                   choices=["llama", "mistral", "qwen2", "qwen3", "gemma2"])
    p.add_argument("--layer", type=int, default=0)
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--hq", type=int, required=True)
    p.add_argument("--hkv", type=int, required=True)
    p.add_argument("--d", type=int, required=True)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--theta", type=float, default=10000.0)
    p.add_argument("--eps", type=float, default=1e-6)
    p.add_argument("--window", type=int, default=0)
    p.add_argument("--softcap", type=float, default=0.0)
    p.add_argument("--scale", type=float)
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--pad-gb", type=int, default=0,
                   help="append an unused sparse tensor of this many GB")
    a = p.parse_args()
    rng = np.random.default_rng(a.layer + 11)
    L, H, D = a.layer, a.hidden, a.d
    pre = f"model.layers.{L}."
    w = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
    gemma = a.family == "gemma2"
    t = {pre + "input_layernorm.weight": (rng.standard_normal(H) * 0.1 + (0 if gemma else 1)).astype(np.float32),
         pre + "self_attn.q_proj.weight": w(a.hq * D, H),
         pre + "self_attn.k_proj.weight": w(a.hkv * D, H),
         pre + "self_attn.v_proj.weight": w(a.hkv * D, H),
         pre + "self_attn.o_proj.weight": w(H, a.hq * D)}
    if a.family == "qwen2":
        for n, width in (("q", a.hq * D), ("k", a.hkv * D), ("v", a.hkv * D)):
            t[pre + f"self_attn.{n}_proj.bias"] = (rng.standard_normal(width) * 0.1).astype(np.float32)
    if a.family == "qwen3":
        t[pre + "self_attn.q_norm.weight"] = (1 + rng.standard_normal(D) * 0.1).astype(np.float32)
        t[pre + "self_attn.k_norm.weight"] = (1 + rng.standard_normal(D) * 0.1).astype(np.float32)
    if gemma:
        t[pre + "post_attention_layernorm.weight"] = (rng.standard_normal(H) * 0.1).astype(np.float32)
    x = rng.standard_normal((a.batch, a.seq, H)).astype(np.float32)

    T = {k: v.astype(np.float64) for k, v in t.items()}
    x64 = x.astype(np.float64)
    h = rms_norm(x64, T[pre + "input_layernorm.weight"], a.eps, gemma)
    def proj(n, width):
        y = h @ T[pre + f"self_attn.{n}_proj.weight"].T
        if pre + f"self_attn.{n}_proj.bias" in T:
            y = y + T[pre + f"self_attn.{n}_proj.bias"]
        return y.reshape(a.batch, a.seq, width // D, D).transpose(0, 2, 1, 3)
    q, k, v = proj("q", a.hq * D), proj("k", a.hkv * D), proj("v", a.hkv * D)
    if a.family == "qwen3":
        q = rms_norm(q, T[pre + "self_attn.q_norm.weight"], a.eps, False)
        k = rms_norm(k, T[pre + "self_attn.k_norm.weight"], a.eps, False)
    q, k = rope(q, a.theta, D), rope(k, a.theta, D)
    scale = a.scale if a.scale is not None else 1 / np.sqrt(D)
    o = attention(q, k, v, scale, a.window, a.softcap)
    o = o.transpose(0, 2, 1, 3).reshape(a.batch, a.seq, a.hq * D)
    y = o @ T[pre + "self_attn.o_proj.weight"].T
    if gemma:
        y = rms_norm(y, T[pre + "post_attention_layernorm.weight"], a.eps, True)
    ref = x64 + y

    with tempfile.TemporaryDirectory() as d:
        write_safetensors(os.path.join(d, "w.safetensors"), t,
                          a.pad_gb << 30)
        np.save(os.path.join(d, "x.npy"), x)
        subprocess.run([a.exe, "block", "--layer", str(L), "--weights",
                        os.path.join(d, "w.safetensors"), "--x",
                        os.path.join(d, "x.npy"), "--out",
                        os.path.join(d, "y.npy")], check=True)
        out = np.load(os.path.join(d, "y.npy"))
    rel = np.abs(out - ref).max() / np.abs(ref).max()
    ok = out.shape == ref.shape and np.isfinite(out).all() and rel <= a.tol
    print(f"{'ok' if ok else 'FAIL'} block max_rel_err={rel:.3e} shape={list(out.shape)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
