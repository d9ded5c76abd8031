"""attn: the kernels of a library built with ``attn-compile --emit=shared``,
from Python, over the library's C API (``attn.h``) with ctypes: no build step,
NumPy arrays in and out without copies.

    import numpy as np, attn
    m = attn.load("libllama.so")
    print(m.family, [k.name for k in m.kinds])
    q = np.random.randn(1, 32, 1, 128).astype(np.float32)
    k = np.random.randn(1, 8, 4096, 128).astype(np.float32)
    v = np.random.randn(1, 8, 4096, 128).astype(np.float32)
    out = m.sdpa(q, k, v, layer=0)            # [1, 32, 1, 128]
    m.sdpa(q, k, v, layer=0, out=out)         # into a buffer you keep
    # A paged cache: pools [pages, 8, 16, 128], block table [1, 256] int32
    m.append(kc, vc, table, [0], k, v, layer=0)
    out = m.decode(q, kc, vc, table, [4096], layer=0)
    kc = attn.zeros((256, 8, 16, 128))         # 64-byte aligned (see empty)

Arrays are passed as they are: float32 (int64 lengths, int32 block
tables; a bf16/f16 paged cache, for a library compiled with --kv-dtype, as
uint16 arrays of bfloat16 bits or float16 arrays), row-major contiguous (``np.ascontiguousarray`` makes them so; the module never copies
silently). Anything ``np.asarray`` views without a copy works too (a CPU
PyTorch tensor). Errors raise ``attn.Error`` with the C API's status and
message.
"""

import ctypes
import mmap
import os

import numpy as np

API_VERSION = 10
F32, BF16, F16, I64, I32 = 0, 1, 2, 3, 4
OP_SDPA, OP_GATED_DELTA = 0, 1
_MAX_RANK = 4
_STATUS = {0: "ok", 1: "argument", 2: "shape", 3: "dtype", 4: "layout",
           5: "value", 6: "open", 7: "unsupported", 8: "memory"}


class Error(RuntimeError):
    """A failed call: ``status`` (the attn_status code), ``kind`` (its name:
    "shape", "dtype", "layout", ...) and the C API's message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.kind = _STATUS.get(status, "unknown")


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * _MAX_RANK),
                ("strides", ctypes.c_int64 * _MAX_RANK)]


class _ModelInfo(ctypes.Structure):
    _fields_ = [("family", ctypes.c_char_p), ("num_layers", ctypes.c_int64),
                ("num_kinds", ctypes.c_int32), ("hidden_size", ctypes.c_int64),
                ("describe_json", ctypes.c_char_p)]


class _KindInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("op", ctypes.c_int32),
                ("num_heads", ctypes.c_int64), ("num_kv_heads", ctypes.c_int64),
                ("head_dim", ctypes.c_int64), ("head_dim_v", ctypes.c_int64),
                ("causal", ctypes.c_int32), ("window", ctypes.c_int64),
                ("bias_buckets", ctypes.c_int64), ("scale", ctypes.c_double),
                ("softcap", ctypes.c_double), ("num_layers", ctypes.c_int64),
                ("layers", ctypes.POINTER(ctypes.c_int64)),
                ("kv_dtype", ctypes.c_int), ("paged", ctypes.c_int32),
                ("latent_rank", ctypes.c_int64),
                ("rope_head_dim", ctypes.c_int64),
                ("chunk", ctypes.c_int64),
                ("no_delta", ctypes.c_int32),
                ("channel_gate", ctypes.c_int32),
                ("qo_dtype", ctypes.c_int)]


class Kind:
    """One layer kind: ``name``, ``op`` (OP_SDPA or OP_GATED_DELTA),
    ``num_heads``, ``num_kv_heads``, ``head_dim``, ``head_dim_v``,
    ``causal``, ``window``, ``bias_buckets``, ``scale``, ``softcap``,
    ``chunk`` (chunked local attention's chunk, 0: none) and ``layers``. For Gated DeltaNet: heads are value heads Hv, kv heads the
    query/key heads Hk, head dims d_k and d_v; ``no_delta`` marks Mamba2's
    SSD (the rule without the delta correction, q = C, k = B, v = x,
    beta = dt, g = dt A); ``channel_gate`` marks Kimi Delta Attention (g
    [B, Hv, S, dk]: one decay per key channel)."""

    def __init__(self, index, info):
        self.index = index
        self.name = info.name.decode()
        self.op = info.op
        for f in ("num_heads", "num_kv_heads", "head_dim", "head_dim_v",
                  "window", "bias_buckets", "scale", "softcap", "chunk"):
            setattr(self, f, getattr(info, f))
        self.causal = bool(info.causal)
        self.layers = [info.layers[i] for i in range(info.num_layers)]
        self.kv_dtype = info.kv_dtype  # F32, BF16 or F16: the paged cache's
        self.paged = bool(info.paged)
        # Multi-head latent attention: the latent rank r and the rotary dim
        # dr (the cache rows r + dr wide); 0 for other kinds.
        self.latent_rank = info.latent_rank
        self.rope_head_dim = info.rope_head_dim
        self.no_delta = bool(info.no_delta)
        self.channel_gate = bool(info.channel_gate)
        # F32, or with --qo-dtype the 16-bit type of q and out (sdpa, decode).
        self.qo_dtype = info.qo_dtype

    def __repr__(self):
        op = "sdpa" if self.op == OP_SDPA else "gated_delta"
        return (f"Kind({self.name!r}, {op}, heads {self.num_heads}/"
                f"{self.num_kv_heads}, dims {self.head_dim}/{self.head_dim_v},"
                f" layers {self.layers})")


# NumPy's type of a kind's q and out (bfloat16 as its bits, uint16).
def _qo_numpy(kd):
    return {F32: np.float32, F16: np.float16, BF16: np.uint16}[kd.qo_dtype]


# bfloat16 has no NumPy dtype: its bits travel as uint16.
_DTYPES = {np.dtype(np.float32): F32, np.dtype(np.float16): F16,
           np.dtype(np.uint16): BF16, np.dtype(np.int64): I64,
           np.dtype(np.int32): I32}


def _tensor(name, x, writable=False, dtype=F32):
    """A view of `x` as an attn_tensor (no copy) and the array it views;
    `dtype` is what the argument takes (the C API says so for floats)."""
    a = x if isinstance(x, np.ndarray) else np.asarray(x)
    if a.dtype not in _DTYPES or (dtype == I32) != (_DTYPES[a.dtype] == I32):
        want = "int32" if dtype == I32 else (
            "float32 (a --kv-dtype cache: float16, or uint16 holding "
            "bfloat16)")
        raise TypeError(f"{name}: dtype {a.dtype}; it must be {want}")
    if a.ndim > _MAX_RANK:
        raise ValueError(f"{name}: rank {a.ndim}; at most {_MAX_RANK}")
    if writable and not a.flags.writeable:
        raise ValueError(f"{name}: the array is read-only")
    if any(s % a.itemsize for s in a.strides):
        raise ValueError(f"{name}: strides {a.strides} are not whole "
                         "elements")
    t = _Tensor()
    t.data = a.ctypes.data if a.size else None
    t.dtype = _DTYPES[a.dtype]
    t.rank = a.ndim
    for i, (n, s) in enumerate(zip(a.shape, a.strides)):
        t.shape[i] = n
        t.strides[i] = s // a.itemsize
    return t, a


def _int(name, x, lo, hi):
    """`x` as a Python int in [lo, hi]: an int or NumPy integer (not a
    bool, a float or a string), never wrapped or truncated."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name}: {x!r} is not an integer")
    v = int(x)
    if not lo <= v <= hi:
        raise ValueError(f"{name}: {v} is outside [{lo}, {hi}]")
    return v


_INT64_MAX = 2 ** 63 - 1


def _lengths(name, x, batch):
    """Per-batch lengths as a pointer to `batch` int64 (or None)."""
    if x is None:
        return None, None
    a = np.asarray(x)
    if a.dtype.kind not in "iu" or a.dtype == np.bool_:
        raise TypeError(f"{name}: dtype {a.dtype}; lengths must be integers "
                        "(int64), not truncated from floats")
    if a.size and a.dtype.kind == "u" and int(a.max()) > _INT64_MAX:
        raise ValueError(f"{name}: {int(a.max())} does not fit in int64")
    a = np.ascontiguousarray(a.astype(np.int64))
    if a.shape != (batch,):
        raise ValueError(f"{name}: shape {a.shape}; it must be ({batch},), "
                         "one length per batch row")
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), a


class Model:
    """A compiled model's kernels (see ``load``)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._lib = lib = ctypes.CDLL(self.path)
        try:
            version = lib.attn_api_version
        except AttributeError:
            raise Error(6, f"{self.path}: not a library built with "
                        "attn-compile --emit=shared (no attn_api_version)")
        version.restype = ctypes.c_int32
        if version() != API_VERSION:
            raise Error(6, f"{self.path}: C API version {version()}; this "
                        f"module speaks version {API_VERSION}")
        lib.attn_last_error.restype = ctypes.c_char_p
        lib.attn_model_close.restype = None
        lib.attn_set_num_threads.restype = None
        handle = ctypes.c_void_p()
        self._check(lib.attn_model_open(None, ctypes.byref(handle)))
        self._handle = handle
        info = _ModelInfo()
        self._check(lib.attn_model_get_info(handle, ctypes.byref(info)))
        self.family = info.family.decode()
        self.num_layers = info.num_layers
        self.hidden_size = info.hidden_size
        self.describe_json = info.describe_json.decode()
        self.kinds = []
        for i in range(info.num_kinds):
            ki = _KindInfo()
            self._check(lib.attn_kind_get_info(handle, ctypes.c_int32(i),
                                               ctypes.byref(ki)))
            self.kinds.append(Kind(i, ki))

    def _check(self, status):
        if status != 0:
            raise Error(status, self._lib.attn_last_error().decode())

    def close(self):
        if getattr(self, "_handle", None):
            self._lib.attn_model_close(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def kind_of_layer(self, layer):
        """The Kind of layer `layer`."""
        layer = _int("layer", layer, 0, self.num_layers - 1)
        kind = ctypes.c_int32()
        self._check(self._lib.attn_kind_by_layer(
            self._handle_or_raise(), ctypes.c_int64(layer),
            ctypes.byref(kind)))
        return self.kinds[kind.value]

    def workspace_info(self):
        """The library's scratch workspaces (attn_workspace_get_info): a
        dict of held_bytes, in_use_bytes, peak_bytes, grows and threads."""
        w = (ctypes.c_int64 * 5)()
        self._check(self._lib.attn_workspace_get_info(self._handle_or_raise(),
                                                      w))
        return dict(zip(("held_bytes", "in_use_bytes", "peak_bytes", "grows",
                         "threads"), w))

    def set_num_threads(self, threads):
        """The kernels' thread count in [1, 4096]; 0 restores the
        default."""
        threads = _int("threads", threads, 0, 4096)
        self._lib.attn_set_num_threads(ctypes.c_int32(threads))

    def _kind(self, layer, kind):
        if (layer is None) == (kind is None):
            raise ValueError("pass exactly one of layer= and kind=")
        if layer is not None:
            return self.kind_of_layer(layer)
        if isinstance(kind, Kind):
            return kind
        if isinstance(kind, str):
            for k in self.kinds:
                if k.name == kind:
                    return k
            raise ValueError(f"no kind {kind!r}; kinds: "
                             f"{[k.name for k in self.kinds]}")
        return self.kinds[_int("kind", kind, 0, len(self.kinds) - 1)]

    def _handle_or_raise(self):
        if not getattr(self, "_handle", None):
            raise Error(1, f"{self.path}: the model is closed")
        return self._handle

    def set_sinks(self, sinks, layer=None, kind=None):
        """A kind's attention sinks (gpt-oss): one float32 logit per query
        head (finite, or -inf for none), the checkpoint's self_attn.sinks;
        sdpa and decode of the kind count them from then on (and refuse
        the kind until they are set)."""
        kd = self._kind(layer, kind)
        ts, keep = _tensor("sinks", sinks)
        self._check(self._lib.attn_kind_set_sinks(
            self._handle_or_raise(), ctypes.c_int32(kd.index),
            ctypes.byref(ts)))

    def sdpa(self, q, k, v, layer=None, kind=None, kv_lengths=None,
             bias_table=None, out=None):
        """Softmax attention: q [B, Hq, Sq, D], k [B, Hkv, Skv, D], v [B, Hkv,
        Skv, Dv] -> out [B, Hq, Sq, Dv] (allocated unless given). q and out
        are float32 (a library built with --qo-dtype: the kind's qo_dtype,
        float16 or bfloat16 bits as uint16), k and v the kind's kv_dtype
        (float32, float16, or bfloat16 bits as uint16: a library built with
        --kv-dtype). kv_lengths
        [B]: row b sees its first kv_lengths[b] keys; causal kinds align
        query i with key Skv - Sq + i."""
        kd = self._kind(layer, kind)
        tq, q = _tensor("q", q)
        tk, k = _tensor("k", k)
        tv, v = _tensor("v", v)
        if out is None:
            out = np.empty((q.shape[0] if q.ndim else 0, kd.num_heads,
                            q.shape[2] if q.ndim > 2 else 0, kd.head_dim_v),
                           _qo_numpy(kd))
        to, out = _tensor("out", out, writable=True)
        tb, table = (None, None) if bias_table is None else _tensor(
            "bias_table", bias_table)
        lens, keep = _lengths("kv_lengths", kv_lengths,
                              q.shape[0] if q.ndim else 0)
        self._check(self._lib.attn_sdpa(
            self._handle_or_raise(), ctypes.c_int32(kd.index),
            ctypes.byref(tq), ctypes.byref(tk), ctypes.byref(tv), lens,
            ctypes.byref(tb) if tb is not None else None, ctypes.byref(to)))
        return out

    def decode(self, q, k_cache, v_cache, block_table, kv_lengths,
               layer=None, kind=None, out=None):
        """Attention over a paged KV cache: q [B, Hq, Sq, D] (each
        sequence's last Sq tokens), k_cache [num_pages, Hkv, page_size, D],
        v_cache [num_pages, Hkv, page_size, Dv], block_table [B, max_pages]
        int32, kv_lengths [B] -> out [B, Hq, Sq, Dv] (q and out: the kind's
        qo_dtype). Token j of sequence b is row j % page_size of page
        block_table[b, j // page_size]. The pools may be strided views
        whose rows are contiguous: vLLM's [num_pages, page_size, Hkv, D]
        pool passes as pool.transpose(0, 2, 1, 3), no copy."""
        kd = self._kind(layer, kind)
        tq, q = _tensor("q", q)
        tk, k_cache = _tensor("k_cache", k_cache)
        tv, v_cache = _tensor("v_cache", v_cache)
        tt, block_table = _tensor("block_table", block_table, dtype=I32)
        b = q.shape[0] if q.ndim else 0
        if out is None:
            out = np.empty((b, kd.num_heads, q.shape[2] if q.ndim > 2 else 0,
                            kd.head_dim_v), _qo_numpy(kd))
        to, out = _tensor("out", out, writable=True)
        lens, keep = _lengths("kv_lengths", kv_lengths, b)
        self._check(self._lib.attn_decode_paged(
            self._handle_or_raise(), ctypes.c_int32(kd.index),
            ctypes.byref(tq), ctypes.byref(tk), ctypes.byref(tv),
            ctypes.byref(tt), lens, ctypes.byref(to)))
        return out

    def append(self, k_cache, v_cache, block_table, start, k_new, v_new,
               layer=None, kind=None, counts=None):
        """Writes k_new [B, Hkv, n, D] and v_new [B, Hkv, n, Dv] into the
        paged cache as tokens start[b], start[b] + 1, ... of each sequence
        (its first counts[b] of them; all n without counts)."""
        kd = self._kind(layer, kind)
        tk, k_cache = _tensor("k_cache", k_cache, writable=True)
        tv, v_cache = _tensor("v_cache", v_cache, writable=True)
        tt, block_table = _tensor("block_table", block_table, dtype=I32)
        tkn, k_new = _tensor("k_new", k_new)
        tvn, v_new = _tensor("v_new", v_new)
        b = k_new.shape[0] if k_new.ndim else 0
        st, keep1 = _lengths("start", start, b)
        ct, keep2 = _lengths("counts", counts, b)
        self._check(self._lib.attn_append_kv(
            self._handle_or_raise(), ctypes.c_int32(kd.index),
            ctypes.byref(tk), ctypes.byref(tv), ctypes.byref(tt), st, ct,
            ctypes.byref(tkn), ctypes.byref(tvn)))

    def decode_latent(self, q, latent_cache, block_table, kv_lengths,
                      layer=None, kind=None, out=None):
        """Multi-head latent attention's decode (absorbed form) over a paged
        latent cache: q [B, H, Sq, r + dr] (each head's query in the latent
        space, then its rotary part), latent_cache [num_pages, page_size,
        r + dr] of the kind's kv_dtype (one row per token: the normed latent,
        then the rotated rotary key), block_table [B, max_pages] int32,
        kv_lengths [B] -> out [B, H, Sq, r] (the attention over the rows'
        first r features, still in the latent space). q and out: the kind's
        qo_dtype."""
        kd = self._kind(layer, kind)
        tq, q = _tensor("q", q)
        tc, latent_cache = _tensor("latent_cache", latent_cache)
        tt, block_table = _tensor("block_table", block_table, dtype=I32)
        b = q.shape[0] if q.ndim else 0
        if out is None:
            out = np.empty((b, kd.num_heads, q.shape[2] if q.ndim > 2 else 0,
                            kd.latent_rank), _qo_numpy(kd))
        to, out = _tensor("out", out, writable=True)
        lens, keep = _lengths("kv_lengths", kv_lengths, b)
        self._check(self._lib.attn_decode_latent(
            self._handle_or_raise(), ctypes.c_int32(kd.index),
            ctypes.byref(tq), ctypes.byref(tc), ctypes.byref(tt), lens,
            ctypes.byref(to)))
        return out

    def append_latent(self, latent_cache, block_table, start, rows,
                      layer=None, kind=None, counts=None):
        """Writes rows [B, n, r + dr] (the kind's kv_dtype) into the paged
        latent cache as tokens start[b], start[b] + 1, ... of each sequence
        (its first counts[b] rows; all n without counts)."""
        kd = self._kind(layer, kind)
        tc, latent_cache = _tensor("latent_cache", latent_cache,
                                   writable=True)
        tt, block_table = _tensor("block_table", block_table, dtype=I32)
        tr, rows = _tensor("rows", rows)
        b = rows.shape[0] if rows.ndim else 0
        st, keep1 = _lengths("start", start, b)
        ct, keep2 = _lengths("counts", counts, b)
        self._check(self._lib.attn_append_latent(
            self._handle_or_raise(), ctypes.c_int32(kd.index),
            ctypes.byref(tc), ctypes.byref(tt), st, ct, ctypes.byref(tr)))

    def gated_delta(self, q, k, v, g, beta, layer=None, kind=None,
                    state=None, lengths=None, out=None, state_out=None):
        """Gated DeltaNet: q, k [B, Hk, S, dk], v [B, Hv, S, dv], g, beta
        [B, Hv, S] (g [B, Hv, S, dk] for a kind with channel_gate: Kimi
        Delta Attention), state [B, Hv, dk, dv] (None: zeros) -> (out [B, Hv, S,
        dv], state_out [B, Hv, dk, dv]), allocated unless given; state_out
        may be state (updated in place). lengths [B]: row b is its first
        lengths[b] tokens."""
        kd = self._kind(layer, kind)
        tq, q = _tensor("q", q)
        b = q.shape[0] if q.ndim else 0
        s = q.shape[2] if q.ndim > 2 else 0
        if out is None:
            out = np.empty((b, kd.num_heads, s, kd.head_dim_v), np.float32)
        if state_out is None:
            state_out = np.empty((b, kd.num_heads, kd.head_dim,
                                  kd.head_dim_v), np.float32)
        ts = [_tensor(n, x) for n, x in (("k", k), ("v", v), ("g", g),
                                         ("beta", beta))]
        t0 = None if state is None else _tensor("state", state)
        to, out = _tensor("out", out, writable=True)
        t1, state_out = _tensor("state_out", state_out, writable=True)
        lens, keep = _lengths("lengths", lengths, b)
        self._check(self._lib.attn_gated_delta(
            self._handle_or_raise(), ctypes.c_int32(kd.index),
            ctypes.byref(tq), *[ctypes.byref(t) for t, _ in ts],
            ctypes.byref(t0[0]) if t0 else None, lens, ctypes.byref(to),
            ctypes.byref(t1)))
        return out, state_out


def load(path):
    """Opens the library `path` built with attn-compile --emit=shared."""
    return Model(path)


_HUGE_FROM = 4 << 20
_HUGE_PAGE = 2 << 20


def empty(shape, dtype=np.float32, align=64):
    """An uninitialized C-contiguous array whose data starts on an
    `align`-byte boundary (a power of two). NumPy places large arrays 16
    bytes past a 64-byte line, so every 64-byte row load of the CPU
    kernels (AVX-512) spans two cache lines: decode over such an f32 cache
    ran 8-22% slower than over one from here (docs/c-api-python.md). CPU
    PyTorch tensors are 64-byte aligned already. From 4 MiB on (K/V
    caches) the array is an anonymous mapping of its own, on a 2 MiB
    boundary, with transparent huge pages advised (as the C API's
    attn_buffer_alloc): decode reads it 4-6% faster again."""
    align = _int("align", align, 1, 1 << 30)
    if align & (align - 1):
        raise ValueError(f"align: {align}; it must be a power of two")
    dt = np.dtype(dtype)
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    shape = tuple(_int(f"shape[{i}]", n, 0, _INT64_MAX)
                  for i, n in enumerate(shape))
    if int(np.prod([max(n, 1) for n in shape], dtype=object)) * dt.itemsize \
            > _INT64_MAX:
        raise ValueError(f"shape {shape}: too large")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if nbytes >= _HUGE_FROM and align <= _HUGE_PAGE:
        # The array holds the mapping: unmapped when the last view goes.
        # Private: a shared anonymous mapping is shmem, whose huge pages
        # follow shmem_enabled (off by default), not this advice.
        try:
            mm = mmap.mmap(-1, nbytes + _HUGE_PAGE, flags=mmap.MAP_PRIVATE)
        except OSError as e:  # as np.empty: MemoryError
            raise MemoryError(f"shape {shape}: {nbytes} bytes: {e.strerror}") \
                from None
        raw = np.frombuffer(mm, np.uint8)
        skip = -raw.ctypes.data % _HUGE_PAGE
        if hasattr(mmap, "MADV_HUGEPAGE"):
            try:
                mm.madvise(mmap.MADV_HUGEPAGE, skip, nbytes)
            except OSError:
                pass  # advice only: a kernel without THP keeps 4 KiB pages
        return raw[skip:skip + nbytes].view(dt).reshape(shape)
    raw = np.empty(nbytes + align, np.uint8)
    skip = -raw.ctypes.data % align
    return raw[skip:skip + nbytes].view(dt).reshape(shape)


def zeros(shape, dtype=np.float32, align=64):
    """empty(), filled with zeros."""
    a = empty(shape, dtype, align)
    a.fill(0)
    return a
