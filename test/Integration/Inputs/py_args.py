#!/usr/bin/env python3
"""The Python module's argument checks (issue 42, class 6): nonsense is a
ValueError or TypeError naming the argument, never a silent coercion (a
layer past 2**64 wrapping to 3, kind=-1 the last kind, lengths 2.9 -> 2,
2**32 + 3 threads -> 3, a negative shape), and a closed model says so.

    py_args.py LIBRARY
"""
import sys

import numpy as np

import attn

m = attn.load(sys.argv[1])
f = np.zeros
q = f((1, 4, 2, 40), np.float32)
k = f((1, 2, 3, 40), np.float32)
cases = [
    ("layer=2**64+3", lambda: m.sdpa(q, k, k, layer=2 ** 64 + 3)),
    ("layer=-1", lambda: m.sdpa(q, k, k, layer=-1)),
    ("layer=1.0", lambda: m.sdpa(q, k, k, layer=1.0)),
    ("kind=-1", lambda: m.sdpa(q, k, k, kind=-1)),
    ("kind=99", lambda: m.sdpa(q, k, k, kind=99)),
    ("kind=True", lambda: m.sdpa(q, k, k, kind=True)),
    ("kv_lengths=[2.9]", lambda: m.sdpa(q, k, k, layer=0, kv_lengths=[2.9])),
    ("kv_lengths=[2**64-1]",
     lambda: m.sdpa(q, k, k, layer=0,
                    kv_lengths=np.array([2 ** 64 - 1], np.uint64))),
    ("set_num_threads(2**32+3)", lambda: m.set_num_threads(2 ** 32 + 3)),
    ("set_num_threads(-1)", lambda: m.set_num_threads(-1)),
    ("empty((-5,))", lambda: attn.empty((-5,))),
    ("empty((2.5,))", lambda: attn.empty((2.5,))),
    ("empty(align=3)", lambda: attn.empty((4,), align=3)),
    # Past what the machine can map (the huge-page path): as np.empty.
    ("empty((2**60,))", lambda: attn.empty((2 ** 60,))),
]
for name, call in cases:
    try:
        call()
        print(f"ACCEPTED {name}")
    except (ValueError, TypeError, MemoryError) as e:
        print(f"{name}: {type(e).__name__}: {e}")
print("sdpa ok:", m.sdpa(q, k, k, layer=0, kv_lengths=[3]).shape)
m.close()
try:
    m.sdpa(q, k, k, layer=0)
    print("ACCEPTED closed")
except attn.Error as e:
    print(f"closed: {e}")
