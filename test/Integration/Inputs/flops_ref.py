"""Expected FLOPs of one attention call, counted by brute force.

Reads bench --json from stdin and, for each row, counts the (query, key)
pairs a query head sees from the mask definition itself (bottom-right causal:
row i at key position i + kv_len - q_len; a window of W keeps keys > pos - W),
then prints "kind OK" when the printed flops equal 2 * (d + dv) * pairs *
heads * batch, or the two numbers when they differ. Arguments: heads d window
(window 0: causal without window; -1: bidirectional).
"""
import json
import sys

heads, d, window = (int(a) for a in sys.argv[1:4])
for r in json.load(sys.stdin):
    sq, skv, b = r["seq"], r["kv_len"], r["batch"]
    pairs = 0
    for i in range(sq):
        pos = i + skv - sq
        for j in range(skv):
            visible = window < 0 or (j <= pos and (window == 0 or j > pos - window))
            pairs += visible
    want = 2 * (2 * d) * pairs * heads * b
    print(r["kind"], "OK" if r["flops"] == want else "flops %s, want %s" % (r["flops"], want))
