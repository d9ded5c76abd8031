"""hostile_inputs.py ATTN_COMPILE CONFIG WORKDIR: runs attn-compile on the
inputs a hostile probe used and prints one line per case (exit code, the
first line of the error, or what was checked), for FileCheck."""
import os
import shutil
import subprocess
import sys

compiler, config, work = sys.argv[1:4]


def run(args, timeout=60):
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "TIMEOUT"
    err = p.stderr.decode("utf-8", "replace").strip().splitlines()
    return p.returncode, (err[0] if err else "")


# A config path that is not valid UTF-8: --describe and -o both work.
bad = os.path.join(work.encode(), b"bad-\xff\xfe-dir")
os.makedirs(bad, exist_ok=True)
path = os.path.join(bad, b"config.json")
shutil.copy(config, path)
rc, _ = run([compiler.encode(), path, b"--describe"])
print("utf8 describe rc=%s" % rc)
exe = os.path.join(work, "exe")
# (A whole executable: under the sanitizers and a loaded machine it took
# more than a minute; the probe is for aborts, not speed.)
rc, _ = run([compiler.encode(), path, b"-o", exe.encode()], timeout=600)
print("utf8 exe rc=%s" % rc)
leftovers = [n for n in os.listdir("/tmp") if n.startswith("attn-compile")
             and os.path.getmtime(os.path.join("/tmp", n)) > os.path.getmtime(exe)]
print("utf8 temp dirs left: %d" % len(leftovers))

# /dev/zero: refused after 64 MB + 1 byte, not read to the end.
rc, err = run([compiler, "/dev/zero", "--compile-to=attn"], timeout=30)
print("zero rc=%s %s" % (rc, err))

# A FIFO without a writer: an error, not a hang in open().
fifo = os.path.join(work, "fifo.json")
os.mkfifo(fifo)
rc, err = run([compiler, fifo, "--compile-to=attn"], timeout=30)
print("fifo rc=%s %s" % (rc, err))
