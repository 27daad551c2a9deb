"""Transactions: context manager, isolation levels, conflicts, savepoints."""
import pytest

import tidesdb
from tidesdb import Isolation


def test_commit_on_success(db):
    with db.transaction() as t:
        t.put(b"a", b"1")
        assert t.get(b"a") == b"1"  # own write visible
        assert db.get(b"a") is None  # not yet committed
    assert t.finished
    assert db.get(b"a") == b"1"


def test_rollback_on_exception(db):
    with pytest.raises(KeyError):
        with db.transaction() as t:
            t.put(b"a", b"1")
            raise KeyError("boom")
    assert t.finished
    assert db.get(b"a") is None


def test_explicit_commit_inside_block(db):
    with db.transaction() as t:
        t.put(b"x", b"1")
        t.commit()
    assert db.get(b"x") == b"1"
    with pytest.raises(tidesdb.InvalidArgumentError):
        with t:
            pass


def test_delete_and_cf(db):
    cf = db.create_column_family("t")
    db.put(b"d", b"v", cf=cf)
    with db.transaction() as t:
        assert t.get(b"d", cf=cf) == b"v"
        t.delete(b"d", cf=cf)
        assert t.get(b"d", cf=cf) is None
        t.put(b"e", b"w", cf=cf)
    assert db.get(b"d", cf=cf) is None and db.get(b"e", cf=cf) == b"w"


def test_snapshot_isolation_conflict(db):
    db.put(b"k", b"0")
    t1 = db.transaction(isolation=Isolation.SNAPSHOT)
    t2 = db.transaction(isolation=Isolation.SNAPSHOT)
    t1.put(b"k", b"1")
    t2.put(b"k", b"2")
    t1.commit()
    with pytest.raises(tidesdb.ConflictError) as ei:
        t2.commit()
    assert ei.value.code == -5
    assert db.get(b"k") == b"1"


def test_repeatable_read_vs_read_committed(db):
    db.put(b"k", b"0")
    rr = db.transaction(isolation=Isolation.REPEATABLE_READ)
    rc = db.transaction(isolation=Isolation.READ_COMMITTED)
    assert rr.get(b"k") == b"0" and rc.get(b"k") == b"0"
    db.put(b"k", b"1")
    assert rr.get(b"k") == b"0"  # snapshot taken at begin
    assert rc.get(b"k") == b"1"  # latest committed
    rr.rollback()
    rc.rollback()


def test_serializable_read_validation(db):
    db.put(b"r", b"0")
    t = db.transaction(isolation=Isolation.SERIALIZABLE)
    assert t.get(b"r") == b"0"
    t.put(b"w", b"1")
    db.put(b"r", b"changed")  # what t read changed after its snapshot
    with pytest.raises(tidesdb.ConflictError):
        t.commit()
    assert db.get(b"w") is None


def test_all_isolation_levels_commit(db):
    for iso in Isolation:
        with db.transaction(isolation=iso) as t:
            t.put(b"iso%d" % iso, b"v")
        assert db.get(b"iso%d" % iso) == b"v"


def test_read_only_and_get_for_update(db):
    db.put(b"a", b"1")
    with db.transaction(read_only=True) as t:
        assert t.get(b"a") == b"1"
        with pytest.raises(tidesdb.InvalidArgumentError):
            t.put(b"a", b"2")
    with db.transaction(pessimistic=True, lock_timeout_ms=100) as t:
        assert t.get_for_update(b"a") == b"1"
        assert t.get_for_update(b"missing", exclusive=False) is None
        other = db.transaction(pessimistic=True, lock_timeout_ms=50)
        with pytest.raises((tidesdb.TimedOutError, tidesdb.ConflictError)):
            other.put(b"a", b"x")
        other.rollback()


def test_savepoints(db):
    with db.transaction() as t:
        t.put(b"a", b"1")
        t.savepoint("sp")
        t.put(b"b", b"2")
        t.rollback_to_savepoint("sp")
        assert t.get(b"b") is None
        t.savepoint("sp2")
        t.release_savepoint("sp2")
        with pytest.raises(tidesdb.TidesDBError):
            t.rollback_to_savepoint("nope")
    assert db.get(b"a") == b"1" and db.get(b"b") is None


def test_txn_iterator(db):
    for i in range(5):
        db.put(b"k%d" % i, b"db")
    with db.transaction() as t:
        t.put(b"k2", b"txn")
        t.put(b"k9", b"txn")
        t.delete(b"k0")
        items = list(t.iterator())
        assert items == [(b"k1", b"db"), (b"k2", b"txn"), (b"k3", b"db"), (b"k4", b"db"),
                         (b"k9", b"txn")]
        assert [k for k, _ in t.iterator(reverse=True, start=b"k2", stop=b"k9")] == \
            [b"k4", b"k3", b"k2"]
        it = t.iterator()
        with pytest.raises(tidesdb.InvalidArgumentError):
            t.iterator(snapshot=db.snapshot())
    # The transaction ended: its iterator was released with it.
    with pytest.raises(tidesdb.ClosedError):
        next(it)


def test_finished_txn_refuses_work(db):
    t = db.transaction()
    t.put(b"a", b"1")
    t.rollback()
    with pytest.raises(tidesdb.TidesDBError):
        t.put(b"b", b"2")
    with pytest.raises(tidesdb.InvalidArgumentError):
        t.iterator()


def test_bad_isolation(db):
    with pytest.raises(tidesdb.InvalidArgumentError):
        db.transaction(isolation=42)
    with pytest.raises(TypeError):
        db.transaction(isolation="snapshot")
