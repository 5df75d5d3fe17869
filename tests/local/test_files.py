"""Every file the library writes is opened alike: the local engine's database, the memory
tool's store and sidecar, and the MCP write ledger (cortex_memory.local.files).

Each case runs on each kind of file: created owner-only, never through a symbolic link,
a file that is not theirs refused by a ``ConfigError`` naming it and left byte for byte
as it was, a group-readable file warned about, a path that cannot be encoded refused.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import sys
import warnings
from pathlib import Path
from typing import Callable, Dict, Iterator, List

import pytest

from cortex_memory import ConfigError, EngineError, LocalEngine, StoreItem
from cortex_memory.local.files import APP_IDS, InsecureFileWarning, use_wal
from cortex_memory.local.schema import SCHEMA_VERSION
from cortex_memory.tools import LocalMemoryStore
from cortex_memory.tools.mcp import Ledger
from cortex_memory.tools.memory.sidecar import Sidecar

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes and links")


def _engine(path: str) -> None:
    engine = LocalEngine(path)
    try:
        engine.store(StoreItem.document("a note"))
    finally:
        engine.close()


def _store(path: str) -> None:
    store = LocalMemoryStore(path)
    try:
        store.put("a note")
    finally:
        store.close()


def _sidecar(path: str) -> None:
    sidecar = Sidecar(path)
    try:
        sidecar.start(("ns", 1), 0)
    finally:
        sidecar.close()


def _ledger(path: str) -> None:
    ledger = Ledger(path)
    try:
        ledger.start_session("s1")
    finally:
        ledger.close()


#: Open the file at a path as its kind and write one thing, then close it.
OPENERS: Dict[str, Callable[[str], None]] = {
    "local database": _engine,
    "local memory store": _store,
    "memory sidecar": _sidecar,
    "write ledger": _ledger,
}
KINDS = list(OPENERS)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)  # a common umask: SQLite's own files would be world-readable
    yield
    os.umask(old)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _names(folder: Path) -> List[str]:
    return sorted(os.listdir(folder))


# -- creation ---------------------------------------------------------------------------


@posix_only
def test_new_files_folders_and_companions_are_owner_only(
    kind: str, tmp_path: Path, umask: None
) -> None:
    path = tmp_path / "new" / "deeper" / "memory.sqlite3"
    opener = OPENERS[kind]
    opener(str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in (path.parent, path.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # Companions exist while a connection is open: hold one and write.
    reader = sqlite3.connect(path)
    try:
        reader.execute("SELECT count(*) FROM sqlite_master").fetchone()
        opener(str(path))
        for suffix in ("-wal", "-shm"):
            companion = Path(str(path) + suffix)
            assert companion.exists(), suffix
            assert stat.S_IMODE(companion.stat().st_mode) == 0o600, suffix
    finally:
        reader.close()
    assert sqlite3.connect(path).execute("PRAGMA application_id").fetchone()[0] == APP_IDS[kind]


@posix_only
def test_a_dangling_link_is_refused_and_nothing_is_created(kind: str, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "target.sqlite3"
    target.parent.mkdir()
    link = tmp_path / "memory.sqlite3"
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="symbolic link to a missing file") as caught:
        OPENERS[kind](str(link))
    assert str(link) in caught.value.message
    assert not target.exists()
    assert _names(target.parent) == []
    assert _names(tmp_path) == ["elsewhere", "memory.sqlite3"]


@posix_only
def test_a_link_to_an_existing_file_is_followed(kind: str, tmp_path: Path, umask: None) -> None:
    real = tmp_path / "real" / "memory.sqlite3"
    OPENERS[kind](str(real))
    link = tmp_path / "link.sqlite3"
    link.symlink_to(real)
    OPENERS[kind](str(link))
    # SQLite keeps its companions next to the real file, never next to the link.
    assert _names(tmp_path) == ["link.sqlite3", "real"]


@posix_only
@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_linked_companion_is_refused(kind: str, tmp_path: Path, suffix: str) -> None:
    path = tmp_path / "memory.sqlite3"
    OPENERS[kind](str(path))
    planted = tmp_path / "planted"
    Path(str(path) + suffix).symlink_to(planted)
    with pytest.raises(ConfigError, match="is a symbolic link; SQLite would write through it"):
        OPENERS[kind](str(path))
    assert not planted.exists()


def test_a_folder_is_refused(kind: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder") as caught:
        OPENERS[kind](str(tmp_path))
    assert str(tmp_path) in caught.value.message


@posix_only
def test_a_file_where_the_folder_should_be_is_an_engine_error(kind: str, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(EngineError):
        OPENERS[kind](str(blocker / "memory.sqlite3"))
    assert blocker.read_text() == "not a folder"


# -- permissions ---------------------------------------------------------------------------


@posix_only
def test_a_file_others_can_read_is_warned_about_and_used(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    OPENERS[kind](str(path))
    os.chmod(path, 0o644)
    with pytest.warns(InsecureFileWarning, match="can be read or written by other accounts") as got:
        OPENERS[kind](str(path))
    assert str(path) in str(got[0].message)
    assert "0644" in str(got[0].message)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # the library never changes it
    os.chmod(path, 0o600)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OPENERS[kind](str(path))


# -- files that are not theirs -------------------------------------------------------------


def test_a_file_that_is_not_a_database_is_left_unchanged(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"my notes, not a database\n" * 100)
    os.chmod(path, 0o600)
    before = _digest(path)
    with pytest.raises(ConfigError, match="is not a SQLite database") as caught:
        OPENERS[kind](str(path))
    assert str(path) in caught.value.message
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)
    assert _digest(path) == before
    assert _names(tmp_path) == ["notes.txt"]


def _foreign(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    conn.commit()
    conn.close()
    os.chmod(path, 0o600)


def test_another_applications_database_is_left_unchanged(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite3"
    _foreign(path)
    before = _digest(path)
    with pytest.raises(ConfigError, match="another application's SQLite database") as caught:
        OPENERS[kind](str(path))
    assert str(path) in caught.value.message
    assert _digest(path) == before
    assert _names(tmp_path) == ["app.sqlite3"]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


@pytest.mark.parametrize("pragma", ["user_version = 7", "application_id = 1234"])
def test_an_empty_database_stamped_by_another_application_is_refused(
    kind: str, tmp_path: Path, pragma: str
) -> None:
    path = tmp_path / "app.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA {pragma}")
    conn.close()
    before = _digest(path)
    with pytest.raises(ConfigError, match="another application's"):
        OPENERS[kind](str(path))
    assert _digest(path) == before


def test_another_kind_of_cortex_memory_file_is_refused(kind: str, tmp_path: Path) -> None:
    other = KINDS[(KINDS.index(kind) + 1) % len(KINDS)]
    path = tmp_path / "memory.sqlite3"
    OPENERS[other](str(path))
    before = _digest(path)
    with pytest.raises(ConfigError, match=f"is a cortex_memory {other}, not a {kind}"):
        OPENERS[kind](str(path))
    assert _digest(path) == before


def test_a_newer_file_of_the_same_kind_is_refused(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    OPENERS[kind](str(path))
    conn = sqlite3.connect(path)
    newer = conn.execute("PRAGMA user_version").fetchone()[0] + 1
    conn.execute(f"PRAGMA user_version = {newer}")
    conn.close()
    with pytest.raises(EngineError, match=f"schema version {newer}"):
        OPENERS[kind](str(path))


# Tables each kind wrote before files carried an application id.
_LEGACY = {
    "local memory store": (
        "CREATE TABLE memories (id INTEGER PRIMARY KEY AUTOINCREMENT, version INTEGER NOT NULL, "
        "content TEXT NOT NULL, created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL, "
        "last_scanned_at_ms INTEGER, scan_count INTEGER NOT NULL DEFAULT 0, "
        "last_used_at_ms INTEGER, use_count INTEGER NOT NULL DEFAULT 0, "
        "probation_until_ms INTEGER)"
    ),
    "memory sidecar": (
        "CREATE TABLE memory_usage (namespace TEXT NOT NULL, id INTEGER NOT NULL, "
        "last_scanned_at_ms INTEGER, scan_count INTEGER NOT NULL DEFAULT 0, "
        "last_used_at_ms INTEGER, use_count INTEGER NOT NULL DEFAULT 0, "
        "probation_until_ms INTEGER, PRIMARY KEY (namespace, id))"
    ),
    "write ledger": (
        "CREATE TABLE sessions (session_id TEXT PRIMARY KEY, started_at_ms INTEGER NOT NULL);"
        "CREATE TABLE observations (local_id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "item_id TEXT NOT NULL UNIQUE, public_id TEXT NOT NULL UNIQUE, "
        "retired INTEGER NOT NULL DEFAULT 0, created_at_ms INTEGER NOT NULL)"
    ),
}


def test_a_file_from_before_application_ids_is_recognised_and_stamped(
    kind: str, tmp_path: Path
) -> None:
    path = tmp_path / "memory.sqlite3"
    if kind == "local database":
        OPENERS[kind](str(path))  # then take the stamp off: as version 2 wrote it
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA application_id = 0")
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    else:
        conn = sqlite3.connect(path)
        conn.executescript(_LEGACY[kind])
    conn.commit()
    conn.close()
    os.chmod(path, 0o600)
    OPENERS[kind](str(path))
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APP_IDS[kind]
    conn.close()


# -- paths that cannot be used -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["a\0b.sqlite3", "tea \ud800.sqlite3"])
def test_a_path_that_cannot_be_encoded_is_a_config_error(
    kind: str, tmp_path: Path, name: str
) -> None:
    path = os.path.join(str(tmp_path), name)
    with pytest.raises(ConfigError, match=r"holds a NUL character|cannot be encoded") as caught:
        OPENERS[kind](path)
    assert "\\x00" in caught.value.message or "\\ud800" in caught.value.message
    assert _names(tmp_path) == []


@posix_only
def test_an_undecodable_file_name_is_a_path_like_any_other(kind: str, tmp_path: Path) -> None:
    # Bytes that are not UTF-8 arrive as surrogate escapes (os.fsdecode): they are fine.
    name = os.fsdecode(b"caf\xe9.sqlite3")
    OPENERS[kind](os.path.join(str(tmp_path), name))
    assert os.fsencode(name) in os.listdir(os.fsencode(str(tmp_path)))


@pytest.mark.parametrize("kind", KINDS[1:])
def test_an_empty_path_is_refused_by_the_tool_files(kind: str) -> None:
    with pytest.raises(ConfigError, match="path must not be empty"):
        OPENERS[kind]("")


# -- the WAL switch waits --------------------------------------------------------------------------


def test_the_wal_switch_retries_while_another_connection_holds_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    slept: List[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            holder.execute("COMMIT")  # the holder lets go while the switch waits

    assert use_wal(conn, 5.0, sleep=sleep) == "wal"
    assert slept[:3] == [0.001, 0.002, 0.004]
    conn.close()
    holder.close()


def test_the_wal_switch_gives_up_once_its_time_is_spent(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            use_wal(conn, 0.05)
    finally:
        conn.close()
        holder.close()
