"""Float64 reference for ssd.mlir (Mamba2's SSD: the gated delta rule
without the delta correction).

Reads the printMemrefF32 outputs of @main, in order: the outputs and final
state of one call over 150 tokens, of the eager reference over them, the
outputs of a prefill of 149 tokens, of the decode step after it and the
state after that step, the outputs and state of 7 tokens, and the outputs
and final states of a batch of lengths 0 and 70. Recomputes them in
float64 from @main's input formulas (n the row-major linear index): q =
sin(0.37 n + 0.1), k = 0.3 cos(0.23 n + 0.2), v = 2 sin(0.11 n + 0.5), g =
-0.05 (sin(0.7 n) + 1) and -40 where n % 13 == 0, beta = 0.4 (sin(0.3 n) +
1.25), s0 = 0.5 sin(0.13 n + 0.3); head h reads group h // 2, scale 1, by
the recurrence of transformers' Mamba2 (torch_forward's cached step, with
B = k, C = q, x = v, dt = beta, dt A = g), token by token:
S <- S exp(g_t) + k_t (beta_t v_t)^T; o_t = S^T q_t.
Prints "OK <max error>" when every array is within 1e-5 (1 + max |ref|).
"""
import sys

import numpy as np

from runner_output import check, gen

B, HK, HV, T, DK, DV = 2, 2, 4, 150, 16, 24


def ssd(q, k, v, g, beta, s0, lens, T=T):
    out = np.zeros((B, HV, T, DV))
    st = np.zeros((B, HV, DK, DV))
    for b in range(B):
        for h in range(HV):
            S = s0[b, h].copy()
            hk = h // (HV // HK)
            for t in range(lens[b]):
                S = S * np.exp(g[b, h, t]) + np.outer(
                    k[b, hk, t], beta[b, h, t] * v[b, h, t])
                out[b, h, t] = S.T @ q[b, hk, t]
            st[b, h] = S
    return out, st


def main():
    q = gen((B, HK, T, DK), lambda n: np.sin(0.37 * n + 0.1))
    k = gen((B, HK, T, DK), lambda n: 0.3 * np.cos(0.23 * n + 0.2))
    v = gen((B, HV, T, DV), lambda n: 2.0 * np.sin(0.11 * n + 0.5))
    g = gen((B, HV, T), lambda n: np.where(
        n % 13 == 0, -40.0, -0.05 * (np.sin(0.7 * n) + 1.0)))
    beta = gen((B, HV, T), lambda n: 0.4 * (np.sin(0.3 * n) + 1.25))
    s0 = gen((B, HV, DK, DV), lambda n: 0.5 * np.sin(0.13 * n + 0.3))
    o1, s1 = ssd(q, k, v, g, beta, s0, [T, T])
    o7, s7 = ssd(q, k, v, g, beta, s0, [7, 7])
    o3, s3 = ssd(q, k, v, g, beta, s0, [0, 70])
    check(sys.stdin.read(),
          [o1, s1, o1, s1, o1[:, :, :T - 1], o1[:, :, T - 1:], s1,
           o7[:, :, :7], s7, o3, s3])


if __name__ == "__main__":
    main()
