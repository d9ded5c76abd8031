"""Builds a config that sits at a path made to break generated source: a
newline followed by C++ (a static initializer that would run at start-up),
`*/` that would end a C comment, quotes and a backslash. Usage:
hostile_path.py ATTN_COMPILE CONFIG WORKDIR. Prints what the checks need."""
import os
import shutil
import subprocess
import sys

compiler, config, work = sys.argv[1:4]
evil = ('a"b\\c*/d\n'
        'static int pwned = (__builtin_printf("INJECTED\\n"), 0);\n//')
d = os.path.join(work, evil)
os.makedirs(d, exist_ok=True)
path = os.path.join(d, "config.json")
shutil.copy(config, path)


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


exe = os.path.join(work, "exe")
rc, out = run([compiler, path, "-o", exe])
print("build exe rc=%d %s" % (rc, out.strip()))
rc, out = run([exe, "check"])
print("exe check rc=%d injected=%s" % (rc, "INJECTED" in out))
print(out.strip().splitlines()[-1])
lib = os.path.join(work, "libk.so")
rc, out = run([compiler, path, "--emit=shared", "-o", lib])
print("build shared rc=%d %s" % (rc, out.strip()))
header = os.path.join(work, "libk.h")
with open(header) as f:
    print("header:", f.readline().rstrip())
rc, out = run(["clang", "-fsyntax-only", "-x", "c", header])
print("header compiles rc=%d %s" % (rc, out.strip()))
