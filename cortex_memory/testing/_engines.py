"""Engines wired to the doubles with test timings, and the shared sample items (doubles.md §2.2).

Imported lazily by ``double.engine()``: importing :mod:`cortex_memory.testing`
does not load the engine.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from cortex_memory.contract.items import StoreItem
    from cortex_memory.cortex.engine.core import CortexEngine
    from cortex_memory.credential import BearerSource
    from cortex_memory.testing._server import BaseDouble

__all__ = [
    "TEST_POLL",
    "TEST_TOKEN",
    "TEST_VISIBILITY",
    "both_doubles",
    "engine_for",
    "sample_items",
]

TEST_TOKEN = "tiny_live_test"  # noqa: S105 - the doubles' public test bearer, not a secret
"""The bearer of every engine the harness builds."""

TEST_VISIBILITY = 2.0
"""The visibility and settle budget (seconds) of harness engines."""

TEST_POLL = 0.005
"""The poll gap and read-retry backoff (seconds) of harness engines."""


def engine_for(
    double: BaseDouble,
    *,
    visibility: float = TEST_VISIBILITY,
    token: str = TEST_TOKEN,
    source: Optional[BearerSource] = None,
    **options: Any,
) -> CortexEngine:
    """An engine on ``double`` with test timings; closed when the double closes.

    Direct: ``CortexEngine.direct(url, EngineCredential.static(token))``; hosted:
    ``CortexEngine.tinyhumans(url, source or EngineCredential.static(token))``. Polls and
    read backoff are 5 ms; visibility, settle and hosted write recovery take
    ``visibility`` seconds. ``options`` override any :class:`~cortex_memory.cortex.Timing` field.
    """
    from cortex_memory.cortex.engine.core import CortexEngine
    from cortex_memory.cortex.timing import Timing
    from cortex_memory.credential import EngineCredential

    fields = {
        "poll_interval": TEST_POLL,
        "read_backoff": TEST_POLL,
        "visibility": visibility,
        "settle": visibility,
        "recovery": visibility,
    }
    fields.update(options)
    timing = Timing(**fields)
    credential = EngineCredential.static(token)
    if double.hosted:
        engine = CortexEngine.tinyhumans(
            double.url, source if source is not None else credential, timing=timing
        )
    else:
        engine = CortexEngine.direct(double.url, credential, timing=timing)
    double._on_close.append(engine.close)
    return engine


@contextlib.contextmanager
def both_doubles(**knobs: Any) -> Iterator[List[Tuple[CortexEngine, BaseDouble]]]:
    """``[(direct_engine, direct_double), (hosted_engine, hosted_double)]`` on fresh doubles.

    Each keyword sets a knob on both doubles. The hosted double's rate window is
    off (``rate_limit_requests=None``) unless a knob sets it.
    """
    from cortex_memory.testing._direct import DirectDouble
    from cortex_memory.testing._hosted import HostedDouble

    hosted_knobs: Dict[str, Any] = {"rate_limit_requests": None}
    hosted_knobs.update(knobs)
    with DirectDouble(**knobs) as direct, HostedDouble(**hosted_knobs) as hosted:
        yield [(direct.engine(), direct), (hosted.engine(), hosted)]


def sample_items() -> List[StoreItem]:
    """A titled document, a three-turn conversation and a learning (5 events in all)."""
    from cortex_memory.contract.content import LearningKind, Role, TextBody, Turn
    from cortex_memory.contract.items import Conversation, Document, Learning
    from cortex_memory.contract.meta import MemoryMeta

    return [
        Document(
            TextBody("Rust ownership moves values."),
            "Ownership",
            None,
            MemoryMeta(thread_id="t-doc"),
        ),
        Conversation(
            (
                Turn(Role.USER, "which editor do I use"),
                Turn(Role.ASSISTANT, "you use helix"),
                Turn(Role.USER, "right, helix"),
            ),
            MemoryMeta(thread_id="t-chat"),
        ),
        Learning(
            "prefers helix", LearningKind.PREFERENCE, 0.8, None, MemoryMeta(thread_id="t-learn")
        ),
    ]
