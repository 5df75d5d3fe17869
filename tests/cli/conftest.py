"""Run ``cortex-memory`` in-process with its own environment and streams.

Every run gets an environment whose home, XDG folders and ``CORTEX_MEMORY_HOME``
point into the test's tmp folder, so nothing touches the real home and no
credential from the developer's shell leaks in.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Optional

import pytest

from cortex_memory.cli import main


@dataclass
class Result:
    """One command run: exit status and what it wrote."""

    status: int
    out: str
    err: str


class _Stdin(io.StringIO):
    def __init__(self, text: str, tty: bool) -> None:
        super().__init__(text)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


Runner = Callable[..., Result]


def isolated_env(root: Path) -> Dict[str, str]:
    """An environment with every per-user location inside ``root``."""
    return {
        "HOME": str(root / "home"),
        "USERPROFILE": str(root / "home"),
        "XDG_DATA_HOME": str(root / "xdg-data"),
        "XDG_CONFIG_HOME": str(root / "xdg-config"),
        "LOCALAPPDATA": str(root / "appdata"),
        "CORTEX_MEMORY_HOME": str(root / "cm-home"),
    }


@pytest.fixture
def env(tmp_path: Path) -> Dict[str, str]:
    """The isolated environment commands run with (tests may edit it)."""
    return isolated_env(tmp_path)


@pytest.fixture
def process_env(tmp_path: Path) -> Dict[str, str]:
    """The environment for a real ``cortex-memory`` process: this one's, minus any
    ``CORTEX_MEMORY_*`` variable, with every per-user location in the tmp folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORTEX_MEMORY_")}
    env.update(isolated_env(tmp_path / "process"))
    env["PYTHONIOENCODING"] = "utf-8"
    return env


@pytest.fixture
def cli(env: Dict[str, str]) -> Runner:
    """``cli("list", "--json")`` → :class:`Result`; ``stdin=`` feeds input, ``tty=True``
    makes stdin look like a terminal."""

    def run(*argv: str, stdin: str = "", tty: bool = False,
            environ: Optional[Dict[str, str]] = None) -> Result:
        out, err = io.StringIO(), io.StringIO()
        status = main(
            list(argv),
            env=env if environ is None else environ,
            stdin=_Stdin(stdin, tty),
            stdout=out,
            stderr=err,
        )
        return Result(status, out.getvalue(), err.getvalue())

    return run
