#!/usr/bin/env python3
"""Alternated A/B timing of compiled executables' `bench` command.

On a shared machine single timings move by 10% from minute to minute, more
than most changes to the kernels: comparing a run of A now with a run of B
later measures the neighbours. This runs `EXE bench ARGS` for each
executable in turn, `--rounds` times (A, B, A, B, ...), so that each round
sees the same machine, and prints per executable the median, min and max of
its fused kernel's GFLOP/s over the rounds for each layer kind `bench` reports
(one line per kind; `--args "--layer L ..."` picks one) and the median's
ratio to the first executable's for the same kind (when both are at
least 1.0 GFLOP/s: bench prints 2 decimals).

  tools/ab-bench.py [--rounds 8] [--args "--seq 2048 --repeats 7"]
                    [--timeout 3600] OLD NEW...

The executables are attn-compile outputs (e.g. one built by the commit
before a change and one by the change, from the same config).
"""

import argparse
import re
import shlex
import statistics
import subprocess
import sys

FUSED = re.compile(r"^(\S+) .*: fused\s+([0-9.]+) ms\s+([0-9.]+) GFLOP/s",
                   re.MULTILINE)
def bench(exe, args, timeout):
    """{kind: (ms, GFLOP/s)} of the fused kernels from one `exe bench args`
    run."""
    try:
        out = subprocess.run([exe, "bench"] + args, capture_output=True,
                             text=True, timeout=timeout)
    except OSError as e:
        sys.exit(f"ab-bench: cannot run {exe}: {e.strerror}")
    except subprocess.TimeoutExpired:
        sys.exit(f"ab-bench: '{exe} bench {' '.join(args)}' ran past "
                 f"{timeout:g} s")
    found = {m.group(1): (float(m.group(2)), float(m.group(3)))
             for m in FUSED.finditer(out.stdout)}
    if out.returncode != 0 or not found:
        detail = (out.stderr or out.stdout).strip().splitlines()
        sys.exit(f"ab-bench: '{exe} bench {' '.join(args)}' "
                 + (f"exited with {out.returncode}" if out.returncode
                    else "printed no 'fused ... ms ... GFLOP/s' line")
                 + (f": {detail[-1]}" if detail else ""))
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=8,
                   help="rounds of one run per executable (default 8)")
    p.add_argument("--args", default="--repeats 7",
                   help="the bench command's options, one string "
                        "(default '--repeats 7')")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds one bench run may take (default 3600)")
    p.add_argument("exes", nargs="+", metavar="EXE",
                   help="executables compiled by attn-compile")
    a = p.parse_args()
    if a.rounds < 1:
        p.error(f"--rounds must be at least 1, got {a.rounds}")
    if not a.timeout > 0:
        p.error(f"--timeout must be positive, got {a.timeout:g}")
    args = shlex.split(a.args)
    # Per position (an executable may be given twice), per kind.
    runs = [{} for _ in a.exes]
    for _ in range(a.rounds):
        for i, exe in enumerate(a.exes):
            for kind, r in bench(exe, args, a.timeout).items():
                runs[i].setdefault(kind, []).append(r)
    print(f"{'executable':40s} {'kind':24s} {'median GFLOP/s':>14s} "
          f"{'min':>8s} {'max':>8s} {'median ms':>10s} {'vs first':>8s}")
    first = {}
    for exe, by_kind in zip(a.exes, runs):
        for kind, rs in by_kind.items():
            g = [r[1] for r in rs]
            ms = statistics.median(r[0] for r in rs)
            med = statistics.median(g)
            base = first.setdefault(kind, med)
            # bench prints GFLOP/s to 2 decimals: below 1.0 a ratio would
            # mostly measure that rounding (0.01 against 0.00 is 0.000x).
            ratio = (f"{med / base:7.3f}x" if min(base, med) >= 1.0
                     else "       -")
            print(f"{exe:40s} {kind:24s} {med:14.1f} {min(g):8.1f} "
                  f"{max(g):8.1f} {ms:10.3f} {ratio}")
    print(f"({a.rounds} rounds, alternated; bench {' '.join(args)})")


if __name__ == "__main__":
    main()
