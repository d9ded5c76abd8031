"""Float64 reference for test/Integration/ffn-ops.mlir.

Reads the results printMemrefF32 prints and recomputes each network in
float64 from the inputs' formulas (x = 2 sin(0.7 n); weights 0.5 sin(a n +
c); biases 0.1 sin(0.3 n + c), n the row-major index), with the activations
as transformers' ACT2FN defines them: silu x·sigmoid(x), gelu the exact
x·Φ(x), gelu_tanh (gelu_new / gelu_pytorch_tanh), relu. Prints one
"OK <case> <max error>" line per result; exit 1 when max |out - ref| exceeds
tol · (1 + max |ref|).
"""
import math
import re
import sys

import numpy as np

TOL = 1e-5


def gen(shape, a, c, s):
    n = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    return (s * np.sin(a * n + c)).astype(np.float32).astype(np.float64)


ACT = {
    "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                  * (x + 0.044715 * x ** 3))),
    "relu": lambda x: np.maximum(x, 0),
}


def moe(x, router, eg, eu, ed, k, norm_topk, shared=None):
    """transformers' Qwen3NextSparseMoeBlock: softmax router, top-k (the
    first index on ties), optional renormalization, silu experts, shared
    expert scaled by sigmoid of its gate."""
    t = x.reshape(-1, x.shape[-1])
    logits = t @ router.T
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = np.zeros_like(t)
    for i in range(t.shape[0]):
        q = p[i].copy()
        picks = []
        for _ in range(k):
            e = int(np.argmax(q))
            picks.append((e, p[i, e]))
            q[e] = -np.inf
        total = sum(w for _, w in picks)
        for e, w in picks:
            w = w / total if norm_topk else w
            h = ACT["silu"](t[i] @ eg[e].T) * (t[i] @ eu[e].T)
            out[i] += w * (h @ ed[e].T)
    if shared is not None:
        sg, su, sd, gate = shared
        s = (ACT["silu"](t @ sg.T) * (t @ su.T)) @ sd.T
        out += s / (1 + np.exp(-(t @ gate.T)))
    return out.reshape(x.shape)


def routed_moe(x, router, eg, eu, ed, k, scoring, groups, kept, group_score,
               norm_topk, eps, scale, bias=None, shared=None):
    """The routers of transformers' DeepseekV3TopkRouter / DeepseekV2Moe:
    sigmoid (or softmax) scores p, the selection scores c = p + bias, groups
    scored by their best two (or best) c, the `kept` best groups kept and
    the others' c set to 0.0, the top k of c (the first index on ties)
    weighted by p, normalized by their sum + eps, times scale; the shared
    expert added ungated."""
    t = x.reshape(-1, x.shape[-1])
    logits = t @ router.T
    if scoring == "sigmoid":
        p = 1 / (1 + np.exp(-logits))
    else:
        p = np.exp(logits - logits.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
    c = p + (bias if bias is not None else 0.0)
    E = router.shape[0]
    out = np.zeros_like(t)
    for i in range(t.shape[0]):
        ci = c[i].copy()
        g = ci.reshape(groups, E // groups)
        srt = -np.sort(-g, axis=1)
        gs = srt[:, :2].sum(1) if group_score == "top2_sum" else srt[:, 0]
        keep = []
        gq = gs.copy()
        for _ in range(kept):
            j = int(np.argmax(gq))
            keep.append(j)
            gq[j] = -np.inf
        mask = np.zeros(E, dtype=bool)
        for j in keep:
            mask[j * (E // groups):(j + 1) * (E // groups)] = True
        ci = np.where(mask, ci, 0.0)
        picks = []
        for _ in range(k):
            e = int(np.argmax(ci))
            picks.append((e, p[i, e]))
            ci[e] = -np.inf
        total = sum(w for _, w in picks) + eps if norm_topk else 1.0
        for e, w in picks:
            h = ACT["silu"](t[i] @ eg[e].T) * (t[i] @ eu[e].T)
            out[i] += w / total * scale * (h @ ed[e].T)
    if shared is not None:
        sg, su, sd = shared
        out += (ACT["silu"](t @ sg.T) * (t @ su.T)) @ sd.T
    return out.reshape(x.shape)


def main():
    x = gen((2, 3, 8), 0.7, 0.1, 2.0)
    w1 = gen((12, 8), 0.37, 0.1, 0.5)
    w2 = gen((12, 8), 0.23, 0.2, 0.5)
    w3 = gen((8, 12), 0.11, 0.5, 0.5)
    w1t = gen((8, 12), 0.37, 0.1, 0.5)
    w3t = gen((12, 8), 0.11, 0.5, 0.5)
    b1 = gen((12,), 0.3, 0.1, 0.1)
    b2 = gen((8,), 0.3, 0.2, 0.1)
    cases = [
        ("gated silu", (ACT["silu"](x @ w1.T) * (x @ w2.T)) @ w3.T),
        ("gated gelu_tanh", (ACT["gelu_tanh"](x @ w1.T) * (x @ w2.T)) @ w3.T),
        ("mlp gelu_tanh transposed bias",
         ACT["gelu_tanh"](x @ w1t + b1) @ w3t + b2),
        ("mlp gelu bias", ACT["gelu"](x @ w1.T + b1) @ w3.T + b2),
        ("mlp relu", ACT["relu"](x @ w1.T) @ w3.T),
    ]
    router = gen((4, 8), 0.9, 0.3, 0.5)
    eg = gen((4, 6, 8), 0.37, 0.1, 0.5)
    eu = gen((4, 6, 8), 0.23, 0.2, 0.5)
    ed = gen((4, 8, 6), 0.11, 0.5, 0.5)
    shared = (gen((5, 8), 0.41, 0.3, 0.5), gen((5, 8), 0.29, 0.4, 0.5),
              gen((8, 5), 0.13, 0.6, 0.5), gen((1, 8), 0.7, 0.9, 0.5))
    cases += [
        ("moe shared norm_topk", moe(x, router, eg, eu, ed, 2, True, shared)),
        ("moe zero router", moe(x, 0 * router, eg, eu, ed, 2, False)),
    ]
    router8 = gen((8, 8), 0.9, 0.3, 0.5)
    bias8 = gen((8,), 0.5, 0.1, 0.2)
    eg8 = gen((8, 6, 8), 0.37, 0.1, 0.5)
    eu8 = gen((8, 6, 8), 0.23, 0.2, 0.5)
    ed8 = gen((8, 8, 6), 0.11, 0.5, 0.5)
    cases += [
        ("moe sigmoid bias groups top2_sum scaled",
         routed_moe(x, router8, eg8, eu8, ed8, 3, "sigmoid", 4, 2, "top2_sum",
                    True, 1e-20, 2.5, bias8, shared[:3])),
        ("moe softmax groups max scaled",
         routed_moe(x, router8, eg8, eu8, ed8, 3, "softmax", 4, 2, "max",
                    False, 0.0, 1.5, None, shared[:3])),
    ]
    text = sys.stdin.read()
    # Each result: "Unranked Memref ... data = [[...]]".
    blocks = [b.split("Unranked")[0] for b in text.split("data =")[1:]]
    if len(blocks) != len(cases):
        print("FAIL: %d results printed, %d expected" % (len(blocks),
                                                         len(cases)))
        return 1
    status = 0
    for (name, ref), data in zip(cases, blocks):
        got = np.array([float(v) for v in re.findall(
            r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|-?nan|-?inf", data)])
        if got.size != ref.size:
            print("FAIL %s: %d values, %d expected" % (name, got.size,
                                                       ref.size))
            status = 1
            continue
        err = np.abs(got.reshape(ref.shape) - ref).max()
        bound = TOL * (1 + np.abs(ref).max())
        ok = err <= bound
        print("%s %s %.3e" % ("OK" if ok else "FAIL", name, err))
        status |= 0 if ok else 1
    return status


if __name__ == "__main__":
    sys.exit(main())
