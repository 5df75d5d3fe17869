"""Where the CortexDB credentials used to live; they are in :mod:`cortex_memory.credential`.

One credential type now serves every engine: :class:`~cortex_memory.EngineCredential`
(``static(key)`` or ``dynamic(source)``). The names here keep older imports
working: ``BearerSource`` and ``StaticBearer`` are the same objects, and
``CortexCredential`` (deprecated since 0.2.0) is ``EngineCredential`` itself, so
``isinstance`` checks keep passing either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cortex_memory._deprecation import moved_names
from cortex_memory.credential import (
    CORTEX_CREDENTIAL_MOVED,
    BearerSource,
    EngineCredential,
    StaticBearer,
)

__all__ = ["BearerSource", "EngineCredential", "StaticBearer"]

_MOVED = {"CortexCredential": CORTEX_CREDENTIAL_MOVED}

if TYPE_CHECKING:
    from cortex_memory.credential import EngineCredential as CortexCredential  # noqa: F401
else:
    __getattr__ = moved_names(__name__, _MOVED)
