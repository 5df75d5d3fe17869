"""``CortexEngine`` and its operation flows (engine.md §9).

One module per operation (``store``, ``listing``, ``fetch``, ``recall``,
``forget``, ``explore``, ``beliefs``, ``consolidate``, ``health``) over shared
helpers: :mod:`.context` (the state every operation receives), :mod:`.scopes`
(which scopes a call touches), :mod:`.items` (items by id), :mod:`.fanout`,
:mod:`.recency` and :mod:`.cursor`. :mod:`.core` holds the engine class.
"""

from __future__ import annotations

from typing import List

__all__: List[str] = []
