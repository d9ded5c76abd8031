"""The Python module's multi-head latent attention (decode_latent,
append_latent over a paged latent cache; Kind.latent_rank, rope_head_dim)
against a NumPy float64 reference: an f32 library and a bf16 one (the cache
as uint16 bfloat16 bits, the reference on the rounded values), and bad
calls. usage: use_attn_mla_py.py LIB_F32 LIB_BF16"""
import sys

import numpy as np

import attn


def reference(q, rows, lens, r, scale):
    b, h, sq, _ = q.shape
    out = np.zeros((b, h, sq, r))
    for bi in range(b):
        for i in range(sq):
            vis = min(lens[bi], lens[bi] - sq + i + 1)
            if vis <= 0:
                continue
            k = rows[bi, :vis].astype(np.float64)
            s = q[bi, :, i].astype(np.float64) @ k.T * scale
            e = np.exp(s - s.max(-1, keepdims=True))
            out[bi, :, i] = (e / e.sum(-1, keepdims=True)) @ k[:, :r]
    return out


def bf16(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32)


def run(path, narrow):
    m = attn.load(path)
    k = m.kinds[0]
    r, row, h = k.latent_rank, k.latent_rank + k.rope_head_dim, k.num_heads
    print(f"{m.family} kind {k.name!r}: latent_rank {r}, rope_head_dim "
          f"{k.rope_head_dim}, heads {h}")
    rng = np.random.default_rng(3)
    page, b, max_pages = 64, 3, 4
    lens = [1, 64, 200]
    pages = b * max_pages + 2
    table = rng.permutation(pages)[: b * max_pages].astype(np.int32)
    table = table.reshape(b, max_pages)
    rows = rng.standard_normal((b, 256, row)).astype(np.float32)
    if narrow:
        rows_bits, rows = bf16(rows)
        cache = attn.zeros((pages, page, row), np.uint16)
    else:
        cache = attn.zeros((pages, page, row))
    new = rows_bits if narrow else rows
    m.append_latent(cache, table, [0] * b, np.ascontiguousarray(new[:, :100]),
                    kind=0, counts=[min(n, 100) for n in lens])
    m.append_latent(cache, table, [100] * b,
                    np.ascontiguousarray(new[:, 100:]), kind=0,
                    counts=[max(n - 100, 0) for n in lens])
    for sq in (1, 2):
        q = rng.standard_normal((b, h, sq, row)).astype(np.float32)
        out = m.decode_latent(q, cache, table, lens, layer=0)
        ref = reference(q, rows, lens, r, k.scale)
        err = np.abs(out - ref).max() / (1 + np.abs(ref).max())
        print(f"decode_latent {'bf16' if narrow else 'f32'} Sq={sq} lengths "
              f"{','.join(map(str, lens))}: max error "
              f"{'<= 1e-5' if err <= 1e-5 else f'{err:.3e} TOO LARGE'}")
    try:
        m.decode_latent(q, cache.astype(np.float32) if narrow else
                        cache.view(np.uint16)[..., :row], table, lens, kind=0)
    except (attn.Error, TypeError, ValueError) as e:
        print(f"wrong cache dtype -> {type(e).__name__}: {e}")
    try:
        m.decode_latent(q, cache, table, [1, 64, 257], kind=0)
    except attn.Error as e:
        print(f"length past the table -> Error [{e.kind}]: {e}")


run(sys.argv[1], False)
run(sys.argv[2], True)
