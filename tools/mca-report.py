#!/usr/bin/env python3
"""Static port-pressure analysis of the CPU micro-kernel's inner loops.

For each prefill shape of attn-bench (P1-P4) and each CPU model given, this
compiles the shape (as attn-bench does) with `attn-compile --cpu=CPU
--compile-to=asm`, finds the innermost FMA loops of the fused kernel's tile
function (single-block loops closed by a backward branch, their vfmadd
accumulating into at least 16 registers: the 2 x 8 register tiles of
Q·Kᵀ, query rows in the lanes of the packed Qᵀ and K broadcast, and the
R x 4 blocks of P·V over the value rows), and runs
`llvm-mca -mcpu=CPU` on each. Per loop it prints the instruction mix (FMAs,
loads and broadcasts, others), the predicted cycles per iteration, the
bottleneck resource, and the FMA-port utilization: FMAs per iteration over
(cycles per iteration x FMA ports), where the FMA ports are those llvm-mca's
model assigns the loop's FMAs to.

usage: tools/mca-report.py [--build DIR] [--cpu CPU ...] [--shape P1 ...]
                           [--min-fma-util PCT]
With --min-fma-util, exits 1 when a prefill loop's predicted utilization is
below it. (Decode's loops, bound by reading K and V from memory, are
reported, not checked.)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

SHAPES = {  # name: (Hq, Hkv, D, causal), as tools/attn-bench/attn-bench.cpp
    "P1": (8, 2, 128, True),
    "P2": (8, 8, 64, False),
    "P3": (16, 1, 128, True),
    "P4": (64, 4, 256, True),
}


def config(hq, hkv, d, causal):
    return ('{"model_type": "%s", "hidden_size": %d, "num_attention_heads": '
            '%d, "num_key_value_heads": %d, "num_hidden_layers": 1}'
            % ("llama" if causal else "bert", hq * d, hq, hkv))


def tile_function(asm):
    """The lines of the first `<kind>_sdpa_tile` function (the prefill tile)."""
    lines = asm.splitlines()
    start = next(i for i, l in enumerate(lines)
                 if re.match(r"^\w+_sdpa_tile:", l))
    end = next((i for i in range(start + 1, len(lines))
                if re.match(r"^\s*\.size\s", lines[i]) or
                re.match(r"^\w+:", lines[i])), len(lines))
    return lines[start:end]


def inner_loops(lines):
    """(label, body) of single-block loops with >= 8 vfmadd."""
    labels = {}
    for i, l in enumerate(lines):
        m = re.match(r"^(\.LBB\w+):", l)
        if m:
            labels[m.group(1)] = i
    loops = []
    for i, l in enumerate(lines):
        m = re.match(r"^\s+j\w+\s+(\.LBB\w+)", l)
        if not m or m.group(1) not in labels or labels[m.group(1)] >= i:
            continue
        body = lines[labels[m.group(1)] + 1:i + 1]
        if any(re.match(r"^\.LBB\w+:", x) for x in body):
            continue  # not a single block: an outer loop
        insts = [x.strip() for x in body
                 if x.strip() and not x.strip().startswith(("#", "."))]
        # The register-blocked loops (16 accumulators with AVX-512: Q·Kᵀ's
        # 2 vectors of rows x 8 keys, P·V's R rows x 4 vectors) of the
        # prefill path. (The single leftover row's P·V loop and decode's dot
        # products are not them.)
        accs = {x.split(",")[-1].strip() for x in insts
                if x.startswith("vfmadd")}
        if len(accs) >= 16:
            loops.append((m.group(1), insts))
    return loops


def mca(mca_bin, cpu, insts):
    out = subprocess.run([mca_bin, "-mcpu=" + cpu, "-iterations=100",
                          "-resource-pressure", "-all-stats"],
                         input="\n".join(insts) + "\n", capture_output=True,
                         text=True, check=True).stdout
    cycles = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1)) / 100
    res = re.findall(r"^\[(\d+(?:\.\d+)?)\]\s+-\s+(\S+)", out, re.M)
    names = [n for _, n in res]
    # Pressure per iteration: the row after its header.
    block = out.split("Resource pressure per iteration:")[1].splitlines()
    values = block[2].split()
    pressure = {names[i]: (0.0 if v == "-" else float(v))
                for i, v in enumerate(values)}
    # The ports the model gives the FMAs (any non-zero column on their rows).
    byinst = out.split("Resource pressure by instruction:")[1].splitlines()[2:]
    # The ports of the register-form FMAs (a memory operand adds loads).
    fma_ports = set()
    for row in byinst:
        parts = row.split()
        if len(parts) > len(names) and "vfmadd" in row and "(" not in row:
            fma_ports |= {names[j] for j in range(len(names))
                          if parts[j] != "-"}
    return cycles, pressure, fma_ports


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    p.add_argument("--cpu", action="append")
    p.add_argument("--shape", action="append")
    p.add_argument("--llvm-mca", default="/usr/lib/llvm-22/bin/llvm-mca")
    p.add_argument("--min-fma-util", type=float)
    a = p.parse_args()
    cpus = a.cpu or ["sapphirerapids", "skylake-avx512"]
    shapes = a.shape or list(SHAPES)
    compiler = os.path.join(a.build, "bin", "attn-compile")
    ok = True
    print(f"{'shape':5} {'cpu':15} {'path':8} {'loop':10} {'insts':>5} {'fma':>4} "
          f"{'loads':>5} {'other':>5} {'cyc/it':>7} {'FMA ports':18} "
          f"{'FMA util':>8}  bottleneck")
    with tempfile.TemporaryDirectory() as tmp:
        for name in shapes:
            cfg = os.path.join(tmp, name + ".json")
            with open(cfg, "w") as f:
                f.write(config(*SHAPES[name]))
            for cpu in cpus:
                asm = subprocess.run(
                    [compiler, cfg, "--cpu=" + cpu, "--compile-to=asm"],
                    capture_output=True, text=True, check=True).stdout
                for label, insts in inner_loops(tile_function(asm)):
                    fma = sum(x.startswith("vfmadd") for x in insts)
                    loads = sum(bool(re.match(r"v(movups|movaps|broadcastss)"
                                              r"\s+-?\w*\(", x)) for x in insts)
                    cycles, pressure, ports = mca(a.llvm_mca, cpu, insts)
                    util = 100 * fma / (cycles * max(len(ports), 1))
                    top = max(pressure, key=pressure.get)
                    # Decode's loops (tiles of < 17 rows) take dot products
                    # of q and K rows (no broadcast; lanes folded by
                    # shuffles) and prefetch the next chunk in P·V; the
                    # prefill loops broadcast k (Q·Kᵀ over the packed
                    # queries) or p (P·V) and do neither.
                    dot = (not any(x.startswith("vbroadcastss")
                                   for x in insts) or
                           any(re.match(r"(prefetch|vperm|vshuf|vunpck)", x)
                               for x in insts))
                    kind = "decode" if dot else "prefill"
                    ok = ok and (dot or a.min_fma_util is None or
                                 util >= a.min_fma_util)
                    print(f"{name:5} {cpu:15} {kind:8} {label:10} {len(insts):5} "
                          f"{fma:4} {loads:5} {len(insts) - fma - loads:5} "
                          f"{cycles:7.2f} {'+'.join(sorted(ports)):18} "
                          f"{util:7.1f}%  {top} ({pressure[top]:.2f}/it)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
