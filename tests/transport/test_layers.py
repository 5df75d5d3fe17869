"""The transport sits below the wires: nothing in ``cortex/transport/`` imports upwards.

The dependency runs wire → transport (a client is built with a wire and asks
it for its ``Surface``). This walks every transport module's imports, at any
depth in the module (function-level and ``TYPE_CHECKING`` imports count too).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

import cortex_memory.cortex.transport as transport

TRANSPORT = Path(transport.__file__).parent
PACKAGE = "cortex_memory.cortex.transport"

# The layers above the transport, which it must never import.
ABOVE = (
    "cortex_memory.cortex.wire",
    "cortex_memory.cortex.descriptors",
    "cortex_memory.cortex.log",
    "cortex_memory.cortex.engine",
    "cortex_memory.cortex.envelope",
    "cortex_memory.contract",
    "cortex_memory.registry",
    "cortex_memory.local",
    "cortex_memory.tools",
    "cortex_memory.cli",
    "cortex_memory.testing",
)


def _imports(path: Path) -> Iterator[Tuple[int, str]]:
    """Every module ``path`` imports, absolute (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = PACKAGE.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:
                # "from cortex_memory.cortex import wire" imports the module wire.
                yield node.lineno, f"{module}.{alias.name}"


def _upward(module: str) -> bool:
    return any(module == above or module.startswith(above + ".") for above in ABOVE)


def _violations(paths: List[Path]) -> List[str]:
    found = []
    for path in paths:
        for line, module in _imports(path):
            if _upward(module):
                found.append(f"{path.name}:{line} imports {module}")
    return found


def test_no_transport_module_imports_a_layer_above_it() -> None:
    paths = sorted(TRANSPORT.glob("*.py"))
    assert len(paths) > 15  # the walk saw the package
    assert _violations(paths) == []


@pytest.mark.parametrize(
    "source",
    [
        "from cortex_memory.cortex.wire import CortexWire\n",
        "import cortex_memory.cortex.wire\n",
        "from cortex_memory.cortex import wire\n",
        "from .. import wire\n",
        "from ..envelope.codec import x\n",
        "def f():\n    from cortex_memory.cortex.log.read import Log\n",
        "if TYPE_CHECKING:\n    from cortex_memory.cortex.engine import core\n",
    ],
)
def test_the_check_sees_an_upward_import(tmp_path: Path, source: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text(source, encoding="utf-8")
    assert _violations([path])


def test_the_check_allows_the_layers_below() -> None:
    for module in (
        "cortex_memory.errors",
        "cortex_memory.credential",
        "cortex_memory.cortex.timing",
        "cortex_memory.cortex.network",
        "cortex_memory.cortex.transport.surface",
        "urllib3",
    ):
        assert not _upward(module)
