"""Writes the .npy files of impossible sizes: headers claiming batch 2^40
with empty sequences (no data), and a sparse file whose data is 171 GB."""
import sys

out = sys.argv[1]


def npy(name, shape, data_bytes=0, sparse_bytes=0):
    d = ("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }"
         % (tuple(shape),)).encode()
    d = d + b" " * (118 - len(d)) + b"\n"
    with open(out + "/" + name, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d)
        f.write(b"\0" * data_bytes)
        if sparse_bytes:
            f.truncate(f.tell() + sparse_bytes)


npy("q_batch.npy", (1 << 40, 4, 0, 40))
npy("k_batch.npy", (1 << 40, 2, 0, 40))
npy("x_batch.npy", (1 << 40, 0, 160))
npy("q_sparse.npy", (1, 4, 267386880, 40), sparse_bytes=4 * 4 * 267386880 * 40)
