"""Scope paths (§7.1), digests and local-path privacy (§7.3)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

import pytest

from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.meta import (
    MemoryMeta,
    ObservedActor,
    Source,
    SourceKind,
    redacted_id,
)
from cortex_memory.contract.namespace import Namespace
from cortex_memory.cortex.envelope.digests import digest, path_digest, prefixes
from cortex_memory.cortex.envelope.paths import (
    file_name,
    is_absolute,
    path_digests,
    wire_id,
    wire_meta,
)
from cortex_memory.cortex.envelope.scopes import node_prefixes, parse_scope, scope_path

LEAVES = {
    ItemKind.DOCUMENT: "app:documents",
    ItemKind.CONVERSATION: "app:conversations",
    ItemKind.LEARNING: "app:learnings",
}
NODES = [
    "",
    "agent:writer",
    "team:acme",
    "team:acme/agent:writer",
    "team:acme/agent:writer/agent:helper",
    "user:ann/ws:w_1/project:p-2/source:pdf/service:flow",
    "/".join(f"agent:a{i}" for i in range(8)),
]


# -------------------------------------------------------------------- scopes


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("kind", list(ItemKind))
def test_scope_path_for_every_kind_and_node(node: str, kind: ItemKind) -> None:
    ns = Namespace.parse(node)
    path = scope_path(ns, kind)
    expected = "/".join(p for p in ("app:tinymemory", node, LEAVES[kind]) if p)
    assert path == expected
    assert parse_scope(path) == (ns, kind)
    assert parse_scope("org:x/" + path) == (ns, kind)
    assert parse_scope("org:x/tenant:y/" + path) == (ns, kind)


def test_scope_path_examples() -> None:
    assert scope_path(Namespace.root(), ItemKind.DOCUMENT) == "app:tinymemory/app:documents"
    assert (
        scope_path(Namespace.parse("team:acme/agent:writer"), ItemKind.LEARNING)
        == "app:tinymemory/team:acme/agent:writer/app:learnings"
    )


@pytest.mark.parametrize(
    "path",
    [
        "",
        "app:documents",
        "app:tinymemory",
        "app:tinymemory/",
        "app:tinymemory/team:acme",
        "app:tinymemory/team:acme/app:things",
        "app:tinymemory/robot:x/app:documents",
        "app:tinymemory/agent:a.b/app:documents",
        "app:brain/app:documents",
        "org:x/app:tinymemoryx/app:documents",
        "app:tinymemory/" + "/".join(f"agent:a{i}" for i in range(9)) + "/app:documents",
    ],
)
def test_parse_scope_refuses_what_is_not_ours(path: str) -> None:
    assert parse_scope(path) is None


def test_parse_scope_skips_to_the_first_root_segment() -> None:
    # Everything up to the first app:tinymemory is a prefix; a later one is a part.
    assert parse_scope("app:tinymemory/app:tinymemory/app:documents") is None
    assert parse_scope("x/app:tinymemory/agent:a/app:learnings") == (
        Namespace.parse("agent:a"),
        ItemKind.LEARNING,
    )


def test_node_prefixes() -> None:
    assert node_prefixes(Namespace.root()) == ["app:tinymemory"]
    assert node_prefixes(Namespace.parse("team:acme")) == ["app:tinymemory/team:acme"]
    assert node_prefixes(Namespace.parse("team:acme/agent:w")) == [
        "app:tinymemory/team:acme/agent:w"
    ]


# ------------------------------------------------------------------- digests


def test_digest_vectors() -> None:
    assert digest("") == "e3b0c44298fc1c14"
    assert path_digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4"
    assert digest("abc") == "ba7816bf8f01cfea"
    assert path_digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a3"
    for value in ("/Users/ann/a.pdf", "é", "team-handbook"):
        full = hashlib.sha256(value.encode("utf-8")).hexdigest()
        assert digest(value) == full[:16]
        assert path_digest(value) == full[:40]
        assert path_digest(value).startswith(digest(value))


@pytest.mark.parametrize(
    ("path", "cut"),
    [
        ("/a/b/c.rs", ["", "/a", "/a/b", "/a/b/c.rs"]),
        ("docs/x.md", ["docs", "docs/x.md"]),
        ("x.md", ["x.md"]),
        ("/", ["", "/"]),
        ("", [""]),
        ("a//b", ["a", "a/", "a//b"]),
        ("/a/b/", ["", "/a", "/a/b", "/a/b/"]),
        ("C:\\Users\\ann\\x.txt", ["C:\\Users\\ann\\x.txt"]),  # only '/' cuts
    ],
)
def test_prefixes(path: str, cut: list) -> None:
    assert prefixes(path) == tuple(path_digest(p) for p in cut)


# ---------------------------------------------------------------- path rules


@pytest.mark.parametrize(
    ("value", "absolute"),
    [
        ("/home/ann", True),
        ("~/work", True),
        ("~", True),
        ("\\\\server\\share", True),
        ("\\x", True),
        ("C:\\Users", True),
        ("c:", True),
        ("z:rel", True),
        ("team-handbook", False),
        ("org/repo", False),
        ("tinymemory-conformance/abc", False),
        ("1:x", False),
        ("é:x", False),
        ("", False),
        (" /x", False),
    ],
)
def test_is_absolute(value: str, absolute: bool) -> None:
    assert is_absolute(value) is absolute


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/Users/ann/Documents/pricing.pdf", "pricing.pdf"),
        ("C:\\Users\\ann\\pricing.pdf", "pricing.pdf"),
        ("docs/mixed\\sep/x.md", "x.md"),
        ("x.md", "x.md"),
        ("/Users/ann/", None),
        ("C:\\dir\\", None),
        ("", None),
    ],
)
def test_file_name(path: str, name: object) -> None:
    assert file_name(path) == name


def test_wire_id() -> None:
    assert wire_id(None) is None
    assert wire_id("t-1") == "t-1"
    assert wire_id("channel:sms_15551234567") == redacted_id("channel:sms_15551234567")
    held = redacted_id("+15551234567")
    assert wire_id(held) == held  # a redacted id holds no phone number


def full_meta() -> MemoryMeta:
    return MemoryMeta(
        namespace=Namespace.parse("team:acme"),
        workspace="/Users/ann/work",
        folder="/Users/ann/Documents/Plans",
        file_path="/Users/ann/Documents/Plans/pricing.pdf",
        language="en",
        thread_id="+1 (555) 123-4567",
        agent_id="whatsapp 5551234567",
        source=Source(SourceKind.FILE, "sms_15551234567"),
        tags=("t",),
        observed_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
        observed_actor=ObservedActor("user:priya@acme.com"),
    )


def test_wire_meta_drops_every_local_path_and_redacts_phone_ids() -> None:
    meta = full_meta()
    wire = wire_meta(meta)
    assert wire.file_path == "pricing.pdf"
    assert wire.folder is None
    assert wire.workspace is None
    assert wire.thread_id == redacted_id("+1 (555) 123-4567")
    assert wire.agent_id == redacted_id("whatsapp 5551234567")
    assert wire.source == Source(SourceKind.FILE, redacted_id("sms_15551234567"))
    assert wire.observed_actor is None
    # Everything else is kept as is.
    assert wire.namespace == meta.namespace
    assert wire.language == "en"
    assert wire.tags == ("t",)
    assert wire.observed_at == meta.observed_at


def test_wire_meta_keeps_a_logical_workspace_and_plain_ids() -> None:
    meta = MemoryMeta(workspace="team-handbook", thread_id="t1", agent_id="writer")
    assert wire_meta(meta) is meta
    relative = MemoryMeta(file_path="docs/a/b.md")
    assert wire_meta(relative).file_path == "b.md"
    assert wire_meta(MemoryMeta(file_path="dir/")).file_path is None


def test_path_digests_come_from_the_original_meta() -> None:
    digests = path_digests(full_meta())
    assert digests.ws == path_digest("/Users/ann/work")
    assert digests.fp == prefixes("/Users/ann/Documents/Plans/pricing.pdf")
    assert digests.fd == prefixes("/Users/ann/Documents/Plans")
    logical = path_digests(MemoryMeta(workspace="team-handbook"))
    assert logical.ws is None
    assert logical.fp == ()
    assert logical.fd == ()
