"""Property tests: no local path leaves in any request (seed 003), and the decoder
survives arbitrary input (quality.md: fuzzing)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import (
    Conversation,
    Document,
    LearningKind,
    Role,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind
from cortex_memory.cortex.envelope.build import envelopes
from cortex_memory.cortex.envelope.codec import decode, decode_event, encode_checked, from_labels
from cortex_memory.cortex.envelope.envelope import Envelope
from cortex_memory.cortex.envelope.reader import parse_envelope
from cortex_memory.cortex.envelope.reads import keeps
from cortex_memory.cortex.envelope.request import compact_sorted, experience_request

# Path components carry an upper-case marker that no digest, label tag, id or generated
# text contains, so finding one in a request means a path leaked.
FOLDER_TOKEN = st.from_regex(r"QD[a-z0-9]{6}", fullmatch=True)
NAME_TOKEN = st.from_regex(r"QF[a-z0-9]{4}\.(pdf|md|txt)", fullmatch=True)
WORKSPACE_TOKEN = st.from_regex(r"QW[a-z0-9]{6}", fullmatch=True)
LOGICAL_TOKEN = st.from_regex(r"QL[a-z0-9-]{4}", fullmatch=True)
TEXT = st.text(st.characters(blacklist_characters="Q", blacklist_categories=("Cs",)), min_size=1)


@st.composite
def located(draw: st.DrawFn) -> Tuple[MemoryMeta, List[str], List[str]]:
    """A meta with local paths; the tokens that must never leave; the ones that may."""
    dirs = draw(st.lists(FOLDER_TOKEN, min_size=1, max_size=4, unique=True))
    style = draw(st.sampled_from(["posix", "home", "windows", "unc", "relative"]))
    if style == "posix":
        folder = "/" + "/".join(dirs)
    elif style == "home":
        folder = "~/" + "/".join(dirs)
    elif style == "windows":
        folder = "C:\\" + "\\".join(dirs)
    elif style == "unc":
        folder = "\\\\" + "\\".join(dirs)
    else:
        folder = "/".join(dirs)
    sep = "\\" if style in ("windows", "unc") else "/"
    name = draw(NAME_TOKEN)
    secret = list(dirs)
    allowed = [name]
    workspace: Optional[str] = None
    choice = draw(st.sampled_from(["absolute", "tilde", "drive", "logical", "none"]))
    if choice == "logical":
        workspace = draw(LOGICAL_TOKEN)
        allowed.append(workspace)
    elif choice != "none":
        token = draw(WORKSPACE_TOKEN)
        secret.append(token)
        workspace = {"absolute": "/srv/", "tilde": "~", "drive": "d:"}[choice] + token
    meta = MemoryMeta(
        workspace=workspace,
        folder=draw(st.sampled_from([folder, None])) if style != "relative" else folder,
        file_path=folder + sep + name,
        thread_id=draw(st.sampled_from([None, "t-1", "+1 (555) 123-4567"])),
        agent_id=draw(st.sampled_from([None, "writer", "whatsapp 15551234567"])),
        source=Source(SourceKind.FILE, draw(st.sampled_from([None, "src", "sms_15551234567"]))),
        tags=tuple(draw(st.lists(st.sampled_from(["a", "b"]), max_size=2))),
        observed_at=draw(st.sampled_from([None, datetime(2025, 1, 2, tzinfo=timezone.utc)])),
    )
    return meta, secret, allowed


@st.composite
def items(draw: st.DrawFn) -> Tuple[StoreItem, List[str], List[str]]:
    meta, secret, allowed = draw(located())
    kind = draw(st.sampled_from(["document", "learning", "conversation"]))
    if kind == "document":
        item: StoreItem = Document(
            TextBody(draw(TEXT)), draw(st.one_of(st.none(), TEXT)), "text/plain", meta
        )
    elif kind == "learning":
        item = StoreItem.learning(draw(TEXT), LearningKind.FACT, 0.5, meta)
    else:
        roles = st.sampled_from(list(Role))
        turns = draw(st.lists(st.builds(Turn.new, roles, TEXT), min_size=1, max_size=3))
        item = Conversation(tuple(turns), meta)
    return item, secret, allowed


PHONE_VALUES = ("+1 (555) 123-4567", "whatsapp 15551234567", "sms_15551234567")


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(items())
def test_no_local_path_leaves_in_any_request(case: Tuple[StoreItem, List[str], List[str]]) -> None:
    item, secret, allowed = case
    meta = item.meta
    envs = envelopes(item)
    for env in envs:
        request = experience_request(env)
        body = compact_sorted(request.to_json())
        for token in secret:
            assert token not in body
            assert not any(token in label for label in request.labels)
        for value in PHONE_VALUES:
            assert value not in body
        if env.text:
            # v3 or v2, the file's name travels (inside the envelope JSON).
            assert allowed[0] in body
        # Reads give back the file's name and no folder or absolute workspace.
        decoded = decode_event(
            {
                "id": "e",
                "content": {"text": request.text},
                "context": {"labels": list(request.labels)},
            }
        )
        assert decoded is not None
        assert decoded.meta.file_path == allowed[0]
        assert decoded.meta.folder is None
        assert decoded.meta.workspace in (None, *allowed[1:])
        # Every path filter that matched the original still matches.
        assert meta.file_path is not None
        wanted = [meta.file_path, allowed[0]]
        at = meta.file_path.find("/")
        while at != -1:
            wanted.append(meta.file_path[:at])
            at = meta.file_path.find("/", at + 1)
        for value in wanted:
            assert keeps(MetaFilter(file_path=value), None, decoded)
        if meta.folder is not None:
            assert keeps(MetaFilter(folder=meta.folder), None, decoded)
            assert keeps(MetaFilter(folder=meta.folder + "/"), None, decoded)
        if meta.workspace is not None:
            assert keeps(MetaFilter(workspace=meta.workspace), None, decoded)
            assert not keeps(MetaFilter(workspace=meta.workspace + "x"), None, decoded)
        for value in PHONE_VALUES:
            if value == meta.thread_id:
                assert keeps(MetaFilter(thread_id=value), None, decoded)


def test_no_local_path_leaves_from_a_chunked_document() -> None:
    meta = MemoryMeta(
        workspace="/Users/QDann/work",
        folder="/Users/QDann/Documents",
        file_path="/Users/QDann/Documents/big.md",
    )
    body = ("a paragraph of text\n\n" * 20_000) + "\f" + "# Last\n" + "tail " * 10
    envs = envelopes(Document(TextBody(body), "Big", None, meta))
    assert len(envs) >= 2
    for env in envs:
        text = compact_sorted(experience_request(env).to_json())
        assert "QDann" not in text
        assert "Documents" not in text
        assert "file:big.md" in text


# -------------------------------------------------------------------- fuzzing

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

ENVELOPE_KEYS = [
    "v", "id", "kind", "text", "meta", "ws", "fp", "fd", "title", "mime",
    "learning_kind", "confidence", "evidence", "turn", "chunk",
]  # fmt: skip


def sample_envelopes() -> List[Envelope]:
    meta = MemoryMeta(workspace="/w", file_path="/w/a.md", tags=("t",), thread_id="t1")
    out: List[Envelope] = []
    out += envelopes(Document(TextBody("x\fy"), "T", "m", meta))
    out += envelopes(StoreItem.learning("l", LearningKind.FACT, 0.25, meta))
    out += envelopes(
        Conversation((Turn(Role.TOOL, "t", datetime(2025, 1, 1, tzinfo=timezone.utc)),), meta)
    )
    return out


SAMPLES = sample_envelopes()


def is_result(value: object) -> bool:
    return value is None or isinstance(value, Envelope)


@given(JSON)
def test_decode_event_never_raises_on_any_json(value: Any) -> None:
    assert is_result(decode_event(value))
    assert is_result(decode_event({"id": "e", "content": {"text": "x"}, "context": value}))
    assert is_result(decode_event({"id": "e", "content": value}))
    assert is_result(parse_envelope(value))


@given(st.text())
def test_decode_never_raises_on_any_text(text: str) -> None:
    assert is_result(decode(text))
    assert is_result(decode("[user] " + text))
    assert is_result(decode('{"v":2,' + text))


PART = st.builds(
    lambda n, body: f"tm:e:{n}:{body}",
    st.from_regex(r"[0-9]{1,3}|[0-9]*[^0-9:][^:]*", fullmatch=True),
    st.text(max_size=40),
)


@given(st.text(), st.lists(st.one_of(st.text(), PART), max_size=8))
def test_from_labels_never_raises_on_any_labels(text: str, labels: List[str]) -> None:
    assert is_result(from_labels(text, labels))
    assert is_result(
        decode_event({"id": "e", "content": {"text": text}, "context": {"labels": labels}})
    )


@given(st.sampled_from(range(len(SAMPLES))), st.sampled_from(ENVELOPE_KEYS), JSON)
def test_envelopes_with_one_member_replaced(which: int, key: str, value: Any) -> None:
    obj: Dict[str, Any] = SAMPLES[which].to_json(2)
    obj[key] = value
    env = parse_envelope(json.loads(json.dumps(obj)))
    assert is_result(env)
    if env is not None:
        assert env.id == obj["id"]


META_KEYS = [
    "namespace", "workspace", "folder", "file_path", "language", "repo", "commit", "url",
    "thread_id", "turns", "agent_id", "tool_call", "source", "tags", "observed_at", "derive",
    "observed_actor",
]  # fmt: skip


@given(st.sampled_from(range(len(SAMPLES))), st.sampled_from(META_KEYS), JSON)
def test_envelopes_with_one_meta_member_replaced(which: int, key: str, value: Any) -> None:
    obj: Dict[str, Any] = SAMPLES[which].to_json(2)
    obj["meta"] = {**obj["meta"], key: value}
    assert is_result(parse_envelope(json.loads(json.dumps(obj))))


@st.composite
def mutated_parts(draw: st.DrawFn) -> Tuple[str, List[str]]:
    env = draw(st.sampled_from(SAMPLES))
    enc = encode_checked(env)
    labels = list(enc.labels)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(labels) - 1))
        label = labels[at]
        if not label:
            continue
        pos = draw(st.integers(0, len(label) - 1))
        op = draw(st.sampled_from(["replace", "delete", "insert", "drop", "duplicate"]))
        char = draw(st.characters(blacklist_categories=("Cs",)))
        if op == "replace":
            labels[at] = label[:pos] + char + label[pos + 1 :]
        elif op == "delete":
            labels[at] = label[:pos] + label[pos + 1 :]
        elif op == "insert":
            labels[at] = label[:pos] + char + label[pos:]
        elif op == "drop":
            del labels[at]
            if not labels:
                break
        else:
            labels.append(label)
    return enc.text, labels


@given(mutated_parts())
def test_mutated_v3_parts_decode_or_are_skipped(case: Tuple[str, List[str]]) -> None:
    text, labels = case
    assert is_result(from_labels(text, labels))


@pytest.mark.slow
@settings(max_examples=3000)
@given(mutated_parts())
def test_mutated_v3_parts_many(case: Tuple[str, List[str]]) -> None:
    text, labels = case
    assert is_result(from_labels(text, labels))


def test_samples_round_trip() -> None:
    for env in SAMPLES:
        enc = encode_checked(env)
        assert from_labels(enc.text, list(enc.labels)) == env
    assert replace(SAMPLES[0], v=2) == decode(json.dumps(SAMPLES[0].to_json(2)))
