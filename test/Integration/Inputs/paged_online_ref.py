"""Float64 reference for tile-online-transform.mlir's paged case.

Reads printMemrefF32's output of the result [2, 3, 8] from stdin and
recomputes it with NumPy from @main's input formulas (q = sin(0.37 n + 0.1),
key pool = cos(0.23 n + 0.2), value pool = 2 sin(0.11 n + 0.5), n the
row-major linear index; pools [10, 16, 8]): the 37 keys at positions
5..41, key p being row p % 16 of page pages[p // 16 - 5 // 16] with pages
[7, 2, 9]; query row m at position 40 + m, causal, scale 0.35. Prints
"OK <max error>" when max |out - ref| <= 1e-5 (1 + max |ref|).
"""
import sys

import numpy as np

from runner_output import check, gen


def main():
    q = gen((2, 3, 8), lambda n: np.sin(0.37 * n + 0.1))
    kp = gen((10, 16, 8), lambda n: np.cos(0.23 * n + 0.2))
    vp = gen((10, 16, 8), lambda n: 2 * np.sin(0.11 * n + 0.5))
    pages, page, kv_pos, num_keys, q_pos = [7, 2, 9], 16, 5, 37, 40
    positions = range(kv_pos, kv_pos + num_keys)
    k = np.array([kp[pages[p // page - kv_pos // page], p % page]
                  for p in positions])
    v = np.array([vp[pages[p // page - kv_pos // page], p % page]
                  for p in positions])
    ref = np.zeros((2, 3, 8))
    for h in range(2):
        for m in range(3):
            s = np.array([0.35 * float(q[h, m] @ k[j])
                          if p <= q_pos + m else -np.inf
                          for j, p in enumerate(positions)])
            e = np.exp(s - s.max())
            ref[h, m] = (e / e.sum()) @ v
    check(sys.stdin.read(), [ref])

if __name__ == "__main__":
    main()
