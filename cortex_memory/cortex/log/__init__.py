"""The event log as the engine sees it (engine.md §8).

:class:`Log` (``read.py``) lists pages, walks scopes, lists scopes and sends
recall and answer calls; ``write.py`` writes events (Direct single or bulk,
hosted one per request with outcome-unknown recovery); ``visibility.py`` waits
until a write is listed and settled; ``forget.py`` forgets events by id;
``notes.py`` logs what recall packs report.
"""

from __future__ import annotations

from cortex_memory.cortex.log.read import Event, Log, Page, event_id

__all__ = ["Event", "Log", "Page", "event_id"]
