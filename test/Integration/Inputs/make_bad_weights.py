"""Weights files with one thing wrong each, for block's error tests."""
import json
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from block_ref import write_safetensors  # noqa: E402

out = sys.argv[1]
pre = "model.layers.0."
good = {pre + "input_layernorm.weight": np.ones(160, np.float32),
        pre + "self_attn.q_proj.weight": np.zeros((160, 160), np.float32),
        pre + "self_attn.k_proj.weight": np.zeros((80, 160), np.float32),
        pre + "self_attn.v_proj.weight": np.zeros((80, 160), np.float32),
        pre + "self_attn.o_proj.weight": np.zeros((160, 160), np.float32)}
missing = dict(good)
del missing[pre + "self_attn.k_proj.weight"]
write_safetensors(out + "/missing.safetensors", missing)
shape = dict(good)
shape[pre + "self_attn.k_proj.weight"] = np.zeros((160, 160), np.float32)
write_safetensors(out + "/shape.safetensors", shape)
write_safetensors(out + "/good.safetensors", good)
with open(out + "/good.safetensors", "rb") as f:
    data = f.read()
with open(out + "/truncated.safetensors", "wb") as f:
    f.write(data[:-1000])
np.save(out + "/x.npy", np.zeros((1, 3, 160), np.float32))
np.save(out + "/x_bad.npy", np.zeros((1, 3, 100), np.float32))
