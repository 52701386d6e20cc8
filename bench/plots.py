#!/usr/bin/env python3
"""Plots of `magicube bench` results, like the Magicube paper's figures.

    python3 bench/plots.py RESULTS.csv [--out-dir DIR]

Reads results.csv (one row per matrix, op, precision, V, N and contender) and writes, into
DIR (default: the CSV's folder):

  speedup_<source>_<op>_v<V>.png  speedup of ours over each contender vs sparsity, one panel
                                  per precision, one line per contender (geomean over the
                                  matrices and N at each sparsity)
  geomean_<source>_<op>.png       bar chart: geomean speedup of ours over each contender,
                                  per precision and V (all sparsities together)
  tops_<source>_spmm.png          effective TOPS of ours vs sparsity, one line per precision,
                                  one panel per V, with dense cuBLASLt int8 for scale
  llm_speedup_<precision>_v<V>.png  the llm section (source "llm"): speedup of ours over dense
                                  cuBLASLt int8 vs N (log), one panel per weight shape, one
                                  line per sparsity

Speedup = contender ms / ours ms on the same problem (source, matrix, op, V, M, K, N). Vendor
rows serve every precision of ours; the published Magicube rows only their own precision.
Needs matplotlib (python3 -m pip install matplotlib).
"""
import argparse
import csv
import math
import os
import sys
from collections import defaultdict

OURS = "magicube-jit"
VENDORS = ["cublaslt-s8s32", "cublas-f16", "cusparse-bell-f16", "cusparse-bell-s8", "cusparse-csr-f16"]
PUBLISHED = "magicube-h100-published"
CONTENDERS = VENDORS + [PUBLISHED]
TITLES = {
    "cublaslt-s8s32": "cuBLASLt s8 dense",
    "cublas-f16": "cuBLAS f16 dense",
    "cusparse-bell-f16": "cuSPARSE Blocked-ELL f16",
    "cusparse-bell-s8": "cuSPARSE Blocked-ELL s8",
    "cusparse-csr-f16": "cuSPARSE CSR f16",
    PUBLISHED: "Magicube (published, h100.md, V=8)",
}
PRECISION_ORDER = ["L8-R8", "L8-R4", "L4-R4", "L16-R8", "L16-R16", "L5-R3", "L6-R6", "L12-R4"]
SOURCE_TITLES = {"synthetic": "synthetic uniform", "dlmc": "DLMC ResNet-50", "small": "small problem"}


def num(s):
    try:
        x = float(s)
    except (TypeError, ValueError):
        return math.nan
    return x


def ok(r):
    return r["status"] in ("ok", "published") and num(r["ms"]) > 0


def key(r):
    return (r["source"], r["matrix"], r["op"], r["v"], r["m"], r["k"], r["n"])


def geomean(xs):
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def precision_rank(p):
    return (PRECISION_ORDER.index(p), p) if p in PRECISION_ORDER else (len(PRECISION_ORDER), p)


def log_speedup_axis(ax):
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda y, _: ""))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def speedups(rows):
    """[(ours_row, contender, speedup)] for every comparison that ran."""
    by_key = defaultdict(list)
    for r in rows:
        if r["contender"] != OURS and ok(r):
            by_key[key(r)].append(r)
    out = []
    for r in rows:
        if r["contender"] != OURS or not ok(r) or r["exact"].startswith("NO"):
            continue
        for c in by_key.get(key(r), []):
            if c["contender"] in VENDORS:
                out.append((r, c["contender"], num(c["ms"]) / num(r["ms"])))
        # The published Magicube times exist for V=8 only; they serve every V of the matrix.
        k8 = key(r)[:3] + ("8",) + key(r)[4:]
        for c in by_key.get(k8, []):
            if c["contender"] == PUBLISHED and c["precision"] == r["precision"]:
                out.append((r, PUBLISHED, num(c["ms"]) / num(r["ms"])))
    return out


def plot_speedup_lines(plt, sp, source, op, v, out_dir):
    cells = defaultdict(list)  # (precision, contender, sparsity) -> speedups
    for r, c, x in sp:
        if r["source"] == source and r["op"] == op and r["v"] == v:
            cells[(r["precision"], c, num(r["sparsity"]))].append(x)
    if not cells:
        return None
    precisions = sorted({p for p, _, _ in cells}, key=precision_rank)
    cols = min(4, len(precisions))
    rows_n = (len(precisions) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.2 * cols, 3.4 * rows_n), squeeze=False, sharey=True)
    for i, p in enumerate(precisions):
        ax = axes[i // cols][i % cols]
        for c in CONTENDERS:
            pts = sorted((s, geomean(xs)) for (pp, cc, s), xs in cells.items() if pp == p and cc == c)
            pts = [(s, g) for s, g in pts if math.isfinite(g)]
            if pts:
                ax.plot([s for s, _ in pts], [g for _, g in pts], marker="o", label=TITLES.get(c, c))
        ax.axhline(1.0, color="gray", linewidth=0.8, linestyle="--")
        log_speedup_axis(ax)
        ax.set_title(f"{p}, V={v}")
        ax.set_xlabel("sparsity")
        if i % cols == 0:
            ax.set_ylabel("speedup of Magicube JIT (x)")
        ax.grid(True, which="both", alpha=0.3)
    for j in range(len(precisions), rows_n * cols):
        axes[j // cols][j % cols].axis("off")
    handles, labels = [], []
    for ax in axes.flat:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), frameon=False)
    fig.suptitle(f"{op.upper()}, {SOURCE_TITLES.get(source, source)}: speedup vs sparsity (geomean over matrices and N)")
    fig.tight_layout(rect=(0, 0.08 + 0.02 * ((len(labels) - 1) // 3), 1, 0.95))
    name = os.path.join(out_dir, f"speedup_{source}_{op}_v{v}.png")
    fig.savefig(name, dpi=120)
    plt.close(fig)
    return name


def plot_geomean_bars(plt, sp, source, op, out_dir):
    cells = defaultdict(list)  # (precision, v, contender) -> speedups
    for r, c, x in sp:
        if r["source"] == source and r["op"] == op:
            cells[(r["precision"], int(r["v"]), c)].append(x)
    if not cells:
        return None
    groups = sorted({(p, v) for p, v, _ in cells}, key=lambda pv: (precision_rank(pv[0]), -pv[1]))
    contenders = [c for c in CONTENDERS if any(cc == c for _, _, cc in cells)]
    width = 0.8 / max(1, len(contenders))
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(groups) + 2), 4.5))
    for i, c in enumerate(contenders):
        xs, ys = [], []
        for gi, (p, v) in enumerate(groups):
            g = geomean(cells.get((p, v, c), []))
            if math.isfinite(g):
                xs.append(gi + (i - (len(contenders) - 1) / 2) * width)
                ys.append(g)
        ax.bar(xs, ys, width=width, label=TITLES.get(c, c))
    ax.axhline(1.0, color="gray", linewidth=0.8, linestyle="--")
    if op == "spmm" and source == "synthetic":
        ax.axhline(3.0, color="red", linewidth=0.8, linestyle=":", label="3x target (vs Magicube)")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{p}\nV={v}" for p, v in groups], fontsize=8)
    log_speedup_axis(ax)
    ax.set_ylabel("geomean speedup of Magicube JIT (x)")
    ax.set_title(f"{op.upper()}, {SOURCE_TITLES.get(source, source)}: geomean speedup over all sparsities")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    fig.tight_layout()
    name = os.path.join(out_dir, f"geomean_{source}_{op}.png")
    fig.savefig(name, dpi=120)
    plt.close(fig)
    return name


def plot_tops(plt, rows, source, out_dir):
    ours = [r for r in rows if r["source"] == source and r["op"] == "spmm" and r["contender"] == OURS and ok(r)]
    if not ours:
        return None
    vs = sorted({int(r["v"]) for r in ours}, reverse=True)
    fig, axes = plt.subplots(1, len(vs), figsize=(5 * len(vs), 4), squeeze=False, sharey=True)
    for ax, v in zip(axes[0], vs):
        series = defaultdict(lambda: defaultdict(list))
        for r in ours:
            if int(r["v"]) == v:
                series[r["precision"]][num(r["sparsity"])].append(num(r["tops"]))
        for r in rows:
            if (r["source"] == source and r["op"] == "spmm" and int(r["v"]) == v and r["contender"] == "cublaslt-s8s32"
                    and ok(r)):
                series[TITLES["cublaslt-s8s32"]][num(r["sparsity"])].append(num(r["tops"]))
        for name in sorted(series, key=precision_rank):
            pts = sorted((s, geomean(xs)) for s, xs in series[name].items())
            style = "--" if name == TITLES["cublaslt-s8s32"] else "-"
            ax.plot([s for s, _ in pts], [t for _, t in pts], style, marker="o", label=name)
        ax.set_title(f"V={v}")
        ax.set_xlabel("sparsity")
        ax.set_ylabel("effective TOPS (2 nnz V N / t)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"SpMM, {SOURCE_TITLES.get(source, source)}: effective TOPS")
    fig.tight_layout()
    name = os.path.join(out_dir, f"tops_{source}_spmm.png")
    fig.savefig(name, dpi=120)
    plt.close(fig)
    return name


def plot_llm(plt, rows, out_dir):
    """Speedup of ours over dense cuBLASLt int8 vs N, per (precision, V): a panel per shape."""
    dense = {}
    for r in rows:
        if r["source"] == "llm" and r["contender"] == "cublaslt-s8s32" and ok(r):
            dense[(r["m"], r["k"], r["n"])] = num(r["ms"])
    groups = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))  # (prec, v) -> shape -> s -> [(n, x)]
    for r in rows:
        if r["source"] != "llm" or r["contender"] != OURS or not ok(r) or r["exact"].startswith("NO"):
            continue
        d = dense.get((r["m"], r["k"], r["n"]))
        if d:
            groups[(r["precision"], r["v"])][(int(r["m"]), int(r["k"]))][num(r["sparsity"])].append(
                (int(r["n"]), d / num(r["ms"])))
    written = []
    for (prec, v), shapes in sorted(groups.items(), key=lambda kv: (precision_rank(kv[0][0]), -int(kv[0][1]))):
        keys = list(shapes)
        cols = min(3, len(keys))
        rows_n = (len(keys) + cols - 1) // cols
        fig, axes = plt.subplots(rows_n, cols, figsize=(4.4 * cols, 3.4 * rows_n), squeeze=False, sharey=True)
        for i, (m, k) in enumerate(keys):
            ax = axes[i // cols][i % cols]
            for s in sorted(shapes[(m, k)]):
                pts = sorted(shapes[(m, k)][s])
                ax.plot([n for n, _ in pts], [x for _, x in pts], marker="o", label=f"s={s:g}")
            ax.axhline(1.0, color="gray", linewidth=0.8, linestyle="--")
            ax.set_xscale("log", base=2)
            log_speedup_axis(ax)
            ax.set_title(f"W {m}x{k}")
            ax.set_xlabel("N (tokens)")
            if i % cols == 0:
                ax.set_ylabel("speedup over cuBLASLt s8 dense (x)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        for j in range(len(keys), rows_n * cols):
            axes[j // cols][j % cols].axis("off")
        fig.suptitle(f"LLM shapes, {prec} V={v}: Magicube JIT over dense int8 (L2 flushed)")
        fig.tight_layout(rect=(0, 0, 1, 0.95))
        name = os.path.join(out_dir, f"llm_speedup_{prec}_v{v}.png")
        fig.savefig(name, dpi=120)
        plt.close(fig)
        written.append(name)
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="results.csv of magicube bench")
    ap.add_argument("--out-dir", help="folder for the PNGs (default: the CSV's folder)")
    args = ap.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plots.py: matplotlib is missing: python3 -m pip install matplotlib", file=sys.stderr)
        return 2
    rows = load(args.csv)
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.csv))
    os.makedirs(out_dir, exist_ok=True)
    sp = speedups(rows)
    written = []
    pairs = sorted({(r["source"], r["op"]) for r in rows if r["contender"] == OURS and r["source"] != "llm"})
    for source, op in pairs:
        for v in sorted({r["v"] for r in rows if r["contender"] == OURS and r["source"] == source and r["op"] == op},
                        key=lambda x: -int(x)):
            written.append(plot_speedup_lines(plt, sp, source, op, v, out_dir))
        written.append(plot_geomean_bars(plt, sp, source, op, out_dir))
        if op == "spmm":
            written.append(plot_tops(plt, rows, source, out_dir))
    written += plot_llm(plt, rows, out_dir)
    written = [w for w in written if w]
    for w in written:
        print(f"plots.py: wrote {w}")
    if not written:
        print("plots.py: nothing to plot (no results of ours that ran)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
