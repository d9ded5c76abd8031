"""The Python module (runtime/python/attn.py) against NumPy float64
references: two libraries loaded in one process, softmax attention (prefill,
decode against 1000 keys, per-row lengths, a sliding window and softcap),
Gated DeltaNet (state in and out, in place, lengths, a prefill split in two
calls = one call), no copies of the arrays, and the errors of bad calls.

    use_attn_py.py LIBQWEN3NEXT.so LIBGEMMA2.so
"""
import sys

import numpy as np

import attn

rng = np.random.default_rng(3)


def sdpa_ref(kind, q, k, v, lens):
    """Float64 softmax attention by its definition (keys j < lens[b]; causal
    bottom-right; window; softcap); rows that see no key are 0."""
    B, Hq, Sq, _ = q.shape
    Skv = k.shape[2]
    if Skv == 0:
        return np.zeros((B, Hq, Sq, v.shape[3]))
    G = Hq // k.shape[1]
    kk = np.repeat(k.astype(np.float64), G, axis=1)
    vv = np.repeat(v.astype(np.float64), G, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), kk) * kind.scale
    if kind.softcap > 0:
        s = kind.softcap * np.tanh(s / kind.softcap)
    pos = np.arange(Sq)[:, None] + Skv - Sq
    j = np.arange(Skv)[None, :]
    seen = np.ones((Sq, Skv), bool)
    if kind.causal:
        seen &= j <= pos
    if kind.window:
        seen &= j > pos - kind.window
    seen = seen[None, None] & (j[None, None] < np.asarray(lens)[:, None, None, None])
    s = np.where(seen, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.where(seen, np.exp(s - np.where(np.isfinite(m), m, 0)), 0)
    den = p.sum(-1, keepdims=True)
    return np.einsum("bhij,bhjd->bhid", p / np.where(den > 0, den, 1), vv)


def gdn_ref(kind, q, k, v, g, beta, state, lens):
    """The gated delta rule in float64, token by token."""
    B, Hv, S, dv = v.shape
    r = Hv // q.shape[1]
    out = np.zeros((B, Hv, S, dv))
    st = np.zeros((B, Hv, q.shape[3], dv)) if state is None else state.astype(np.float64)
    st = st.copy()
    for b in range(B):
        for h in range(Hv):
            for t in range(lens[b]):
                kt = k[b, h // r, t].astype(np.float64)
                # One decay per key channel (state row) with a per-channel
                # gate g [B, Hv, S, dk] (Kimi Delta Attention).
                st[b, h] *= (np.exp(g[b, h, t])[:, None] if g.ndim == 4
                             else np.exp(g[b, h, t]))
                st[b, h] += np.outer(kt, beta[b, h, t] * (v[b, h, t] - st[b, h].T @ kt))
                out[b, h, t] = st[b, h].T @ (kind.scale * q[b, h // r, t])
    return out, st


def report(what, got, want):
    err = np.abs(got - want).max() / max(1.0, np.abs(want).max()) if want.size else 0
    print(f"{what}: max error {'<=' if err <= 1e-5 else '>'} 1e-5 of max |reference|")
    assert err <= 1e-5, f"{what}: error {err:.3e}"


def expect_error(what, call, cls=attn.Error):
    try:
        call()
    except cls as e:
        kind = f" [{e.kind}]" if isinstance(e, attn.Error) else ""
        print(f"{what} -> {type(e).__name__}{kind}: {e}")
        return
    raise AssertionError(f"{what}: no error")


def normalized(shape):
    x = rng.standard_normal(shape).astype(np.float32)
    return x / np.sqrt((x * x).sum(-1, keepdims=True) + 1e-6)


qwen = attn.load(sys.argv[1])
gemma = attn.load(sys.argv[2])
for m in (qwen, gemma):
    print(m.family, m.num_layers, "layers:", ", ".join(
        f"{k.name} (layers {k.layers})" for k in m.kinds))
print("layer 3 of", qwen.family, "is", qwen.kind_of_layer(3).name)
qwen.set_num_threads(2)

# Softmax attention: prefill with lengths, decode against 1000 keys.
for m in (qwen, gemma):
    for kd in m.kinds:
        if kd.op != attn.OP_SDPA:
            continue
        layer = kd.layers[0]
        for B, Sq, Skv, lens in ((2, 17, 17, [17, 9]), (1, 1, 1000, [1000]),
                                 (3, 3, 20, [20, 1, 0])):
            q = rng.standard_normal((B, kd.num_heads, Sq, kd.head_dim), np.float32) * 2
            k = rng.standard_normal((B, kd.num_kv_heads, Skv, kd.head_dim), np.float32) * 2
            v = rng.standard_normal((B, kd.num_kv_heads, Skv, kd.head_dim_v), np.float32)
            out = m.sdpa(q, k, v, layer=layer, kv_lengths=lens)
            report(f"{m.family} {kd.name} sdpa B={B} Sq={Sq} Skv={Skv}", out,
                   sdpa_ref(kd, q, k, v, lens))
        # Into the caller's buffer, no copy: the same array comes back.
        buf = np.zeros_like(out)
        assert m.sdpa(q, k, v, kind=kd.name, kv_lengths=lens, out=buf) is buf
        assert np.array_equal(buf, out)

# attn.empty/zeros: arrays on a 64-byte (or `align`) boundary, which the
# kernels take like any other array, with the same results bit for bit.
for shape, dt, al in (((3, 5), np.float32, 64), ((2, 1, 7), np.uint16, 128),
                      (10, np.float16, 64), ((0, 4), np.float32, 64)):
    a = attn.empty(shape, dt, al)
    # (An empty array has no data to align: NumPy may move its pointer.)
    assert a.size == 0 or a.ctypes.data % al == 0
    assert a.flags.c_contiguous and a.flags.writeable
    assert a.dtype == dt and a.shape == (shape if isinstance(shape, tuple) else (shape,))
z = attn.zeros((4, 33))
assert z.ctypes.data % 64 == 0 and not z.any()
# From 4 MiB on: a mapping of its own on a 2 MiB boundary (huge pages
# advised), writable, alive as long as a view of it.
big = attn.zeros((1, 2, 4096, 128))
assert big.ctypes.data % (2 << 20) == 0 and not big.any()
view = big[0, 1]
del big
view[...] = 3.0
assert view.flags.writeable and float(view.sum()) == 3.0 * 4096 * 128
try:
    attn.empty((2,), align=48)
except ValueError as e:
    print("align 48 ->", e)
kd = qwen.kind_of_layer(3)
arrays = [rng.standard_normal((1, kd.num_heads, 2, kd.head_dim), np.float32),
          rng.standard_normal((1, kd.num_kv_heads, 300, kd.head_dim), np.float32),
          rng.standard_normal((1, kd.num_kv_heads, 300, kd.head_dim_v), np.float32)]
aligned = []
for x in arrays:
    a = attn.empty(x.shape)
    a[...] = x
    aligned.append(a)
out = attn.empty((1, kd.num_heads, 2, kd.head_dim_v))
assert qwen.sdpa(*aligned, layer=3, out=out) is out
if np.array_equal(out, qwen.sdpa(*arrays, layer=3)):
    print("aligned arrays: the same output")

# The paged cache: 5 sequences (lengths 0, 1, 15, 16, 33 with page size 16)
# on shuffled pages, the last two sharing their first page; filled by
# append, decoded, one token appended, decoded again; = sdpa over each
# sequence's contiguous copy and = the float64 reference.
for m in (qwen, gemma):
    kd = next(k for k in m.kinds if k.op == attn.OP_SDPA)
    P, lens = 16, np.array([0, 1, 15, 16, 33])
    B, M = len(lens), 4
    pages = B * M + 2
    table = rng.permutation(pages)[:B * M].astype(np.int32).reshape(B, M)
    table[4, 0] = table[3, 0]
    kc = rng.standard_normal((pages, kd.num_kv_heads, P, kd.head_dim), np.float32) * 100
    vc = rng.standard_normal((pages, kd.num_kv_heads, P, kd.head_dim_v), np.float32) * 100
    k = rng.standard_normal((B, kd.num_kv_heads, M * P, kd.head_dim), np.float32) * 2
    v = rng.standard_normal((B, kd.num_kv_heads, M * P, kd.head_dim_v), np.float32)
    k[4, :, :P], v[4, :, :P] = k[3, :, :P], v[3, :, :P]
    m.append(kc, vc, table, np.zeros(B, np.int64), k, v, kind=kd, counts=lens)
    for step in range(2):
        q = rng.standard_normal((B, kd.num_heads, 1, kd.head_dim), np.float32) * 2
        out = m.decode(q, kc, vc, table, lens, kind=kd)
        ref = np.concatenate([sdpa_ref(kd, q[b:b + 1], k[b:b + 1, :, :lens[b]], v[b:b + 1, :, :lens[b]], [lens[b]]) for b in range(B)])
        con = np.concatenate([m.sdpa(q[b:b + 1], np.ascontiguousarray(k[b:b + 1, :, :lens[b]]), np.ascontiguousarray(v[b:b + 1, :, :lens[b]]), kind=kd) for b in range(B)])
        report(f"{m.family} {kd.name} paged decode lengths {','.join(map(str, lens))}", out, ref)
        report("  = contiguous", out, con)
        if step == 0:
            m.append(kc, vc, table, lens, np.ascontiguousarray(k[np.arange(B), :, lens][:, :, None]),
                     np.ascontiguousarray(v[np.arange(B), :, lens][:, :, None]), kind=kd)
            lens = lens + 1
    bad_table = table.copy()
    bad_table[2, 0] = pages + 3
    expect_error("page out of the pool", lambda: m.decode(q, kc, vc, bad_table, lens, kind=kd))
    expect_error("int64 block table", lambda: m.decode(q, kc, vc, table.astype(np.int64), lens, kind=kd), TypeError)
    expect_error("append past the pages", lambda: m.append(kc, vc, table, [0, 0, 0, 0, M * P], np.ascontiguousarray(k[:, :, :1]), np.ascontiguousarray(v[:, :, :1]), kind=kd))

# Long sequences over many pages (a tile spans pages: 1024 keys in decode,
# 64 in prefill, chunks of 64 keys across page boundaries), page sizes 16
# and 5, decode (Sq 1) and chunked prefill (Sq 40: the packed path), on a
# shuffled pool written directly.
for m in (qwen, gemma):
    kd = next(k for k in m.kinds if k.op == attn.OP_SDPA)
    for P in (16, 5):
        lens = np.array([1500, 0, 700, 2 * P + 3])
        B, M = len(lens), (int(lens.max()) + P - 1) // P
        pages = B * M + 7
        table = rng.permutation(pages)[:B * M].astype(np.int32).reshape(B, M)
        kc = rng.standard_normal((pages, kd.num_kv_heads, P, kd.head_dim), np.float32) * 100
        vc = rng.standard_normal((pages, kd.num_kv_heads, P, kd.head_dim_v), np.float32) * 100
        k = rng.standard_normal((B, kd.num_kv_heads, M * P, kd.head_dim), np.float32) * 2
        v = rng.standard_normal((B, kd.num_kv_heads, M * P, kd.head_dim_v), np.float32)
        for b in range(B):
            for j in range(M):
                kc[table[b, j]] = k[b, :, j * P:(j + 1) * P]
                vc[table[b, j]] = v[b, :, j * P:(j + 1) * P]
        for Sq in (1, 40):
            q = rng.standard_normal((B, kd.num_heads, Sq, kd.head_dim), np.float32) * 2
            out = m.decode(q, kc, vc, table, lens, kind=kd)
            ref = np.concatenate([sdpa_ref(kd, q[b:b + 1], k[b:b + 1, :, :lens[b]], v[b:b + 1, :, :lens[b]], [lens[b]]) for b in range(B)])
            report(f"{m.family} {kd.name} paged page_size {P} Sq={Sq} lengths {','.join(map(str, lens))}", out, ref)
            # The same pools laid out as vLLM keeps them, [pages, P, Hkv,
            # d], passed as their [pages, Hkv, P, d] views (strides, no
            # copy).
            kn = np.ascontiguousarray(kc.transpose(0, 2, 1, 3))
            vn = np.ascontiguousarray(vc.transpose(0, 2, 1, 3))
            out = m.decode(q, kn.transpose(0, 2, 1, 3), vn.transpose(0, 2, 1, 3), table, lens, kind=kd)
            report(f"{m.family} {kd.name} paged page_size {P} Sq={Sq} [pages, P, Hkv, d] pools", out, ref)

# A bf16 paged cache (a library built with --kv-dtype=bf16): uint16 arrays
# of bfloat16 bits; the reference sees the rounded values.
def to_bf16(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(h):
    return (h.astype(np.uint32) << 16).view(np.float32)


if len(sys.argv) > 3:
    mb = attn.load(sys.argv[3])
    kd = mb.kind_of_layer(3)
    print(mb.family, kd.name, "paged cache", "bf16" if kd.kv_dtype == attn.BF16 else kd.kv_dtype)
    P, lens = 16, np.array([33, 1, 16])
    B, M = len(lens), 3
    table = rng.permutation(B * M).astype(np.int32).reshape(B, M)
    kc = np.zeros((B * M, kd.num_kv_heads, P, kd.head_dim), np.uint16)
    vc = np.zeros((B * M, kd.num_kv_heads, P, kd.head_dim_v), np.uint16)
    k = to_bf16(rng.standard_normal((B, kd.num_kv_heads, M * P, kd.head_dim)) * 2)
    v = to_bf16(rng.standard_normal((B, kd.num_kv_heads, M * P, kd.head_dim_v)))
    mb.append(kc, vc, table, np.zeros(B, np.int64), k, v, layer=3, counts=lens)
    q = rng.standard_normal((B, kd.num_heads, 2, kd.head_dim), np.float32)
    out = mb.decode(q, kc, vc, table, lens, layer=3)
    ref = np.concatenate([sdpa_ref(kd, q[b:b + 1], from_bf16(k[b:b + 1, :, :lens[b]]), from_bf16(v[b:b + 1, :, :lens[b]]), [lens[b]]) for b in range(B)])
    report("bf16 paged decode Sq=2 lengths 33,1,16", out, ref)
    expect_error("a float32 cache", lambda: mb.decode(q, from_bf16(kc), from_bf16(vc), table, lens, layer=3))
    # Contiguous attention reads bf16 K/V too (prefill: Sq = Skv, causal).
    q = rng.standard_normal((2, kd.num_heads, 40, kd.head_dim), np.float32)
    k = to_bf16(rng.standard_normal((2, kd.num_kv_heads, 40, kd.head_dim)) * 2)
    v = to_bf16(rng.standard_normal((2, kd.num_kv_heads, 40, kd.head_dim_v)))
    out = mb.sdpa(q, k, v, layer=3, kv_lengths=[40, 23])
    report("bf16 sdpa B=2 Sq=Skv=40 lengths 40,23", out,
           sdpa_ref(kd, q, from_bf16(k), from_bf16(v), [40, 23]))

# Gated DeltaNet.
kd = qwen.kinds[0]
B, S = 2, 70
q, k = normalized((B, kd.num_kv_heads, S, kd.head_dim)), normalized((B, kd.num_kv_heads, S, kd.head_dim))
v = rng.standard_normal((B, kd.num_heads, S, kd.head_dim_v), np.float32)
g = -np.abs(rng.standard_normal((B, kd.num_heads, S), np.float32)) * 0.2
beta = rng.uniform(0, 1, (B, kd.num_heads, S)).astype(np.float32)
s0 = rng.standard_normal((B, kd.num_heads, kd.head_dim, kd.head_dim_v), np.float32)
out, s1 = qwen.gated_delta(q, k, v, g, beta, layer=0, state=s0, lengths=[70, 37])
ro, rs = gdn_ref(kd, q, k, v, g, beta, s0, [70, 37])
report("gated_delta S=70 lengths 70,37 out", out, ro)
report("gated_delta state", s1, rs)
st = s0.copy()
qwen.gated_delta(q, k, v, g, beta, layer=0, state=st, lengths=[70, 37], state_out=st)
report("gated_delta state in place", st, rs)
# A prefill in two calls, the state passed along = one call.
expect_error("a slice along S", lambda: qwen.gated_delta(*(x[:, :, :33] for x in (q, k, v, g, beta)), layer=0))
o1, mid = qwen.gated_delta(*(np.ascontiguousarray(x[:, :, :33]) for x in (q, k, v, g, beta)), layer=0)
o2, end = qwen.gated_delta(*(np.ascontiguousarray(x[:, :, 33:]) for x in (q, k, v, g, beta)),
                           layer=0, state=mid)
ro, rs = gdn_ref(kd, q, k, v, g, beta, None, [S, S])
report("gated_delta split 33+37", np.concatenate([o1, o2], axis=2), ro)
report("gated_delta split state", end, rs)

# Bad calls: the C API's errors, or the module's before it.
fk = qwen.kinds[1]
q = np.zeros((1, fk.num_heads, 4, fk.head_dim), np.float32)
k = np.zeros((1, fk.num_kv_heads, 8, fk.head_dim), np.float32)
expect_error("float16 q", lambda: qwen.sdpa(q.astype(np.float16), k, k, layer=3))
expect_error("float64 q", lambda: qwen.sdpa(q.astype(np.float64), k, k, layer=3), TypeError)
expect_error("transposed k", lambda: qwen.sdpa(q, k.transpose(0, 2, 1, 3).copy().transpose(0, 2, 1, 3), k, layer=3))
expect_error("wrong head dim", lambda: qwen.sdpa(q[..., :32], k, k, layer=3))
expect_error("lengths of 2 rows", lambda: qwen.sdpa(q, k, k, layer=3, kv_lengths=[8, 8]), ValueError)
expect_error("length past the keys", lambda: qwen.sdpa(q, k, k, layer=3, kv_lengths=[9]))
expect_error("sdpa of a linear layer", lambda: qwen.sdpa(q, k, k, layer=0))
expect_error("layer 7", lambda: qwen.sdpa(q, k, k, layer=7), ValueError)
ro_out = np.zeros((1, fk.num_heads, 4, fk.head_dim), np.float32)
ro_out.flags.writeable = False
expect_error("read-only out", lambda: qwen.sdpa(q, k, k, layer=3, out=ro_out), ValueError)
expect_error("not a library", lambda: attn.load("libm.so.6"))
qwen.close()
expect_error("closed model", lambda: qwen.sdpa(q, k, k, kind=1))
print("python module: all calls behaved")

# Kimi Delta Attention (a kind with channel_gate): g [B, Hv, S, dk], prefill
# with a state and lengths, the state updated in place, split = one call.
if len(sys.argv) > 4:
    kimi = attn.load(sys.argv[4])
    kd = next(kd for kd in kimi.kinds if kd.channel_gate)
    print(f"{kimi.family} kind {kd.name}: channel_gate {kd.channel_gate}, "
          f"heads {kd.num_heads}/{kd.num_kv_heads}, dims {kd.head_dim}/{kd.head_dim_v}")
    B, S, H, d = 2, 40, kd.num_heads, kd.head_dim
    q, k = normalized((B, kd.num_kv_heads, S, d)), normalized((B, kd.num_kv_heads, S, d))
    v = rng.standard_normal((B, H, S, kd.head_dim_v)).astype(np.float32)
    g = -np.abs(rng.standard_normal((B, H, S, d)) * 0.3).astype(np.float32)
    g[:, :, 5, ::3] = -60.0
    beta = rng.uniform(0, 1, (B, H, S)).astype(np.float32)
    s0 = rng.standard_normal((B, H, d, kd.head_dim_v)).astype(np.float32)
    ro, rs = gdn_ref(kd, q, k, v, g, beta, s0, [S, 23])
    out, s1 = kimi.gated_delta(q, k, v, g, beta, kind=kd.index, state=s0, lengths=[S, 23])
    report("kda gated_delta S=40 lengths 40,23 out", out, ro)
    report("kda gated_delta state", s1, rs)
    st = s0.copy()
    kimi.gated_delta(q, k, v, g, beta, kind=kd.index, state=st, lengths=[S, 23], state_out=st)
    report("kda gated_delta state in place", st, rs)
    ro, rs = gdn_ref(kd, q, k, v, g, beta, None, [S, S])
    parts = [np.ascontiguousarray(x[:, :, :17]) for x in (q, k, v, g, beta)]
    o1, mid = kimi.gated_delta(*parts, kind=kd.index)
    parts = [np.ascontiguousarray(x[:, :, 17:]) for x in (q, k, v, g, beta)]
    o2, end = kimi.gated_delta(*parts, kind=kd.index, state=mid)
    report("kda gated_delta split 17+23", np.concatenate([o1, o2], axis=2), ro)
    report("kda gated_delta split state", end, rs)
    expect_error("kda g without its channels",
                 lambda: kimi.gated_delta(q, k, v, g[..., 0].copy(), beta, kind=kd.index))
