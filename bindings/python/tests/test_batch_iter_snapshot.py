"""Write batches, iterators (forward, reverse, seek, ranges, prefix), snapshots."""
import pytest

import tidesdb


def fill(db, n=100, cf=None):
    with db.batch() as b:
        for i in range(n):
            b.put(b"k%03d" % i, b"v%03d" % i, cf=cf)


def test_batch_atomic_and_context(db):
    other = db.create_column_family("other")
    b = db.batch()
    b.put(b"a", b"1")
    b.put(b"b", b"2", cf=other)
    b.delete(b"zz")
    assert len(b) == 3
    assert db.get(b"a") is None  # nothing applied yet
    db.write(b)
    assert db.get(b"a") == b"1" and db.get(b"b", cf=other) == b"2"
    b.clear()
    assert len(b) == 0
    b.put(b"c", b"3")
    b.write()
    assert db.get(b"c") == b"3"
    # An exception inside the block discards the batch.
    with pytest.raises(RuntimeError):
        with db.batch() as b2:
            b2.put(b"never", b"x")
            raise RuntimeError("boom")
    assert db.get(b"never") is None
    with db.batch() as b3:
        b3.delete_range(b"a", b"c")
        b3.single_delete(b"c")
    assert db.get(b"a") is None and db.get(b"c") is None
    with pytest.raises(TypeError):
        b3.put("s", b"v")
    with pytest.raises(TypeError):
        db.write("not a batch")


def test_batch_later_ops_win(db):
    with db.batch() as b:
        b.put(b"k", b"1")
        b.put(b"k", b"2")
    assert db.get(b"k") == b"2"


def test_iter_forward_reverse(db):
    fill(db)
    items = list(db.iterator())
    assert items == [(b"k%03d" % i, b"v%03d" % i) for i in range(100)]
    rev = list(db.iterator(reverse=True))
    assert rev == items[::-1]
    assert list(db) == items  # DB.__iter__


def test_iter_ranges(db):
    fill(db)
    keys = lambda it: [k for k, _ in it]  # noqa: E731
    assert keys(db.iterator(start=b"k010", stop=b"k015")) == [b"k%03d" % i for i in range(10, 15)]
    assert keys(db.iterator(start=b"k010", stop=b"k015", reverse=True)) == \
        [b"k%03d" % i for i in range(14, 9, -1)]
    assert keys(db.iterator(start=b"k095")) == [b"k%03d" % i for i in range(95, 100)]
    assert keys(db.iterator(stop=b"k003")) == [b"k000", b"k001", b"k002"]
    assert keys(db.iterator(stop=b"k003", reverse=True)) == [b"k002", b"k001", b"k000"]
    assert keys(db.iterator(start=b"k0105", stop=b"k012")) == [b"k011"]
    assert keys(db.iterator(start=b"z")) == []
    assert keys(db.iterator(prefix=b"k05")) == [b"k%03d" % i for i in range(50, 60)]
    assert keys(db.iterator(prefix=b"k05", reverse=True)) == \
        [b"k%03d" % i for i in range(59, 49, -1)]
    with pytest.raises(tidesdb.InvalidArgumentError):
        db.iterator(prefix=b"k", start=b"a")


def test_prefix_with_ff_bytes(db):
    db.put(b"\xff\xff", b"1")
    db.put(b"\xff\xff\x01", b"2")
    db.put(b"\xfe", b"0")
    assert [k for k, _ in db.iterator(prefix=b"\xff")] == [b"\xff\xff", b"\xff\xff\x01"]


def test_iter_seek(db):
    fill(db)
    it = db.iterator()
    it.seek(b"k050")
    assert next(it) == (b"k050", b"v050")
    assert next(it)[0] == b"k051"
    it.seek(b"k0705")  # between keys: the next one up
    assert next(it)[0] == b"k071"
    it.seek_to_last()
    assert next(it)[0] == b"k099"
    with pytest.raises(StopIteration):
        next(it)
    it.seek_to_first()  # a finished iterator can be repositioned
    assert next(it)[0] == b"k000"

    rit = db.iterator(reverse=True, start=b"k020", stop=b"k030")
    rit.seek(b"k0255")  # reverse: the last key <= target
    assert [k for k, _ in rit] == [b"k%03d" % i for i in range(25, 19, -1)]
    rit.seek(b"k999")  # clamped to the range
    assert next(rit)[0] == b"k029"
    rit.seek_to_first()
    assert next(rit)[0] == b"k020"
    fit = db.iterator(start=b"k020", stop=b"k030")
    fit.seek(b"k000")  # clamped to start
    assert next(fit)[0] == b"k020"
    with pytest.raises(TypeError):
        fit.seek("k")


def test_iter_sees_point_in_time(db):
    fill(db, 10)
    it = db.iterator()
    db.put(b"k005x", b"new")
    db.delete(b"k000")
    assert [k for k, _ in it] == [b"k%03d" % i for i in range(10)]


def test_iter_close_and_context(db):
    fill(db, 5)
    with db.iterator() as it:
        assert next(it)[0] == b"k000"
    with pytest.raises(tidesdb.ClosedError):
        next(it)
    it2 = db.iterator()
    it2.close()
    it2.close()


def test_iter_column_family_and_flushed_data(db):
    cf = db.create_column_family("cf2")
    fill(db, 500, cf=cf)
    db.flush(cf)
    fill(db, 10)
    assert len(list(db.iterator(cf=cf))) == 500
    assert len(list(db.iterator())) == 10


def test_snapshot(db):
    db.put(b"a", b"old")
    with db.snapshot() as snap:
        assert snap.sequence > 0
        db.put(b"a", b"new")
        db.put(b"b", b"added")
        assert db.get(b"a") == b"new"
        assert db.get(b"a", snapshot=snap) == b"old"
        assert snap.get(b"a") == b"old"
        assert snap.get(b"b") is None
        assert list(db.iterator(snapshot=snap)) == [(b"a", b"old")]
        assert list(snap.iterator()) == [(b"a", b"old")]
    with pytest.raises(tidesdb.ClosedError):
        db.get(b"a", snapshot=snap)
    snap.release()  # idempotent


def test_snapshot_of_another_db(tmp_path, db):
    with tidesdb.open(str(tmp_path / "o")) as other:
        s = other.snapshot()
        with pytest.raises(tidesdb.InvalidArgumentError):
            db.get(b"a", snapshot=s)
