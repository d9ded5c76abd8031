"""Writes .safetensors files whose FP8 (F8_E4M3) weights are malformed, for
the executables' error tests: DIR/noscale (q_a_proj's weight_scale_inv
missing), DIR/badscale (its scales [2, 1] where a [96, 128] weight in
128x128 blocks has [1, 1]), DIR/rank1 (the input norm stored as F8_E4M3). Each file holds the layer's input norm
(F32 [128]) first, as `layer` reads it first.

usage: make_fp8_errors.py DIR
"""
import json
import os
import sys

import numpy as np


def write(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    d = sys.argv[1]
    norm = ("F32", [128], np.ones(128, np.float32).tobytes())
    w8 = ("F8_E4M3", [96, 128], bytes(96 * 128))
    pre = "model.layers.0."
    a = pre + "self_attn.q_a_proj."
    write(os.path.join(d, "noscale"),
          {pre + "input_layernorm.weight": norm, a + "weight": w8})
    write(os.path.join(d, "badscale"),
          {pre + "input_layernorm.weight": norm, a + "weight": w8,
           a + "weight_scale_inv": ("F32", [2, 1],
                                    np.ones(2, np.float32).tobytes())})
    write(os.path.join(d, "rank1"),
          {pre + "input_layernorm.weight": ("F8_E4M3", [128], bytes(128))})
    return 0


if __name__ == "__main__":
    sys.exit(main())
