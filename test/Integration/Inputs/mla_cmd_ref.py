"""Float64 reference for an executable's `mla` command (the absorbed form's
attention of a multi-head latent attention kind), independent of the
compiler: random queries in the latent space [B, H, Sq, r + dr] and a latent
cache [B, Skv, r + dr] (rounded to bfloat16 with --kv-dtype bf16), `EXE mla`,
and the same attention in float64 (sdpa_ref.reference: every head over one
KV head whose key is the whole row and whose value is its first r
features, bottom-right causal, keys past --lengths masked).

usage: mla_cmd_ref.py EXE --layer L --heads H --rank R --rope DR --scale S
       [--batch B] [--seq SQ] [--kv-len SKV] [--lengths N,..] [--kv-dtype bf16]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from sdpa_ref import from_bf16_bits, reference, to_bf16_bits  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("exe")
    for name in ("layer", "heads", "rank", "rope"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--scale", type=float, required=True)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=1)
    p.add_argument("--kv-len", type=int, default=33)
    p.add_argument("--lengths")
    p.add_argument("--kv-dtype", default="f32", choices=["f32", "bf16"])
    p.add_argument("--qo-dtype", default="f32", choices=["f32", "bf16"],
                   help="q and the output as bfloat16 bits (an executable "
                        "compiled with --qo-dtype=bf16)")
    p.add_argument("--tol", type=float, default=1e-5)
    a = p.parse_args()
    rng = np.random.default_rng(5)
    row = a.rank + a.rope
    q = rng.standard_normal((a.batch, a.heads, a.seq, row)).astype(np.float32)
    cache = rng.standard_normal((a.batch, a.kv_len, row)).astype(np.float32)
    if a.kv_dtype == "bf16":
        bits = to_bf16_bits(cache)
        cache = from_bf16_bits(bits)
    qbits = None
    if a.qo_dtype == "bf16":
        qbits = to_bf16_bits(q)
        q = from_bf16_bits(qbits)
    lens = ([int(n) for n in a.lengths.split(",")] if a.lengths
            else [a.kv_len] * a.batch)
    with tempfile.TemporaryDirectory() as work:
        path = lambda n: os.path.join(work, n)  # noqa: E731
        np.save(path("q.npy"), q if qbits is None else qbits)
        np.save(path("c.npy"), bits if a.kv_dtype == "bf16" else cache)
        cmd = [a.exe, "mla", "--layer", str(a.layer), "--q", path("q.npy"),
               "--cache", path("c.npy"), "--out", path("o.npy")]
        if a.lengths:
            np.save(path("l.npy"), np.array(lens, dtype=np.int64))
            cmd += ["--kv-lengths", path("l.npy")]
        subprocess.run(cmd, check=True)
        out = np.load(path("o.npy"))
    if a.qo_dtype == "bf16":
        if out.dtype != np.uint16:
            print(f"FAIL dtype {out.dtype}, expected uint16 (bf16 bits)")
            return 1
        out = from_bf16_bits(out)
    k = cache[:, None]
    ref = reference(q, k, k[..., :a.rank], a.scale, True, None, None, lens)
    rel = np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30) \
        if out.shape == ref.shape else np.inf
    ok = out.shape == ref.shape and np.isfinite(out).all() and rel <= a.tol
    print(f"{'ok' if ok else 'FAIL'} mla B={a.batch} Sq={a.seq} "
          f"Skv={a.kv_len} {a.kv_dtype} q/out {a.qo_dtype} max_rel_err={rel:.3e} "
          f"shape={list(out.shape)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
