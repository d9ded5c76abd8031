"""Float64 references of Gated DeltaNet's gated delta rule (attn.gated_delta_rule).

Written from the recurrence, per batch b and value head h, with state
S [d_k, d_v] and value head h reading query/key head h // (Hv // Hk):

    S   <- S * exp(g_t)
    S   <- S + k_t (x) beta_t * (v_t - S^T k_t)
    o_t  = S^T (scale * q_t)

`recurrent` is that loop; `chunked` is the chunkwise-parallel form the
compiled kernels will use (chunks of C tokens: inside a chunk the WY/UT form
with a unit lower-triangular solve, across chunks the state carried), as
transformers' torch_chunk_gated_delta_rule computes it. Shapes: q, k
[B, Hk, S, dk], v [B, Hv, S, dv], g, beta [B, Hv, S], state [B, Hv, dk, dv].

Run as a script it checks the two against each other (and prefill split in
two calls with the state passed, and token by token) on odd shapes and
extreme gates: gdn-reference.test.
"""
import sys

import numpy as np


def _expand(x, hv):
    """[B, Hk, ...] -> [B, Hv, ...]: value head h reads head h // ratio."""
    return np.repeat(x, hv // x.shape[1], axis=1)


def recurrent(q, k, v, g, beta, scale, state=None):
    B, Hv, S, dv = v.shape
    dk = q.shape[3]
    q, k = _expand(q, Hv), _expand(k, Hv)
    st = np.zeros((B, Hv, dk, dv)) if state is None else state.astype(np.float64).copy()
    out = np.zeros((B, Hv, S, dv))
    for t in range(S):
        st *= np.exp(g[:, :, t])[:, :, None, None]
        kt, vt = k[:, :, t, :], v[:, :, t, :]
        delta = vt - np.einsum("bhkv,bhk->bhv", st, kt)
        st += np.einsum("bhk,bhv->bhkv", kt, beta[:, :, t, None] * delta)
        out[:, :, t, :] = np.einsum("bhkv,bhk->bhv", st, scale * q[:, :, t, :])
    return out, st


def chunked(q, k, v, g, beta, scale, state=None, C=64):
    B, Hv, S, dv = v.shape
    dk = q.shape[3]
    q, k = _expand(q, Hv).astype(np.float64), _expand(k, Hv).astype(np.float64)
    v, g, beta = v.astype(np.float64), g.astype(np.float64), beta.astype(np.float64)
    pad = (-S) % C
    # Padding tokens: k = v = beta = g = 0 leave the state as it is.
    padw = lambda x: np.pad(x, [(0, 0), (0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 3))
    q, k, v, g, beta = map(padw, (q * scale, k, v, g, beta))
    n = (S + pad) // C
    rs = lambda x: x.reshape(B, Hv, n, C, *x.shape[3:])
    q, k, v, g, beta = map(rs, (q, k, v, g, beta))
    g = np.cumsum(g, axis=-1)                                   # within each chunk
    lower = np.tril(np.ones((C, C)), -1)
    # Masked before the exp: above the diagonal g_i - g_j > 0 and, with very
    # negative gates, exp overflows (inf * 0 is NaN).
    causal = np.tril(np.ones((C, C), dtype=bool))
    decay = np.exp(np.where(causal, g[..., :, None] - g[..., None, :], -np.inf))
    kb, vb = k * beta[..., None], v * beta[..., None]
    # T = (I + strictly-lower(diag(beta) K K^T * decay))^-1: forward substitution.
    A = -(kb @ np.swapaxes(k, -1, -2)) * decay * lower
    T = np.zeros_like(A)
    for i in range(C):
        T[..., i, :] = A[..., i, :] + np.einsum("...j,...jk->...k", A[..., i, :i], T[..., :i, :])
    T = T + np.eye(C)
    u = T @ vb                                   # pseudo-values
    w = T @ (kb * np.exp(g)[..., None])          # decayed keys, for the state's part
    st = np.zeros((B, Hv, dk, dv)) if state is None else state.astype(np.float64).copy()
    out = np.zeros((B, Hv, n, C, dv))
    for c in range(n):
        qc, kc, gc = q[:, :, c], k[:, :, c], g[:, :, c]
        intra = (qc @ np.swapaxes(kc, -1, -2)) * decay[:, :, c]
        vnew = u[:, :, c] - w[:, :, c] @ st
        out[:, :, c] = (qc * np.exp(gc)[..., None]) @ st + intra @ vnew
        glast = gc[..., -1]
        st = st * np.exp(glast)[..., None, None] + \
            np.swapaxes(kc * np.exp(glast[..., None] - gc)[..., None], -1, -2) @ vnew
    return out.reshape(B, Hv, n * C, dv)[:, :, :S], st


def _case(rng, B, Hk, Hv, S, dk, dv, gate="normal", beta_kind="random"):
    q = rng.standard_normal((B, Hk, S, dk))
    k = rng.standard_normal((B, Hk, S, dk))
    # L2-normalized q and k, as the layer feeds them.
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal((B, Hv, S, dv))
    if gate == "normal":
        g = -np.exp(rng.standard_normal((B, Hv, S))) * 0.1
    elif gate == "near0":
        g = -1e-6 * rng.random((B, Hv, S))
    else:  # very negative: the state resets at every token
        g = np.full((B, Hv, S), -60.0)
    beta = {"random": rng.random((B, Hv, S)), "zero": np.zeros((B, Hv, S)),
            "one": np.ones((B, Hv, S))}[beta_kind]
    return q, k, v, g, beta


def _rel(a, b):
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return np.inf  # a NaN must fail the comparison, never pass it
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def main():
    rng = np.random.default_rng(7)
    cases = [(1, 1, 1, 1, 16, 16), (1, 2, 2, 63, 32, 16), (2, 2, 4, 64, 16, 24),
             (1, 1, 4, 65, 24, 16), (1, 2, 8, 200, 16, 16)]
    worst = 0.0
    for (B, Hk, Hv, S, dk, dv) in cases:
        for gate in ("normal", "near0", "reset"):
            for beta_kind in ("random", "zero", "one"):
                q, k, v, g, beta = _case(rng, B, Hk, Hv, S, dk, dv, gate, beta_kind)
                s0 = rng.standard_normal((B, Hv, dk, dv)) * 0.1
                scale = dk ** -0.5
                ro, rs = recurrent(q, k, v, g, beta, scale, s0)
                co, cs = chunked(q, k, v, g, beta, scale, s0)
                # Prefill in two calls with the state passed.
                h = S // 2
                o1, s1 = chunked(q[:, :, :h], k[:, :, :h], v[:, :, :h], g[:, :, :h], beta[:, :, :h], scale, s0)
                o2, s2 = chunked(q[:, :, h:], k[:, :, h:], v[:, :, h:], g[:, :, h:], beta[:, :, h:], scale, s1)
                so = np.concatenate([o1, o2], axis=2)
                errs = [_rel(co, ro), _rel(cs, rs), _rel(so, ro), _rel(s2, rs)]
                worst = max(worst, *errs)
                tag = f"B={B} Hk={Hk} Hv={Hv} S={S} dk={dk} dv={dv} gate={gate} beta={beta_kind}"
                if max(errs) > 1e-10:
                    print(f"MISMATCH {tag}: {errs}")
                    return 1
    print(f"gdn reference: chunked = recurrent = split prefill on {len(cases) * 9} cases, "
          f"worst relative difference {worst:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
