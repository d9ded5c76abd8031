#!/usr/bin/env python3
"""The executable's `sdpa` of a kind with attention sinks against float64
attention written from transformers' gpt-oss eager_attention_forward: the
scores of each row get one more logit, the head's sink; softmax over the
extended row; the sink's column dropped. Reads the config itself (heads,
head size, layer types, window); sinks near the scores, very large (1e4),
very negative (-1e4), -inf (no sink) and large (30); key padding on the
second batch row; lengths long enough for split-K decode. Prints one line
per case and exits 1 if any is off by more than --tol of max |reference|.

    sinks_ref.py EXE CONFIG [--cases Sq:Skv,...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def reference(q, k, v, sinks, lens, scale, window):
    B, Hq, Sq, _ = q.shape
    Skv, G = k.shape[2], Hq // k.shape[1]
    out = np.zeros(q.shape[:3] + (v.shape[3],))
    i = np.arange(Sq)[:, None] + Skv - Sq
    j = np.arange(Skv)[None, :]
    for b in range(B):
        vis = (j <= i) & (j < lens[b])
        if window:
            vis &= j > i - window
        for h in range(Hq):
            s = q[b, h].astype(np.float64) @ k[b, h // G].T.astype(np.float64)
            s = np.where(vis, s * scale, -np.inf)
            full = np.concatenate([s, np.full((Sq, 1), float(sinks[h]))], 1)
            m = full.max(1, keepdims=True)
            e = np.exp(full - np.where(np.isfinite(m), m, 0))
            tot = e.sum(1, keepdims=True)
            p = np.where(tot > 0, e / np.where(tot > 0, tot, 1), 0)[:, :-1]
            out[b, h] = p @ v[b, h // G].astype(np.float64)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("config")
    ap.add_argument("--cases", default="1:1,3:3,17:17,5:33,33:7,1:3000")
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()
    c = json.load(open(a.config))
    Hq, Hkv = c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim") or c["hidden_size"] // Hq
    types = c["layer_types"]
    rng = np.random.default_rng(7)
    sinks = np.array([[0.3, 1e4, -1e4, -np.inf, 30.0][h % 5] if h % 6 != 5
                      else -2.0 for h in range(Hq)], np.float32)
    ok = True
    with tempfile.TemporaryDirectory() as work:
        f = lambda n: os.path.join(work, n)
        np.save(f("s.npy"), sinks)
        for layer, t in enumerate(types[:2]):
            window = c.get("sliding_window") if t == "sliding_attention" \
                else None
            for case in a.cases.split(","):
                Sq, Skv = map(int, case.split(":"))
                B = 2
                q = rng.standard_normal((B, Hq, Sq, D)).astype(np.float32)
                k = rng.standard_normal((B, Hkv, Skv, D)).astype(np.float32)
                v = rng.standard_normal((B, Hkv, Skv, D)).astype(np.float32)
                lens = np.array([Skv, Skv // 2], np.int64)
                for n, x in (("q", q), ("k", k), ("v", v), ("l", lens)):
                    np.save(f(n + ".npy"), x)
                subprocess.run([a.exe, "sdpa", "--layer", str(layer),
                                "--q", f("q.npy"), "--k", f("k.npy"),
                                "--v", f("v.npy"), "--sinks", f("s.npy"),
                                "--kv-lengths", f("l.npy"),
                                "--out", f("o.npy")], check=True)
                out = np.load(f("o.npy"))
                ref = reference(q, k, v, sinks, lens, D ** -0.5, window)
                rel = np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30)
                good = np.isfinite(out).all() and rel <= a.tol
                ok = ok and good
                print(f"{'ok' if good else 'FAIL'} sinks layer {layer} "
                      f"({t}) Sq={Sq} Skv={Skv} max_rel_err={rel:.3e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
