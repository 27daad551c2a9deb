"""TidesDB for Python: an embeddable, durable, ordered key-value store.

    import tidesdb
    with tidesdb.open("/tmp/db", sync_mode=tidesdb.SyncMode.FULL) as db:
        db.put(b"k", b"v")
        assert db.get(b"k") == b"v"

Keys and values are bytes in and bytes out (any contiguous buffer is
accepted without a copy). Every library error raises a subclass of
TidesDBError whose .code is the TDB_ERR_* code. The binding is a C
extension over include/tidesdb/tidesdb.h; docs/design/bindings-python.md.
"""
import enum

from ._tidesdb import (  # noqa: F401  (re-exported API)
    DB,
    ColumnFamily,
    Iterator,
    Snapshot,
    Transaction,
    WriteBatch,
    TidesDBError,
    NotFoundError,
    IoError,
    CorruptionError,
    BusyError,
    ConflictError,
    InvalidArgumentError,
    LockedError,
    NoMemoryError,
    ExistsError,
    ClosedError,
    ReadOnlyError,
    NoSpaceError,
    DeadlockError,
    TimedOutError,
    TooLargeError,
    NotSupportedError,
    AbortedError,
    errors_by_code,
    strerror,
    MAX_KEY_SIZE,
    MAX_VALUE_SIZE,
    LIBRARY_VERSION_MAJOR,
    LIBRARY_VERSION_MINOR,
    LIBRARY_VERSION_PATCH,
)

__version__ = "%d.%d.%d" % (LIBRARY_VERSION_MAJOR, LIBRARY_VERSION_MINOR,
                            LIBRARY_VERSION_PATCH)


class SyncMode(enum.IntEnum):
    """tdb_sync_mode_t: when a write's WAL record is fsynced."""
    NONE = 0
    INTERVAL = 1
    FULL = 2


class Compression(enum.IntEnum):
    """tdb_compression_t."""
    NONE = 0
    SNAPPY = 1
    LZ4 = 2
    ZSTD = 3


class LogLevel(enum.IntEnum):
    """tdb_log_level_t (messages go to <dir>/LOG)."""
    DEBUG = 0
    INFO = 1
    WARN = 2
    ERROR = 3
    FATAL = 4
    NONE = 99


class Isolation(enum.IntEnum):
    """tdb_isolation_t (docs/design/txn.md has the anomaly table)."""
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1
    REPEATABLE_READ = 2
    SNAPSHOT = 3
    SERIALIZABLE = 4


DEFAULT_CF = "default"


def open(path, **options):  # noqa: A001  (mirrors tdb_open)
    """Open (creating if missing) the database in directory `path`.

    Options are the fields of tdb_config_t (create_if_missing,
    block_cache_size, flush_threads, log_level, ...) and of the default
    column family's tdb_cf_config_t (write_buffer_size, sync_mode,
    compression, bloom_fpr, ...). Returns a DB, which is a context manager.
    """
    return DB(path, **options)


__all__ = [name for name in dir() if not name.startswith("_") and name != "enum"]
