#!/usr/bin/env python3
"""The decode step of a KV cache sharded over N machines, on paper.

Context parallelism for decode (attn-compile --distributed=mpi): each of N
machines holds 1/N of every full-attention layer's KV cache, streams it
through the local decode kernel (memory-bound: time = bytes / the kernel's
measured bandwidth), then one allreduce merges the ranks' partial rows
(B·Hq·Sq rows of Dv + 2 floats: output, max, sum). The allreduce is modeled
as recursive doubling, ceil(log2 N) rounds of (latency + payload / network
bandwidth), which is what MPI libraries pick for payloads this small.

    tools/cp-scaling.py --local-gbs 40 --net-gbs 25 --latency-us 2

prints, for N = 1, 2, 4, ..., 64, the per-layer and per-token step times,
the speedup over one machine and the parallel efficiency, and the machine
count past which adding machines gains less than 10% (the collective then
costs as much as a tenth of the kernel's time, and the step stops scaling).
The defaults are the seed model's (../shared/seeds): 1,010,000 tokens, 23
full-attention layers, 64 query heads, 4 KV heads, head_dim 256, bf16
K/V (4.1 GB per layer).
"""
import argparse
import math


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--local-gbs", type=float, required=True,
                   help="the decode kernel's K+V read rate on one machine "
                        "(GB/s, measured: the executable's bench under "
                        "mpirun -np 1)")
    p.add_argument("--net-gbs", type=float, required=True,
                   help="network bandwidth per machine (GB/s)")
    p.add_argument("--latency-us", type=float, required=True,
                   help="network latency per message (microseconds)")
    p.add_argument("--kernel-fixed-us", type=float, default=0.0,
                   help="the local kernel's time that does not shrink with "
                        "its share of the cache (thread fork/join, the "
                        "partial rows), microseconds per layer")
    p.add_argument("--tokens", type=int, default=1010000)
    p.add_argument("--layers", type=int, default=23,
                   help="full-attention layers (the seed: 23 of 92)")
    p.add_argument("--heads", type=int, default=64)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=256)
    p.add_argument("--kv-bytes", type=int, default=2, help="2: bf16 K/V")
    p.add_argument("--batch", type=int, default=1, help="sequences per step")
    p.add_argument("--max-machines", type=int, default=64)
    a = p.parse_args()

    cache = (a.batch * a.tokens * a.kv_heads * a.head_dim * 2 * a.kv_bytes)
    payload = a.batch * a.heads * (a.head_dim + 2) * 4
    print(f"per layer: {cache / 1e9:.2f} GB of K+V, {payload / 1e3:.1f} KB "
          f"of partial rows per rank; local kernel {a.local_gbs:g} GB/s "
          f"+ {a.kernel_fixed_us:g} us, "
          f"network {a.net_gbs:g} GB/s, latency {a.latency_us:g} us")
    print(f"{'N':>4} {'kernel ms':>10} {'allreduce ms':>13} {'layer ms':>9} "
          f"{'token ms':>9} {'speedup':>8} {'efficiency':>10}")

    def step(n):
        local = cache / n / (a.local_gbs * 1e9) + a.kernel_fixed_us * 1e-6
        rounds = math.ceil(math.log2(n)) if n > 1 else 0
        coll = rounds * (a.latency_us * 1e-6 + payload / (a.net_gbs * 1e9))
        return local, coll

    base = sum(step(1))
    n = 1
    while n <= a.max_machines:
        local, coll = step(n)
        t = local + coll
        print(f"{n:>4} {local * 1e3:>10.3f} {coll * 1e3:>13.4f} "
              f"{t * 1e3:>9.3f} {t * a.layers * 1e3:>9.2f} "
              f"{base / t:>8.1f} {base / t / n:>10.0%}")
        n *= 2
    # Where doubling the machines gains less than 10%.
    n = 1
    while n < (1 << 40):
        if sum(step(n)) / sum(step(2 * n)) < 1.1:
            break
        n *= 2
    local, coll = step(n)
    print(f"stops scaling at about N = {n} machines: doubling further gains "
          f"< 10% (kernel {local * 1e6:.1f} us vs allreduce "
          f"{coll * 1e6:.1f} us per layer)")


if __name__ == "__main__":
    main()
