"""Open/close, options, point reads and writes, errors, column families."""
import array
import os

import pytest

import tidesdb


def test_put_get_delete(db):
    db.put(b"k1", b"v1")
    assert db.get(b"k1") == b"v1"
    db.put(b"k1", b"v2")
    assert db.get(b"k1") == b"v2"
    db.delete(b"k1")
    assert db.get(b"k1") is None
    assert db.get(b"absent") is None


def test_empty_value_is_not_missing(db):
    db.put(b"k", b"")
    assert db.get(b"k") == b""
    assert b"k" in db


def test_mapping_protocol(db):
    db[b"a"] = b"1"
    assert db[b"a"] == b"1"
    assert b"a" in db and b"b" not in db
    del db[b"a"]
    with pytest.raises(KeyError):
        db[b"a"]


def test_buffer_protocol_inputs(db):
    db.put(bytearray(b"ba"), memoryview(b"mv-value"))
    assert db.get(memoryview(b"ba")) == b"mv-value"
    arr = array.array("B", [1, 2, 3])
    db.put(arr, arr)
    assert db.get(bytes([1, 2, 3])) == bytes([1, 2, 3])
    big = os.urandom(1 << 20)
    db.put(b"big", big)
    got = db.get(b"big")
    assert isinstance(got, bytes) and got == big


def test_binary_keys_and_values(db):
    k = bytes(range(256))
    v = b"\x00" * 1000 + b"\xff"
    db.put(k, v)
    assert db.get(k) == v


def test_bad_types(db):
    with pytest.raises(TypeError):
        db.put("str-key", b"v")
    with pytest.raises(TypeError):
        db.put(b"k", "str-value")
    with pytest.raises(TypeError):
        db.get(123)
    with pytest.raises(TypeError):
        db.put(b"k", b"v", cf="default")
    with pytest.raises(TypeError):
        db.put(b"k", b"v", ttl="1")
    with pytest.raises(TypeError):
        db.put(b"k")
    with pytest.raises(TypeError):
        db.put(b"k", b"v", bogus=1)
    with pytest.raises(TypeError):
        db.get(b"k", snapshot=object())


def test_invalid_argument_carries_code(db):
    with pytest.raises(tidesdb.InvalidArgumentError) as ei:
        db.put(b"", b"v")  # keys are 1..MAX_KEY_SIZE bytes
    e = ei.value
    assert e.code == -6 and isinstance(e, tidesdb.TidesDBError) and isinstance(e, ValueError)
    assert tidesdb.errors_by_code[-6] is tidesdb.InvalidArgumentError
    assert tidesdb.strerror(e.code) in str(e)
    with pytest.raises(tidesdb.TooLargeError) as ei:
        db.put(b"x" * (tidesdb.MAX_KEY_SIZE + 1), b"v")
    assert ei.value.code == -15 and "65537" in ei.value.detail


def test_error_classes_cover_every_code():
    for code in range(-1, -18, -1):
        cls = tidesdb.errors_by_code[code]
        assert issubclass(cls, tidesdb.TidesDBError) and cls.code == code


def test_closed_db_and_use_after_close(db_path):
    db = tidesdb.open(db_path)
    db.put(b"k", b"v")
    cf = db.create_column_family("c")
    it = db.iterator()
    snap = db.snapshot()
    txn = db.transaction()
    batch = db.batch()
    db.close()
    assert db.closed
    db.close()  # idempotent
    for call in (lambda: db.put(b"k", b"v"), lambda: db.get(b"k"), lambda: db.delete(b"k"),
                 lambda: db.flush(), lambda: db.iterator(), lambda: db.snapshot(),
                 lambda: db.transaction(), lambda: db.stats(), lambda: next(it),
                 lambda: txn.put(b"a", b"b"), lambda: txn.get(b"a"), lambda: txn.commit(),
                 lambda: batch.put(b"a", b"b"), lambda: db.write(batch),
                 lambda: snap.get(b"k"), lambda: cf.config(), lambda: db.batch()):
        with pytest.raises(tidesdb.ClosedError) as ei:
            call()
        assert ei.value.code == -10
    with pytest.raises(tidesdb.ClosedError):
        with db:
            pass
    # The data survived the close.
    with tidesdb.open(db_path) as db2:
        assert db2.get(b"k") == b"v"


def test_context_manager_closes(db_path):
    with tidesdb.open(db_path) as db:
        db.put(b"a", b"1")
    assert db.closed
    with tidesdb.open(db_path) as db:
        assert db.get(b"a") == b"1"


def test_locked_by_another_handle(db_path):
    with tidesdb.open(db_path):
        with pytest.raises(tidesdb.LockedError) as ei:
            tidesdb.open(db_path)
        assert ei.value.code == -7


def test_options(db_path):
    with pytest.raises(TypeError):
        tidesdb.open(db_path, no_such_option=1)
    with pytest.raises(TypeError):
        tidesdb.open(db_path, write_buffer_size="big")
    with pytest.raises(tidesdb.NotFoundError):
        tidesdb.open(db_path, create_if_missing=False)
    with tidesdb.open(db_path, compression=tidesdb.Compression.ZSTD, bloom_fpr=0.05,
                      sync_mode=tidesdb.SyncMode.INTERVAL, sync_interval_us=50000,
                      block_size=8192, flush_threads=1, compaction_threads=1,
                      max_memory_usage=256 << 20, mmap_reads=0) as db:
        cfg = db.get_column_family("default").config()
        assert cfg["compression"] == tidesdb.Compression.ZSTD
        assert cfg["sync_mode"] == tidesdb.SyncMode.INTERVAL
        assert cfg["block_size"] == 8192 and cfg["sync_interval_us"] == 50000
        assert abs(cfg["bloom_fpr"] - 0.05) < 1e-9
    with pytest.raises(tidesdb.ExistsError):
        tidesdb.open(db_path, error_if_exists=True)


def test_ttl(db):
    db.put(b"t", b"v", ttl=3600)
    assert db.get(b"t") == b"v"


def test_delete_range_and_single_delete(db):
    for i in range(10):
        db.put(b"k%d" % i, b"v")
    db.delete_range(b"k2", b"k5")
    assert [k for k, _ in db.iterator()] == [b"k0", b"k1", b"k5", b"k6", b"k7", b"k8", b"k9"]
    db.single_delete(b"k9")
    assert db.get(b"k9") is None
    with pytest.raises(tidesdb.InvalidArgumentError):
        db.delete_range(b"z", b"a")


def test_column_families(db):
    assert db.list_column_families() == ["default"]
    users = db.create_column_family("users", write_buffer_size=1 << 20,
                                    compression=tidesdb.Compression.NONE)
    assert users.name == "users"
    assert users.config()["compression"] == tidesdb.Compression.NONE
    with pytest.raises(tidesdb.ExistsError):
        db.create_column_family("users")
    db.put(b"k", b"in-users", cf=users)
    db.put(b"k", b"in-default")
    assert db.get(b"k", cf=users) == b"in-users"
    assert db.get(b"k") == b"in-default"
    assert sorted(db.list_column_families()) == ["default", "users"]
    again = db.get_column_family("users")
    assert db.get(b"k", cf=again) == b"in-users"
    with pytest.raises(tidesdb.NotFoundError):
        db.get_column_family("nope")
    db.drop_column_family("users")
    assert db.list_column_families() == ["default"]
    with pytest.raises(tidesdb.TidesDBError):
        db.put(b"k", b"v", cf=users)
    with pytest.raises(tidesdb.InvalidArgumentError):
        db.drop_column_family("default")


def test_cf_of_another_db(tmp_path, db):
    with tidesdb.open(str(tmp_path / "other")) as other:
        cf = other.create_column_family("x")
        with pytest.raises(tidesdb.InvalidArgumentError):
            db.put(b"k", b"v", cf=cf)


def test_column_families_persist(db_path):
    with tidesdb.open(db_path) as db:
        cf = db.create_column_family("persist")
        db.put(b"a", b"b", cf=cf)
    with tidesdb.open(db_path) as db:
        cf = db.get_column_family("persist")
        assert db.get(b"a", cf=cf) == b"b"


def test_maintenance_and_stats(db, tmp_path):
    for i in range(2000):
        db.put(b"key%06d" % i, b"x" * 100)
    db.flush()
    db.compact()
    db.wait_idle()
    db.sync()
    st = db.stats()
    assert st["user_bytes_written"] >= 2000 * 100
    assert st["flushes"] >= 1
    assert sum(files for files, _ in st["levels"]) >= 1
    assert db.approximate_count() >= 1000
    assert db.approximate_count(start=b"key000000", stop=b"key000100") >= 1
    db.pause_background()
    assert db.stats()["background_paused"] == 1
    db.continue_background()
    seq = db.checkpoint(str(tmp_path / "ckpt"))
    assert seq >= 2000
    with tidesdb.open(str(tmp_path / "ckpt")) as copy:
        assert copy.get(b"key001999") == b"x" * 100
