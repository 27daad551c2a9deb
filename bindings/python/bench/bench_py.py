"""The Python side of the binding's overhead benchmark: the same workload
as bench_c.c (same keys, order, values and settings) through tidesdb.
Also prints `loop`: the same two loops calling a no-op, i.e. what the
interpreter alone costs per operation.
usage: python bench_py.py DIR NUM [VALUE_SIZE]"""
import sys
import time

import tidesdb

M64 = (1 << 64) - 1
POOL = 1024


def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def key(i):
    return i.to_bytes(8, "big") + b"0" * 8


def clock():
    # Wall time and the calling thread's CPU time, as bench_c.c measures.
    return time.monotonic(), time.thread_time()


def main():
    path, num = sys.argv[1], int(sys.argv[2])
    vsize = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    state, chunks = 301, []
    for _ in range((POOL * vsize + 7) // 8):
        state, r = splitmix(state)
        chunks.append(r.to_bytes(8, "little"))
    pool = memoryview(b"".join(chunks))
    values = [pool[j * vsize:(j + 1) * vsize] for j in range(POOL)]  # no copies
    fill = [key((i * 1000003) % num) for i in range(num)]
    read = [key((i * 7919 + 13) % num) for i in range(num)]

    def report(name, t0, t1):
        print("%s %.4f %.4f" % (name, (t1[0] - t0[0]) * 1e6 / num, (t1[1] - t0[1]) * 1e6 / num))

    def noop(*a):
        return None

    t0 = clock()
    for i, k in enumerate(fill):
        noop(k, values[i & (POOL - 1)])
    for k in read:
        noop(k)
    report("loop", t0, clock())

    db = tidesdb.open(path, sync_mode=tidesdb.SyncMode.NONE, log_level=tidesdb.LogLevel.WARN)
    put, get = db.put, db.get
    t0 = clock()
    for i, k in enumerate(fill):
        put(k, values[i & (POOL - 1)])
    report("fillrandom", t0, clock())
    db.flush()
    db.wait_idle()
    found = 0
    t0 = clock()
    for k in read:
        if get(k) is not None:
            found += 1
    report("readrandom", t0, clock())
    db.close()
    if found != num:
        sys.exit("bench_py: found %d of %d keys" % (found, num))


if __name__ == "__main__":
    main()
