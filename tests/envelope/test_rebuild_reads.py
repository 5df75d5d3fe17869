"""Rebuilding items from envelopes (§7.11) and the read-side helpers (§9.3)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import Optional

import pytest

from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import (
    Conversation,
    Document,
    ItemKind,
    Learning,
    LearningKind,
    Role,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind, redacted_id
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.responses import Hit
from cortex_memory.cortex.envelope.build import envelopes
from cortex_memory.cortex.envelope.codec import decode
from cortex_memory.cortex.envelope.envelope import ChunkInfo, Envelope, TurnInfo
from cortex_memory.cortex.envelope.reads import (
    Keeper,
    event_hit,
    hit,
    keeps,
    located_meta,
    one_turn_conversation,
)
from cortex_memory.cortex.envelope.rebuild import is_complete, rebuild, rebuild_whole

UTC = timezone.utc


def doc_env(text: str, index: Optional[int] = None, count: int = 3) -> Envelope:
    env = Envelope("d" * 40, ItemKind.DOCUMENT, text, MemoryMeta(), title="T", mime="m")
    if index is None:
        return env
    return replace(env, chunk=ChunkInfo(index, count))


def turn_env(index: int, text: str, role: Role = Role.USER, count: int = 3) -> Envelope:
    return Envelope(
        "c" * 40, ItemKind.CONVERSATION, text, MemoryMeta(), turn=TurnInfo(index, count, role)
    )


# ------------------------------------------------------------------- rebuild


def test_rebuild_document_whole_and_pieces() -> None:
    assert rebuild([doc_env("body")]) == Document(TextBody("body"), "T", "m")
    pieces = [doc_env("c", 2), doc_env("a", 0), doc_env("b", 1), doc_env("B!", 1)]
    assert rebuild(pieces) == Document(TextBody("abc"), "T", "m")
    # Any envelope without a chunk wins: the text of the first such one.
    assert rebuild([doc_env("a", 0), doc_env("whole"), doc_env("other")]).body == TextBody("whole")


def test_rebuild_learning_defaults() -> None:
    env = Envelope("l" * 40, ItemKind.LEARNING, "fact", MemoryMeta())
    assert rebuild([env]) == Learning("fact", LearningKind.OTHER, 0.0)
    full = replace(env, learning_kind=LearningKind.FACT, confidence=0.75, evidence="e")
    assert rebuild([full]) == Learning("fact", LearningKind.FACT, 0.75, "e")


def test_rebuild_conversation_orders_turns_and_keeps_the_first_per_index() -> None:
    envs = [
        turn_env(2, "third", Role.ASSISTANT),
        turn_env(0, "first"),
        turn_env(0, "first again"),
        turn_env(1, "second", Role.TOOL),
    ]
    assert rebuild(envs) == Conversation(
        (
            Turn.new(Role.USER, "first"),
            Turn.new(Role.TOOL, "second"),
            Turn.new(Role.ASSISTANT, "third"),
        )
    )


def test_rebuild_takes_kind_and_meta_from_the_first_envelope() -> None:
    meta = MemoryMeta(language="en")
    first = replace(doc_env("a", 0, 2), meta=meta)
    second = replace(doc_env("b", 1, 2), meta=MemoryMeta(language="fr"), title="other")
    assert rebuild([first, second]) == Document(TextBody("ab"), "T", "m", meta)


def test_rebuild_needs_an_envelope() -> None:
    with pytest.raises(ValueError, match="at least one"):
        rebuild([])
    assert rebuild_whole([]) is None


def test_rebuild_whole_refuses_incomplete_sets() -> None:
    complete = [doc_env("a", 0), doc_env("b", 1), doc_env("c", 2)]
    assert rebuild_whole(complete) == Document(TextBody("abc"), "T", "m")
    assert rebuild_whole([*complete, doc_env("b2", 1)]) is not None  # duplicates are fine
    assert rebuild_whole(complete[:2]) is None  # a missing piece
    assert rebuild_whole([doc_env("a", 0), doc_env("b", 1), doc_env("c", 2, count=4)]) is None
    assert rebuild_whole([doc_env("a", 0, 2), doc_env("c", 2, 2)]) is None  # index >= count
    assert rebuild_whole([doc_env("a", 0, 0)]) is None  # count 0
    assert rebuild_whole([doc_env("a", 0), doc_env("whole")]) is not None  # one is whole
    assert is_complete([turn_env(0, "x")])
    assert not is_complete([])


def test_rebuild_round_trip_from_decoded_envelopes() -> None:
    at = datetime(2025, 5, 6, 7, 8, 9, tzinfo=UTC)
    meta = MemoryMeta(workspace="team-handbook", file_path="notes/a.md", observed_at=at)
    items = [
        StoreItem.document("doc body", meta),
        Learning("tea", LearningKind.PREFERENCE, 0.9, "twice", meta),
        StoreItem.conversation([Turn(Role.USER, "q", at), Turn.new(Role.ASSISTANT, "a")], meta),
    ]
    for item in items:
        envs = envelopes(item)
        rebuilt = rebuild_whole(envs)
        assert rebuilt == item.with_meta(replace(meta, file_path="a.md"))


# --------------------------------------------------------------------- keeps


ABS = MemoryMeta(
    workspace="/Users/ann/work",
    folder="/Users/ann/Documents/Plans",
    file_path="/Users/ann/Documents/Plans/pricing.pdf",
    thread_id="+15551234567",
    language="en",
    tags=("x",),
)


def env_of(meta: MemoryMeta, item: Optional[StoreItem] = None) -> Envelope:
    return envelopes(item or StoreItem.document("body", meta))[0]


@pytest.mark.parametrize(
    ("flt", "kept"),
    [
        (MetaFilter(), True),
        (MetaFilter(workspace="/Users/ann/work"), True),
        (MetaFilter(workspace="/Users/ann/work/"), False),
        (MetaFilter(workspace="/Users/ann"), False),
        (MetaFilter(file_path="/Users/ann/Documents/Plans/pricing.pdf"), True),
        (MetaFilter(file_path="/Users/ann/Documents/Plans"), True),
        (MetaFilter(file_path="/Users/ann/Documents/Plans/"), True),
        (MetaFilter(file_path="/Users/ann/Documents/Plans///"), True),
        (MetaFilter(file_path="/Users/ann/Documents/Pla"), False),  # inside a folder name
        (MetaFilter(file_path="/Users"), True),
        (MetaFilter(file_path="/"), True),
        (MetaFilter(file_path="pricing.pdf"), True),  # the name reads give back
        (MetaFilter(file_path="other.pdf"), False),
        (MetaFilter(folder="/Users/ann/Documents/Plans"), True),
        (MetaFilter(folder="/Users/ann/Documents"), True),
        (MetaFilter(folder="/Users/ann/Documents/"), True),
        (MetaFilter(folder="/Users/ann/Doc"), False),
        (MetaFilter(folder="Plans"), False),
        (MetaFilter(thread_id="+15551234567"), True),  # through same_id
        (MetaFilter(thread_id=redacted_id("+15551234567")), True),
        (MetaFilter(thread_id="+15551234568"), False),
        (MetaFilter(language="en", folder="/Users/ann", workspace="/Users/ann/work"), True),
        (MetaFilter(language="fr", folder="/Users/ann", workspace="/Users/ann/work"), False),
        (MetaFilter(tags_any=("y",)), False),
        (MetaFilter(kinds=(ItemKind.LEARNING,)), False),
        (MetaFilter(reach=Reach.exact(Namespace.parse("team:acme"))), False),
    ],
)
def test_keeps_matches_paths_by_digest(flt: MetaFilter, kept: bool) -> None:
    env = env_of(ABS)
    assert keeps(flt, None, env) is kept
    assert Keeper(flt).keeps(env) is kept
    # The reference: the contract's own filter on the original, full meta (which
    # neither holds the kept file name as its path nor a redacted thread id).
    if flt.file_path != "pricing.pdf" and flt.thread_id != redacted_id("+15551234567"):
        assert flt.matches(ItemKind.DOCUMENT, ABS) is kept


def test_keeps_windows_paths_match_on_the_whole_path_only() -> None:
    meta = MemoryMeta(file_path="C:\\Users\\ann\\x.txt", workspace="C:\\work")
    env = env_of(meta)
    assert env.meta.file_path == "x.txt"
    assert env.meta.workspace is None
    assert keeps(MetaFilter(file_path="C:\\Users\\ann\\x.txt"), None, env)
    assert keeps(MetaFilter(workspace="C:\\work"), None, env)
    assert not keeps(MetaFilter(file_path="C:\\Users\\ann"), None, env)  # as on every engine
    assert keeps(MetaFilter(file_path="x.txt"), None, env)


def test_keeps_logical_workspace_and_relative_paths() -> None:
    meta = MemoryMeta(workspace="team-handbook", file_path="docs/a/b.md", folder="docs/a")
    env = env_of(meta)
    assert env.meta.workspace == "team-handbook"
    assert keeps(MetaFilter(workspace="team-handbook"), None, env)
    assert not keeps(MetaFilter(workspace="team"), None, env)
    assert keeps(MetaFilter(file_path="docs/a/b.md"), None, env)
    assert keeps(MetaFilter(file_path="docs"), None, env)
    assert keeps(MetaFilter(folder="docs/a"), None, env)
    assert keeps(MetaFilter(folder="docs"), None, env)
    assert not keeps(MetaFilter(folder="doc"), None, env)


def test_keeps_events_written_with_full_paths_before_the_privacy_rule() -> None:
    # No digests: the paths in the meta are matched as before.
    legacy = Envelope("i" * 40, ItemKind.DOCUMENT, "t", ABS)
    assert keeps(MetaFilter(folder="/Users/ann/Documents"), None, legacy)
    assert keeps(MetaFilter(workspace="/Users/ann/work"), None, legacy)
    assert not keeps(MetaFilter(workspace="/Users/bob"), None, legacy)


def test_keeps_with_a_fixed_kind() -> None:
    env = env_of(ABS)
    assert keeps(MetaFilter(), ItemKind.DOCUMENT, env)
    assert not keeps(MetaFilter(), ItemKind.LEARNING, env)


def test_keeps_sources_and_source_ids() -> None:
    meta = MemoryMeta(source=Source(SourceKind.FILE, "sms_15551234567"))
    env = env_of(meta)
    assert keeps(MetaFilter(source_id="sms_15551234567"), None, env)
    assert keeps(MetaFilter(sources=(SourceKind.FILE,)), None, env)
    assert not keeps(MetaFilter(sources=(SourceKind.AGENT,)), None, env)


# ------------------------------------------------------------------ helpers


def test_located_meta_and_event_hit_of_a_piece() -> None:
    meta = MemoryMeta(tags=("keep",))
    piece = replace(doc_env("piece text", 1, 3), meta=meta, chunk=ChunkInfo(1, 3, (2, 4), "Intro"))
    assert located_meta(piece).tags == ("keep", "page:2-4", "section:Intro")
    single = replace(piece, chunk=ChunkInfo(1, 3, (5, 5)))
    assert located_meta(single).tags == ("keep", "page:5")
    plain = replace(piece, chunk=ChunkInfo(1, 3))
    assert located_meta(plain) is meta
    whole = doc_env("x")
    assert located_meta(whole) is whole.meta
    got = event_hit(piece, 0.5)
    assert got == Hit(
        "d" * 40,
        ItemKind.DOCUMENT,
        "# T\n\npiece text",
        meta.with_tags(("keep", "page:2-4", "section:Intro")),
        0.5,
    )


def test_event_hit_of_a_turn_and_a_learning() -> None:
    turn = turn_env(1, "done", Role.ASSISTANT)
    assert event_hit(turn).text == "assistant: done"
    assert event_hit(turn).score == 0.0
    learning = envelopes(StoreItem.learning("tea", LearningKind.PREFERENCE, 0.9))[0]
    got = event_hit(learning, 1.0)
    assert (got.id, got.kind, got.text, got.confidence) == (
        learning.id,
        ItemKind.LEARNING,
        "tea",
        learning.confidence,
    )


def test_hit_keeps_the_stored_id() -> None:
    item = StoreItem.document("body", MemoryMeta(file_path="/u/a/f.md"))
    env = envelopes(item)[0]
    rebuilt = rebuild([env])
    got = hit(env.id, rebuilt, 0.25)
    assert got.id == item.fingerprint()
    assert got.id != rebuilt.fingerprint()  # the wire meta holds only the file name
    assert got.meta.file_path == "f.md"


def test_one_turn_conversation() -> None:
    assert one_turn_conversation(turn_env(0, "x", count=1))
    assert not one_turn_conversation(turn_env(0, "x", count=2))
    assert not one_turn_conversation(doc_env("x"))
    v2 = decode(
        '{"v":2,"id":"i","kind":"conversation","text":"t","meta":{},'
        '"turn":{"index":0,"count":1,"role":"user"}}'
    )
    assert v2 is not None
    assert one_turn_conversation(v2)
