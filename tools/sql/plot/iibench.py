#!/usr/bin/env python3
"""Charts of an iibench run (tools/sql/cmd/iibench).

Usage: iibench.py OUT_DIR

Reads OUT_DIR/summary.csv (one row per task: task, engine, phase, tsv, ...)
and each task's interval TSV, and writes into OUT_DIR:
  iibench_load_rows_per_s.png   load phase: rows/s over time, one line per engine
  iibench_insert_p99.png        insert p99 over time per engine, load and mixed panels
  iibench_mixed_query.png       mixed phase: query p50 and p99 over time per engine
A chart whose phase has no task is not written.
"""
import csv
import math
import os
import sys

from chartlib import COLORS, label, plt, read_csv, save


def num(s):
    """A TSV cell as a float; None for nan or anything unreadable."""
    try:
        v = float(s)
    except ValueError:
        return None
    return None if math.isnan(v) else v


def read_tsv(path):
    """The intervals of a task TSV as a dict of columns."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    cols = {}
    for r in rows:
        for k, v in r.items():
            cols.setdefault(k, []).append(num(v))
    return cols


def load_tasks(out):
    path = os.path.join(out, "summary.csv")
    tasks = read_csv(path)
    for t in tasks:
        tsv = os.path.join(out, t["tsv"])
        t["data"] = read_tsv(tsv) if os.path.exists(tsv) else {}
    return tasks


def series(task, col):
    """(x, y) of a column, skipping intervals without a value."""
    d = task["data"]
    xs, ys = [], []
    for x, y in zip(d.get("elapsed_s", []), d.get(col, [])):
        if x is not None and y is not None:
            xs.append(x)
            ys.append(y)
    return xs, ys


def plot_lines(ax, tasks, col, style="-", suffix=""):
    drawn = False
    for t in tasks:
        xs, ys = series(t, col)
        if not xs:
            continue
        e = t["engine"]
        ax.plot(xs, ys, style, marker=".", color=COLORS.get(e),
                label=f"{label(e)}{suffix} ({t['task']})")
        drawn = True
    return drawn


def finish(fig, ax_list, path):
    for ax in ax_list:
        ax.grid(True, alpha=0.3)
        ax.set_xlabel("elapsed (s)")
        ax.set_ylim(bottom=0)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    save(fig, path)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    tasks = load_tasks(out)
    load = [t for t in tasks if t["phase"] == "load"]
    mixed = [t for t in tasks if t["phase"] == "mixed"]

    if load:
        fig, ax = plt.subplots(figsize=(9, 5))
        plot_lines(ax, load, "rows_per_s")
        ax.set_title("iibench load phase: rows inserted per second")
        ax.set_ylabel("rows/s (per report interval)")
        finish(fig, [ax], os.path.join(out, "iibench_load_rows_per_s.png"))

    phases = [(p, ts) for p, ts in (("load", load), ("mixed", mixed)) if ts]
    if phases:
        fig, axes = plt.subplots(1, len(phases), figsize=(7 * len(phases), 5), squeeze=False)
        for ax, (p, ts) in zip(axes[0], phases):
            plot_lines(ax, ts, "insert_p99_ms")
            ax.set_title(f"insert p99 per batch, {p} phase")
            ax.set_ylabel("ms")
        finish(fig, list(axes[0]), os.path.join(out, "iibench_insert_p99.png"))

    if mixed:
        fig, axes = plt.subplots(1, 2, figsize=(14, 5))
        for ax, col, name in ((axes[0], "query_p50_ms", "p50"), (axes[1], "query_p99_ms", "p99")):
            plot_lines(ax, mixed, col)
            ax.set_title(f"mixed phase: query {name}")
            ax.set_ylabel("ms")
        finish(fig, list(axes), os.path.join(out, "iibench_mixed_query.png"))


if __name__ == "__main__":
    main()
