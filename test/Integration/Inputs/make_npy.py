"""Writes the .npy files the error tests feed to executables."""
import sys
import numpy as np

out = sys.argv[1]
np.save(out + "/q.npy", np.zeros((1, 4, 3, 40), np.float32))
np.save(out + "/k.npy", np.zeros((1, 2, 5, 40), np.float32))
np.save(out + "/v.npy", np.zeros((1, 2, 5, 40), np.float32))
np.save(out + "/q_f64.npy", np.zeros((1, 4, 3, 40), np.float64))
np.save(out + "/q_rank3.npy", np.zeros((4, 3, 40), np.float32))
np.save(out + "/q_heads.npy", np.zeros((1, 6, 3, 40), np.float32))
np.save(out + "/k_len.npy", np.zeros((1, 2, 6, 40), np.float32))
np.save(out + "/lens_bad.npy", np.array([9], np.int64))
with open(out + "/q.npy", "rb") as f:
    data = f.read()
with open(out + "/q_truncated.npy", "wb") as f:
    f.write(data[:-100])
with open(out + "/not_npy.npy", "wb") as f:
    f.write(b"hello")
# A header that claims far more data than the file holds.
d = b"{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 4, 999999, 40), }"
d = d + b" " * (118 - len(d)) + b"\n"
with open(out + "/huge_header.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d + b"\0" * 64)


def bad_header(name, d):
    """A .npy whose header dict is `d` (padded like numpy), with 64 bytes."""
    d = d + b" " * (118 - len(d)) + b"\n"
    with open(out + "/" + name, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d +
                b"\0" * 64)


# Malformed headers a strict parser refuses (each once crashed or was read
# loosely): an empty shape value, junk in dimensions, a non-boolean
# fortran_order, a missing key, and a shape whose element count overflows.
bad_header("shape_empty.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': }")
bad_header("shape_junk.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (1x, 4y), }")
bad_header("fortran_junk.npy", b"{'descr': '<f4', 'fortran_order': NotFalse, 'shape': (1, 4, 3, 40), }")
bad_header("no_shape.npy", b"{'descr': '<f4', 'fortran_order': False, }")
bad_header("overflow.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776, 1, 1), }")
# Empty, with dims whose product overflows before the zero (found by
# attn-fuzz-npy: it used to end in std::length_error).
bad_header("zero_huge.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776, 0, 40), }")
