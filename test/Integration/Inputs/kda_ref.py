"""Float64 reference for kda-recurrent.mlir (Kimi Delta Attention's
recurrence, a per-channel decay).

Reads the printMemrefF32 outputs of @main, in order: the outputs and final
state of one call over 7 tokens; the outputs of a prefill of 6 tokens, of
the decode step after it and the state after that step; the outputs and
final states of a batch of lengths 0 and 3. Recomputes them in float64 from
@main's input formulas (n the row-major linear index): q = sin(0.37 n +
0.1), k = 0.3 cos(0.23 n + 0.2), v = 2 sin(0.11 n + 0.5), g = -0.05 (sin(0.7
n) + 1) and -40 where n % 13 == 0, beta = 0.4 (sin(0.3 n) + 1.25), s0 = 0.5
sin(0.13 n + 0.3); value head h reads query/key head h // 2, scale 0.25, by
fla's naive_recurrent_kda, token by token:
S <- S * exp(g_t)[:, None]; S <- S + k_t (beta_t (v_t - S^T k_t))^T;
o_t = S^T (scale q_t).
Prints "OK <max error>" when every array is within 1e-5 (1 + max |ref|).
With arguments T PREFILL LENGTH (kda_chunked.test: Inputs/kda_long.sed's
variant) the call is over T tokens, the prefill PREFILL tokens and the
batch's lengths 0 and LENGTH.
"""
import sys

import numpy as np

from runner_output import check, gen

B, HK, HV, DK, DV, SCALE = 2, 1, 2, 16, 36, 0.25
T, PRE, LEN = (int(a) for a in sys.argv[1:4]) if len(sys.argv) > 3 else (7, 6, 3)


def kda(q, k, v, g, beta, s0, lens):
    out = np.zeros((B, HV, T, DV))
    st = np.zeros((B, HV, DK, DV))
    for b in range(B):
        for h in range(HV):
            S = s0[b, h].copy()
            hk = h // (HV // HK)
            for t in range(lens[b]):
                S = S * np.exp(g[b, h, t])[:, None]
                kt = k[b, hk, t]
                S = S + np.outer(kt, beta[b, h, t] * (v[b, h, t] - S.T @ kt))
                out[b, h, t] = S.T @ (SCALE * q[b, hk, t])
            st[b, h] = S
    return out, st


def main():
    q = gen((B, HK, T, DK), lambda n: np.sin(0.37 * n + 0.1))
    k = gen((B, HK, T, DK), lambda n: 0.3 * np.cos(0.23 * n + 0.2))
    v = gen((B, HV, T, DV), lambda n: 2.0 * np.sin(0.11 * n + 0.5))
    g = gen((B, HV, T, DK), lambda n: np.where(
        n % 13 == 0, -40.0, -0.05 * (np.sin(0.7 * n) + 1.0)))
    beta = gen((B, HV, T), lambda n: 0.4 * (np.sin(0.3 * n) + 1.25))
    s0 = gen((B, HV, DK, DV), lambda n: 0.5 * np.sin(0.13 * n + 0.3))
    o1, s1 = kda(q, k, v, g, beta, s0, [T, T])
    o3, s3 = kda(q, k, v, g, beta, s0, [0, LEN])
    check(sys.stdin.read(),
          [o1, s1, o1[:, :, :PRE], o1[:, :, PRE:], s1, o3, s3])


if __name__ == "__main__":
    main()
