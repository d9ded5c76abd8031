#!/usr/bin/env python3
"""The C API's attention sinks through the Python module, against
sinks_ref.py's float64 reference: a library of a kind with sinks refuses
sdpa and decode until set_sinks (attn_kind_set_sinks) gives them, refuses
malformed sinks, then counts them in attn_sdpa (key padding, Sq != Skv, a
window inside the lengths) and in attn_decode_paged over a paged cache
(split-K lengths); sinks near the scores, very large, very negative and
-inf.

    sinks_capi.py LIBRARY
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sinks_ref import reference  # noqa: E402

import attn  # noqa: E402


def main():
    m = attn.load(sys.argv[1])
    rng = np.random.default_rng(11)
    ok = True
    for kd in m.kinds:
        Hq, Hkv, D, Dv = kd.num_heads, kd.num_kv_heads, kd.head_dim, \
            kd.head_dim_v
        q = rng.standard_normal((2, Hq, 3, D)).astype(np.float32)
        k = rng.standard_normal((2, Hkv, 40, D)).astype(np.float32)
        v = rng.standard_normal((2, Hkv, 40, Dv)).astype(np.float32)
        try:
            m.sdpa(q, k, v, kind=kd)
            print(f"FAIL {kd.name}: sdpa ran without sinks")
            ok = False
        except attn.Error as e:
            print(f"refused {kd.name}: {e}")
        for bad in (np.zeros(Hq + 1, np.float32),
                    np.array([np.nan] * Hq, np.float32)):
            try:
                m.set_sinks(bad, kind=kd)
                print(f"FAIL {kd.name}: set_sinks took {bad}")
                ok = False
            except attn.Error as e:
                print(f"refused sinks: {e}")
        sinks = np.array([[0.3, 1e4, -1e4, -np.inf, 30.0, -2.0][h % 6]
                          for h in range(Hq)], np.float32)
        m.set_sinks(sinks, kind=kd)
        lens = np.array([40, 23], np.int64)
        got = m.sdpa(q, k, v, kind=kd, kv_lengths=lens)
        ref = reference(q, k, v, sinks, lens, kd.scale, kd.window)
        err = np.abs(got - ref).max() / np.abs(ref).max()
        good = err <= 1e-5 and np.isfinite(got).all()
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {kd.name} sdpa max_rel_err="
              f"{err:.2e}")
        # Paged decode: 2 sequences of 1000 and 37 tokens, pages of 16.
        P, S = 16, 1000
        lens = np.array([S, 37], np.int64)
        kf = rng.standard_normal((2, Hkv, S, D)).astype(np.float32)
        vf = rng.standard_normal((2, Hkv, S, Dv)).astype(np.float32)
        pages = -(-S // P)
        kc = np.zeros((2 * pages, Hkv, P, D), np.float32)
        vc = np.zeros((2 * pages, Hkv, P, Dv), np.float32)
        table = np.zeros((2, pages), np.int32)
        for b in range(2):
            for p in range(pages):
                page = 2 * pages - 1 - (b * pages + p)  # scattered
                table[b, p] = page
                n = min(P, S - p * P)
                kc[page, :, :n] = kf[b, :, p * P:p * P + n]
                vc[page, :, :n] = vf[b, :, p * P:p * P + n]
        qd = rng.standard_normal((2, Hq, 1, D)).astype(np.float32)
        got = m.decode(qd, kc, vc, table, lens, kind=kd)
        ref = np.concatenate(
            [reference(qd[b:b + 1], kf[b:b + 1, :, :lens[b]],
                       vf[b:b + 1, :, :lens[b]], sinks, [lens[b]], kd.scale,
                       kd.window) for b in range(2)])
        err = np.abs(got - ref).max() / np.abs(ref).max()
        good = err <= 1e-5 and np.isfinite(got).all()
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {kd.name} decode max_rel_err="
              f"{err:.2e}")
    print("all ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
