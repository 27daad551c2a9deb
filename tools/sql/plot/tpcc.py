#!/usr/bin/env python3
"""Charts of a TPC-C run (tools/sql/cmd/tpcc), the seed's five.

Usage: tpcc.py OUT_DIR

Reads OUT_DIR/runs.csv, transactions.csv and timeline.csv and writes:
  tpcc_build_time.png   schema build time per engine
  tpcc_latency.png      avg / p95 / p99 of each transaction, one bar per engine
  tpcc_nopm.png         New-Order per minute per engine
  tpcc_tpm.png          all transactions per minute per engine
  tpcc_tpm_timeline.png TPM per interval over the measured run (iteration 1)
Values are means over an engine's successful iterations.
"""
import os
import sys

from chartlib import COLORS, label, ordered, plt, read_csv, save
TXNS = [("NEW_ORDER", "New-Order"), ("PAYMENT", "Payment"), ("ORDER_STATUS", "Order-Status"),
        ("DELIVERY", "Delivery"), ("STOCK_LEVEL", "Stock-Level")]


def read(out, name):
    return read_csv(os.path.join(out, name))


def mean(xs):
    xs = [float(x) for x in xs if x not in ("", None)]
    return sum(xs) / len(xs) if xs else 0.0


def bar_chart(engines, values, ylabel, title, path, fmt="{:.0f}"):
    fig, ax = plt.subplots(figsize=(6, 4.5))
    names = [label(e) for e in engines]
    bars = ax.bar(names, values, color=[COLORS.get(e) for e in engines])
    for b, v in zip(bars, values):
        ax.annotate(fmt.format(v), (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=9)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    save(fig, path)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    runs = [r for r in read(out, "runs.csv") if not r["error"]]
    if not runs:
        sys.exit("no successful runs to chart")
    good = {(r["engine"], r["iteration"]) for r in runs}
    txns = [t for t in read(out, "transactions.csv") if (t["engine"], t["iteration"]) in good]
    timeline = [p for p in read(out, "timeline.csv") if (p["engine"], p["iteration"]) in good]
    engines = ordered([r["engine"] for r in runs])
    per = {e: [r for r in runs if r["engine"] == e] for e in engines}

    bar_chart(engines, [mean(r["build_s"] for r in per[e]) for e in engines], "seconds", "Schema build time",
              os.path.join(out, "tpcc_build_time.png"))
    bar_chart(engines, [mean(r["nopm"] for r in per[e]) for e in engines], "New-Order transactions per minute",
              "NOPM", os.path.join(out, "tpcc_nopm.png"))
    bar_chart(engines, [mean(r["tpm"] for r in per[e]) for e in engines], "transactions per minute",
              "TPM (all five transactions)", os.path.join(out, "tpcc_tpm.png"))

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    width = 0.8 / len(engines)
    for ax, (col, name) in zip(axes, (("avg_ms", "average"), ("p95_ms", "p95"), ("p99_ms", "p99"))):
        for i, e in enumerate(engines):
            ys = [mean(t[col] for t in txns if t["engine"] == e and t["txn"] == code) for code, _ in TXNS]
            xs = [j + (i - (len(engines) - 1) / 2) * width for j in range(len(TXNS))]
            ax.bar(xs, ys, width, color=COLORS.get(e), label=label(e))
        ax.set_xticks(range(len(TXNS)))
        ax.set_xticklabels([n for _, n in TXNS], rotation=20)
        ax.set_ylabel("ms")
        ax.set_title(f"{name} latency per transaction")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, os.path.join(out, "tpcc_latency.png"))

    fig, ax = plt.subplots(figsize=(9, 4.8))
    for e in engines:
        pts = [(float(p["second"]), float(p["tpm"])) for p in timeline if p["engine"] == e and p["iteration"] == "1"]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", color=COLORS.get(e), label=label(e))
    ax.set_xlabel("seconds into the measured run")
    ax.set_ylabel("TPM")
    ax.set_ylim(bottom=0)
    ax.set_title("TPM over time")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, os.path.join(out, "tpcc_tpm_timeline.png"))


if __name__ == "__main__":
    main()
