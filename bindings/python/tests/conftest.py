import pytest

import tidesdb


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "db")


@pytest.fixture
def db(db_path):
    # Small settings so tests are fast; NONE sync: durability is tested
    # separately (test_crash.py).
    d = tidesdb.open(db_path, sync_mode=tidesdb.SyncMode.NONE, log_level=tidesdb.LogLevel.WARN,
                     block_cache_size=4 << 20, write_buffer_size=1 << 20)
    yield d
    d.close()
