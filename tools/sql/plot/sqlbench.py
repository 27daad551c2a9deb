#!/usr/bin/env python3
"""Charts of a sqlbench sweep (tools/sql/cmd/sqlbench), the seed's four.

Usage: sqlbench.py OUT_DIR

Reads the newest OUT_DIR/summary_*.csv and detail_*.csv and writes, per
table size (a "_<rows>" suffix when the sweep has more than one):
  tps_comparison.png          TPS per workload and thread count, one bar per engine
  p95_latency_comparison.png  p95 latency, same layout
  scaling_efficiency.png      TPS / TPS at the fewest threads, with the ideal line
  tps_over_time_<N>t.png      per-second TPS at the largest thread count N
Values are means over iterations; failed runs are left out.
"""
import glob
import math
import os
import sys

from chartlib import COLORS, label, ordered, plt, read_csv, save


def newest(out, prefix):
    files = sorted(glob.glob(os.path.join(out, prefix + "_*.csv")))
    if not files:
        sys.exit(f"no {prefix}_*.csv in {out}")
    return files[-1]


def mean(xs):
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    return sum(xs) / len(xs) if xs else None


def fnum(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def grid(n):
    cols = 2 if n > 1 else 1
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 4.2 * rows), squeeze=False)
    flat = [a for r in axes for a in r]
    for a in flat[n:]:
        a.set_visible(False)
    return fig, flat[:n]


def bars(rows, engines, workloads, threads, col, ylabel, title, path):
    fig, axes = grid(len(workloads))
    width = 0.8 / max(1, len(engines))
    for ax, w in zip(axes, workloads):
        for i, e in enumerate(engines):
            ys = [mean([fnum(r[col]) for r in rows
                        if r["engine"] == e and r["workload"] == w and int(r["threads"]) == t]) for t in threads]
            xs = [j + (i - (len(engines) - 1) / 2) * width for j in range(len(threads))]
            ax.bar(xs, [y or 0 for y in ys], width, color=COLORS.get(e), label=label(e))
        ax.set_xticks(range(len(threads)))
        ax.set_xticklabels([str(t) for t in threads])
        ax.set_xlabel("threads")
        ax.set_ylabel(ylabel)
        ax.set_title(w)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, path, title)


def scaling(rows, engines, workloads, threads, path, title):
    fig, axes = grid(len(workloads))
    base_t = threads[0]
    for ax, w in zip(axes, workloads):
        ax.plot(threads, [t / base_t for t in threads], "k--", linewidth=1, label="ideal")
        for e in engines:
            tps = {t: mean([fnum(r["tps"]) for r in rows
                            if r["engine"] == e and r["workload"] == w and int(r["threads"]) == t]) for t in threads}
            base = tps.get(base_t)
            if not base:
                continue
            xs = [t for t in threads if tps.get(t)]
            ax.plot(xs, [tps[t] / base for t in xs], marker="o", color=COLORS.get(e), label=label(e))
        ax.set_xlabel("threads")
        ax.set_ylabel(f"TPS / TPS at {base_t} thread(s)")
        ax.set_title(w)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, path, title)


def over_time(detail, engines, workloads, t, path, title):
    fig, axes = grid(len(workloads))
    for ax, w in zip(axes, workloads):
        for e in engines:
            pts = [(int(r["second"]), fnum(r["tps"])) for r in detail
                   if r["engine"] == e and r["workload"] == w and int(r["threads"]) == t and r["iteration"] == "1"]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=COLORS.get(e), label=label(e))
        ax.set_xlabel("second of the run")
        ax.set_ylabel("TPS")
        ax.set_ylim(bottom=0)
        ax.set_title(w)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    save(fig, path, title)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    summary = [r for r in read_csv(newest(out, "summary")) if not r.get("error")]
    detail = read_csv(newest(out, "detail"))
    if not summary:
        sys.exit("no successful runs to chart")
    sizes = ordered([r["table_size"] for r in summary])
    for size in sizes:
        rows = [r for r in summary if r["table_size"] == size]
        det = [r for r in detail if r["table_size"] == size]
        engines = ordered([r["engine"] for r in rows])
        workloads = ordered([r["workload"] for r in rows])
        threads = sorted({int(r["threads"]) for r in rows})
        sfx = f"_{size}" if len(sizes) > 1 else ""
        what = f"{size} rows per table"
        bars(rows, engines, workloads, threads, "tps", "TPS", f"Throughput ({what})",
             os.path.join(out, f"tps_comparison{sfx}.png"))
        bars(rows, engines, workloads, threads, "p95_ms", "p95 latency (ms)", f"p95 latency ({what})",
             os.path.join(out, f"p95_latency_comparison{sfx}.png"))
        scaling(rows, engines, workloads, threads, os.path.join(out, f"scaling_efficiency{sfx}.png"),
                f"Scaling efficiency ({what})")
        top = threads[-1]
        over_time(det, engines, workloads, top, os.path.join(out, f"tps_over_time_{top}t{sfx}.png"),
                  f"TPS over time at {top} threads ({what})")


if __name__ == "__main__":
    main()
