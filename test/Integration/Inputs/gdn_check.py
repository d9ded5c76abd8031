"""Checks a compiled executable's `gdn` command (Gated DeltaNet, the chunked
CPU kernel) against the float64 recurrence of gdn_ref.py, through .npy
files: S = 1, 16 (the recurrent form's limit), 63, 64, 65, 1000 and, with
--long, 16384 (no drift); batch 2; an initial state; extreme gates (state
resets, no decay, beta 0 and 1); prefill split in two calls with the state
passed from --state-out to --state-in, and prefill then token-by-token
decode. Every comparison is relative to max |reference| and must be
<= 1e-5; a NaN fails.

usage: gdn_check.py EXE LAYER HK HV DK DV WORKDIR [--long]
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import gdn_ref  # noqa: E402


def rel(a, b):
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return np.inf
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def inputs(rng, B, Hk, Hv, S, dk, dv, extreme):
    q = rng.standard_normal((B, Hk, S, dk))
    k = rng.standard_normal((B, Hk, S, dk))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal((B, Hv, S, dv))
    # g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b).
    g = -np.exp(rng.standard_normal((B, Hv, 1)) - 1.0) * np.log1p(
        np.exp(rng.standard_normal((B, Hv, S))))
    beta = 1.0 / (1.0 + np.exp(-rng.standard_normal((B, Hv, S))))
    if extreme:
        pick = rng.integers(0, 10, size=(B, Hv, S))
        g[pick == 0] = -60.0
        g[pick == 1] = 0.0
        beta[pick == 2] = 0.0
        beta[pick == 3] = 1.0
    f32 = lambda x: x.astype(np.float32)
    return tuple(map(f32, (q, k, v, g, beta)))


class Exe:
    def __init__(self, exe, layer, work):
        self.exe, self.layer, self.work = exe, layer, work
        self.n = 0

    def gdn(self, q, k, v, g, beta, state=None, lengths=None):
        self.n += 1
        p = lambda name: os.path.join(self.work, f"{name}{self.n}.npy")
        args = [self.exe, "gdn", "--layer", str(self.layer)]
        for name, x in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)):
            np.save(p(name), np.ascontiguousarray(x))
            args += ["--" + name, p(name)]
        if state is not None:
            np.save(p("s0"), np.ascontiguousarray(state.astype(np.float32)))
            args += ["--state-in", p("s0")]
        if lengths is not None:
            np.save(p("len"), np.asarray(lengths, dtype=np.int64))
            args += ["--lengths", p("len")]
        args += ["--out", p("o"), "--state-out", p("s1")]
        subprocess.run(args, check=True)
        return np.load(p("o")), np.load(p("s1"))


def main():
    exe, layer, Hk, Hv, dk, dv, work = sys.argv[1:8]
    Hk, Hv, dk, dv = int(Hk), int(Hv), int(dk), int(dv)
    long_ = "--long" in sys.argv
    os.makedirs(work, exist_ok=True)
    e = Exe(exe, int(layer), work)
    rng = np.random.default_rng(3)
    scale = dk ** -0.5
    tol = 1e-5
    worst = 0.0
    cases = [(1, 1, False), (2, 16, True), (1, 63, False), (2, 64, True),
             (1, 65, False), (1, 1000, True)]
    if long_:
        cases.append((1, 16384, False))
    for B, S, extreme in cases:
        q, k, v, g, beta = inputs(rng, B, Hk, Hv, S, dk, dv, extreme)
        s0 = (rng.standard_normal((B, Hv, dk, dv)) * 0.5).astype(np.float32)
        o, s = e.gdn(q, k, v, g, beta, s0)
        ro, rs = gdn_ref.recurrent(q.astype(np.float64), k.astype(np.float64),
                                   v.astype(np.float64), g.astype(np.float64),
                                   beta.astype(np.float64), scale, s0)
        err = max(rel(o, ro), rel(s, rs))
        worst = max(worst, err)
        tag = f"B={B} S={S}{' extreme' if extreme else ''}"
        print(f"{'ok' if err <= tol else 'FAIL'} gdn {tag}: {err:.2e}")
        if err > tol:
            return 1
    # Split prefill and prefill + decode, the state passed between calls.
    B, S = 2, 150
    q, k, v, g, beta = inputs(rng, B, Hk, Hv, S, dk, dv, True)
    s0 = np.zeros((B, Hv, dk, dv), np.float32)
    ro, rs = gdn_ref.recurrent(q.astype(np.float64), k.astype(np.float64),
                               v.astype(np.float64), g.astype(np.float64),
                               beta.astype(np.float64), scale, s0)
    for name, cuts in (("split 80+70", [0, 80, 150]),
                       ("prefill 120 + 30 decode steps",
                        [0] + list(range(120, 151)))):
        outs, st = [], None
        for a, b in zip(cuts, cuts[1:]):
            o, st = e.gdn(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b],
                          g[:, :, a:b], beta[:, :, a:b], st)
            outs.append(o)
        err = max(rel(np.concatenate(outs, axis=2), ro), rel(st, rs))
        worst = max(worst, err)
        print(f"{'ok' if err <= tol else 'FAIL'} gdn {name}: {err:.2e}")
        if err > tol:
            return 1
    # A batch of different lengths, right-padded: each row against its own
    # sequence run alone; padding outputs 0.
    lens = [150, 65, 37, 1, 0]
    B, S = len(lens), 150
    q, k, v, g, beta = inputs(rng, B, Hk, Hv, S, dk, dv, True)
    s0 = (rng.standard_normal((B, Hv, dk, dv)) * 0.5).astype(np.float32)
    o, st = e.gdn(q, k, v, g, beta, s0, lens)
    err = 0.0
    for b, n in enumerate(lens):
        f64 = lambda x: x[b:b + 1, :, :n].astype(np.float64)
        ro, rs = gdn_ref.recurrent(f64(q), f64(k), f64(v), f64(g), f64(beta),
                                   scale, s0[b:b + 1])
        err = max(err, rel(st[b:b + 1], rs))
        if n:
            err = max(err, rel(o[b:b + 1, :, :n], ro))
        if np.any(o[b, :, n:] != 0):
            err = np.inf
    worst = max(worst, err)
    print(f"{'ok' if err <= tol else 'FAIL'} gdn lengths {lens}: {err:.2e}")
    if err > tol:
        return 1
    print(f"gdn: all cases within {tol:g} of the float64 recurrence "
          f"(worst {worst:.1e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
