"""Envelopes per item (§7.4), chunked documents end to end, the experience request
(§7.9) and the body idempotency key (§5.11)."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any, List

import pytest

from cortex_memory.contract.items import (
    Conversation,
    Document,
    ItemKind,
    LearningKind,
    Role,
    StoreItem,
    TextBody,
    Turn,
    UriBody,
)
from cortex_memory.contract.meta import MemoryMeta, ToolCallRef
from cortex_memory.contract.namespace import Namespace
from cortex_memory.cortex.envelope.build import (
    CHUNK_TARGET,
    SECTION_RESERVE,
    document_overhead,
    envelopes,
)
from cortex_memory.cortex.envelope.chunks import escaped_len, split
from cortex_memory.cortex.envelope.codec import (
    MAX_EVENT_BYTES,
    decode_event,
    encode,
    encode_checked,
)
from cortex_memory.cortex.envelope.envelope import U32_MAX, ChunkInfo, Envelope
from cortex_memory.cortex.envelope.rebuild import rebuild_whole
from cortex_memory.cortex.envelope.request import (
    ExperienceRequest,
    body_key,
    compact_sorted,
    experience_request,
)
from cortex_memory.errors import InvalidRequestError

UTC = timezone.utc


def size(env: Envelope) -> int:
    return len(encode(env).encode("utf-8"))


def round_trip(envs: List[Envelope]) -> List[Envelope]:
    out = []
    for n, env in enumerate(envs):
        enc = encode_checked(env)
        decoded = decode_event(
            {"id": f"e{n}", "content": {"text": enc.text}, "context": {"labels": list(enc.labels)}}
        )
        assert decoded is not None
        out.append(decoded)
    return out


# ----------------------------------------------------------------- per item


def test_learning_is_one_envelope() -> None:
    item = replace(
        StoreItem.learning("prefers helix", LearningKind.PREFERENCE, 0.8), evidence="said so"
    )
    [env] = envelopes(item)
    assert env.id == item.fingerprint()
    assert (env.kind, env.text, env.learning_kind, env.evidence) == (
        ItemKind.LEARNING,
        "prefers helix",
        LearningKind.PREFERENCE,
        "said so",
    )
    assert env.confidence == item.confidence
    assert env.turn is None
    assert env.chunk is None
    assert env.part() is None


def test_conversation_is_one_envelope_per_turn() -> None:
    at = datetime(2025, 5, 6, 7, 8, 9, tzinfo=UTC)
    item = StoreItem.conversation(
        [
            Turn(Role.USER, "hi", at),
            Turn(Role.ASSISTANT, "yo", None, (ToolCallRef("grep", "c1"),)),
            Turn(Role.TOOL, "out"),
        ]
    )
    envs = envelopes(item)
    assert [e.text for e in envs] == ["hi", "yo", "out"]
    assert [(e.turn.index, e.turn.count, e.turn.role) for e in envs if e.turn] == [
        (0, 3, Role.USER),
        (1, 3, Role.ASSISTANT),
        (2, 3, Role.TOOL),
    ]
    assert envs[0].turn is not None
    assert envs[0].turn.at == at
    assert envs[1].turn is not None
    assert envs[1].turn.tool_calls == (ToolCallRef("grep", "c1"),)
    assert [e.part() for e in envs] == [0, 1, 2]
    assert {e.id for e in envs} == {item.fingerprint()}


def test_small_document_is_whole() -> None:
    item = Document(TextBody("body\fpage 2"), "Title", "text/plain")
    [env] = envelopes(item)
    assert (env.text, env.title, env.mime, env.chunk) == (
        "body\fpage 2",
        "Title",
        "text/plain",
        None,
    )


def test_uri_document_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="unresolved uri"):
        envelopes(Document(UriBody("file:///x")))


def test_item_id_can_be_given() -> None:
    [env] = envelopes(StoreItem.document("x"), "f" * 40)
    assert env.id == "f" * 40


def test_document_overhead() -> None:
    whole = envelopes(Document(TextBody("x"), "T"))[0]
    whole = replace(whole, text="")
    plain = document_overhead(whole, False)
    paged = document_overhead(whole, True)
    dummy = replace(whole, chunk=ChunkInfo(U32_MAX, U32_MAX))
    assert plain == size(dummy) + SECTION_RESERVE
    assert SECTION_RESERVE == 752
    assert paged - plain == len(',"pages":[4294967295,4294967295]')


# ------------------------------------------------------- chunked documents


def long_document(paragraphs: int, seed: int = 7, paged: bool = True) -> str:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "délta", "ε", "zeta", "eta", '"q"', "tab\t", "😀"]
    out = []
    for n in range(paragraphs):
        if n % 40 == 0:
            out.append(f"## Section {n // 40}\n")
        if paged and n % 70 == 69:
            out.append("\f")
        out.append(" ".join(rng.choice(words) for _ in range(rng.randint(5, 120))) + "\n\n")
    return "".join(out)


def test_long_document_is_split_and_rebuilt_exactly() -> None:
    body = long_document(3000)
    assert escaped_len(body) > 2 * CHUNK_TARGET
    item = Document(TextBody(body), "Manual", "text/markdown", MemoryMeta(file_path="/u/ann/m.md"))
    envs = envelopes(item)
    count = len(envs)
    assert count >= 3
    assert "".join(e.text for e in envs) == body
    for index, env in enumerate(envs):
        assert env.chunk is not None
        assert (env.chunk.index, env.chunk.count) == (index, count)
        assert env.chunk.pages is not None
        assert size(env) <= CHUNK_TARGET  # the target, section title included
        assert (env.title, env.mime, env.meta.file_path) == ("Manual", "text/markdown", "m.md")
    first = envs[0].chunk
    assert first is not None
    assert first.pages is not None
    assert first.pages[0] == 1
    last = envs[-1].chunk
    assert last is not None
    assert last.pages is not None
    assert last.pages[1] == body.count("\f") + 1
    assert any(e.chunk is not None and e.chunk.section for e in envs)
    decoded = round_trip(envs)
    shuffled = decoded[::-1]
    rebuilt = rebuild_whole(shuffled)
    assert rebuilt == replace(item, meta=envs[0].meta)
    assert rebuild_whole(decoded[:1] + decoded[2:]) is None  # a missing piece is detected


def test_split_boundaries_are_stable_and_match_the_chunker() -> None:
    body = long_document(2500, seed=3, paged=False)
    envs = envelopes(Document(TextBody(body)))
    whole = replace(envs[0], text="", chunk=None)
    pieces = split(body, document_overhead(whole, False), CHUNK_TARGET, MAX_EVENT_BYTES)
    assert pieces is not None
    assert [(p.start, p.end) for p in pieces] == [
        (sum(len(e.text) for e in envs[:n]), sum(len(e.text) for e in envs[: n + 1]))
        for n in range(len(envs))
    ]
    assert all(e.chunk is not None and e.chunk.pages is None for e in envs)
    # Boundaries fall just after a paragraph break, as the chunker prefers.
    assert all(e.text.endswith("\n\n") for e in envs[:-1])
    assert envelopes(Document(TextBody(body))) == envs


def test_oversized_paragraph_is_cut_by_characters() -> None:
    body = "é" * 400_000  # one paragraph, 800 000 escaped bytes
    envs = envelopes(Document(TextBody(body)))
    assert len(envs) == 4
    assert "".join(e.text for e in envs) == body
    assert all(size(e) <= CHUNK_TARGET for e in envs)
    assert rebuild_whole(round_trip(envs)) == Document(TextBody(body))


def test_no_room_for_a_piece_sends_the_document_whole_when_it_fits() -> None:
    # A title so long the overhead leaves less than 6 bytes of room, but the whole
    # document (a 2-character body, no dummy chunk, no section reserve) still fits.
    probe = replace(envelopes(Document(TextBody("ab"), ""))[0], text="")
    base = document_overhead(probe, False)
    title = "t" * (MAX_EVENT_BYTES - base - 3)
    item = Document(TextBody("ab"), title)
    whole = replace(envelopes(item)[0], text="")
    assert MAX_EVENT_BYTES - document_overhead(whole, False) < 6
    [env] = envelopes(item)
    assert env.chunk is None
    assert env.text == "ab"
    huge = Document(TextBody("ab"), "t" * MAX_EVENT_BYTES)
    with pytest.raises(InvalidRequestError, match="786432"):
        envelopes(huge)


# ------------------------------------------------------------------ requests


def test_tea_request_bytes() -> None:
    [env] = envelopes(StoreItem.learning("tea", LearningKind.PREFERENCE, 0.9))
    request = experience_request(env)
    text = compact_sorted(request.to_json())
    assert text == (
        '{"content":{"kind":"message","role":"user","text":"tea"},"context":{"labels":'
        '["tm:i:572a842f79f6fb2b","tm:k:d4f0bc5a29de06b5","kind:learning","tm:e:00:{\\"v\\":3,'
        '\\"id\\":\\"126a17b5bee85d0816f1fcdf6269c39c791aff3f\\",\\"kind\\":\\"learning\\",'
        '\\"text\\":\\"\\",\\"meta\\":{\\"source\\":{\\"kind\\":\\"agent\\"}},'
        '\\"learning_kind\\":\\"preference\\",\\"confidence\\":0.9}"]},'
        '"idempotency_key":"tm3:2c58acf59cf5bcd6fbfc67323c7c1ebacf9d85e755e2d313024ccd88",'
        '"modality":"observation","scope":"app:tinymemory/app:learnings"}'
    )
    assert request.item_label == "tm:i:572a842f79f6fb2b"


def test_modality_and_role_per_kind() -> None:
    doc = experience_request(envelopes(StoreItem.document("d"))[0])
    assert (doc.modality, doc.role, doc.scope) == (
        "document",
        "user",
        "app:tinymemory/app:documents",
    )
    ns = Namespace.parse("team:acme/agent:writer")
    learning = experience_request(
        envelopes(StoreItem.learning("l", LearningKind.FACT, 1.0, MemoryMeta(namespace=ns)))[0]
    )
    assert (learning.modality, learning.role) == ("observation", "user")
    assert learning.scope == "app:tinymemory/team:acme/agent:writer/app:learnings"
    turns = [Turn.new(role, "t") for role in Role]
    requests = [experience_request(e) for e in envelopes(StoreItem.conversation(turns))]
    assert [(r.modality, r.role) for r in requests] == [
        ("conversation", "user"),
        ("conversation", "assistant"),
        ("conversation", "system"),
        ("conversation", "tool"),
    ]
    assert requests[0].scope == "app:tinymemory/app:conversations"


def test_directives_turn_derivation_off() -> None:
    def body(item: StoreItem, n: int = 0) -> dict:
        return experience_request(envelopes(item)[n]).to_json()

    assert "directives" not in body(StoreItem.document("d"))
    assert "directives" not in body(StoreItem.document("d", MemoryMeta(derive=True)))
    assert body(StoreItem.document("d", MemoryMeta(derive=False)))["directives"] == {"extract": []}
    chat = StoreItem.conversation([Turn.new(Role.USER, "q"), Turn.new(Role.TOOL, "out")])
    assert "directives" not in body(chat, 0)
    assert body(chat, 1)["directives"] == {"extract": []}
    # The key is computed after the directives, so they change it.
    a = experience_request(envelopes(StoreItem.document("d"))[0])
    b = experience_request(
        replace(envelopes(StoreItem.document("d"))[0], meta=MemoryMeta(derive=False))
    )
    assert a.idempotency_key != b.idempotency_key


@pytest.mark.parametrize(
    ("micros", "written"),
    [
        (0, "2025-01-02T03:04:05+00:00"),
        (120_000, "2025-01-02T03:04:05.120+00:00"),
        (123_456, "2025-01-02T03:04:05.123456+00:00"),
        (1, "2025-01-02T03:04:05.000001+00:00"),
    ],
)
def test_observed_at_format(micros: int, written: str) -> None:
    at = datetime(2025, 1, 2, 3, 4, 5, micros, tzinfo=UTC)
    env = envelopes(StoreItem.document("d", MemoryMeta(observed_at=at)))[0]
    request = experience_request(env)
    assert request.observed_at == written
    assert request.to_json()["context"] == {"labels": list(request.labels), "observed_at": written}
    # Inside the envelope the same instant ends in Z.
    assert '"observed_at":"' + written.replace("+00:00", "Z") + '"' in encode(env)


def test_observed_at_prefers_the_turn_time_and_converts_to_utc() -> None:
    meta_at = datetime(2020, 1, 1, tzinfo=UTC)
    turn_at = datetime(2025, 1, 2, 8, 34, 5, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    chat = StoreItem.conversation(
        [Turn(Role.USER, "q", turn_at), Turn.new(Role.ASSISTANT, "a")],
        MemoryMeta(observed_at=meta_at),
    )
    first, second = (experience_request(e) for e in envelopes(chat))
    assert first.observed_at == "2025-01-02T03:04:05+00:00"
    assert second.observed_at == "2020-01-01T00:00:00+00:00"
    plain = experience_request(envelopes(StoreItem.document("d"))[0])
    assert plain.observed_at is None
    assert "observed_at" not in plain.to_json()["context"]


# ------------------------------------------------------------------ body key


HAND_SORTED = (
    '{"content":{"kind":"message","role":"user","text":"prefers helix"},'
    '"context":{"labels":["tm:i:x"]},"modality":"observation","scope":"app:tinymemory/app:learnings"}'
)


def test_body_key_vector() -> None:
    body = {
        "scope": "app:tinymemory/app:learnings",
        "modality": "observation",
        "content": {"text": "prefers helix", "role": "user", "kind": "message"},
        "context": {"labels": ["tm:i:x"]},
    }
    assert compact_sorted(body) == HAND_SORTED
    key = body_key(body)
    assert key == "tm3:ac2ebfa543497f3393de21d460ca5373d1e9ac7835a058b7c682d65d"
    assert len(key) == 60
    # The key member is left out of its own hash, whatever it holds.
    assert body_key({**body, "idempotency_key": key}) == key
    assert body_key({**body, "idempotency_key": "anything"}) == key
    # Non-ASCII and escaped characters are hashed as raw UTF-8.
    unicode_body = {**body, "content": {**body["content"], "text": 'héllo "q"'}}
    assert body_key(unicode_body) == "tm3:2fb949771f1a076f89b367f321568c07230281c5277ea43f4ef311f4"


def test_body_key_follows_the_body() -> None:
    item = StoreItem.document("same body")
    a = experience_request(envelopes(item)[0])
    b = experience_request(envelopes(StoreItem.document("same body"))[0])
    assert a == b
    assert a.idempotency_key == b.idempotency_key
    assert a.idempotency_key.startswith("tm3:")
    assert len(a.idempotency_key) == 60
    assert body_key(a.to_json()) == a.idempotency_key
    other = experience_request(envelopes(StoreItem.document("same body!"))[0])
    assert other.idempotency_key != a.idempotency_key
    # Only the request body counts: the same text at another time is another body.
    later = experience_request(
        envelopes(StoreItem.document("same body", MemoryMeta(observed_at=datetime.now(UTC))))[0]
    )
    assert later.idempotency_key != a.idempotency_key


def test_request_json_is_sorted_and_compact() -> None:
    request = ExperienceRequest("s", "document", "user", "t", ("tm:i:1",), None, False, "k")
    assert compact_sorted(request.to_json()) == (
        '{"content":{"kind":"message","role":"user","text":"t"},"context":{"labels":["tm:i:1"]},'
        '"directives":{"extract":[]},"idempotency_key":"k","modality":"document","scope":"s"}'
    )
    assert json.loads(compact_sorted(request.to_json())) == request.to_json()


def test_conversation_turns_with_the_same_text_get_distinct_keys() -> None:
    chat = Conversation((Turn.new(Role.USER, "ok"), Turn.new(Role.USER, "ok")))
    a, b = (experience_request(e) for e in envelopes(chat))
    assert a.text == b.text
    assert a.idempotency_key != b.idempotency_key  # their parts differ (turn index)


def test_part_is_the_chunk_index_for_a_piece() -> None:
    body = "é" * 400_000
    assert [e.part() for e in envelopes(Document(TextBody(body)))] == [0, 1, 2, 3]


def test_only_store_items_are_built() -> None:
    not_an_item: Any = "a document"
    with pytest.raises(TypeError, match="str"):
        envelopes(not_an_item)
