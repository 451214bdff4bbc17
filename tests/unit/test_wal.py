"""The WAL reader keeps what SQLite would recover: committed frames whose checksums hold, up to the
first that does not."""

import shutil
import sqlite3
from pathlib import Path

from synapse.index import wal


def logged_database(folder: Path, transactions: int) -> Path:
    """A WAL-mode database whose log holds `transactions` commits (never checkpointed)."""
    path = folder / "db.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.setconfig(sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, True)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.execute("CREATE TABLE t (x TEXT)")
    for n in range(transactions):
        db.execute("INSERT INTO t VALUES (?)", (f"row {n} " + "x" * 3000,))
    db.close()
    return path


def pages_seen(path: Path) -> int:
    """The database's size in pages as SQLite reads it (base and log)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(db.execute("PRAGMA page_count").fetchone()[0])
    finally:
        db.close()


def test_a_log_reads_as_every_committed_page_and_the_database_size(tmp_path: Path) -> None:
    # Given a database with three commits in its log
    path = logged_database(tmp_path, 3)
    # When its log is read
    log = wal.read_log(Path(f"{path}-wal"))
    # Then it names each page once, with the size of the last commit
    assert log is not None and log.page_size == 4096
    assert set(log.pages) == set(range(1, log.database_pages + 1))


def test_a_frame_whose_checksum_fails_ends_the_log_there(tmp_path: Path) -> None:
    # Given a log of four commits whose third commit's frame is corrupted
    path = logged_database(tmp_path, 4)
    whole = wal.read_log(Path(f"{path}-wal"))
    log_path = Path(f"{path}-wal")
    data = bytearray(log_path.read_bytes())
    frame = wal.FRAME_HEADER + 4096
    third_insert = wal.HEADER + frame * 4  # schema, then one insert a frame or so: past two commits
    data[third_insert + wal.FRAME_HEADER + 100] ^= 0xFF
    log_path.write_bytes(bytes(data))
    # When it is read
    cut = wal.read_log(log_path)
    # Then the log ends before the corrupted frame, as SQLite reads it
    assert whole is not None and cut is not None
    assert cut.database_pages < whole.database_pages
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(path, copy / "db.sqlite")
    shutil.copy(log_path, copy / "db.sqlite-wal")
    assert pages_seen(copy / "db.sqlite") == cut.database_pages


def test_no_log_or_a_foreign_file_reads_as_none(tmp_path: Path) -> None:
    assert wal.read_log(tmp_path / "missing-wal") is None
    (tmp_path / "junk-wal").write_bytes(b"not a log" * 10)
    assert wal.read_log(tmp_path / "junk-wal") is None
