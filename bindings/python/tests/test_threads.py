"""Several threads writing and reading one database (the GIL is released
around library calls), plus misuse of one iterator from two threads."""
import threading
import time

import tidesdb

THREADS = 4
PER_THREAD = 3000


def test_concurrent_writers_and_readers(db):
    cf = db.create_column_family("mt")
    errors = []
    barrier = threading.Barrier(THREADS * 2)

    def writer(t):
        try:
            barrier.wait()
            for i in range(PER_THREAD):
                key = b"t%d-%06d" % (t, i)
                if i % 10 == 0:
                    with db.batch() as b:
                        b.put(key, key * 2)
                        b.put(key, key * 2, cf=cf)
                else:
                    db.put(key, key * 2)
                    db.put(key, key * 2, cf=cf)
                if i % 500 == 0:
                    with db.transaction() as txn:
                        txn.put(b"txn-t%d-%d" % (t, i), b"x")
        except Exception as e:  # reported by the main thread
            errors.append(e)

    def reader(t):
        try:
            barrier.wait()
            seen = 0
            for round_ in range(30):
                # Whatever a reader finds must be a complete, correct value.
                for k, v in db.iterator(prefix=b"t%d-" % t):
                    assert v == k * 2
                    seen += 1
                for i in range(0, PER_THREAD, 97):
                    key = b"t%d-%06d" % (t, i)
                    v = db.get(key)
                    assert v is None or v == key * 2
        except Exception as e:
            errors.append(e)

    ts = [threading.Thread(target=writer, args=(t,)) for t in range(THREADS)]
    ts += [threading.Thread(target=reader, args=(t,)) for t in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    for t in range(THREADS):
        got = list(db.iterator(prefix=b"t%d-" % t))
        assert len(got) == PER_THREAD
        assert all(v == k * 2 for k, v in got)
        assert len(list(db.iterator(cf=cf, prefix=b"t%d-" % t))) == PER_THREAD
    assert len(list(db.iterator(prefix=b"txn-"))) == THREADS * (PER_THREAD // 500)


def test_close_waits_for_running_calls(db_path):
    db = tidesdb.open(db_path, sync_mode=tidesdb.SyncMode.NONE)
    stop = threading.Event()
    outcomes = {"ok": 0, "closed": 0, "other": []}

    def hammer(t):
        i = 0
        while not stop.is_set():
            try:
                db.put(b"h%d-%d" % (t, i), b"v")
                db.get(b"h%d-%d" % (t, i))
                outcomes["ok"] += 1
            except tidesdb.ClosedError:
                outcomes["closed"] += 1
                return
            except Exception as e:
                outcomes["other"].append(e)
                return
            i += 1

    ts = [threading.Thread(target=hammer, args=(t,)) for t in range(3)]
    for t in ts:
        t.start()
    while outcomes["ok"] < 200:
        pass
    db.close()  # must not free the handle under a running call
    stop.set()
    for t in ts:
        t.join()
    assert not outcomes["other"], outcomes["other"]
    assert outcomes["closed"] == 3


def test_iterator_shared_by_threads(db):
    for i in range(1000):
        db.put(b"%05d" % i, b"v" * 100)
    it = db.iterator()
    results = []

    def consume():
        n = 0
        while True:
            try:
                next(it)
                n += 1
            except StopIteration:
                break
            except tidesdb.InvalidArgumentError:  # in use by another thread
                continue
        results.append(n)

    ts = [threading.Thread(target=consume) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    # Together the threads saw each key exactly once, and nothing crashed.
    assert sum(results) == 1000


def test_object_in_use_by_another_thread_is_refused(db):
    db.put(b"locked", b"0")
    holder = db.transaction(pessimistic=True)
    holder.put(b"locked", b"1")  # takes the row lock
    waiter = db.transaction(pessimistic=True, lock_timeout_ms=10000)
    outcome = []

    def blocked_put():
        try:
            waiter.put(b"locked", b"2")  # waits for the lock, GIL released
            outcome.append("ok")
        except tidesdb.TidesDBError as e:
            outcome.append(e)

    t = threading.Thread(target=blocked_put)
    t.start()
    refused = None
    deadline = time.time() + 10
    while refused is None and time.time() < deadline:
        try:
            waiter.get(b"other")
            time.sleep(0.01)  # the thread has not started waiting yet
        except tidesdb.InvalidArgumentError as e:
            refused = e
    waiter.cancel_wait()  # the one call allowed on a busy transaction
    t.join()
    holder.commit()
    assert refused is not None and "in use by another thread" in str(refused)
    assert isinstance(outcome[0], tidesdb.AbortedError), outcome
    waiter.rollback()


def test_concurrent_close_returns_once_closed(db_path):
    db = tidesdb.open(db_path, sync_mode=tidesdb.SyncMode.NONE)
    for i in range(1000):
        db.put(b"c%d" % i, b"v" * 100)
    seen = []

    def closer():
        db.close()
        seen.append(db.closed)  # no close() returns before the db is closed

    ts = [threading.Thread(target=closer) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert seen == [True] * 4
    with tidesdb.open(db_path) as again:
        assert again.get(b"c999") == b"v" * 100


def test_close_wakes_a_lock_wait(db_path):
    db = tidesdb.open(db_path)
    holder = db.transaction(pessimistic=True)
    holder.put(b"locked", b"1")
    waiter = db.transaction(pessimistic=True, lock_timeout_ms=30000)
    outcome = []

    def blocked_put():
        try:
            waiter.put(b"locked", b"2")
            outcome.append("ok")
        except tidesdb.TidesDBError as e:
            outcome.append(e)

    t = threading.Thread(target=blocked_put)
    t.start()
    deadline = time.time() + 10
    while time.time() < deadline:  # until the thread is inside the wait
        try:
            waiter.get(b"x")
            time.sleep(0.01)
        except tidesdb.InvalidArgumentError:
            break
    t0 = time.time()
    db.close()  # must not wait out the 30 s lock timeout
    t.join()
    assert time.time() - t0 < 10
    assert isinstance(outcome[0], tidesdb.AbortedError), outcome
    assert holder.finished and waiter.finished
