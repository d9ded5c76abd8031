"""Float64 reference for attention, independent of the compiler.

Generates float32 inputs, runs `EXE sdpa`, computes the same attention in
float64 with NumPy (plain loops over the definition, no shared code with the
compiler), and compares: max |out - ref| / max |ref| must be <= --tol.
With --kv-dtype bf16/f16 (an executable compiled with that --kv-dtype), K and
V are rounded to nearest even, saved as bfloat16 bits ('<u2') or float16
('<f2'), and the reference reads the rounded values. With --qo-dtype bf16/f16
(--qo-dtype at compile time) q is so too, and the output read back in that
type must be the reference within the type's rounding (--tol).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np


def reference(q, k, v, scale, causal, window, softcap, lens, per_row=False):
    """per_row: query row i of sequence b at key lens[b] - sq + i (a paged
    cache's decode), else at skv - sq + i (bottom-right alignment)."""
    b, hq, sq, d = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    group = hq // hkv
    q, k, v = q.astype(np.float64), k.astype(np.float64), v.astype(np.float64)
    out = np.zeros((b, hq, sq, v.shape[3]))
    for bi in range(b):
        offset = (lens[bi] if per_row else skv) - sq
        for h in range(hq):
            s = q[bi, h] @ k[bi, h // group].T * scale
            if softcap:
                s = softcap * np.tanh(s / softcap)
            i = np.arange(sq)[:, None] + offset
            j = np.arange(skv)[None, :]
            visible = j < lens[bi]
            if causal:
                visible = visible & (j <= i)
            if window:
                visible = visible & (j > i - window)
            visible = np.broadcast_to(visible, (sq, skv))
            s = np.where(visible, s, -np.inf)
            for r in range(sq):
                if not visible[r].any():
                    continue  # a row that sees no key is 0
                e = np.exp(s[r] - s[r].max())
                out[bi, h, r] = (e / e.sum()) @ v[bi, h // group]
    return out


def to_bf16_bits(x):
    """float32 -> bfloat16 bits (uint16), round to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("exe")
    p.add_argument("--layer", type=int, default=0)
    p.add_argument("--hq", type=int, required=True)
    p.add_argument("--hkv", type=int, required=True)
    p.add_argument("--d", type=int, required=True)
    p.add_argument("--dv", type=int)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--sq", type=int, required=True)
    p.add_argument("--skv", type=int)
    p.add_argument("--scale", type=float)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--window", type=int, default=0)
    p.add_argument("--softcap", type=float, default=0.0)
    p.add_argument("--lens", type=str, help="comma-separated key lengths")
    p.add_argument("--magnitude", type=float, default=1.0,
                   help="scale of q and k entries (logit size)")
    p.add_argument("--qkv", type=str, help="use this [S, D] matrix as q = k = v")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--kv-dtype", choices=("f32", "bf16", "f16"), default="f32")
    p.add_argument("--qo-dtype", choices=("f32", "bf16", "f16"), default="f32")
    p.add_argument("--print", action="store_true")
    p.add_argument("--mpirun", type=str,
                   help="run `sdpa` under this MPI launcher (an executable "
                        "compiled with --distributed=mpi), e.g. 'mpirun -np 2'")
    p.add_argument("--mode", choices=("decode", "ring"),
                   help="with --mpirun: sdpa's --mode (decode: the query "
                        "rows are each sequence's last sq of its --lens)")
    p.add_argument("--page-size", type=int)
    a = p.parse_args()
    dv = a.dv or a.d
    skv = a.skv or a.sq
    scale = a.scale if a.scale is not None else 1 / np.sqrt(a.d)
    rng = np.random.default_rng(a.seed)
    if a.qkv:
        x = np.array(eval(a.qkv), dtype=np.float32)
        q = k = v = x.reshape(1, 1, *x.shape)
    else:
        q = (rng.standard_normal((a.batch, a.hq, a.sq, a.d)) * a.magnitude).astype(np.float32)
        k = (rng.standard_normal((a.batch, a.hkv, skv, a.d)) * a.magnitude).astype(np.float32)
        v = rng.standard_normal((a.batch, a.hkv, skv, dv)).astype(np.float32)
    lens = [skv] * q.shape[0]
    if a.lens:
        lens = [int(x) for x in a.lens.split(",")]
    with tempfile.TemporaryDirectory() as t:
        paths = {n: os.path.join(t, n + ".npy") for n in ("q", "k", "v", "o", "l")}
        if a.qo_dtype == "bf16":
            qb = to_bf16_bits(q)
            q = from_bf16_bits(qb)
        elif a.qo_dtype == "f16":
            qb = q.astype(np.float16)
            q = qb.astype(np.float32)
        else:
            qb = q
        np.save(paths["q"], qb)
        if a.kv_dtype == "bf16":
            kb, vb = to_bf16_bits(k), to_bf16_bits(v)
            k, v = from_bf16_bits(kb), from_bf16_bits(vb)
        elif a.kv_dtype == "f16":
            kb, vb = k.astype(np.float16), v.astype(np.float16)
            k, v = kb.astype(np.float32), vb.astype(np.float32)
        else:
            kb, vb = k, v
        np.save(paths["k"], kb)
        np.save(paths["v"], vb)
        cmd = [a.exe, "sdpa", "--layer", str(a.layer), "--q", paths["q"],
               "--k", paths["k"], "--v", paths["v"], "--out", paths["o"]]
        if a.mpirun:
            cmd = a.mpirun.split() + cmd + ["--mode", a.mode]
            if a.page_size:
                cmd += ["--page-size", str(a.page_size)]
        if a.lens:
            np.save(paths["l"], np.array(lens, dtype=np.int64))
            cmd += ["--kv-lengths", paths["l"]]
        subprocess.run(cmd, check=True)
        out = np.load(paths["o"])
    want = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}[a.qo_dtype]
    if out.dtype != want:
        print(f"FAIL dtype {out.dtype}, expected {np.dtype(want)}")
        return 1
    out = from_bf16_bits(out) if a.qo_dtype == "bf16" else out.astype(np.float32)
    ref = reference(q, k, v, scale, a.causal, a.window, a.softcap, lens,
                    per_row=a.mode == "decode")
    if out.shape != ref.shape:
        print(f"FAIL shape {out.shape} != {ref.shape}")
        return 1
    if not np.isfinite(out).all():
        print("FAIL: non-finite output")
        return 1
    denom = max(np.abs(ref).max(), 1e-30)
    rel = np.abs(out - ref).max() / denom
    zero_rows = int((np.abs(ref).sum(-1) == 0).sum())
    if a.print:
        np.set_printoptions(precision=6, suppress=True)
        print(out.reshape(-1, out.shape[-1]))
    status = "ok" if rel <= a.tol else "FAIL"
    print(f"{status} max_rel_err={rel:.3e} zero_rows={zero_rows} "
          f"shape={list(out.shape)}")
    return 0 if rel <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
