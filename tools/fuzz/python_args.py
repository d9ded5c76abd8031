#!/usr/bin/env python3
"""Random-argument fuzzing of the Python module (runtime/python/attn.py):
calls every method of a Model and the module's helpers with values drawn
from what callers get wrong (huge, negative and non-integer numbers, bools,
None, strings, NumPy scalars, nested lists, arrays of other dtypes, ranks,
strides, read-only and empty arrays) mixed with valid ones. Every call must
return or raise ValueError, TypeError, MemoryError or attn.Error: any other
exception (IndexError, OverflowError, ctypes.ArgumentError, ...) or a crash
is a finding; the script prints the call and exits 1.

    python_args.py LIBRARY [SECONDS] [SEED]
"""
import random
import sys
import time
import traceback

import numpy as np

import attn

ALLOWED = (ValueError, TypeError, MemoryError, attn.Error)


def main():
    lib = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    rng = random.Random(seed)
    m = attn.load(lib)
    kinds = m.kinds

    def integer():
        return rng.choice([0, 1, 2, 3, -1, -2, 7, 2 ** 31, 2 ** 31 - 1,
                           2 ** 32 + 3, 2 ** 63 - 1, 2 ** 63, 2 ** 64 + 3,
                           -2 ** 63, -2 ** 63 - 1, np.int64(2), np.uint64(
                               2 ** 64 - 1), np.int32(-5), True, False])

    def scalar():
        return rng.choice([integer(), 2.5, float("nan"), float("inf"), None,
                           "1", b"1", [1], (2,), {}, object()])

    # How often an argument is corrupted: per call, none, rarely or often
    # (so that whole valid calls reach the kernels too).
    bad = [0.0]

    def array(shape=None, dtype=None):
        r = rng.random()
        if r < bad[0] / 3:
            return scalar()
        if shape is None or rng.random() < bad[0]:
            rank = rng.randint(0, 5)
            shape = tuple(rng.choice([0, 1, 2, 3, 4, 16, 40, 64])
                          for _ in range(rank))
        if dtype is None or rng.random() < bad[0] / 2:
            dtype = rng.choice([np.float32, np.float64, np.float16,
                                np.uint16, np.int64, np.int32, np.int8,
                                np.bool_, np.complex64])
        n = int(np.prod(shape)) if shape else 1
        if n > 1 << 16:
            shape = tuple(min(s, 4) for s in shape)
        a = np.zeros(shape, dtype)
        if a.ndim >= 2 and rng.random() < bad[0] / 2:
            a = np.swapaxes(a, 0, 1)  # not contiguous
        if a.ndim >= 1 and a.shape[0] > 1 and rng.random() < bad[0] / 3:
            a = a[::2]  # strided
        if rng.random() < bad[0] / 3:
            a.flags.writeable = False
        if rng.random() < bad[0] / 6:
            a = a.tolist()
        return a

    def kind_arg():
        r = rng.random()
        if r < 1 - bad[0] * 1.3:
            return {"kind": rng.choice([k.index for k in kinds])}
        if r < 0.7:
            return {"layer": integer()}
        if r < 0.8:
            return {"kind": rng.choice([k.name for k in kinds] + ["nope"])}
        if r < 0.9:
            return {"kind": scalar()}
        return rng.choice([{}, {"kind": 0, "layer": 0}])

    def shaped(kd, which):
        """A plausible array for kind kd's argument `which`."""
        B, S = rng.choice([1, 2]), rng.choice([1, 3, 17])
        hq, hkv, d, dv = (kd.num_heads, kd.num_kv_heads, kd.head_dim,
                          kd.head_dim_v)
        shapes = {"q": (B, hq, S, d), "k": (B, hkv, S, d),
                  "v": (B, hkv, S, dv), "g": (B, hq, S), "beta": (B, hq, S),
                  "kc": (4, hkv, 16, d), "vc": (4, hkv, 16, dv),
                  "table": (B, 4), "lens": (B,), "sinks": (hq,)}
        dt = {"table": np.int32, "lens": np.int64}.get(which, np.float32)
        if kd.op == attn.OP_GATED_DELTA:  # q, k [B, Hk, S, dk], v [B, Hv..]
            shapes["q"] = (B, hkv, S, d)
            shapes["v"] = (B, hq, S, dv)
        return array(shapes[which], dt)

    calls = 0
    ran = {}  # the calls that returned, by method
    deadline = time.time() + seconds
    while time.time() < deadline:
        bad[0] = rng.choice([0.0, 0.0, 0.05, 0.3])
        kd = rng.choice(kinds)
        what = rng.choice(["sdpa", "decode", "append", "gated_delta",
                           "set_sinks", "threads", "kind_of_layer", "empty",
                           "zeros"])
        ka = kind_arg()
        if what == "sdpa":
            args = [shaped(kd, "q"), shaped(kd, "k"), shaped(kd, "v")]
            kw = dict(ka, kv_lengths=shaped(kd, "lens") if not bad[0] else
                      rng.choice([None, shaped(kd, "lens"), scalar(), [2.9],
                                  [integer()]]))
            fn = m.sdpa
        elif what == "decode":
            args = [shaped(kd, "q"), shaped(kd, "kc"), shaped(kd, "vc"),
                    shaped(kd, "table"), rng.choice(
                        [shaped(kd, "lens"), [integer()], scalar()])]
            kw, fn = ka, m.decode
        elif what == "append":
            args = [shaped(kd, "kc"), shaped(kd, "vc"), shaped(kd, "table"),
                    rng.choice([shaped(kd, "lens"), [integer()]]),
                    shaped(kd, "k"), shaped(kd, "v")]
            kw = dict(ka, counts=rng.choice([None, shaped(kd, "lens")]))
            fn = m.append
        elif what == "gated_delta":
            args = [shaped(kd, "q"), shaped(kd, "k"), shaped(kd, "v"),
                    shaped(kd, "g"), shaped(kd, "beta")]
            kw = dict(ka, lengths=rng.choice([None, shaped(kd, "lens")]))
            fn = m.gated_delta
        elif what == "set_sinks":
            args, kw, fn = [shaped(kd, "sinks")], ka, m.set_sinks
        elif what == "threads":
            args, kw, fn = [rng.choice([integer(), scalar()])], {}, \
                m.set_num_threads
        elif what == "kind_of_layer":
            args, kw, fn = [rng.choice([integer(), scalar()])], {}, \
                m.kind_of_layer
        else:
            shape = rng.choice([integer(), scalar(), (integer(), 2),
                                (3, integer()), [2, 2]])
            # A valid but huge shape would only allocate (and zeros() fill)
            # gigabytes: the fuzzer keeps to what is refused or small.
            dims = shape if isinstance(shape, (tuple, list)) else (shape,)
            if all(isinstance(x, (int, np.integer)) and not isinstance(
                    x, (bool, np.bool_)) and 0 <= int(x) for x in dims) and \
                    int(np.prod([int(x) for x in dims], dtype=object)) \
                    > 1 << 24 and int(np.prod([int(x) for x in dims],
                                              dtype=object)) < 1 << 62:
                shape = (2, 2)
            args = [shape]
            kw = rng.choice([{}, {"align": integer()}, {"dtype": scalar()}])
            fn = attn.empty if what == "empty" else attn.zeros
        calls += 1
        try:
            fn(*args, **kw)
            ran[what] = ran.get(what, 0) + 1
        except ALLOWED:
            pass
        except Exception:
            print(f"FINDING: attn {what}(*{args!r:.300}, **{kw!r:.200})")
            traceback.print_exc()
            return 1
    m.set_num_threads(0)
    print(f"python_args: {calls} calls in {seconds:.0f} s, every one "
          "returned or raised ValueError/TypeError/MemoryError/attn.Error; "
          f"returned: {dict(sorted(ran.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
