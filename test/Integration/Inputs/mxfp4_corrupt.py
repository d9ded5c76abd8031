#!/usr/bin/env python3
"""Rewrites a .safetensors file with one tensor changed, for the MXFP4
reader's refusals: `mxfp4_corrupt.py IN OUT NAME MODE` where MODE is
`drop` (remove NAME), `shape` (NAME's last dim halved, its bytes cut to
match) or `dtype` (NAME's U8 bytes relabelled F16 with half the elements)."""
import json
import sys

src, dst, name, mode = sys.argv[1:5]
with open(src, "rb") as f:
    n = int.from_bytes(f.read(8), "little")
    header = json.loads(f.read(n))
    data = f.read()
tensors = {}
for k, v in header.items():
    if k == "__metadata__":
        continue
    a, b = v["data_offsets"]
    tensors[k] = (v["dtype"], v["shape"], data[a:b])
if mode == "drop":
    del tensors[name]
elif mode == "shape":
    dtype, shape, raw = tensors[name]
    shape = shape[:-1] + [shape[-1] // 2]
    count = 1
    for d in shape:
        count *= d
    tensors[name] = (dtype, shape, raw[:count])
elif mode == "dtype":
    dtype, shape, raw = tensors[name]
    tensors[name] = ("F16", shape[:-1] + [shape[-1] // 2], raw)
out_header, blobs, off = {}, [], 0
for k, (dtype, shape, raw) in tensors.items():
    out_header[k] = {"dtype": dtype, "shape": shape,
                     "data_offsets": [off, off + len(raw)]}
    blobs.append(raw)
    off += len(raw)
h = json.dumps(out_header).encode()
h += b" " * ((8 - len(h) % 8) % 8)
with open(dst, "wb") as f:
    f.write(len(h).to_bytes(8, "little"))
    f.write(h)
    for b in blobs:
        f.write(b)
