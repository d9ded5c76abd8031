"""q, K, V and the output in 16 bits through the Python module and the C API
(libraries compiled with --kv-dtype=T --qo-dtype=T): sdpa and paged decode
against a float64 NumPy reference on the rounded inputs, the output read back
in its 16-bit type; a fully masked row is exactly 0; float32 q or out is
refused with the type the library takes.

    qo_dtype_py.py LIBBF16.so LIBF16.so [LIBMLA.so]
"""
import sys

import numpy as np

import attn

rng = np.random.default_rng(5)


def to_bf16(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(h):
    return (h.astype(np.uint32) << 16).view(np.float32)


def sdpa_ref(kind, q, k, v, lens):
    """Float64 causal (bottom-right) GQA attention over keys j < lens[b];
    rows that see no key are 0."""
    B, Hq, Sq, _ = q.shape
    Skv = k.shape[2]
    G = Hq // k.shape[1]
    kk = np.repeat(k.astype(np.float64), G, axis=1)
    vv = np.repeat(v.astype(np.float64), G, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), kk) * kind.scale
    pos = np.arange(Sq)[:, None] + Skv - Sq
    j = np.arange(Skv)[None, :]
    seen = (j <= pos)[None, None] & (j[None, None] < np.asarray(lens)[:, None, None, None])
    s = np.where(seen, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.where(seen, np.exp(s - np.where(np.isfinite(m), m, 0)), 0)
    den = p.sum(-1, keepdims=True)
    return np.einsum("bhij,bhjd->bhid", p / np.where(den > 0, den, 1), vv)


def expect_error(what, call):
    try:
        call()
    except attn.Error as e:
        print(f"{what} -> [{e.kind}]: {e}")
        return
    raise AssertionError(f"{what}: no error")


for path, name in ((sys.argv[1], "bf16"), (sys.argv[2], "f16")):
    m = attn.load(path)
    kd = m.kinds[0]
    assert kd.qo_dtype == kd.kv_dtype == (attn.BF16 if name == "bf16" else attn.F16)
    if name == "bf16":
        narrow, widen, tol = to_bf16, from_bf16, 2.0 ** -8
    else:
        narrow, widen, tol = (lambda x: np.asarray(x, np.float16)), (lambda h: h.astype(np.float32)), 2.0 ** -11
    out_type = np.uint16 if name == "bf16" else np.float16
    # Prefill with padding (sequence 1 sees 9 of 17 keys) and q_len != kv_len.
    for B, Sq, Skv, lens in ((2, 17, 17, [17, 9]), (1, 5, 33, [33]), (1, 33, 7, [7]), (2, 1, 1000, [1000, 0])):
        q = narrow(rng.standard_normal((B, kd.num_heads, Sq, kd.head_dim)))
        k = narrow(rng.standard_normal((B, kd.num_kv_heads, Skv, kd.head_dim)) * 2)
        v = narrow(rng.standard_normal((B, kd.num_kv_heads, Skv, kd.head_dim_v)))
        out = m.sdpa(q, k, v, kind=kd, kv_lengths=lens)
        assert out.dtype == out_type, out.dtype
        ref = sdpa_ref(kd, widen(q), widen(k), widen(v), lens)
        err = np.abs(widen(out) - ref).max() / max(1.0, np.abs(ref).max())
        zero = int((np.abs(ref).sum(-1) == 0).sum())
        assert np.all(widen(out)[np.abs(ref).sum(-1) == 0] == 0)
        ok = err <= tol
        print(f"{name} sdpa B={B} Sq={Sq} Skv={Skv}: {'ok' if ok else 'FAIL'} "
              f"(within one {name} rounding), zero rows {zero}")
        assert ok, err
    # Paged decode: shuffled pages of 16, lengths 0, 1, 33; two query rows.
    P, lens = 16, np.array([33, 1, 0])
    B, M = len(lens), 3
    table = rng.permutation(B * M).astype(np.int32).reshape(B, M)
    kc = np.zeros((B * M, kd.num_kv_heads, P, kd.head_dim), out_type)
    vc = np.zeros((B * M, kd.num_kv_heads, P, kd.head_dim_v), out_type)
    k = narrow(rng.standard_normal((B, kd.num_kv_heads, M * P, kd.head_dim)))
    v = narrow(rng.standard_normal((B, kd.num_kv_heads, M * P, kd.head_dim_v)))
    m.append(kc, vc, table, np.zeros(B, np.int64), k, v, kind=kd, counts=lens)
    q = narrow(rng.standard_normal((B, kd.num_heads, 2, kd.head_dim)))
    out = m.decode(q, kc, vc, table, lens, kind=kd)
    assert out.dtype == out_type
    ref = np.concatenate([sdpa_ref(kd, widen(q[b:b + 1]), widen(k[b:b + 1, :, :max(lens[b], 1)]),
                                   widen(v[b:b + 1, :, :max(lens[b], 1)]), [lens[b]]) for b in range(B)])
    err = np.abs(widen(out) - ref).max() / max(1.0, np.abs(ref).max())
    print(f"{name} paged decode Sq=2 lengths 33,1,0: {'ok' if err <= tol else 'FAIL'}")
    assert err <= tol, err
    q32 = widen(q)
    expect_error(f"{name} float32 q", lambda: m.decode(q32, kc, vc, table, lens, kind=kd))
    expect_error(f"{name} float32 out", lambda: m.sdpa(q, k, v, kind=kd, out=np.zeros((B, kd.num_heads, 2, kd.head_dim_v), np.float32)))

# Multi-head latent attention (a third library, DeepSeek-V3-shaped, bf16):
# decode_latent over a paged latent cache written by append_latent, q and
# out as bf16 bits, against the absorbed attention in float64 (every head
# over the rows; values = each row's first r features).
if len(sys.argv) > 3:
    m = attn.load(sys.argv[3])
    kd = m.kinds[0]
    r, row = kd.latent_rank, kd.latent_rank + kd.rope_head_dim
    assert kd.qo_dtype == attn.BF16
    P, lens = 16, np.array([40, 1, 0])
    B, M = len(lens), 3
    table = rng.permutation(B * M).astype(np.int32).reshape(B, M)
    cache = np.zeros((B * M, P, row), np.uint16)
    rows = to_bf16(rng.standard_normal((B, M * P, row)))
    m.append_latent(cache, table, [0] * B, rows, kind=kd, counts=lens)
    q = to_bf16(rng.standard_normal((B, kd.num_heads, 2, row)) * 0.3)
    out = m.decode_latent(q, cache, table, lens, kind=kd)
    assert out.dtype == np.uint16
    ref = np.zeros((B, kd.num_heads, 2, r))
    for b in range(B):
        c = from_bf16(rows[b, :lens[b]]).astype(np.float64)
        for i in range(2):
            seen = lens[b] - 2 + i + 1  # causal, bottom-right
            if seen <= 0:
                continue
            s = from_bf16(q[b, :, i]).astype(np.float64) @ c[:seen].T * kd.scale
            p = np.exp(s - s.max(-1, keepdims=True))
            ref[b, :, i] = (p / p.sum(-1, keepdims=True)) @ c[:seen, :r]
    err = np.abs(from_bf16(out) - ref).max() / max(1.0, np.abs(ref).max())
    print(f"bf16 decode_latent Sq=2 lengths 40,1,0: {'ok' if err <= 2.0 ** -8 else 'FAIL'}")
    assert err <= 2.0 ** -8, err
    expect_error("bf16 decode_latent float32 q", lambda: m.decode_latent(from_bf16(q), cache, table, lens, kind=kd))
