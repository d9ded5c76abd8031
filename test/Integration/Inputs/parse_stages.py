#!/usr/bin/env python3
"""Every stage a compile prints parses back: runs attn-compile ARGS with
--mlir-print-ir-after-all (module scope, one thread), splits the dump at
each "IR Dump After" and feeds each stage to attn-opt, which must parse
and verify it (every dialect any stage prints is registered). Prints the
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
failed = 0
with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
    for name, body in zip(parts[1::2], parts[2::2]):
        f.seek(0)
        f.truncate()
        f.write(body)
        f.flush()
        p = subprocess.run([opt, f.name, "-o", "/dev/null"],
                           capture_output=True, text=True)
        if p.returncode:
            failed += 1
            print(f"FAIL after {name}: {p.stderr.splitlines()[0]}")
stages = len(parts) // 2
print(f"{stages} stages, {stages - failed} parse back")
sys.exit(1 if failed or stages == 0 else 0)
