"""Crash test: a child process writes at sync FULL and reports each write
once the call returned (acknowledged); the parent kills it with SIGKILL
mid-stream and reopens the database: every acknowledged key must be there
with its value. Three rounds on one database, so recovery of a recovered
database is exercised too."""
import os
import signal
import subprocess
import sys
import textwrap

import tidesdb

CHILD = textwrap.dedent("""
    import sys
    import tidesdb
    path, rnd = sys.argv[1], int(sys.argv[2])
    db = tidesdb.open(path, sync_mode=tidesdb.SyncMode.FULL, write_buffer_size=256 << 10,
                      log_level=tidesdb.LogLevel.WARN)
    cf = db.create_column_family("c%d" % rnd)
    out = sys.stdout
    i = 0
    while True:
        key = b"r%d-%07d" % (rnd, i)
        val = key * 3
        if i % 3 == 0:
            db.put(key, val)
        elif i % 3 == 1:
            with db.batch() as b:
                b.put(key, val)
                b.put(key, val, cf=cf)
        else:
            with db.transaction() as t:
                t.put(key, val)
        out.write("%d\\n" % i)
        out.flush()
        i += 1
""")


def run_round(path, rnd, acks_before_kill):
    p = subprocess.Popen([sys.executable, "-c", CHILD, path, str(rnd)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    acked = []
    while len(acked) < acks_before_kill:
        line = p.stdout.readline()
        if not line:
            raise AssertionError("child died early: %s" % p.stderr.read().decode())
        acked.append(int(line))
    os.kill(p.pid, signal.SIGKILL)
    # Lines already in the pipe were written after their write returned.
    rest = p.stdout.read()
    acked += [int(x) for x in rest.split()]
    p.wait()
    p.stdout.close()
    p.stderr.close()
    assert p.returncode == -signal.SIGKILL
    return acked


def test_kill9_keeps_acknowledged_writes(tmp_path):
    path = str(tmp_path / "crashdb")
    history = []
    for rnd in range(3):
        acked = run_round(path, rnd, 150 + 50 * rnd)
        history.append((rnd, acked))
        with tidesdb.open(path) as db:
            for r, keys in history:
                cf = db.get_column_family("c%d" % r)
                for i in keys:
                    key = b"r%d-%07d" % (r, i)
                    assert db.get(key) == key * 3, (r, i)
                    if i % 3 == 1:
                        assert db.get(key, cf=cf) == key * 3, (r, i)
                # No hole and nothing invented: the round's keys are exactly
                # 0..m-1, where m counts the acknowledged writes plus at most
                # the one in flight when the child was killed.
                present = [int(k.split(b"-")[1]) for k, _ in db.iterator(prefix=b"r%d-" % r)]
                assert present == list(range(len(present)))
                assert len(keys) <= len(present) <= len(keys) + 1
