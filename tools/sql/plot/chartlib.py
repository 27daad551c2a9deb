"""What the chart scripts of the SQL suite share: one colour and one label
per engine (the same in every chart), reading result CSVs, and saving a
figure. Imported by sqlbench.py, tpcc.py and iibench.py from this folder."""
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401  (re-exported)

COLORS = {"TidesDB": "#1f77b4", "InnoDB": "#d62728", "RocksDB": "#2ca02c"}
LABELS = {"RocksDB": "MyRocks"}


def label(engine):
    """The engine's name in charts: RocksDB is MyRocks."""
    return LABELS.get(engine, engine)


def read_csv(path):
    """The rows of a CSV file with a header, as dicts."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ordered(values):
    """The distinct values in first-seen order."""
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def save(fig, path, title=None):
    """Lay out, write as PNG and close."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
