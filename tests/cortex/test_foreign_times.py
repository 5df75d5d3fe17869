"""Events another writer left with nanosecond times are read, not dropped (engine.md §7.10).

TinyMemory (Rust) may write the envelope's ``meta.observed_at`` and a turn's ``at``
with 9 fraction digits. The contract refuses such digits from a user (they cannot
round-trip a ``datetime``); the envelope reader truncates them to microseconds so
the event is still ours. The events here are pushed straight into the double's log,
as a foreign writer would leave them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Dict

from cortex_memory.contract import (
    FetchMode,
    FetchRequest,
    GetRequest,
    LearningKind,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Role,
    StoreItem,
    Turn,
)
from cortex_memory.contract.jsonfmt import dumps
from cortex_memory.cortex.envelope.build import envelopes
from cortex_memory.cortex.envelope.codec import Encoded, encode, encode_checked, part_labels
from cortex_memory.cortex.envelope.envelope import Envelope
from cortex_memory.cortex.envelope.labels import lookup_labels
from cortex_memory.cortex.envelope.request import experience_request
from cortex_memory.testing._server import BaseDouble

MICROS = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
SHORT = "2026-01-02T03:04:05.123456"
NANOS = "2026-01-02T03:04:05.123456789"


def _nanos(text: str) -> str:
    """``text`` with every microsecond form of MICROS written with nanoseconds."""
    assert SHORT in text
    return text.replace(SHORT, NANOS)


def _body(env: Envelope, version: int) -> Dict[str, Any]:
    """The experience body a nanosecond-keeping writer sends for ``env``."""
    if version == 3:
        encoded = encode_checked(env)
        kept = [label for label in encoded.labels if not label.startswith("tm:e:")]
        parts = part_labels(_nanos(dumps(env.to_json(3, text=""))))
        request = experience_request(env, Encoded(encoded.text, (*kept, *parts)))
    else:
        labels = tuple(lookup_labels(env.id, env.meta))
        request = experience_request(env, Encoded(_nanos(encode(env)), labels))
    body = request.to_json()
    body["context"]["observed_at"] = _nanos(body["context"]["observed_at"])
    return body


def _push(double: BaseDouble, item: StoreItem, version: int) -> None:
    state = double.state
    with state.lock:
        for env in envelopes(item):
            state.log.append(
                _body(env, version),
                indexed_at=state.clock(),
                allowed_scope_types=state.allowed_scope_types,
                size_counts_role_prefix=state.size_counts_role_prefix,
            )


def test_nanosecond_events_list_get_and_fetch(wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    meta = MemoryMeta(observed_at=MICROS)
    fact = StoreItem.learning("nano fact about otters", LearningKind.FACT, 0.5, meta)
    doc = StoreItem.document("nano document about otters", meta)
    chat = StoreItem.conversation(
        [
            Turn(Role.USER, "otters?", at=MICROS),
            Turn(Role.ASSISTANT, "otters hold hands", at=MICROS),
        ]
    )
    _push(double, fact, 3)
    _push(double, doc, 2)
    _push(double, chat, 3)
    fact_v2 = StoreItem.learning("another nano fact about otters", LearningKind.FACT, 0.5, meta)
    _push(double, fact_v2, 2)
    ids = {item.fingerprint() for item in (fact, doc, chat, fact_v2)}

    page = engine.list(ListRequest(MetaFilter(), 10))
    assert {hit.id for hit in page.items} == ids
    for hit in page.items:
        if hit.id != chat.fingerprint():
            assert hit.meta.observed_at == MICROS

    hits = engine.get(GetRequest(tuple(sorted(ids))))
    assert {hit.id for hit in hits} == ids
    texts = {hit.id: hit.text for hit in hits}
    assert texts[chat.fingerprint()] == "user: otters?\nassistant: otters hold hands"
    assert texts[fact_v2.fingerprint()] == "another nano fact about otters"

    found = engine.fetch(FetchRequest("otters", FetchMode.HYBRID, 10, MetaFilter()))
    assert ids <= {hit.id for hit in found.hits}

    # Stored again by this client, the items are replays: the lookup sees them as ours.
    receipts = engine.store_many([fact, doc, chat, fact_v2])
    assert all(receipt.replayed for receipt in receipts)
