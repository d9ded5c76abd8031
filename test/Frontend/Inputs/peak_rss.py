"""peak_rss.py LIMIT_MB CMD...: runs CMD, prints its exit status and whether
its peak resident memory stayed under LIMIT_MB; exits 1 when it did not."""
import os
import subprocess
import sys

limit_mb = float(sys.argv[1])
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
peak_mb = usage.ru_maxrss / 1024.0
ok = peak_mb < limit_mb
print(f"exit {os.waitstatus_to_exitcode(status)}, peak RSS "
      f"{'under' if ok else 'OVER'} {limit_mb:g} MB ({peak_mb:.0f} MB)")
sys.exit(0 if ok else 1)
