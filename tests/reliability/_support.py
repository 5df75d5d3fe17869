"""Shared pieces of the reliability suite: canaries, fast engines, seeding and log audits.

Every engine this suite builds on a double carries :data:`CANARY_TOKEN`, and the
items it stores carry :data:`CANARY_CONTENT` and canary local paths, so the
session-wide check in ``conftest.py`` (no canary in any log record) covers every
test here, the fault matrix included. :func:`check_requests` is the matching
check of what reached a double: the token only in ``Authorization``, no local
folder or absolute path anywhere.
"""

from __future__ import annotations

import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from cortex_memory import (
    Conversation,
    Document,
    Learning,
    LearningKind,
    MemoryMeta,
    Role,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.cortex import StaticBearer
from cortex_memory.cortex.envelope import (
    decode_event,
    encode_checked,
    envelopes,
    experience_request,
    scope_path,
)
from cortex_memory.testing import sample_items

__all__ = [
    "CANARY_CONTENT",
    "CANARY_PATHS",
    "CANARY_TOKEN",
    "PATH_FRAGMENTS",
    "LogAudit",
    "audit",
    "check_requests",
    "engine_on",
    "new_items",
    "seed",
    "seed_beliefs",
]

CANARY_TOKEN = "ctx_canary_reliability_0c4f1e9a"  # a canary, not a secret
"""The bearer of every engine in this suite: it may appear only in ``Authorization``."""

CANARY_CONTENT = "canary-content-3b7d51"
"""Memory content that must never reach a log record above DEBUG."""

CANARY_PATHS = (
    "/home/canary-user/secret-project/file.md",
    "C:\\Users\\canary\\x.txt",
    "~/canary/notes/plan.md",
)
"""Absolute local paths items carry; only their file names may leave the machine."""

PATH_FRAGMENTS = (
    "canary-user",
    "secret-project",
    "Users\\canary",
    "Users\\\\canary",  # as JSON escapes it
    "~/canary",
    "canary/notes",
    "/home/",
)
"""Pieces of :data:`CANARY_PATHS` above the file name: none may appear in a request."""

# Short enough that no cell of the matrix waits long; long enough for a loaded 2-core box.
FAST_TIMING: Dict[str, float] = {
    "request_timeout": 0.4,
    "connect_timeout": 0.4,
    "settle": 0.2,
    "hosted_poll_ceiling": 0.02,
    "max_pause": 0.05,
}
VISIBILITY = 0.6


def engine_on(double: Any, **timing: float) -> Any:
    """An engine on ``double`` with the canary token and fast timings (closed with the double)."""
    fields: Dict[str, Any] = dict(FAST_TIMING)
    fields.update(timing)
    visibility = fields.pop("visibility", VISIBILITY)
    if double.hosted:
        return double.engine(visibility=visibility, source=StaticBearer(CANARY_TOKEN), **fields)
    return double.engine(visibility=visibility, token=CANARY_TOKEN, **fields)


def new_items() -> List[StoreItem]:
    """Three items not in :func:`sample_items`: canary content, canary local paths."""
    return [
        Document(
            TextBody(f"Green tea is brewed at 80 degrees. {CANARY_CONTENT}"),
            "Tea",
            None,
            MemoryMeta(
                thread_id="t-tea",
                workspace="/home/canary-user/secret-project",
                folder="/home/canary-user/secret-project",
                file_path=CANARY_PATHS[0],
            ),
        ),
        Conversation(
            (
                Turn(Role.USER, f"how hot for green tea {CANARY_CONTENT}"),
                Turn(Role.ASSISTANT, "about 80 degrees"),
                Turn(Role.USER, "thanks, 80 it is"),
            ),
            MemoryMeta(thread_id="t-tea-chat", file_path=CANARY_PATHS[1]),
        ),
        Learning(
            f"drinks green tea {CANARY_CONTENT}",
            LearningKind.PREFERENCE,
            0.7,
            None,
            MemoryMeta(thread_id="t-tea-learn", workspace="~/canary", file_path=CANARY_PATHS[2]),
        ),
    ]


def seed(double: Any, items: Optional[Sequence[StoreItem]] = None) -> List[str]:
    """Append ``items`` (default: :func:`sample_items`) to the double's log, indexed at once.

    The bodies are exactly what the engine writes, so reads see them as the
    engine's own items. Returns their ids.
    """
    chosen = list(sample_items() if items is None else items)
    state = double.state
    with state.lock:
        for item in chosen:
            for env in envelopes(item):
                body = experience_request(env, encode_checked(env)).to_json()
                state.log.append(
                    body, indexed_at=0.0, allowed_scope_types=None, size_counts_role_prefix=True
                )
    return [item.fingerprint() for item in chosen]


def seed_beliefs(double: Any, item: StoreItem) -> None:
    """Build the double's beliefs for the scope holding ``item`` (as a past build would)."""
    path = scope_path(item.meta.namespace, item.item_kind)
    state = double.state
    with state.lock:
        state.log.build_beliefs(path, state.clock())


@dataclass
class LogAudit:
    """What the double's log holds, item by item."""

    parts: Dict[str, Counter] = field(default_factory=dict)  # id -> Counter(part -> events)
    expected: Dict[str, int] = field(default_factory=dict)  # id -> parts the item has
    foreign: int = 0  # events that are not ours
    event_ids: Tuple[str, ...] = ()

    @property
    def duplicates(self) -> Dict[str, List[Any]]:
        """Ids with some part written more than once, and those parts."""
        out = {}
        for item_id, counts in self.parts.items():
            doubled = sorted((p for p, n in counts.items() if n > 1), key=repr)
            if doubled:
                out[item_id] = doubled
        return out

    def complete(self, item_id: str) -> bool:
        """True when every part of the item is held exactly once."""
        counts = self.parts.get(item_id)
        if not counts:
            return False
        want = self.expected[item_id]
        if want <= 1:
            return sum(counts.values()) == 1
        return sorted(counts) == list(range(want)) and all(n == 1 for n in counts.values())

    def holds(self, item_id: str) -> bool:
        """True when any event of the item is held."""
        return item_id in self.parts

    def incomplete(self) -> List[str]:
        """Ids held only in part."""
        return sorted(i for i in self.parts if not self.complete(i))


def audit(state: Any) -> LogAudit:
    """Decode every event the double holds and group them by item and part."""
    out = LogAudit()
    with state.lock:
        events = list(state.log.events)
    ids = []
    for event in events:
        ids.append(str(event.get("id")))
        env = decode_event(event)
        if env is None:
            out.foreign += 1
            continue
        part = env.part()
        out.parts.setdefault(env.id, Counter())[part] += 1
        whole = 1
        if env.turn is not None:
            whole = env.turn.count
        elif env.chunk is not None:
            whole = env.chunk.count
        out.expected[env.id] = max(out.expected.get(env.id, 0), whole)
    out.event_ids = tuple(ids)
    return out


def _decoded(text: str) -> str:
    return urllib.parse.unquote(text)


def check_requests(state: Any, token: str = CANARY_TOKEN) -> List[str]:
    """What a double received that breaks the secrecy rules; empty when all is well.

    The token may appear only in ``Authorization``; no request line (raw or
    percent-decoded), other header or body may name a local folder or absolute path.
    """
    problems: List[str] = []
    with state.lock:
        lines = list(state.seen.requests)
        headers = [dict(h) for h in state.seen.headers]
        bodies = list(state.seen.bodies)
    for line in lines:
        for text in (line, _decoded(line)):
            if token in text:
                problems.append(f"token in request line {line[:80]!r}")
            problems.extend(f"path {frag!r} in a request line" for frag in _found(text))
    for sent in headers:
        for name, value in sent.items():
            if name != "authorization" and token in value:
                problems.append(f"token in header {name}")
            if name != "authorization":
                problems.extend(f"path {frag!r} in header {name}" for frag in _found(value))
    for body in bodies:
        text = body.decode("utf-8", "replace")
        if token in text:
            problems.append("token in a request body")
        problems.extend(f"path {frag!r} in a request body" for frag in _found(text))
    return sorted(set(problems))


def _found(text: str) -> Iterable[str]:
    return [frag for frag in PATH_FRAGMENTS if frag in text]
