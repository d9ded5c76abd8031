#!/usr/bin/env python3
"""Baseline for tools/gpu-check.sh's bench, run on the GPU machine in the same
call: PyTorch's scaled_dot_product_attention (its FlashAttention kernels for
bf16) on the same shapes (batch 1, causal prefill, Llama-3-8B Hq=32 Hkv=8
D=128 and the seed model Hq=64 Hkv=4 D=256, S = 1k, 4k, 16k; DeepSeek-V3's
absorbed MLA decode at batch 64 x 4k and batch 1 x 64k cached tokens). Median of
CUDA-event-timed runs; FLOPs counted as gpu-check's bench does (causal: half
of 4*Hq*S*S*D). Needs python3 with torch (the device image has it)."""
import statistics
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - only on machines without torch
    print(f"baseline skipped: {e}")
    sys.exit(0)

SHAPES = {"llama-3.1-8b": (32, 8, 128), "seed": (64, 4, 256)}


def timed(f, repeats):
    """Median CUDA-event time of f() in ms (after one warm-up call)."""
    f()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def bench(hq, hkv, d, s, dtype, repeats=5):
    q = torch.randn(1, hq, s, d, device="cuda", dtype=dtype)
    k = torch.randn(1, hkv, s, d, device="cuda", dtype=dtype)
    v = torch.randn(1, hkv, s, d, device="cuda", dtype=dtype)
    f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               enable_gqa=True)
    ms = timed(f, repeats)
    flops = 4.0 * hq * s * s * d / 2
    return ms, flops / ms / 1e9


def bench_mla(batch, kv_len, repeats=10):
    """DeepSeek-V3's absorbed MLA decode as torch computes it: one query
    row of 128 heads (576 wide: latent 512 + rope 64) over the batch's
    latent cache [B, 1, S, 576], the values its first 512 columns, through
    scaled_dot_product_attention (enable_gqa; its kernels do not take
    D = 576, so this is its math path: the baseline a framework has without
    FlashMLA). FLOPs as the executables' bench: 2·(576 + 512) per head and
    key."""
    h, row, r = 128, 576, 512
    q = torch.randn(batch, h, 1, row, device="cuda", dtype=torch.bfloat16)
    c = torch.randn(batch, 1, kv_len, row, device="cuda", dtype=torch.bfloat16)
    v = c[..., :r]
    f = lambda: F.scaled_dot_product_attention(q, c, v, enable_gqa=True)
    ms = timed(f, repeats)
    flops = 2.0 * batch * h * kv_len * (row + r)
    return ms, flops / ms / 1e9, 2.0 * batch * kv_len * row / ms / 1e6


def main():
    # --dtypes bf16,fp32 (default both); --csv FILE appends
    # "torch-sdpa-NAME-DTYPE,--seq S,ms,tflops," rows (gpu-check.sh's CSV).
    args = sys.argv[1:]
    dtypes = "bf16,fp32"
    csv = None
    while args:
        flag = args.pop(0)
        if flag == "--dtypes" and args:
            dtypes = args.pop(0)
        elif flag == "--csv" and args:
            csv = args.pop(0)
        else:
            sys.exit(f"gpu-baseline.py: unknown argument {flag!r} "
                     "(accepted: --dtypes bf16,fp32, --csv FILE)")
    table = {"bf16": torch.bfloat16, "fp32": torch.float32}
    chosen = [(table[t], t) for t in dtypes.split(",") if t in table]
    print(f"baseline: torch {torch.__version__}, "
          f"{torch.cuda.get_device_name(0)}, scaled_dot_product_attention")
    for name, (hq, hkv, d) in SHAPES.items():
        for dtype, tag in chosen:
            for s in (1024, 4096, 16384):
                run(f"torch-sdpa {name} {tag} S={s}",
                    f"torch-sdpa-{name}-{tag},--seq {s}",
                    lambda: bench(hq, hkv, d, s, dtype, repeats=10), csv)
    # gpu-check.sh's MLA decode shapes.
    for batch, kv_len in ((64, 4096), (1, 65536)):
        run(f"torch-sdpa deepseek-v3 absorbed MLA decode B={batch} "
            f"Skv={kv_len}",
            f"torch-sdpa-mla-absorbed,--batch {batch} --kv-len {kv_len}",
            lambda: bench_mla(batch, kv_len), csv)


def run(label, row, measure, csv):
    """Prints `label: ms, TFLOP/s[, GB/s]` of measure() (or its failure:
    report, go on) and appends "row,ms,tflops," to the CSV."""
    try:
        ms, tf, *gbps = measure()
        extra = f", latent cache read {gbps[0]:.0f} GB/s" if gbps else ""
        print(f"{label}: {ms:.3f} ms, {tf:.1f} TFLOP/s{extra}")
        if csv:
            with open(csv, "a") as f:
                f.write(f"{row},{ms:.4f},{tf:.2f},\n")
    except Exception as e:
        print(f"{label}: failed: {e}")


if __name__ == "__main__":
    main()
