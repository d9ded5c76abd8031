"""Float64 reference for tile-gated-delta-chunk.mlir.

Reads two printMemrefF32 outputs from stdin, the outputs [20, 16] then the
final state [8, 16] of one attn.gated_delta_chunk over 20 tokens (d_k 8,
d_v 16, scale 0.35, zero initial state), and recomputes them in float64
from @main's input formulas (n the row-major linear index):
q = sin(0.37 n + 0.1), k = 0.3 cos(0.23 n + 0.2), v = 2 sin(0.11 n + 0.5),
g = -0.1 (1 + sin(0.7 n)), beta = 0.5 + 0.4 sin(0.3 n), by the
recurrence's definition, token by token:
S <- S exp(g_t); S <- S + k_t (beta_t (v_t - S^T k_t))^T; o_t = S^T (scale q_t).
Prints "OK <max error>" when both are within 1e-5 (1 + max |ref|).
"""
import sys

import numpy as np

from runner_output import check, gen


def main():
    T, dk, dv, scale = 20, 8, 16, 0.35
    q = gen((T, dk), lambda n: np.sin(0.37 * n + 0.1))
    k = gen((T, dk), lambda n: 0.3 * np.cos(0.23 * n + 0.2))
    v = gen((T, dv), lambda n: 2 * np.sin(0.11 * n + 0.5))
    g = gen((T,), lambda n: -0.1 * (1 + np.sin(0.7 * n)))
    beta = gen((T,), lambda n: 0.5 + 0.4 * np.sin(0.3 * n))
    S = np.zeros((dk, dv))
    out = np.zeros((T, dv))
    for t in range(T):
        S = S * np.exp(g[t])
        S = S + np.outer(k[t], beta[t] * (v[t] - S.T @ k[t]))
        out[t] = S.T @ (scale * q[t])
    check(sys.stdin.read(), [out, S])

if __name__ == "__main__":
    main()
