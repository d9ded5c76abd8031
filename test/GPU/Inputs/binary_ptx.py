"""Prints the PTX of each gpu.binary in attn-opt's output (MLIR read from
the file named on the command line): the `assembly` string of each
#gpu.object, its MLIR escapes (\\XX, hex) decoded, one module after the
other, for ptxas."""
import re
import sys


def main():
    text = open(sys.argv[1]).read()
    found = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', text)
    if not found:
        print("binary_ptx.py: no gpu.binary assembly in " + sys.argv[1],
              file=sys.stderr)
        sys.exit(1)
    for a in found:
        sys.stdout.write(re.sub(r"\\([0-9A-Fa-f]{2})",
                                lambda m: chr(int(m.group(1), 16)), a))


if __name__ == "__main__":
    main()
