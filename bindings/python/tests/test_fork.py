"""After fork() the child must not use the parent's database (the library's
threads do not exist there): every call raises InvalidArgumentError, and
closing or dropping the handles in the child neither hangs nor touches the
parent's state."""
import os
import signal
import time

import tidesdb


def wait_child(pid, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError("child hung")


def test_fork_child_cannot_use_parents_db(db):
    db.put(b"k", b"v")
    it = db.iterator()
    snap = db.snapshot()
    txn = db.transaction()
    batch = db.batch()
    pid = os.fork()
    if pid == 0:  # child: report through the exit code only
        code = 0
        try:
            db.get(b"k")
            code = 1
        except tidesdb.InvalidArgumentError as e:
            code = 0 if "fork" in str(e) else 2
        except BaseException:
            code = 3
        try:
            for call in (lambda: next(it), lambda: txn.put(b"a", b"b"),
                         lambda: db.write(batch), lambda: snap.get(b"k")):
                try:
                    call()
                    code = code or 4
                except tidesdb.InvalidArgumentError:
                    pass
            del it
            db.close()  # must neither hang nor call into the library
            code = code or (0 if db.closed else 5)
        except BaseException:
            code = code or 6
        os._exit(code)
    status = wait_child(pid)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    # The parent's handles are untouched.
    assert db.get(b"k") == b"v"
    assert next(it) == (b"k", b"v")
    assert snap.get(b"k") == b"v"
    txn.put(b"t", b"1")
    txn.commit()
    assert db.get(b"t") == b"1"
