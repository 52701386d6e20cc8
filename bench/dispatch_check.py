#!/usr/bin/env python3
"""What a user gets against what the benchmark reports.

For every row of ours in a `magicube bench` results.csv (V=8 by default), runs
`magicube run` on the same problem with no knob flags (only the op, the types, the output
type and the matrix flags), and writes a side-by-side table: the benchmark's plan and median,
`run`'s plan (with where the dispatch took it from) and median, and their ratio. Both go
through the library's one dispatch, so the plans must agree; the times are medians of two
processes on the same GPU.

Usage: dispatch_check.py MAGICUBE RESULTS_CSV DLMC_DIR OUT_MD [--v=8] [--repeat=20] [--sparsities=0.7,0.9,0.98]
"""
import csv
import re
import subprocess
import sys

TYPES = {"L8-R8": ("s8", "s8"), "L8-R4": ("s8", "s4"), "L4-R4": ("s4", "s4"),
         "L16-R8": ("s16", "s8"), "L16-R16": ("s16", "s16")}


def run_flags(row, dlmc_dir):
    lhs, rhs = TYPES[row["precision"]]
    out = {"i32": "int32", "i64": "int64"}[row["out"]]
    f = [f"--op={row['op']}", f"--lhs={lhs}", f"--rhs={rhs}", f"--v={row['v']}", f"--out={out}"]
    sddmm = row["op"] == "sddmm"
    if row["source"] == "dlmc":
        f.append(f"--matrix={dlmc_dir}/{row['matrix']}")
    elif sddmm:
        f += [f"--m={row['m']}", f"--n={row['n']}", f"--sparsity={row['sparsity']}"]
    else:
        f += [f"--m={row['m']}", f"--k={row['k']}", f"--sparsity={row['sparsity']}"]
    f.append(f"--k={row['k']}" if sddmm else f"--n={row['n']}")
    return f


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    magicube, results, dlmc_dir, out_md = args
    want_v = opts.get("v", "8")
    repeat = opts.get("repeat", "20")
    sparsities = opts.get("sparsities")  # synthetic rows only at these, e.g. 0.7,0.9,0.98
    keep = set(float(x) for x in sparsities.split(",")) if sparsities else None
    rows = [r for r in csv.DictReader(open(results))
            if r["contender"] == "magicube-jit" and r["status"] == "ok" and r["v"] == want_v
            and r["precision"] in TYPES
            and (keep is None or r["source"] == "dlmc" or float(r["sparsity"]) in keep)]
    lines = ["| source | matrix | op | precision | N or K | bench plan | bench ms | run plan | chosen by | run ms | run / bench |",
             "| --- | --- | --- | --- | ---: | --- | ---: | --- | --- | ---: | ---: |"]
    ratios, same, worst = [], 0, (0, "")
    for r in rows:
        cmd = [magicube, "run", *run_flags(r, dlmc_dir), f"--repeat={repeat}", "--warmup=10"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        text = p.stdout + p.stderr
        ms = re.search(r"^time\s+median ([0-9.]+) ms", text, re.M)
        plan = re.search(r"^plan\s+(\S+) \(chosen by: (tuned record|policy|flags)", text, re.M)
        exact = "exact: yes" in text
        bench_plan = r["config"].split()[0]
        nk = r["k"] if r["op"] == "sddmm" else r["n"]
        if not ms or not plan or not exact:
            lines.append(f"| {r['source']} | {r['matrix']} | {r['op']} | {r['precision']} | {nk} | {bench_plan} | "
                         f"{float(r['ms']):.4f} | failed: {text.strip().splitlines()[-1] if text.strip() else p.returncode} | | | |")
            continue
        run_ms, bench_ms = float(ms.group(1)), float(r["ms"])
        ratio = run_ms / bench_ms
        ratios.append(ratio)
        same += plan.group(1) == bench_plan
        if ratio > worst[0]:
            worst = (ratio, f"{r['precision']} {r['matrix']} {nk}")
        chosen = plan.group(2)
        lines.append(f"| {r['source']} | {r['matrix']} | {r['op']} | {r['precision']} | {nk} | {bench_plan} | "
                     f"{bench_ms:.4f} | {plan.group(1)} | {chosen} | {run_ms:.4f} | {ratio:.3f} |")
        print(lines[-1], flush=True)
    n = len(ratios)
    within = sum(1 for x in ratios if x <= 1.05)
    geo = 1.0
    for x in ratios:
        geo *= x ** (1.0 / max(n, 1))
    head = [f"# `magicube run` (no knob flags) against `magicube bench`, V={want_v}", "",
            f"{n} problems: the same plan in {same}; run within 5 % of bench in {within}; "
            f"geomean run/bench {geo:.3f}; worst {worst[0]:.3f} ({worst[1]}).", ""]
    open(out_md, "w").write("\n".join(head + lines) + "\n")
    print("\n".join(head))
    return 0 if n == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
