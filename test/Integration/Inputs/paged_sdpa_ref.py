"""Float64 reference for tile-paged-sdpa-transform.mlir.

Reads printMemrefF32's output of the result [2, 4, 3, 8] from stdin and
recomputes attn.paged_sdpa from @main's inputs (runner_output.gen's
formulas: q = sin(0.37 n + 0.1), key cache = cos(0.23 n + 0.2), value
cache = 2 sin(0.11 n + 0.5); caches [10 pages, 2 KV heads, 16, 8]),
block table [[7, 2, 9], [4, 0, 5]], kv_lengths [37, 20], by the op's
definition: token j of sequence b is row j % 16 of page table[b][j // 16],
query row i at position kv_lengths[b] - 3 + i, causal, scale 0.35, query
head h reading KV head h // 2.
"""
import sys

import numpy as np

from runner_output import check, gen


def main():
    q = gen((2, 4, 3, 8), lambda n: np.sin(0.37 * n + 0.1))
    kc = gen((10, 2, 16, 8), lambda n: np.cos(0.23 * n + 0.2))
    vc = gen((10, 2, 16, 8), lambda n: 2 * np.sin(0.11 * n + 0.5))
    table, lengths = [[7, 2, 9], [4, 0, 5]], [37, 20]
    ref = np.zeros((2, 4, 3, 8))
    for b in range(2):
        for h in range(4):
            k = np.array([kc[table[b][j // 16], h // 2, j % 16]
                          for j in range(lengths[b])])
            v = np.array([vc[table[b][j // 16], h // 2, j % 16]
                          for j in range(lengths[b])])
            for i in range(3):
                pos = lengths[b] - 3 + i
                s = np.array([0.35 * float(q[b, h, i] @ k[j])
                              if j <= pos else -np.inf
                              for j in range(lengths[b])])
                e = np.exp(s - s.max())
                ref[b, h, i] = (e / e.sum()) @ v
    check(sys.stdin.read(), [ref])


if __name__ == "__main__":
    main()
