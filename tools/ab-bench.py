#!/usr/bin/env python3
"""Alternated A/B timing of compiled executables' `bench` command.

On a shared machine single timings move by 10% from minute to minute, more
than most changes to the kernels: comparing a run of A now with a run of B
later measures the neighbours. This runs `EXE bench ARGS` for each
executable in turn, `--rounds` times (A, B, A, B, ...), so that each round
sees the same machine, and prints per executable the median, min and max of
its fused kernel's GFLOP/s over the rounds and the median's ratio to the
first executable's.

  tools/ab-bench.py [--rounds 8] [--args "--seq 2048 --repeats 7"] OLD NEW...

The executables are attn-compile outputs (e.g. one built by the commit
before a change and one by the change, from the same config).
"""

import argparse
import re
import shlex
import statistics
import subprocess
import sys

FUSED = re.compile(r"fused\s+([0-9.]+) ms\s+([0-9.]+) GFLOP/s")


def bench(exe, args):
    """The fused kernel's (ms, GFLOP/s) from one `exe bench args` run."""
    try:
        out = subprocess.run([exe, "bench"] + args, capture_output=True,
                             text=True, timeout=3600)
    except OSError as e:
        sys.exit(f"ab-bench: cannot run {exe}: {e.strerror}")
    m = FUSED.search(out.stdout)
    if out.returncode != 0 or not m:
        detail = (out.stderr or out.stdout).strip().splitlines()
        sys.exit(f"ab-bench: '{exe} bench {' '.join(args)}' "
                 + (f"exited with {out.returncode}" if out.returncode
                    else "printed no 'fused ... ms ... GFLOP/s' line")
                 + (f": {detail[-1]}" if detail else ""))
    return float(m.group(1)), float(m.group(2))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=8,
                   help="rounds of one run per executable (default 8)")
    p.add_argument("--args", default="--repeats 7",
                   help="the bench command's options, one string "
                        "(default '--repeats 7')")
    p.add_argument("exes", nargs="+", metavar="EXE",
                   help="executables compiled by attn-compile")
    a = p.parse_args()
    if a.rounds < 1:
        p.error(f"--rounds must be at least 1, got {a.rounds}")
    args = shlex.split(a.args)
    runs = {exe: [] for exe in a.exes}
    for _ in range(a.rounds):
        for exe in a.exes:
            runs[exe].append(bench(exe, args))
    print(f"{'executable':40s} {'median GFLOP/s':>14s} {'min':>8s} "
          f"{'max':>8s} {'median ms':>10s} {'vs first':>8s}")
    first = None
    for exe in a.exes:
        g = [r[1] for r in runs[exe]]
        ms = statistics.median(r[0] for r in runs[exe])
        med = statistics.median(g)
        first = first or med
        print(f"{exe:40s} {med:14.1f} {min(g):8.1f} {max(g):8.1f} "
              f"{ms:10.3f} {med / first:7.3f}x")
    print(f"({a.rounds} rounds, alternated; bench {' '.join(args)})")


if __name__ == "__main__":
    main()
