#!/usr/bin/env python3
"""Replay the dispatch's route model against a measured llm grid.

For every (M, K, N, sparsity) of an llm results.csv (magicube-bench --sections=llm), asks
`magicube plan --route=auto` (the model, no GPU) which route it takes, and compares it with
what the grid measured: the sparse kernel (magicube-jit-sparse) against the dense route (our
own, where the grid's dispatch row ran it for that M, K, N at any sparsity; else dense cuBLASLt
int8, the bench's contender, the best of every storage), with C in the layout the grid ran ours
in (column-major, `--c-order=col`, where its sparse row's spec has +ccol). Prints each wrong
call and a summary:
  sent dense, sparse was faster by >= 3 %   (a missed win)
  sent sparse, dense was faster by > 2 %    (a loss: "never slower than dense" breaks)

With --near F, also prints every problem whose two estimates lie within F of each other (the
calls the margin decides), with the measured ratio.

usage: bench/route_replay.py RESULTS.csv [--cli build/bin/magicube] [--lhs s8 --rhs s8 --v 8] [--near 0.08]
"""
import argparse
import csv
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--cli", default="build/bin/magicube")
    ap.add_argument("--lhs", default="s8")
    ap.add_argument("--rhs", default="s8")
    ap.add_argument("--v", default="8")
    ap.add_argument("--near", type=float, default=0.0)
    args = ap.parse_args()
    dense, sparse, route_ms, c_col = {}, {}, {}, {}
    with open(args.results) as f:
        for r in csv.DictReader(f):
            if r.get("status") != "ok" or not r.get("ms"):
                continue
            key = (int(r["m"]), int(r["k"]), int(r["n"]))
            if r["contender"] == "cublaslt-s8s32":
                dense[key] = float(r["ms"])
            elif r["v"] != args.v:  # a grid of several V: this V's problems only
                continue
            elif r["contender"] == "magicube-jit-sparse":
                sparse[key + (r["sparsity"],)] = float(r["ms"])
                c_col[key + (r["sparsity"],)] = "+ccol" in r["config"].split(" ")[0]
            elif r["contender"] == "magicube-jit" and r["config"].startswith("dense route:"):
                route_ms[key + (r["sparsity"],)] = float(r["ms"])
    missed = lost = 0
    for key in sorted(sparse):
        m, k, n, s = key
        if (m, k, n) not in dense:
            continue
        out = subprocess.run([args.cli, "plan", f"--lhs={args.lhs}", f"--rhs={args.rhs}", f"-v={args.v}", f"--m={m}",
                              f"--k={k}", f"--n={n}", f"--sparsity={s}", "--route=auto",
                              "--c-order=" + ("col" if c_col[key] else "row")],
                             capture_output=True, text=True).stdout
        route = re.search(r"^route\s+(\w+)(.*)$", out, re.M)
        if not route:
            continue
        took, why = route.group(1), route.group(2).strip()
        # Our dense route's time where the grid ran it for this (M, K, N) at any sparsity (the
        # GEMM is the same; the median of those runs), else the contender's.
        ours = sorted(t for (m2, k2, n2, _), t in route_ms.items() if (m2, k2, n2) == (m, k, n))
        d, sp = ours[len(ours) // 2] if ours else dense[(m, k, n)], sparse[key]
        est = re.search(r"sparse ~([\d.]+) us, dense ~([\d.]+) us", why)
        if args.near and est and abs(float(est.group(1)) / float(est.group(2)) - 1) <= args.near:
            print(f"near    {m}x{k} N={n} s={s}: estimates sparse/dense {float(est.group(1)) / float(est.group(2)):.3f}, "
                  f"measured {sp / d:.3f} (took {took})")
        if took == "dense" and sp * 1.03 < d:
            missed += 1
            print(f"missed  {m}x{k} N={n} s={s}: sparse {sp*1e3:.1f} us, dense {d*1e3:.1f} us {why}")
        if took == "sparse" and d * 1.02 < sp:
            lost += 1
            print(f"LOST    {m}x{k} N={n} s={s}: sparse {sp*1e3:.1f} us, dense {d*1e3:.1f} us {why}")
    print(f"{len(sparse)} problems: {missed} sent dense that the sparse kernel won by >= 3 %, "
          f"{lost} sent sparse that dense won by > 2 %")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
