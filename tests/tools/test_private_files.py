"""The tools' own SQLite files hold memory and write metadata: they are created owner-only."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from cortex_memory.tools import LocalMemoryStore
from cortex_memory.tools.mcp import Ledger

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")


@posix_only
def test_new_tool_databases_and_their_folders_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)  # a typical umask that would make SQLite's own files world-readable
    try:
        store = LocalMemoryStore(tmp_path / "new-folder" / "memory.sqlite3")
        ledger = Ledger(tmp_path / "other-folder" / "ledger.sqlite3")
    finally:
        os.umask(old)
    try:
        for path in (tmp_path / "new-folder" / "memory.sqlite3",
                     tmp_path / "other-folder" / "ledger.sqlite3"):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
            assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700, path.parent
    finally:
        store.close()
        ledger.close()


@posix_only
def test_an_unusable_folder_is_an_engine_error_without_a_traceback_type(tmp_path: Path) -> None:
    from cortex_memory import EngineError

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(EngineError, match="could not be opened"):
        Ledger(blocker / "ledger.sqlite3")
