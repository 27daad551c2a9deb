#!/usr/bin/env python3
"""Check a bench_targets.sh results directory against TideSQL's speed
targets (issue #16) and write <dir>/targets.md and <dir>/targets.csv.

Each target is a ratio between engines measured in the same part of the
run (same settings, same machine, one after the other): TidesDB over
InnoDB or MyRocks for throughput, the peer over TidesDB for latency and
time, so that "higher is better" everywhere. A part that did not run or
failed makes its targets "not measured", never met.

Usage: bench_targets.py DIR
"""
import csv
import glob
import os
import re
import statistics
import sys

PEER = {"InnoDB": "InnoDB", "RocksDB": "MyRocks", "MyRocks": "MyRocks", "TidesDB": "TidesDB"}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def newest(pattern):
    files = sorted(glob.glob(pattern))
    return files[-1] if files else None


def fnum(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


class Checker:
    def __init__(self, d):
        self.dir = d
        self.out = []  # (target, part, threshold, measured, status, detail)

    def add(self, target, part, need, got, detail=""):
        """need: minimum ratio; got: measured ratio or None."""
        if got is None:
            status = "not measured"
            shown = "-"
        else:
            status = "met" if got >= need else "MISSED"
            shown = f"{got:.2f}x"
        self.out.append((target, part, f">= {need:g}x", shown, status, detail))

    def pass_dirs(self, part):
        """The part's run directories: pass-1, pass-2, ... when it ran in
        passes (bench_targets.sh --passes), else the part's own."""
        d = os.path.join(self.dir, part)
        passes = sorted(glob.glob(os.path.join(d, "pass-*")), key=lambda p: int(p.rsplit("-", 1)[1]))
        return passes or [d]

    # sqlbench: engine -> (workload, threads) -> median tps / p99 over
    # every pass's iterations
    def sqlbench(self, part):
        files = [f for f in (newest(os.path.join(d, "summary_*.csv")) for d in self.pass_dirs(part)) if f]
        if not files:
            return None
        res = {}
        for r in (r for f in files for r in rows(f)):
            if r.get("error"):
                continue
            eng = PEER.get(r["engine"], r["engine"])
            key = (r["workload"], int(r["threads"]))
            res.setdefault(eng, {}).setdefault(key, []).append(
                (fnum(r["tps"]), fnum(r["p99_ms"]), fnum(r.get("data_bytes")), int(r["table_size"]))
            )
        return {e: {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v),
                        max((x[2] or 0) for x in v), v[0][3]) for k, v in m.items()} for e, m in res.items()}

    @staticmethod
    def ratio(res, peer, key, idx=0, invert=False):
        if not res or "TidesDB" not in res or peer not in res:
            return None
        a, b = res["TidesDB"].get(key), res[peer].get(key)
        if not a or not b or not a[idx] or not b[idx]:
            return None
        return b[idx] / a[idx] if invert else a[idx] / b[idx]

    def cache_bytes(self, part):
        """The TidesDB cache the part ran with, from its preset.txt."""
        p = os.path.join(self.pass_dirs(part)[0], "preset.txt")
        if not os.path.exists(p):
            return None
        m = re.search(r"caches: TidesDB ([0-9.]+) (KiB|MiB|GiB)", open(p).read())
        if not m:
            return None
        return float(m.group(1)) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]

    def rocks_limit(self, part):
        """'MyRocks limited to X, the others to Y' when the part gave MyRocks
        a larger memory limit than the others (its preset.txt), else ''."""
        p = os.path.join(self.pass_dirs(part)[0], "preset.txt")
        if not os.path.exists(p):
            return ""
        m = re.search(r"limited to ([0-9.]+ [KMG]iB) \(page cache included\), MyRocks's to ([0-9.]+ [KMG]iB)", open(p).read())
        return f"MyRocks limited to {m.group(2)}, the others to {m.group(1)}" if m else ""

    def tpcc(self, part):
        d = os.path.join(self.dir, part)
        if not os.path.exists(os.path.join(d, "runs.csv")):
            return None
        res = {}
        for r in rows(os.path.join(d, "runs.csv")):
            if r.get("error"):
                continue
            e = res.setdefault(PEER.get(r["engine"], r["engine"]), {"nopm": [], "build": [], "check": [], "txn": {}})
            e["nopm"].append(fnum(r["nopm"]))
            e["build"].append(fnum(r["build_s"]))
            e["check"].append(r.get("check", ""))
            e["data"] = max(e.get("data", 0), fnum(r.get("data_bytes")) or 0)
        if os.path.exists(os.path.join(d, "transactions.csv")):
            for r in rows(os.path.join(d, "transactions.csv")):
                eng = PEER.get(r["engine"], r["engine"])
                if eng in res and not r["txn"].endswith("_ERR"):
                    res[eng]["txn"].setdefault(r["txn"], []).append(fnum(r["p99_ms"]))
        for e in res.values():
            e["nopm"] = statistics.median(x for x in e["nopm"] if x is not None) if e["nopm"] else None
            e["build"] = statistics.median(x for x in e["build"] if x is not None) if e["build"] else None
            e["txn"] = {t: statistics.median(v) for t, v in e["txn"].items() if v}
        return res


def main(d):
    c = Checker(d)
    for dur in ("relaxed", "durable"):
        # In memory: read_write and point_select >= 1.0x InnoDB at 1, 2, 8
        # threads; insert and write_only >= 1.5x InnoDB (8 threads).
        part = f"mem-{dur}"
        res = c.sqlbench(part)
        for wl in ("oltp_read_write", "oltp_point_select"):
            for th in (1, 2, 8):
                c.add(f"{wl} vs InnoDB, {th} thread{'s' if th > 1 else ''}, in memory", part, 1.0,
                      c.ratio(res, "InnoDB", (wl, th)))
        for wl in ("oltp_insert", "oltp_write_only"):
            c.add(f"{wl} vs InnoDB, 8 threads, in memory", part, 1.5, c.ratio(res, "InnoDB", (wl, 8)))
        # Data >= 8x the cache, 8 threads.
        part = f"big-{dur}"
        res = c.sqlbench(part)
        cache = c.cache_bytes(part)
        for wl, need in (("oltp_insert", 3.0), ("oltp_write_only", 2.0)):
            detail, got = "", c.ratio(res, "InnoDB", (wl, 8))
            if res and "TidesDB" in res and (wl, 8) in res["TidesDB"] and cache:
                datas = {e: m[(wl, 8)][2] for e, m in res.items() if (wl, 8) in m}
                detail = "data/cache " + ", ".join(f"{e} {v / cache:.1f}x" for e, v in sorted(datas.items()) if v)
                if datas["TidesDB"] < 8 * cache:  # not the regime the target is about
                    got, detail = None, detail + ": TidesDB's data under 8x its cache, not this regime"
            c.add(f"{wl} vs InnoDB, 8 threads, data >= 8x cache", part, need, got, detail)
        # TPC-C.
        for part, big in ((f"tpcc_big-{dur}", True), (f"tpcc_mem-{dur}", False)):
            t = c.tpcc(part)
            ok = t and "TidesDB" in t
            tid = t["TidesDB"] if ok else None
            inn = t.get("InnoDB") if t else None
            myr = t.get("MyRocks") if t else None
            checks = "; ".join(f"check {e}: {'/'.join(v['check'])}" for e, v in sorted((t or {}).items()))

            def nopm(peer):
                return tid["nopm"] / peer["nopm"] if tid and peer and tid["nopm"] and peer["nopm"] else None

            regime = "data >= 8x cache" if big else "in memory"
            cache = c.cache_bytes(part)
            if big and tid and cache and tid["data"] < 8 * cache:  # not the regime the target is about
                checks += f"; TidesDB's data {tid['data'] / cache:.1f}x its cache, under 8x: not this regime"
                tid = None
            if big:
                c.add(f"TPC-C NOPM vs InnoDB, 8 users, {regime}", part, 3.0, nopm(inn), checks)
                c.add(f"TPC-C NOPM vs MyRocks, 8 users, {regime}", part, 1.5, nopm(myr), c.rocks_limit(part))
                no = None
                if tid and inn and tid["txn"].get("NEW_ORDER") and inn["txn"].get("NEW_ORDER"):
                    no = inn["txn"]["NEW_ORDER"] / tid["txn"]["NEW_ORDER"]
                c.add(f"TPC-C New-Order p99 <= 1/3 of InnoDB's (InnoDB p99 / TidesDB p99), {regime}", part, 3.0, no)
                bt = tid["build"] / inn["build"] if tid and inn and tid["build"] and inn["build"] else None
                c.add(f"schema build time <= InnoDB's (InnoDB s / TidesDB s), {regime}", part, 1.0,
                      1 / bt if bt else None,
                      f"TidesDB {tid['build']:.0f} s, InnoDB {inn['build']:.0f} s" if bt else "")
            else:
                c.add(f"TPC-C NOPM vs InnoDB, 8 users, {regime}", part, 1.2, nopm(inn), checks)
            for txn in ("NEW_ORDER", "PAYMENT", "ORDER_STATUS", "DELIVERY", "STOCK_LEVEL"):
                r = None
                if tid and inn and tid["txn"].get(txn) and inn["txn"].get(txn):
                    r = inn["txn"][txn] / tid["txn"][txn]
                c.add(f"TPC-C {txn} p99 <= InnoDB's (InnoDB p99 / TidesDB p99), {regime}", part, 1.0, r,
                      f"{tid['txn'][txn]:.1f} vs {inn['txn'][txn]:.1f} ms" if r else "")
    # Sustained: every later window's NOPM >= 90% of the first window's.
    tl = os.path.join(d, "sustained", "timeline.csv")
    got, detail = None, ""
    if os.path.exists(tl):
        win = float(open(os.path.join(d, "sustained", "window_minutes")).read()) * 60 \
            if os.path.exists(os.path.join(d, "sustained", "window_minutes")) else 300
        pts = [(fnum(r["second"]), fnum(r["nopm"])) for r in rows(tl) if PEER.get(r["engine"]) == "TidesDB"]
        pts = [p for p in pts if p[0] is not None and p[1] is not None]
        wins = {}
        for s, n in pts:
            wins.setdefault(int((s - 1e-9) // win), []).append(n)
        if len(wins) >= 2:
            means = [statistics.mean(wins[k]) for k in sorted(wins)]
            got = min(means[1:]) / means[0]
            detail = f"{win / 60:g}-minute windows, NOPM " + ", ".join(f"{m:.0f}" for m in means)
    c.add("sustained TPC-C: every window >= 90% of the first (worst window / first)", "sustained", 0.9, got, detail)
    # Library head-to-head.
    lib = os.path.join(d, "lib", "lib.csv")
    if os.path.exists(lib):
        by = {}
        for r in rows(lib):
            if r.get("ok", "1") != "1":
                continue
            by.setdefault(r["workload"], {})[r["engine"]] = fnum(r["ops_per_sec"])
        for wl, m in by.items():
            t = m.get("tidesdb")
            c.add(f"library {wl} vs LevelDB", "lib", 1.0, t / m["leveldb"] if t and m.get("leveldb") else None)
            c.add(f"library {wl} vs RocksDB", "lib", 2.0, t / m["rocksdb"] if t and m.get("rocksdb") else None)
    else:
        c.add("library head-to-head (every workload) vs LevelDB", "lib", 1.0, None)

    met = sum(1 for x in c.out if x[4] == "met")
    missed = sum(1 for x in c.out if x[4] == "MISSED")
    none = sum(1 for x in c.out if x[4] == "not measured")
    head = open(os.path.join(d, "run.txt")).read().strip() if os.path.exists(os.path.join(d, "run.txt")) else ""
    with open(os.path.join(d, "targets.md"), "w") as f:
        f.write("# TideSQL speed targets (issue #16)\n\n")
        if head:
            f.write("```\n" + head + "\n```\n\n")
        f.write(f"{met} met, {missed} missed, {none} not measured.\n\n")
        f.write("| target | part | need | measured | status | detail |\n|---|---|---|---|---|---|\n")
        for x in c.out:
            f.write("| " + " | ".join(x) + " |\n")
    with open(os.path.join(d, "targets.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["target", "part", "need", "measured", "status", "detail"])
        w.writerows(c.out)
    print(open(os.path.join(d, "targets.md")).read())
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: bench_targets.py RESULTS_DIR (made by scripts/bench_targets.sh)")
    sys.exit(main(sys.argv[1]))
