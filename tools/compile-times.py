#!/usr/bin/env python3
"""Alternated compile times of attn-compile builds over model configs.

Per config, each compiler in turn (A, B, A, B, ... when --rounds > 1)
builds `COMPILER CONFIG -o OUT [ARGS]` (the default entries: what a user's
first build takes); prints per config the median wall seconds of each
compiler, the totals, and how many configs each built under --under
seconds. One run of a config next to the other compiler's: on a shared
machine the minutes between two whole sweeps move the times more than most
changes do.

  tools/compile-times.py [--rounds 1] [--under 5] [--args="..."]
                         [--configs FILE...] COMPILER...

The default configs: examples/seed-qwen3.8-max.json, the front end's test
inputs (test/Frontend/Inputs/*.json) and the real configs in
../shared/configs/ where that folder exists. A build that fails stops the
sweep with the compiler's last line of error, exit 1.
"""

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_configs():
    configs = [os.path.join(ROOT, "examples", "seed-qwen3.8-max.json")]
    inputs = os.path.join(ROOT, "test", "Frontend", "Inputs")
    configs += sorted(os.path.join(inputs, f) for f in os.listdir(inputs)
                      if f.endswith(".json"))
    shared = os.path.join(os.path.dirname(ROOT), "shared", "configs")
    if os.path.isdir(shared):
        configs += sorted(os.path.join(shared, f)
                          for f in os.listdir(shared) if f.endswith(".json"))
    return configs


def build(compiler, config, out, args, timeout):
    """Wall seconds of one build."""
    start = time.monotonic()
    try:
        r = subprocess.run([compiler, config, "-o", out] + args,
                           capture_output=True, text=True, timeout=timeout)
    except OSError as e:
        sys.exit(f"compile-times: cannot run {compiler}: {e.strerror}")
    except subprocess.TimeoutExpired:
        sys.exit(f"compile-times: '{compiler} {config}' ran past "
                 f"{timeout:g} s")
    seconds = time.monotonic() - start
    if r.returncode != 0:
        detail = (r.stderr or r.stdout).strip().splitlines()
        sys.exit(f"compile-times: '{compiler} {config}' exited with "
                 f"{r.returncode}" + (f": {detail[-1]}" if detail else ""))
    return seconds


def count(text):
    """--rounds: an integer of at least 1."""
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def seconds(text):
    """--timeout, --under: a positive number of seconds."""
    x = float(text)
    if not x > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {x:g}")
    return x


# The options: (flags, argparse keywords).
OPTIONS = [
    ("--rounds", dict(type=count, default=1,
                      help="builds of each config per compiler (median; "
                           "default 1)")),
    ("--under", dict(type=seconds, default=5.0,
                     help="the line the summary counts configs under "
                          "(seconds, default 5)")),
    ("--args", dict(default="",
                    help="more attn-compile options, one string (as "
                         "--args=\"--entries=sdpa ...\")")),
    ("--timeout", dict(type=seconds, default=600,
                       help="seconds one build may take (default 600)")),
    ("--configs", dict(nargs="+", metavar="FILE",
                       help="these configs instead of the default list")),
    ("compilers", dict(nargs="+", metavar="COMPILER",
                       help="attn-compile binaries (e.g. of two commits)")),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag, keywords in OPTIONS:
        p.add_argument(flag, **keywords)
    a = p.parse_args()
    configs = a.configs or default_configs()
    for c in configs:
        if not os.path.isfile(c):
            p.error(f"no config file '{c}'")
    args = shlex.split(a.args)
    names = [os.path.splitext(os.path.basename(c))[0] for c in configs]
    width = max(len(n) for n in names + ["config"])
    print(f"| {'config':{width}s} | " +
          " | ".join(f"{'compiler ' + str(i + 1) + ' s':>14s}"
                     for i in range(len(a.compilers))) + " |")
    print(f"|{'-' * (width + 2)}|" +
          "|".join("-" * 16 for _ in a.compilers) + "|")
    totals = [0.0] * len(a.compilers)
    under = [0] * len(a.compilers)
    with tempfile.TemporaryDirectory(prefix="compile-times.") as tmp:
        out = os.path.join(tmp, "exe")
        for config, name in zip(configs, names):
            times = [[] for _ in a.compilers]
            for _ in range(a.rounds):
                for i, compiler in enumerate(a.compilers):
                    times[i].append(build(compiler, config, out, args,
                                          a.timeout))
            medians = [statistics.median(t) for t in times]
            for i, m in enumerate(medians):
                totals[i] += m
                under[i] += m < a.under
            print(f"| {name:{width}s} | " +
                  " | ".join(f"{m:14.2f}" for m in medians) + " |",
                  flush=True)
    for i, compiler in enumerate(a.compilers):
        print(f"compiler {i + 1}: {compiler}: {totals[i]:.1f} s in all, "
              f"{under[i]} of {len(configs)} configs under {a.under:g} s")
    print(f"({a.rounds} round{'s' if a.rounds > 1 else ''} per config, "
          f"alternated{'; ' + a.args if a.args else ''})")


if __name__ == "__main__":
    main()
