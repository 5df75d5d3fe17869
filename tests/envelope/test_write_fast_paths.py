"""The write path's shortcuts give exactly what the straightforward code gives.

Each shortcut (envelopes built whole, the v2 size derived from the v3 JSON, the
body key and the request built in one go, request bytes written once and joined
into bulk bodies) is checked against a literal copy of the code it replaced, on
generated items: same envelopes, same labels and texts, same errors, same keys,
same bytes.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import List, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_memory.contract.items import (
    Conversation,
    Document,
    LearningKind,
    Role,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.contract.jsonfmt import dumps, format_timestamp_offset
from cortex_memory.contract.meta import MemoryMeta, ToolCallRef
from cortex_memory.contract.namespace import Namespace
from cortex_memory.cortex.envelope.build import envelopes
from cortex_memory.cortex.envelope.codec import (
    MAX_EVENT_BYTES,
    MAX_LABELS,
    Encoded,
    encode,
    encode_checked,
    part_labels,
)
from cortex_memory.cortex.envelope.digests import LOOKUP_HEX
from cortex_memory.cortex.envelope.envelope import Envelope, TurnInfo
from cortex_memory.cortex.envelope.labels import WORKSPACE_TAG, lookup_labels, readable_labels
from cortex_memory.cortex.envelope.paths import path_digests, wire_meta
from cortex_memory.cortex.envelope.request import (
    ExperienceRequest,
    body_key,
    experience_request,
)
from cortex_memory.cortex.envelope.scopes import scope_path
from cortex_memory.cortex.log.write import bulk_body
from cortex_memory.cortex.transport.response import encode_body
from cortex_memory.errors import InvalidRequestError

from ._strategies import OPT, SOME_TEXT, TEXT, WHEN, metas

# ------------------------------------------------------------ the code replaced


def reference_envelopes(item: StoreItem, item_id: str) -> List[Envelope]:
    """envelopes() for learnings and conversations as it was: a base, then replace()."""
    meta = item.meta
    digests = path_digests(meta)
    base = Envelope(
        id=item_id,
        kind=item.item_kind,
        text="",
        meta=wire_meta(meta),
        ws=digests.ws,
        fp=digests.fp,
        fd=digests.fd,
    )
    if isinstance(item, Document):
        raise AssertionError("documents still go through the same code")
    if not isinstance(item, Conversation):
        return [
            replace(
                base,
                text=item.text,  # type: ignore[attr-defined]
                learning_kind=item.kind,  # type: ignore[attr-defined]
                confidence=item.confidence,  # type: ignore[attr-defined]
                evidence=item.evidence,  # type: ignore[attr-defined]
            )
        ]
    count = len(item.turns)
    return [
        replace(
            base, text=turn.text, turn=TurnInfo(index, count, turn.role, turn.at, turn.tool_calls)
        )
        for index, turn in enumerate(item.turns)
    ]


def reference_encode_checked(env: Envelope) -> Encoded:
    """encode_checked() as it was: the v2 text written first, its size measured."""
    v2 = encode(env)
    size = len(v2.encode("utf-8", "surrogatepass"))
    if size > MAX_EVENT_BYTES:
        raise InvalidRequestError(
            f"a {env.kind.value} event would be {size} bytes; CortexDB refuses events over "
            f"1 MiB and this client sends at most {MAX_EVENT_BYTES}"
        )
    lookup = lookup_labels(env.id, env.meta)
    if env.ws is not None:
        lookup.append(WORKSPACE_TAG + env.ws[:LOOKUP_HEX])
    if not env.text:
        return Encoded(v2, tuple(lookup))
    parts = part_labels(dumps(env.to_json(3, text="")))
    readable = readable_labels(env)
    if len(lookup) + len(readable) + len(parts) > MAX_LABELS:
        return Encoded(v2, tuple(lookup))
    return Encoded(env.text, (*lookup, *readable, *parts))


def reference_request(env: Envelope, encoded: Encoded) -> ExperienceRequest:
    """experience_request() as it was: a request without key, then replace() with it."""
    role = Role.USER
    if env.turn is not None:
        role = env.turn.role
    modality = {"conversation": "conversation", "document": "document"}.get(
        env.kind.value, "observation"
    )
    at = env.turn.at if env.turn is not None and env.turn.at is not None else env.meta.observed_at
    request = ExperienceRequest(
        scope=scope_path(env.meta.namespace, env.kind),
        modality=modality,
        role=role.value,
        text=encoded.text,
        labels=encoded.labels,
        observed_at=None if at is None else format_timestamp_offset(at),
        extract=env.meta.derive is not False and role is not Role.TOOL,
    )
    unkeyed = request.to_json()
    del unkeyed["idempotency_key"]
    return replace(request, idempotency_key=body_key(unkeyed))


def outcome(call: object, *args: object) -> object:
    """The value of ``call(*args)``, or the message of the InvalidRequestError it raises."""
    try:
        return call(*args)  # type: ignore[operator]
    except InvalidRequestError as err:
        return ("refused", err.message)


# ------------------------------------------------------------------ generators

@st.composite
def items(draw: st.DrawFn) -> StoreItem:
    meta = draw(metas())
    if draw(st.booleans()):
        confidence = draw(st.floats(0, 1) | st.sampled_from([0.8, 0.9, 1e-7]))
        return StoreItem.learning(
            draw(TEXT), draw(st.sampled_from(list(LearningKind))), confidence, meta
        )
    turns = draw(
        st.lists(
            st.builds(
                Turn,
                st.sampled_from(list(Role)),
                TEXT,
                WHEN,
                st.lists(st.builds(ToolCallRef, SOME_TEXT, OPT), max_size=2).map(tuple),
            ),
            min_size=1,
            max_size=3,
        )
    )
    return Conversation(tuple(turns), meta)


# ----------------------------------------------------------------------- checks


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items())
def test_the_write_path_matches_the_code_it_replaced(item: StoreItem) -> None:
    item_id = item.fingerprint()
    envs = envelopes(item, item_id)
    assert envs == reference_envelopes(item, item_id)
    requests = []
    for env in envs:
        encoded = outcome(encode_checked, env)
        assert encoded == outcome(reference_encode_checked, env)
        if not isinstance(encoded, Encoded):
            continue
        request = experience_request(env, encoded)
        assert request == reference_request(env, encoded)
        assert request.idempotency_key == body_key(request.to_json())
        try:
            expected: Optional[bytes] = encode_body(request.to_json())
        except ValueError:  # a lone surrogate: UTF-8 cannot carry it
            expected = None
        if expected is None:
            with pytest.raises(UnicodeEncodeError):
                request.body()
            return
        assert request.body() == expected
        requests.append(request)
    if requests:
        wire = {"items": [request.to_json() for request in requests], "ordering": "strict_temporal"}
        assert bulk_body(requests) == encode_body(wire)
        assert bulk_body(requests[:1]) == encode_body({**wire, "items": wire["items"][:1]})


@pytest.mark.parametrize("unit", ["a", "é", "😀", '"', "\x01", "\ud800"])
def test_the_size_limit_is_met_at_the_same_byte(unit: str) -> None:
    # Find the text that puts the v2 encoding exactly at the limit, then one unit more.
    meta = MemoryMeta(tags=("t",), observed_at=datetime(2025, 1, 1, tzinfo=timezone.utc))
    env = envelopes(StoreItem.learning("", LearningKind.FACT, 0.9, meta), "f" * 40)[0]
    unit_size = len(encode(replace(env, text=unit)).encode("utf-8", "surrogatepass")) - len(
        encode(env).encode("utf-8", "surrogatepass")
    )
    room = MAX_EVENT_BYTES - len(encode(env).encode("utf-8", "surrogatepass"))
    fill = "x" * (room % unit_size)
    at_limit = replace(env, text=fill + unit * (room // unit_size))
    assert len(encode(at_limit).encode("utf-8", "surrogatepass")) == MAX_EVENT_BYTES
    over = replace(at_limit, text=at_limit.text + "x")
    assert encode_checked(at_limit) == reference_encode_checked(at_limit)
    with pytest.raises(InvalidRequestError) as caught:
        encode_checked(over)
    assert f"would be {MAX_EVENT_BYTES + 1} bytes" in caught.value.message
    assert outcome(encode_checked, over) == outcome(reference_encode_checked, over)


def test_documents_and_fallbacks_match_the_code_they_replaced() -> None:
    # v2 fallbacks: an empty turn, and an envelope too big for 64 labels; a document
    # split in pieces goes through encode_checked piece by piece.
    big_meta = MemoryMeta(tags=("x" * 20_000,))
    cases: List[StoreItem] = [
        StoreItem.conversation([Turn(Role.USER, ""), Turn(Role.TOOL, "out")]),
        StoreItem.learning("fact", LearningKind.FACT, 0.5, big_meta),
        Document(TextBody("para\n\n" * 100_000 + "\f" + "end"), "Title", "text/plain"),
    ]
    for item in cases:
        for env in envelopes(item):
            encoded = encode_checked(env)
            assert encoded == reference_encode_checked(env)
            assert experience_request(env, encoded) == reference_request(env, encoded)
    texts = [encode_checked(env).text for env in envelopes(cases[1])]
    assert texts == [encode(envelopes(cases[1])[0])]  # v2: the envelope JSON is the text


def test_a_text_that_looks_like_the_members_keeps_the_body_exact() -> None:
    # The key goes before the top-level "modality"; texts, labels and scopes holding
    # the same characters cannot move it (quotes inside JSON strings are escaped).
    tricky = ',"modality":"x","idempotency_key":"y"} ,"modality":'
    item = StoreItem.conversation(
        [Turn(Role.USER, tricky)],
        MemoryMeta(thread_id=tricky, tags=(tricky,), namespace=Namespace.parse("team:x")),
    )
    for env in envelopes(item):
        request = experience_request(env)
        assert request.body() == encode_body(request.to_json())
        assert request.idempotency_key == body_key(request.to_json())
    copy = replace(request, text="other")
    assert copy.body() == encode_body(copy.to_json())
