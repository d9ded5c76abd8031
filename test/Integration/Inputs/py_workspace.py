"""Model.workspace_info: once every thread of the team holds a workspace
(warm-up: with a dynamic schedule a worker may get no iteration of a call
for a while, and takes its workspace at its first one), a prefill of the
same shape grows nothing. In a sanitizer build the buffers are plain
mallocs: every figure is 0, so the warm-up stops at once."""
import sys

import numpy as np

import attn

m = attn.load(sys.argv[1])
m.set_num_threads(2)
q = np.ones((1, 4, 300, 40), np.float32)
k = np.ones((1, 2, 300, 40), np.float32)
for i in range(2000):
    m.sdpa(q, k, k, layer=0)
    w = m.workspace_info()
    if i >= 1 and (w["threads"] >= 2 or w["held_bytes"] == 0):
        break
a = m.workspace_info()
m.sdpa(q, k, k, layer=0)
b = m.workspace_info()
print("grows", b["grows"] - a["grows"], "in use", b["in_use_bytes"], sorted(b))
