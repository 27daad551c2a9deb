#!/usr/bin/env python3
"""Turn a tdb_bench CSV into PNG charts.

    python3 scripts/plot_bench.py results/bench-TS.csv [--out PREFIX]

Writes PREFIX-ops.png (grouped bars: ops/s per workload per engine, log
scale), PREFIX-latency.png (p50/p99/p99.9 per workload per engine, log
scale) and, when the CSV has tidesdb and rocksdb rows, PREFIX-ratio.png
(tidesdb ops/s divided by rocksdb ops/s per workload). PREFIX defaults to
the CSV path without ".csv". Rows whose step failed (ok=0) are left out.
Exits 3 when matplotlib is missing, so callers can say charts were skipped.
"""
import argparse
import csv
import os
import sys


def load(path):
    """Rows of the CSV whose step succeeded, numbers parsed (None = n/a)."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("ok") != "1":
                continue
            for k in ("ops_per_sec", "p50_us", "p99_us", "p999_us",
                      "ratio_vs_rocksdb"):
                v = r.get(k, "")
                r[k] = float(v) if v not in ("", None) else None
            rows.append(r)
    return rows


def ordered(rows, key):
    """Distinct values of a column in first-seen order."""
    seen = []
    for r in rows:
        if r[key] not in seen:
            seen.append(r[key])
    return seen


def plot_ops(plt, rows, workloads, engines, out):
    """Grouped bars of ops/s per workload, one bar per engine."""
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(workloads) * len(engines) / 2), 5))
    width = 0.8 / max(1, len(engines))
    for i, eng in enumerate(engines):
        xs, ys = [], []
        for j, w in enumerate(workloads):
            for r in rows:
                if r["engine"] == eng and r["workload"] == w and r["ops_per_sec"]:
                    xs.append(j + i * width - 0.4 + width / 2)
                    ys.append(r["ops_per_sec"])
        bars = ax.bar(xs, ys, width, label=eng)
        for b, y in zip(bars, ys):
            ax.annotate(f"{y / 1000:.0f}k" if y >= 1000 else f"{y:.0f}",
                        (b.get_x() + b.get_width() / 2, y), ha="center",
                        va="bottom", fontsize=6, rotation=90)
    ax.set_yscale("log")
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels(workloads, rotation=30, ha="right")
    ax.set_ylabel("operations per second (log)")
    ax.set_title("Throughput per workload")
    ax.legend()
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_latency(plt, rows, workloads, engines, out):
    """One panel per workload: p50/p99/p99.9 bars grouped by engine."""
    cols = min(4, len(workloads))
    nrows = (len(workloads) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3.2 * nrows),
                             squeeze=False)
    pct = (("p50_us", "p50"), ("p99_us", "p99"), ("p999_us", "p99.9"))
    width = 0.8 / len(pct)
    for n, w in enumerate(workloads):
        ax = axes[n // cols][n % cols]
        for i, (key, label) in enumerate(pct):
            xs, ys = [], []
            for j, eng in enumerate(engines):
                for r in rows:
                    if r["engine"] == eng and r["workload"] == w and r[key]:
                        xs.append(j + i * width - 0.4 + width / 2)
                        ys.append(r[key])
            ax.bar(xs, ys, width, label=label)
        ax.set_yscale("log")
        ax.set_xticks(range(len(engines)))
        ax.set_xticklabels(engines, fontsize=8)
        ax.set_title(w, fontsize=9)
        ax.set_ylabel("us (log)", fontsize=8)
        ax.grid(axis="y", which="both", alpha=0.3)
        if n == 0:
            ax.legend(fontsize=7)
    for n in range(len(workloads), nrows * cols):
        axes[n // cols][n % cols].axis("off")
    fig.suptitle("Latency percentiles per workload (per operation; per batch "
                 "for batched writes)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_ratio(plt, rows, workloads, out):
    """Horizontal bars of tidesdb/rocksdb ops/s; False if no ratio."""
    data = [(w, r["ratio_vs_rocksdb"]) for w in workloads for r in rows
            if r["workload"] == w and r["engine"] == "tidesdb"
            and r["ratio_vs_rocksdb"] is not None]
    if not data:
        return False
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(data) + 1.5))
    names = [d[0] for d in data]
    vals = [d[1] for d in data]
    colors = ["tab:green" if v >= 1 else "tab:red" for v in vals]
    ax.barh(range(len(data)), vals, color=colors)
    ax.axvline(1.0, color="black", linewidth=1)
    for i, v in enumerate(vals):
        ax.annotate(f"{v:.2f}x", (v, i), va="center", fontsize=8,
                    xytext=(3, 0), textcoords="offset points")
    ax.set_yticks(range(len(data)))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xlabel("tidesdb ops/s / rocksdb ops/s (same run)")
    ax.set_title("TidesDB relative to RocksDB")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--out", help="output prefix (default: CSV path minus .csv)")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_bench: matplotlib is not installed: charts skipped",
              file=sys.stderr)
        return 3
    rows = load(args.csv)
    if not rows:
        print(f"plot_bench: no successful rows in {args.csv}", file=sys.stderr)
        return 1
    prefix = args.out or os.path.splitext(args.csv)[0]
    workloads = ordered(rows, "workload")
    engines = ordered(rows, "engine")
    written = [prefix + "-ops.png", prefix + "-latency.png"]
    plot_ops(plt, rows, workloads, engines, written[0])
    plot_latency(plt, rows, workloads, engines, written[1])
    if plot_ratio(plt, rows, workloads, prefix + "-ratio.png"):
        written.append(prefix + "-ratio.png")
    for w in written:
        print(f"chart: {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
