#!/usr/bin/env python3
"""The GEMM kernel (GemmKernel.cpp, GemmAmx.cpp) against OpenBLAS sgemm,
shape by shape, in one process.

For each shape C[M, N] += A[M, K] · B[N, K]ᵀ (nn.Linear: B is the weight,
M the tokens) this writes an MLIR module holding the matmul as
linalg.matmul on memrefs (attn-opt's CPU pipeline lowers it to the GEMM
kernel, as it does a layer's projections) and a call of cblas_sgemm on the
same buffers, runs it with mlir-runner (the JIT at -O3 for the host CPU)
with OpenBLAS loaded, and alternates the two `--rounds` times per shape
(ours, OpenBLAS, ours, ...): each round sees the same machine. It prints
per shape the median time and GFLOP/s of each, their % of the FMA peak
measured at the start of the same run (24 independent chains of 16-lane
FMAs per thread, on `--threads` threads), the ratio, and how far our
result is from OpenBLAS's (max |ours - OpenBLAS| / max |OpenBLAS|, on
values in [-0.5, 0.5) with 10 or more significant bits).

  tools/gemm-bench.py [--rounds 5] [--threads 2] [--no-amx] [--vector-lanes 16]
                      [--shapes qwen3-next|seed|all|MxNxK,...] [--seq 512]
                      [--csv FILE]

The model shapes: each projection of Qwen3-Next-80B's linear-attention and
full-attention layers, its shared expert's and its routed experts' GEMMs
(S·top_k/E rows each, balanced), and the same for the seed's config
(examples/seed-qwen3.8-max.json), at S = --seq tokens. OpenBLAS runs its
SkylakeX (AVX-512) kernels unless OPENBLAS_CORETYPE says otherwise.
"""

import argparse
import csv
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLVM_BIN = "/usr/lib/llvm-22/bin"
LLVM_LIB = "/usr/lib/llvm-22/lib"


def model_shapes(model, s):
    """(name, M, N, K) of every GEMM of the model's layers at S = s."""
    if model == "qwen3-next":
        h, kh, kd, vh, vd, qh, hd, kvh = 2048, 16, 128, 32, 128, 16, 256, 2
        shared, moe, experts, top = 512, 512, 512, 10
    else:  # the seed's config
        h, kh, kd, vh, vd, qh, hd, kvh = 8192, 32, 128, 64, 128, 64, 256, 4
        shared, moe, experts, top = 2048, 2048, 512, 10
    qkvz = 2 * kh * kd + 2 * vh * vd
    per_expert = max(1, s * top // experts)
    return [
        ("linear in_proj_qkvz", s, qkvz, h),
        ("linear in_proj_ba", s, 2 * vh, h),
        ("linear out_proj", s, h, vh * vd),
        ("full q_proj (+gate)", s, 2 * qh * hd, h),
        ("full k_proj, v_proj", s, kvh * hd, h),
        ("full o_proj", s, h, qh * hd),
        ("shared expert gate, up", s, shared, h),
        ("shared expert down", s, h, shared),
        ("expert gate, up", per_expert, moe, h),
        ("expert down", per_expert, h, moe),
    ]


MAPS = ("indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
        "affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]")


def module(shapes, rounds, threads):
    """The MLIR module: peak, then per shape a check and the rounds."""
    lines = [
        "func.func private @rtclock() -> f64",
        "func.func private @usleep(i32) -> i32",
        "func.func private @cblas_sgemm(i32, i32, i32, i32, i32, i32, f32, "
        "!llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32)",
        "func.func @ours(%a: memref<?x?xf32>, %b: memref<?x?xf32>, "
        "%c: memref<?x?xf32>) {",
        f"  linalg.matmul {MAPS} ins(%a, %b : memref<?x?xf32>, "
        "memref<?x?xf32>) outs(%c : memref<?x?xf32>)",
        "  return", "}",
        "func.func @ptr(%m: memref<?x?xf32>) -> !llvm.ptr {",
        "  %p = memref.extract_aligned_pointer_as_index %m : memref<?x?xf32> "
        "-> index",
        "  %i = arith.index_cast %p : index to i64",
        "  %r = llvm.inttoptr %i : i64 to !llvm.ptr",
        "  return %r : !llvm.ptr", "}",
        "func.func @blas(%a: memref<?x?xf32>, %b: memref<?x?xf32>, "
        "%c: memref<?x?xf32>) {",
        "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
        "  %mi = memref.dim %c, %c0 : memref<?x?xf32>",
        "  %ni = memref.dim %c, %c1 : memref<?x?xf32>",
        "  %ki = memref.dim %a, %c1 : memref<?x?xf32>",
        "  %m = arith.index_cast %mi : index to i32",
        "  %n = arith.index_cast %ni : index to i32",
        "  %k = arith.index_cast %ki : index to i32",
        "  %pa = func.call @ptr(%a) : (memref<?x?xf32>) -> !llvm.ptr",
        "  %pb = func.call @ptr(%b) : (memref<?x?xf32>) -> !llvm.ptr",
        "  %pc = func.call @ptr(%c) : (memref<?x?xf32>) -> !llvm.ptr",
        "  %row = arith.constant 101 : i32", "  %no = arith.constant 111 : i32",
        "  %tr = arith.constant 112 : i32", "  %one = arith.constant 1.0 : f32",
        "  func.call @cblas_sgemm(%row, %no, %tr, %m, %n, %k, %one, %pa, %k, "
        "%pb, %k, %one, %pc, %n) : (i32, i32, i32, i32, i32, i32, f32, "
        "!llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32) -> ()",
        "  return", "}",
        # Values (i·7 + j·13 + seed) mod 1009 / 1009 - 0.5: 10 significant
        # bits and more, which bf16 does not hold.
        "func.func @fill(%m: memref<?x?xf32>, %seed: index) {",
        "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
        "  %c7 = arith.constant 7 : index", "  %c13 = arith.constant 13 : index",
        "  %c17 = arith.constant 1009 : index",
        "  %s = arith.constant 0.00099108028 : f32",
        "  %h = arith.constant 0.5 : f32",
        "  %r = memref.dim %m, %c0 : memref<?x?xf32>",
        "  %cols = memref.dim %m, %c1 : memref<?x?xf32>",
        "  scf.for %i = %c0 to %r step %c1 {",
        "    %i7 = arith.muli %i, %c7 : index",
        "    %is = arith.addi %i7, %seed : index",
        "    scf.for %j = %c0 to %cols step %c1 {",
        "      %j13 = arith.muli %j, %c13 : index",
        "      %x = arith.addi %is, %j13 : index",
        "      %v = arith.remui %x, %c17 : index",
        "      %vi = arith.index_cast %v : index to i32",
        "      %vf = arith.sitofp %vi : i32 to f32",
        "      %y = arith.mulf %vf, %s : f32",
        "      %z = arith.subf %y, %h : f32",
        "      memref.store %z, %m[%i, %j] : memref<?x?xf32>",
        "    }", "  }", "  return", "}",
        # max |x - y| / max |y|.
        "func.func @diff(%x: memref<?x?xf32>, %y: memref<?x?xf32>) -> f32 {",
        "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
        "  %z = arith.constant 0.0 : f32",
        "  %r = memref.dim %x, %c0 : memref<?x?xf32>",
        "  %cols = memref.dim %x, %c1 : memref<?x?xf32>",
        "  %d:2 = scf.for %i = %c0 to %r step %c1 iter_args(%e = %z, %t = %z) "
        "-> (f32, f32) {",
        "    %o:2 = scf.for %j = %c0 to %cols step %c1 iter_args(%e2 = %e, "
        "%t2 = %t) -> (f32, f32) {",
        "      %a = memref.load %x[%i, %j] : memref<?x?xf32>",
        "      %b = memref.load %y[%i, %j] : memref<?x?xf32>",
        "      %dd = arith.subf %a, %b : f32",
        "      %ad = math.absf %dd : f32", "      %ab = math.absf %b : f32",
        "      %e3 = arith.maximumf %e2, %ad : f32",
        "      %t3 = arith.maximumf %t2, %ab : f32",
        "      scf.yield %e3, %t3 : f32, f32", "    }",
        "    scf.yield %o#0, %o#1 : f32, f32", "  }",
        "  %q = arith.divf %d#0, %d#1 : f32", "  return %q : f32", "}",
        # The FMA peak: per thread 24 chains of 16-lane FMAs.
        "func.func @fma(%iters: index, %threads: index) -> f64 {",
        "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
        "  %out = memref.alloc(%threads) : memref<?x16xf32>",
        "  %x = arith.constant dense<1.0000001> : vector<16xf32>",
        "  %y = arith.constant dense<0.9999999> : vector<16xf32>",
        "  %t0 = func.call @rtclock() : () -> f64",
        "  scf.parallel (%t) = (%c0) to (%threads) step (%c1) {",
        "    %r:24 = scf.for %i = %c0 to %iters step %c1 iter_args(" +
        ", ".join(f"%a{i} = %x" for i in range(24)) + ") -> (" +
        ", ".join(["vector<16xf32>"] * 24) + ") {",
    ]
    lines += [f"      %b{i} = vector.fma %a{i}, %x, %y : vector<16xf32>"
              for i in range(24)]
    lines += ["      scf.yield " + ", ".join(f"%b{i}" for i in range(24)) +
              " : " + ", ".join(["vector<16xf32>"] * 24), "    }"]
    lines += ["    %s0 = arith.addf %r#0, %r#1 : vector<16xf32>"]
    lines += [f"    %s{i - 1} = arith.addf %s{i - 2}, %r#{i} : vector<16xf32>"
              for i in range(2, 24)]
    lines += [
        "    vector.store %s22, %out[%t, %c0] : memref<?x16xf32>, "
        "vector<16xf32>",
        "    scf.reduce", "  }",
        "  %t1 = func.call @rtclock() : () -> f64",
        "  %v = vector.load %out[%c0, %c0] : memref<?x16xf32>, vector<16xf32>",
        "  %e = vector.extract %v[0] : f32 from vector<16xf32>",
        "  %tag = arith.constant 5 : i64", "  vector.print %tag : i64",
        "  vector.print %e : f32",
        "  %dt = arith.subf %t1, %t0 : f64", "  return %dt : f64", "}",
        "func.func @time(%f: index, %a: memref<?x?xf32>, %b: memref<?x?xf32>, "
        "%c: memref<?x?xf32>) -> f64 {",
        "  %c0 = arith.constant 0 : index",
        # A short pause: the other library's threads (which do not spin:
        # KMP_BLOCKTIME=0, OPENBLAS_THREAD_TIMEOUT=4) are asleep.
        "  %pause = arith.constant 2000 : i32",
        "  %u = func.call @usleep(%pause) : (i32) -> i32",
        "  %t0 = func.call @rtclock() : () -> f64",
        "  %is = arith.cmpi eq, %f, %c0 : index",
        "  scf.if %is {",
        "    func.call @ours(%a, %b, %c) : (memref<?x?xf32>, memref<?x?xf32>, "
        "memref<?x?xf32>) -> ()",
        "  } else {",
        "    func.call @blas(%a, %b, %c) : (memref<?x?xf32>, memref<?x?xf32>, "
        "memref<?x?xf32>) -> ()",
        "  }",
        "  %t1 = func.call @rtclock() : () -> f64",
        "  %dt = arith.subf %t1, %t0 : f64", "  return %dt : f64", "}",
        "func.func @main() {",
        "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
        "  %c2 = arith.constant 2 : index", "  %c3 = arith.constant 3 : index",
        "  %zero = arith.constant 0.0 : f32",
        f"  %threads = arith.constant {threads} : index",
        "  %iters = arith.constant 4000000 : index",
    ]
    for p in range(3):
        lines += [f"  %p{p} = func.call @fma(%iters, %threads) : "
                  "(index, index) -> f64",
                  "  %tag1 = arith.constant 1 : i64" if p == 0 else "",
                  "  vector.print %tag1 : i64", f"  vector.print %p{p} : f64"]
    for i in range(len(shapes)):
        lines.append(f"  func.call @shape{i}() : () -> ()")
    lines += ["  return", "}"]
    # One function per shape: its buffers are freed when it returns.
    for i, (_, m, n, k) in enumerate(shapes):
        lines += [
            f"func.func @shape{i}() {{",
            "  %c0 = arith.constant 0 : index",
            "  %c1 = arith.constant 1 : index",
            "  %c2 = arith.constant 2 : index",
            "  %zero = arith.constant 0.0 : f32",
            f"  %m{i} = arith.constant {m} : index",
            f"  %n{i} = arith.constant {n} : index",
            f"  %k{i} = arith.constant {k} : index",
            f"  %A{i} = memref.alloc(%m{i}, %k{i}) {{alignment = 64 : i64}} "
            ": memref<?x?xf32>",
            f"  %B{i} = memref.alloc(%n{i}, %k{i}) {{alignment = 64 : i64}} "
            ": memref<?x?xf32>",
            f"  %C{i} = memref.alloc(%m{i}, %n{i}) {{alignment = 64 : i64}} "
            ": memref<?x?xf32>",
            f"  %D{i} = memref.alloc(%m{i}, %n{i}) {{alignment = 64 : i64}} "
            ": memref<?x?xf32>",
            f"  func.call @fill(%A{i}, %c1) : (memref<?x?xf32>, index) -> ()",
            f"  func.call @fill(%B{i}, %c2) : (memref<?x?xf32>, index) -> ()",
            f"  linalg.fill ins(%zero : f32) outs(%C{i} : memref<?x?xf32>)",
            f"  linalg.fill ins(%zero : f32) outs(%D{i} : memref<?x?xf32>)",
            f"  func.call @ours(%A{i}, %B{i}, %C{i}) : (memref<?x?xf32>, "
            "memref<?x?xf32>, memref<?x?xf32>) -> ()",
            f"  func.call @blas(%A{i}, %B{i}, %D{i}) : (memref<?x?xf32>, "
            "memref<?x?xf32>, memref<?x?xf32>) -> ()",
            f"  %e{i} = func.call @diff(%C{i}, %D{i}) : (memref<?x?xf32>, "
            "memref<?x?xf32>) -> f32",
            "  %tag2 = arith.constant 2 : i64", "  vector.print %tag2 : i64",
            f"  vector.print %e{i} : f32",
        ]
        for r in range(rounds):
            for f, name in ((0, "ours"), (1, "blas")):
                lines += [
                    f"  %t{i}_{r}_{f} = func.call @time(%c{f}, %A{i}, %B{i}, "
                    f"%C{i}) : (index, memref<?x?xf32>, memref<?x?xf32>, "
                    "memref<?x?xf32>) -> f64",
                    f"  %tag{i}_{r}_{f} = arith.constant {3 + f} : i64",
                    f"  vector.print %tag{i}_{r}_{f} : i64",
                    f"  vector.print %t{i}_{r}_{f} : f64",
                ]
        lines += ["  return", "}"]
    return "\n".join(lines) + "\n", 24 * 16 * 2 * 4000000 * threads


def parse_shapes(spec, seq):
    out = []
    for part in spec.split(","):
        if part in ("qwen3-next", "seed"):
            out += [(f"{part} {n}", m, nn, k)
                    for n, m, nn, k in model_shapes(part, seq)]
        elif part == "all":
            out += parse_shapes("qwen3-next,seed", seq)
        else:
            m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", part)
            if not m:
                sys.exit(f"gemm-bench: error: shape '{part}': expected "
                         "qwen3-next, seed, all or MxNxK (e.g. 512x2048x4096)")
            out.append((part, int(m.group(1)), int(m.group(2)),
                        int(m.group(3))))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--shapes", default="qwen3-next")
    ap.add_argument("--no-amx", action="store_true",
                    help="the AVX-512 kernel even where the CPU has AMX")
    ap.add_argument("--vector-lanes", type=int, default=16,
                    choices=[16, 8, 4])
    ap.add_argument("--csv", help="append one row per shape to this file")
    ap.add_argument("--opt", default=os.path.join(ROOT, "build", "bin",
                                                        "attn-opt"))
    args = ap.parse_args()
    if args.rounds < 1 or args.threads < 1:
        sys.exit("gemm-bench: error: --rounds and --threads must be >= 1")
    shapes = parse_shapes(args.shapes, args.seq)
    cpu = ""
    with open("/proc/cpuinfo") as f:
        text = f.read()
        flags = set(re.search(r"^flags\s*:(.*)$", text, re.M).group(1).split())
        cpu = re.search(r"^model name\s*:\s*(.*)$", text, re.M).group(1)
        family = re.search(r"^cpu family\s*:\s*(\d+)", text, re.M)
        model = re.search(r"^model\s*:\s*(\d+)", text, re.M)
        if family and model:
            cpu += f" (family {family.group(1)} model {model.group(1)})"
    amx = not args.no_amx and {"amx_tile", "amx_bf16"} <= flags
    src, peak_flops = module(shapes, args.rounds, args.threads)
    runner = os.path.join(LLVM_BIN, "mlir-runner")
    blas = "/usr/lib/x86_64-linux-gnu/libopenblas.so"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gemm.mlir")
        with open(path, "w") as f:
            f.write(src)
        pipeline = (f"stop-after=llvm-dialect reference=false "
                    f"vector-lanes={args.vector_lanes} "
                    f"amx={'true' if amx else 'false'}")
        lowered = os.path.join(tmp, "gemm.ll.mlir")
        subprocess.run([args.opt, path, f"-attn-pipeline={pipeline}",
                        "-o", lowered], check=True)
        libs = [os.path.join(LLVM_LIB, n) for n in
                ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so",
                 "libomp.so")] + [blas]
        env = dict(os.environ)
        env.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
        env["OMP_NUM_THREADS"] = str(args.threads)
        # Idle threads of either library would otherwise spin on the cores
        # the other one's call runs on (libomp 200 ms by default).
        env["KMP_BLOCKTIME"] = "0"
        env["OPENBLAS_THREAD_TIMEOUT"] = "4"
        env["OPENBLAS_NUM_THREADS"] = str(args.threads)
        run = subprocess.run([runner, "-O3", "-e", "main",
                              "-entry-point-result=void",
                              "-shared-libs=" + ",".join(libs), lowered],
                             env=env, check=True, capture_output=True,
                             text=True)
    peaks, diffs, times = [], [], {"ours": [], "blas": []}
    # Pairs of lines: a tag (1 peak, 2 diff, 3 ours, 4 OpenBLAS, 5 the
    # peak loop's sink), its value.
    out = run.stdout.split()
    tags = {"1": "peak", "2": "diff", "3": "ours", "4": "blas", "5": "sink"}
    for tag, value in zip(out[0::2], out[1::2]):
        word = tags[tag]
        if word == "peak":
            peaks.append(peak_flops / float(value) / 1e9)
        elif word == "diff":
            diffs.append(float(value))
        elif word in times:
            times[word].append(float(value))
    peak = max(peaks)
    print(f"CPU: {cpu}; {args.threads} threads; FMA peak {peak:.1f} GFLOP/s "
          f"(best of 3); ours: {'AMX tiles from 128 rows and 320 columns, AVX-512 below' if amx else 'AVX'}"
          f"{'-512' if args.vector_lanes == 16 and not amx else ''}; "
          f"OpenBLAS {env['OPENBLAS_CORETYPE']} kernels; medians of "
          f"{args.rounds} alternated rounds (idle threads sleep: "
          f"KMP_BLOCKTIME=0, OPENBLAS_THREAD_TIMEOUT=4)")
    print(f"{'GEMM':<38} {'M':>5} {'N':>6} {'K':>6}  {'ours ms':>9} "
          f"{'GFLOP/s':>8} {'%peak':>6}  {'OpenBLAS ms':>11} {'GFLOP/s':>8} "
          f"{'%peak':>6}  {'ratio':>6}  {'rel diff':>8}")
    rows = []
    for i, (name, m, n, k) in enumerate(shapes):
        r = args.rounds
        ours = statistics.median(times["ours"][i * r:(i + 1) * r])
        ref = statistics.median(times["blas"][i * r:(i + 1) * r])
        flop = 2.0 * m * n * k
        go, gb = flop / ours / 1e9, flop / ref / 1e9
        rows.append((name, m, n, k, ours, go, ref, gb, diffs[i]))
        print(f"{name:<38} {m:>5} {n:>6} {k:>6}  {ours * 1e3:>9.3f} "
              f"{go:>8.1f} {100 * go / peak:>5.1f}%  {ref * 1e3:>11.3f} "
              f"{gb:>8.1f} {100 * gb / peak:>5.1f}%  {ref / ours:>5.2f}x  "
              f"{diffs[i]:>8.1e}")
    if args.csv:
        new = not os.path.exists(args.csv)
        day = datetime.date.today().isoformat()
        kernel = ("amx" if amx else
                  {16: "avx512", 8: "avx2", 4: "sse"}[args.vector_lanes])
        with open(args.csv, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(["date", "cpu", "threads", "peak_gflops",
                            "bandwidth_gbs", "kernel", "gemm", "m", "n", "k",
                            "ours_ms", "ours_gflops", "ours_pct_peak",
                            "openblas_ms", "openblas_gflops",
                            "openblas_pct_peak", "ratio", "rel_diff"])
            for name, m, n, k, o, go, b, gb, d in rows:
                w.writerow([day, cpu, args.threads, f"{peak:.1f}", "", kernel,
                            name, m, n, k, f"{o * 1e3:.3f}", f"{go:.1f}",
                            f"{100 * go / peak:.1f}", f"{b * 1e3:.3f}",
                            f"{gb:.1f}", f"{100 * gb / peak:.1f}",
                            f"{b / o:.3f}", f"{d:.2e}"])

if __name__ == "__main__":
    main()
