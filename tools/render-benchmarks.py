#!/usr/bin/env python3
"""Renders the benchmark data files into the docs' tables and plots.

The data: docs/bench-data/*.csv, as attn-bench writes them (--csv): every
row starts with the machine it was measured on (date, cpu, threads, the FMA
peak and read bandwidth the same run measured), then the benchmark's own
columns. Rows of different machines and dates sit in one file; the history
of each file is in git.

The output: docs/benchmark-data.md (one section per data file: a table of
every row with its machine, % of that run's peak) and one SVG bar chart per
data file next to it (docs/bench-data/<name>.svg: % of the peak per row,
one colour per machine). Both are generated: edit the data, then run

    tools/render-benchmarks.py            # rewrite the tables and plots
    tools/render-benchmarks.py --check    # exit 1 when they are stale

(test/Driver/bench-data.test runs --check.) A row without its machine
columns is an error that names the file and the line.
"""

import argparse
import csv
import html
import os
import sys

MACHINE = ["date", "cpu", "threads", "peak_gflops", "bandwidth_gbs"]

# What each data file measures: its title, the command that writes it and
# the columns that name a row (the rest are figures).
DESCRIPTIONS = {
    "attn-bench": (
        "Softmax attention kernels against OpenBLAS's unfused attention",
        "build/bin/attn-bench [--shape P1|P2|P3|P4|D1|D2|D3|D4] [--long]",
        ["shape", "method"]),
    "attn-bench-mla": (
        "Multi-head latent attention (DeepSeek-V3's shapes)",
        "build/bin/attn-bench --mla",
        ["shape", "batch", "kv_len", "method"]),
    "attn-bench-variants": (
        "Attention sinks (gpt-oss) and chunked attention (Llama 4) against "
        "the kernels they vary",
        "build/bin/attn-bench --variants",
        ["shape", "layer", "batch", "method"]),
    "attn-bench-linear": (
        "Linear attention (Gated DeltaNet)",
        "build/bin/attn-bench --linear",
        ["model", "kind", "phase", "tokens"]),
    "gpu-h200": (
        "CUDA kernels on an H200 against torch's scaled_dot_product_attention "
        "(bf16, causal prefill, batch 1; decode rows: one query row; "
        "pct_bf16_peak of the dense bf16 tensor peak, pct_torch of torch's "
        "TFLOP/s in the same run)",
        "GPU_BENCH=tc sh build/gpu-check/gpu-check.sh build/gpu-check (on "
        "the GPU machine; docs/cuda.md)",
        ["run", "kernel", "args"]),
    "gemm-bench": (
        "The GEMM kernel against OpenBLAS sgemm, shape by shape (C += A·Bᵀ, "
        "one process, alternated; kernel: amx = tiles from 128 rows and 320 "
        "columns, AVX-512 below)",
        "tools/gemm-bench.py [--shapes qwen3-next,seed] [--seq S] "
        "[--no-amx]",
        ["kernel", "gemm", "m", "n", "k"]),
    "attn-bench-ceiling": (
        "The micro-kernel's register tiles with every operand in L1 (one "
        "thread; peak_gflops and pct_peak: FMAs alone on that thread; the "
        "shipped tiles are marked *)",
        "build/bin/attn-bench --ceiling",
        ["loop", "tile"]),
    "attn-bench-layers": (
        "Whole transformer layers",
        "build/bin/attn-bench --layers",
        ["model", "kind", "phase", "tokens"]),
}

COLOURS = ["#4878a8", "#e0803a", "#5a9e5a", "#c04848", "#8c6bb1", "#8c8c3c"]


class DataError(Exception):
    pass


def read_data(path):
    """The rows of one data file, checked for their machine columns."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None:
            raise DataError(f"{path}: empty file; expected a header starting "
                            f"with {','.join(MACHINE)}")
        missing = [c for c in MACHINE if c not in reader.fieldnames]
        if missing:
            raise DataError(f"{path}:1: the header lacks the machine columns "
                            f"{', '.join(missing)}; every row must say where "
                            f"it was measured ({','.join(MACHINE)}, as "
                            "attn-bench --csv writes them)")
        rows = []
        for r in reader:
            line = reader.line_num
            for c in ("date", "cpu", "threads", "peak_gflops"):
                if not r.get(c):
                    raise DataError(f"{path}:{line}: the row has no {c}; "
                                    "every row must say where it was "
                                    "measured")
            try:
                float(r["peak_gflops"])
            except ValueError:
                raise DataError(f"{path}:{line}: peak_gflops "
                                f"'{r['peak_gflops']}' is not a number")
            rows.append(r)
        return reader.fieldnames, rows


def number(text, digits=3):
    """A figure as the tables print it (3 significant digits, or as is)."""
    if text.lstrip("-").isdigit():  # a count or a size: as written
        return text
    try:
        x = float(text)
    except ValueError:
        return text
    if x != x:  # nan
        return ""
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def machine_of(r):
    bw = f", {number(r['bandwidth_gbs'])} GB/s" if r["bandwidth_gbs"] else ""
    return (f"{r['date']}, {r['cpu']}, {r['threads']} threads, peak "
            f"{number(r['peak_gflops'], 4)} GFLOP/s{bw}")


def table(name, fields, rows):
    title, command, keys = DESCRIPTIONS.get(name, (name, "", []))
    figures = [c for c in fields if c not in MACHINE and c not in keys]
    keys = [c for c in keys if c in fields]
    machines = []
    for r in rows:
        m = machine_of(r)
        if m not in machines:
            machines.append(m)
    out = [f"## {title}", ""]
    src = f"[`docs/bench-data/{name}.csv`](bench-data/{name}.csv)"
    out.append(f"Data: {src}" + (f", written by `{command} --csv FILE`" if
                                 command else "") +
               f"; plot: [`{name}.svg`](bench-data/{name}.svg). Machines "
               "(the run's own FMA peak and read bandwidth; `pct_peak` is "
               "of that peak, or of that bandwidth for a read-rate row):")
    out.append("")
    for i, m in enumerate(machines):
        out.append(f"- m{i + 1}: {m}")
    out.append("")
    out.append("| machine | " + " | ".join(keys + figures) + " |")
    out.append("|" + "---|" * (1 + len(keys) + len(figures)))
    for r in rows:
        cells = [f"m{machines.index(machine_of(r)) + 1}"]
        cells += [r[c] for c in keys]
        cells += [number(r[c]) for c in figures]
        out.append("| " + " | ".join(c.replace("|", "/") for c in cells) +
                   " |")
    out.append("")
    return out, machines


def svg(name, rows, machines):
    """% of the run's peak per row, one bar each, coloured by machine."""
    if not rows or "pct_peak" not in rows[0]:
        return None
    _, _, keys = DESCRIPTIONS.get(name, (name, "", []))
    keys = [c for c in keys if c in rows[0]]
    bars = []
    for r in rows:
        try:
            v = float(r["pct_peak"])
        except ValueError:
            continue
        if v != v:
            continue
        label = " ".join(r[c] for c in keys) if keys else ""
        bars.append((label, v, machines.index(machine_of(r))))
    if not bars:
        return None
    bar_h, gap, left, width, top = 14, 4, 330, 360, 30
    height = top + len(bars) * (bar_h + gap) + 20 + 16 * len(machines)
    total = left + width + 60
    top_v = max(100.0, max(v for _, v, _ in bars))
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" '
         f'height="{height}" font-family="sans-serif" font-size="11">',
         f'<text x="{left}" y="16" font-size="12">{html.escape(name)}: % '
         'of the run\'s FMA peak (or read bandwidth)</text>']
    for x in (0, 25, 50, 75, 100):
        px = left + width * x / top_v
        o.append(f'<line x1="{px:.1f}" y1="{top - 4}" x2="{px:.1f}" '
                 f'y2="{top + len(bars) * (bar_h + gap)}" stroke="#ddd"/>')
        o.append(f'<text x="{px:.1f}" y="{top - 6}" text-anchor="middle" '
                 f'fill="#666">{x}%</text>')
    for i, (label, v, m) in enumerate(bars):
        y = top + i * (bar_h + gap)
        w = width * v / top_v
        o.append(f'<text x="{left - 6}" y="{y + bar_h - 3}" '
                 f'text-anchor="end">{html.escape(label)}</text>')
        o.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" '
                 f'height="{bar_h}" fill="{COLOURS[m % len(COLOURS)]}"/>')
        o.append(f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 3}">'
                 f'{v:.1f}</text>')
    y = top + len(bars) * (bar_h + gap) + 14
    for i, m in enumerate(machines):
        o.append(f'<rect x="10" y="{y + 16 * i - 10}" width="10" '
                 f'height="10" fill="{COLOURS[i % len(COLOURS)]}"/>')
        o.append(f'<text x="26" y="{y + 16 * i}">m{i + 1}: '
                 f'{html.escape(m)}</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def render(data_dir):
    """{path: text} of every generated file."""
    names = sorted(f[:-4] for f in os.listdir(data_dir) if f.endswith(".csv"))
    md = ["# Benchmark data",
          "",
          "<!-- Generated by tools/render-benchmarks.py from "
          "docs/bench-data/*.csv: edit the data, not this file. -->",
          "",
          "Every row of every benchmark data file, with the machine it was "
          "measured on. The analysis of these figures (what limits each "
          "kernel, the baselines' configurations, what was tried) is in "
          "[benchmarks.md](benchmarks.md); the history of each file is in "
          "git. Rows measured before attn-bench wrote the machine columns "
          "(2026-12-03) carry the machine benchmarks.md named for that run.",
          ""]
    files = {}
    for name in names:
        fields, rows = read_data(os.path.join(data_dir, name + ".csv"))
        lines, machines = table(name, fields, rows)
        md += lines
        plot = svg(name, rows, machines)
        if plot:
            files[os.path.join(data_dir, name + ".svg")] = plot
    files[os.path.join(os.path.dirname(data_dir.rstrip("/")),
                       "benchmark-data.md")] = "\n".join(md).rstrip() + "\n"
    return files


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(root, "docs", "bench-data"),
                    help="the folder of data files (default docs/bench-data)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when a generated file is "
                         "stale")
    a = ap.parse_args()
    try:
        files = render(a.data)
    except (DataError, OSError) as e:
        print(f"render-benchmarks: error: {e}", file=sys.stderr)
        return 1
    stale = []
    for path, text in files.items():
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(path)
            if not a.check:
                with open(path, "w") as f:
                    f.write(text)
    if a.check and stale:
        for p in stale:
            print(f"render-benchmarks: {p} is stale: run "
                  "tools/render-benchmarks.py", file=sys.stderr)
        return 1
    if not a.check:
        print(f"render-benchmarks: {len(files)} files, {len(stale)} "
              "rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
