"""What the mlir-runner references share: the inputs from the formulas
the tests' @main functions use, and the arrays printMemrefF32 printed,
checked against float64 references."""
import re
import sys

import numpy as np


def gen(shape, f):
    """f(n), n the row-major linear index, computed in float64 and stored
    as float32, as the tests' @main do."""
    n = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    return f(n).astype(np.float32).astype(np.float64)


def printed(text):
    """The values of each array printMemrefF32 printed in `text`, in order."""
    arrays = []
    for part in text.split("data =")[1:]:
        part = part.split("Unranked")[0]
        arrays.append(np.array([float(x) for x in re.findall(
            r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|-?nan|-?inf", part)]))
    return arrays


def check(text, refs, tol=1e-5):
    """Prints "OK <max error>" when the arrays printed in `text` are, one
    for one, within tol (1 + max |ref|) of `refs`; else FAIL and exit 1."""
    got = printed(text)
    if len(got) != len(refs):
        print("FAIL: %d arrays printed, %d expected" % (len(got), len(refs)))
        sys.exit(1)
    worst = 0.0
    for values, ref in zip(got, refs):
        if values.size != ref.size:
            print("FAIL: %d values printed, %d expected" %
                  (values.size, ref.size))
            sys.exit(1)
        err = np.abs(values.reshape(ref.shape) - ref).max()
        bound = tol * (1 + np.abs(ref).max())
        if not err <= bound:
            print("FAIL: max error %.3e > %.3e" % (err, bound))
            sys.exit(1)
        worst = max(worst, err)
    print("OK %.3e" % worst)
