"""Float64 reference for the mlir-runner attention tests.

Reads printMemrefF32's output of the result from stdin and recomputes the
attention in float64 with NumPy from the same input formulas the test's
@main uses (q = sin(0.37 n + 0.1), k = cos(0.23 n + 0.2),
v = 2 sin(0.11 n + 0.5), bias table = 0.5 sin(0.7 n) with n the row-major
linear index), written from the definitions (causal alignment, sliding
window, T5's _relative_position_bucket as transformers computes it), with
no code shared with the compiler. Prints "OK <max error>" when
max |out - ref| <= tol * (1 + max |ref|), else the error and exits 1.
"""
import argparse
import math
import sys

import numpy as np

from runner_output import check, gen


def t5_bucket(rel, bidirectional, num_buckets, max_distance):
    ret = 0
    if bidirectional:
        num_buckets //= 2
        ret += num_buckets if rel > 0 else 0
        rel = abs(rel)
    else:
        rel = -min(rel, 0)
    max_exact = num_buckets // 2
    if rel < max_exact:
        return ret + rel
    large = max_exact + int(
        math.log(rel / max_exact) / math.log(max_distance / max_exact)
        * (num_buckets - max_exact))
    return ret + min(large, num_buckets - 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", required=True, help="B,Hq,Hkv,Sq,Skv,D,Dv")
    p.add_argument("--scale", type=float, required=True)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--window", type=int, default=0)
    p.add_argument("--top-left", action="store_true")
    p.add_argument("--bias", help="num_buckets,max_distance,bidirectional")
    p.add_argument("--tol", type=float, default=1e-5)
    a = p.parse_args()
    b, hq, hkv, sq, skv, d, dv = (int(x) for x in a.shape.split(","))
    q = gen((b, hq, sq, d), lambda n: np.sin(0.37 * n + 0.1))
    k = gen((b, hkv, skv, d), lambda n: np.cos(0.23 * n + 0.2))
    v = gen((b, hkv, skv, dv), lambda n: 2 * np.sin(0.11 * n + 0.5))
    table = None
    if a.bias:
        nb, md, bidi = (int(x) for x in a.bias.split(","))
        table = gen((nb, hq), lambda n: 0.5 * np.sin(0.7 * n))
    offset = 0 if a.top_left else skv - sq
    g = hq // hkv
    ref = np.zeros((b, hq, sq, dv))
    for bi in range(b):
        for h in range(hq):
            for i in range(sq):
                pos = i + offset
                s = np.full(skv, -np.inf)
                for j in range(skv):
                    if a.causal and j > pos:
                        continue
                    if a.window and j <= pos - a.window:
                        continue
                    x = a.scale * float(q[bi, h, i] @ k[bi, h // g, j])
                    if table is not None:
                        x += table[t5_bucket(j - pos, bidi, nb, md), h]
                    s[j] = x
                if np.isinf(s).all():
                    continue  # a row that sees no key is 0
                e = np.exp(s - s.max())
                ref[bi, h, i] = (e / e.sum()) @ v[bi, h // g]
    check(sys.stdin.read(), [ref], a.tol)


if __name__ == "__main__":
    main()
