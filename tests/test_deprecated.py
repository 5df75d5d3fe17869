"""Names deprecated in 0.2.0: each old spelling still works, warns, and is the same object.

The suite runs with every warning as an error (pyproject.toml), so these are the
only tests that may touch an old name, each inside ``pytest.warns``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
import warnings
from pathlib import Path
from typing import List

import pytest

import cortex_memory
from cortex_memory import EngineCredential, build_engine
from cortex_memory._deprecation import Moved
from cortex_memory.config import EngineSettings
from cortex_memory.cortex import CortexEngine
from cortex_memory.errors import ConfigError
from cortex_memory.testing import DirectDouble

MOVED = cortex_memory._MOVED
CANARY = "ctx_canary_deprecated_7f6e5d"


def _new_object(entry: Moved, name: str) -> object:
    return getattr(importlib.import_module(entry.module), entry.name or name)


def _caught(call: object) -> List[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert callable(call)
        call()
    return list(caught)


# -- the names that left the top level ---------------------------------------------------------


def test_the_top_level_is_small_and_the_old_names_are_not_on_it() -> None:
    exported = set(cortex_memory.__all__)
    assert len(exported) < 70  # httpx has 70; the line is drawn in docs/versioning.md
    assert not exported & set(MOVED)
    listed = set(dir(cortex_memory))
    assert not listed & set(MOVED)
    assert exported <= listed


@pytest.mark.parametrize("name", sorted(MOVED))
def test_each_old_name_warns_and_is_the_same_object(name: str) -> None:
    entry = MOVED[name]
    new_path = f"{entry.module}.{entry.name}" if entry.name else f"from {entry.module} import"
    with pytest.warns(DeprecationWarning, match=new_path) as record:
        old = getattr(cortex_memory, name)
    assert old is _new_object(entry, name)
    assert len(record) == 1
    message = str(record[0].message)
    assert f"`cortex_memory.{name}` is deprecated since 0.2.0" in message
    assert "removed in 0.3.0" in message
    assert record[0].filename == __file__  # points at the line that used the name


@pytest.mark.parametrize("name", sorted(MOVED))
def test_each_old_name_is_public_where_it_moved(name: str) -> None:
    entry = MOVED[name]
    assert (entry.name or name) in importlib.import_module(entry.module).__all__


def test_from_import_of_an_old_name_warns_at_the_import_line() -> None:
    from cortex_memory.contract import holds_phone_number

    with pytest.warns(DeprecationWarning, match="cortex_memory.contract") as record:
        from cortex_memory import holds_phone_number as old
    assert old is holds_phone_number
    # The import machinery looks the name up twice (hasattr, then getattr): both
    # warnings name the caller's line, so the default filter shows one.
    assert {(w.filename, w.lineno) for w in record} == {(__file__, record[0].lineno)}


def test_an_unknown_name_is_an_attribute_error_and_no_warning() -> None:
    def look() -> None:
        with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
            cortex_memory.NoSuchName  # type: ignore[attr-defined]  # noqa: B018

    assert _caught(look) == []
    with pytest.raises(ImportError):
        from cortex_memory import NoSuchName  # type: ignore[attr-defined]  # noqa: F401


def test_importing_the_package_and_star_import_never_warn() -> None:
    code = (
        "import cortex_memory, cortex_memory.cortex, cortex_memory.cortex.credential\n"
        "from cortex_memory import *\n"
        "from cortex_memory.cortex import *\n"
        "print(len(cortex_memory.__all__))\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == str(len(cortex_memory.__all__))


def test_type_checkers_see_exactly_the_old_names() -> None:
    # The `if TYPE_CHECKING:` block keeps old imports type-checking for one release;
    # it must list the same names as the runtime table.
    tree = ast.parse(Path(inspect.getfile(cortex_memory)).read_text(encoding="utf-8"))
    block = next(
        node for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    seen = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        for alias in node.names:
            seen[alias.asname or alias.name] = (node.module, alias.name)
    assert set(seen) == set(MOVED)
    for name, entry in MOVED.items():
        module, original = seen[name]
        if entry.module == "cortex_memory":  # a rename: typed from its defining module
            assert original == entry.name
        else:
            assert (module, original) == (entry.module, name)


# -- one credential type: CortexCredential is EngineCredential ----------------------------------


@pytest.mark.parametrize(
    "module", ["cortex_memory", "cortex_memory.cortex", "cortex_memory.cortex.credential"]
)
def test_cortex_credential_is_engine_credential_with_a_warning(module: str) -> None:
    owner = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=r"use `cortex_memory\.EngineCredential`"):
        old = owner.CortexCredential
    assert old is EngineCredential
    assert "CortexCredential" not in getattr(owner, "__all__", [])


def test_the_old_credential_constructors_still_work_and_stay_redacted() -> None:
    with pytest.warns(DeprecationWarning, match="CortexCredential"):
        from cortex_memory.cortex import CortexCredential
    with pytest.warns(DeprecationWarning, match=r"EngineCredential\.static\(key\)") as record:
        static = CortexCredential.api_key(CANARY)
    assert record[0].filename == __file__
    dynamic = CortexCredential.dynamic(EngineCredential.static(CANARY))
    for value in (static, dynamic):
        assert isinstance(value, CortexCredential)
        assert isinstance(value, EngineCredential)
        assert CANARY not in repr(value)
        assert CANARY not in str(value)
        assert "<redacted>" in repr(static)
    assert static.is_static
    assert static.bearer() == CANARY
    assert dynamic.bearer() == CANARY
    assert isinstance(EngineCredential.static("k"), CortexCredential)
    with pytest.warns(DeprecationWarning, match="api_key"), pytest.raises(TypeError):
        CortexCredential.api_key(b"bytes")  # type: ignore[arg-type]


def test_an_old_style_credential_builds_engines() -> None:
    with pytest.warns(DeprecationWarning, match="api_key"):
        key = EngineCredential.api_key(CANARY)
    with DirectDouble(accept_token=CANARY) as double:
        for engine in (
            CortexEngine.direct(double.url, key),
            build_engine("cortexdb", EngineSettings(endpoint=double.url), key),
        ):
            with engine:
                assert engine.health().state == "ok"


def test_cortex_credential_method_warns_and_returns_the_checked_credential() -> None:
    static = EngineCredential.static(CANARY)
    with pytest.warns(DeprecationWarning, match="pass the EngineCredential itself"):
        assert static.cortex_credential("cortexdb") is static
    for missing in (EngineCredential.NONE, EngineCredential.static("  ")):
        with pytest.warns(DeprecationWarning, match="cortex_credential"), pytest.raises(
            ConfigError, match="engine `cortexdb` needs a credential"
        ):
            missing.cortex_credential("cortexdb")
