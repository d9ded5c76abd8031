"""Runs `EXE bench` with few and with many repeats and compares the peak RSS
of the two processes: a kernel that leaks per call grows with the repeats."""
import os
import subprocess
import sys

exe, seq = sys.argv[1], sys.argv[2]


def peak_rss(repeats):
    proc = subprocess.Popen([exe, "bench", "--seq", seq, "--repeats",
                             str(repeats)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert status == 0, status
    return usage.ru_maxrss


few, many = peak_rss(1), peak_rss(12)
growth = many / few
print(f"peak RSS {few} KB with 1 repeat, {many} KB with 12: "
      f"{'flat' if growth < 1.2 else 'GROWS'} (x{growth:.2f})")
sys.exit(0 if growth < 1.2 else 1)
