#!/usr/bin/env python3
"""Every stage a compile prints parses back: runs attn-compile ARGS with
--mlir-print-ir-after-all (module scope, one thread), splits the dump at
each "IR Dump After" and feeds the stages to attn-opt, which must parse
and verify each (every dialect any stage prints is registered). Prints the
stage count and each failure.

    parse_stages.py ATTN_COMPILE ATTN_OPT CONFIG [ARGS...]
"""
import re
import subprocess
import sys
import tempfile

compile_, opt, config, *rest = sys.argv[1:]
r = subprocess.run([compile_, config, *rest, "--mlir-print-ir-after-all",
                    "--mlir-print-ir-module-scope", "--mlir-disable-threading",
                    "-o", "/dev/null"], capture_output=True, text=True)
if r.returncode:
    sys.exit("attn-compile failed: " + r.stderr[-2000:])
parts = re.split(r"^// -----// IR Dump After (.*?) //----- //\n", r.stderr,
                 flags=re.M)
stages = list(zip(parts[1::2], parts[2::2]))


def parses(bodies):
    """attn-opt parses and verifies every body (one process for all: each
    one is a chunk of --split-input-file)."""
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
        f.write("\n// -----\n".join(bodies))
        f.flush()
        p = subprocess.run([opt, f.name, "--split-input-file",
                            "-o", "/dev/null"], capture_output=True, text=True)
    return p.returncode == 0, p.stderr


failed = 0
if not parses([body for _, body in stages])[0]:
    # Name each stage that does not parse back.
    for name, body in stages:
        ok, err = parses([body])
        if not ok:
            failed += 1
            print(f"FAIL after {name}: {err.splitlines()[0]}")
print(f"{len(stages)} stages, {len(stages) - failed} parse back")
sys.exit(1 if failed or not stages else 0)
