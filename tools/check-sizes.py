#!/usr/bin/env python3
"""The size rules of the sources (compiler/, dialects/, runtime/, tools/):
no file over 800 lines, and no function over 150 lines without a one-line
reason at its top (a comment `// Long: ...` as the body's first line).

    tools/check-sizes.py [ROOT]     # exit 1, naming each file or function

Functions are found as definitions at namespace or class scope (a line at
indent 0 or 2 ending a signature with `{`, closed by `}` at the same
indent); lambdas and nested blocks count toward their function.
"""

import os
import re
import sys

DIRS = ("compiler", "dialects", "runtime", "tools")
EXTS = (".cpp", ".h", ".c")
MAX_FILE, MAX_FUNCTION = 800, 150
START = re.compile(r"^( {0,2})(?!(if|for|while|switch|else|do|return|"
                   r"namespace|struct|class|enum|case|union|typedef|using|"
                   r"template)\b)[A-Za-z_~]")


def functions(lines):
    """(first line, line count, body's first line) of each long enough
    function definition."""
    out = []
    i = 0
    while i < len(lines):
        m = START.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group(1))
        j, sig = i, ""
        while j < len(lines) and j < i + 10:
            sig += lines[j]
            if lines[j].rstrip().endswith(("{", ";", "}")):
                break
            j += 1
        head = sig.split("{")[0]
        if (not sig.rstrip().endswith("{") or "(" not in head or
                "=" in head.split("(")[0]):
            i += 1
            continue
        close = " " * indent + "}"
        k = j + 1
        while k < len(lines) and not (
                lines[k].startswith(close) and
                (len(lines[k]) == indent + 1 or
                 lines[k][indent + 1] in ";) ")):
            k += 1
        out.append((i + 1, k - i + 1, lines[j + 1] if j + 1 < len(lines)
                    else ""))
        i = k + 1
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    errors = []
    files = 0
    for d in DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for name in sorted(names):
                if not name.endswith(EXTS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, errors="replace") as f:
                    lines = f.read().split("\n")
                files += 1
                n = len(lines) - (lines[-1] == "")
                if n > MAX_FILE:
                    errors.append(f"{rel}: {n} lines; at most {MAX_FILE} "
                                  "(split it by role)")
                for first, count, body in functions(lines):
                    if count > MAX_FUNCTION and \
                            not body.strip().startswith("// Long:"):
                        errors.append(
                            f"{rel}:{first}: a function of {count} lines; at "
                            f"most {MAX_FUNCTION}, or a one-line reason as "
                            "its body's first line (// Long: ...)")
    for e in errors:
        print(f"check-sizes: {e}", file=sys.stderr)
    print(f"check-sizes: {files} files, {len(errors)} over the limits")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
