"""Namespaces and reach: sanitizing, parsing, the tree helpers and the reach rules."""

from __future__ import annotations

import copy
import pickle
from typing import Dict, List, Optional, Set

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract import (
    MAX_DEPTH,
    Namespace,
    Reach,
    Segment,
    SegmentKind,
    admitted_by,
)
from cortex_memory.errors import InvalidRequestError

# --------------------------------------------------------------- segments


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("o'neil@acme.com", "o-neil-acme-com-c5acae54"),
        ("a.b", "a-b-108bf50c"),
        ("flow 7", "flow-7-264d6e08"),
        ("notion export", "notion-export-170e013a"),
        ("ééé", "----326b4529"),
        ("x" * 129, "x" * 119 + "-4ee8de87"),
        ("", "_"),
        ("writer", "writer"),
        ("A_b-9", "A_b-9"),
        ("x" * 128, "x" * 128),
    ],
)
def test_sanitized_vectors(raw: str, expected: str) -> None:
    segment = Segment.sanitized(SegmentKind.AGENT, raw)
    assert segment.id == expected
    assert segment.kind is SegmentKind.AGENT
    assert len(segment.id) <= 128


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_sanitized_never_fails_and_is_valid(raw: str) -> None:
    segment = Segment.sanitized(SegmentKind.SOURCE, raw)
    assert Namespace.parse(f"source:{segment.id}").segments == (segment,)


def test_segment_kinds_prefixes_and_order() -> None:
    assert [k.prefix for k in SegmentKind] == [
        "agent", "team", "user", "ws", "project", "source", "service",
    ]
    assert SegmentKind.WORKSPACE.value == "workspace"
    assert SegmentKind.from_prefix("ws") is SegmentKind.WORKSPACE
    assert SegmentKind.from_prefix("workspace") is None
    assert SegmentKind.from_prefix("Agent") is None
    assert str(Segment(SegmentKind.WORKSPACE, "main")) == "ws:main"


def test_segment_checks_its_id_and_kind() -> None:
    with pytest.raises(InvalidRequestError):
        Segment(SegmentKind.AGENT, "a.b")
    with pytest.raises(InvalidRequestError):
        Segment(SegmentKind.AGENT, "")
    with pytest.raises(TypeError):
        Segment(SegmentKind.AGENT, 7)  # type: ignore[arg-type]
    assert Segment("team", "x").kind is SegmentKind.TEAM  # type: ignore[arg-type]


# ------------------------------------------------------------- namespaces


def ns(text: str) -> Namespace:
    return Namespace.parse(text)


@pytest.mark.parametrize("text", ["", "root", "  root ", "\t", "\u3000root\u2003"])
def test_parse_root(text: str) -> None:
    assert ns(text).is_root()
    assert ns(text) == Namespace.root()
    assert str(ns(text)) == "root"


def test_parse_and_print() -> None:
    node = ns(" team:acme/agent:writer ")
    assert str(node) == "team:acme/agent:writer"
    assert node.segments == (
        Segment(SegmentKind.TEAM, "acme"),
        Segment(SegmentKind.AGENT, "writer"),
    )
    assert ns("ws:w1/project:p/source:pdf/service:job/user:u").depth() == 5


@pytest.mark.parametrize(
    "text",
    [
        "agent",
        "robot:x",
        "Agent:x",
        "agent:",
        "agent:a.b",
        "agent:a:b",
        "agent:a/",
        "/agent:a",
        "agent:a//agent:b",
        "agent:é",
        "/".join(["agent:a"] * 9),
        "agent:" + "x" * 129,
        "\x1fagent:a",
    ],
)
def test_parse_refusals(text: str) -> None:
    with pytest.raises(InvalidRequestError):
        Namespace.parse(text)


def test_parse_refuses_non_strings() -> None:
    with pytest.raises(InvalidRequestError):
        Namespace.parse(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError):
        Namespace.from_json(["agent:a"])


def test_depth_limits() -> None:
    eight = ns("/".join(f"agent:a{i}" for i in range(8)))
    assert eight.depth() == MAX_DEPTH
    with pytest.raises(InvalidRequestError):
        eight.child(Segment(SegmentKind.AGENT, "x"))
    with pytest.raises(InvalidRequestError):
        Namespace(tuple(Segment(SegmentKind.AGENT, f"a{i}") for i in range(9)))
    assert Namespace([Segment(SegmentKind.TEAM, "t")]) == ns("team:t")  # type: ignore[arg-type]


def test_tree_helpers() -> None:
    writer = ns("team:acme/agent:writer")
    assert writer.parent() == ns("team:acme")
    assert ns("team:acme").parent() == Namespace.root()
    assert Namespace.root().parent() is None
    assert Namespace.root().depth() == 0
    assert [str(n) for n in writer.ancestors_and_self()] == [
        "root", "team:acme", "team:acme/agent:writer",
    ]
    assert Namespace.root().ancestors_and_self() == (Namespace.root(),)
    assert ns("team:acme").child(Segment(SegmentKind.AGENT, "writer")) == writer
    assert Namespace.agent("o'neil@acme.com") == ns("agent:o-neil-acme-com-c5acae54")
    assert Namespace.source("pdf") == ns("source:pdf")


def test_is_within_compares_whole_segments() -> None:
    assert ns("agent:researcher/agent:x").is_within(ns("agent:researcher"))
    assert not ns("agent:researchers").is_within(ns("agent:researcher"))
    assert ns("agent:a").is_within(ns("agent:a"))
    assert ns("agent:a").is_within(Namespace.root())
    assert not Namespace.root().is_within(ns("agent:a"))


@pytest.mark.parametrize(
    ("node", "shared"),
    [
        ("team:acme/agent:writer", "team:acme"),
        ("agent:a/agent:b", "root"),
        ("team:acme", "team:acme"),
        ("root", "root"),
        ("team:acme/agent:a/service:job", "team:acme/agent:a/service:job"),
        ("team:acme/service:s/agent:a/agent:b", "team:acme/service:s"),
    ],
)
def test_shared_ancestor(node: str, shared: str) -> None:
    assert ns(node).shared_ancestor() == ns(shared)


def test_namespace_equality_hash_order_and_copies() -> None:
    a = ns("team:acme/agent:writer")
    assert a == Namespace((Segment(SegmentKind.TEAM, "acme"), Segment(SegmentKind.AGENT, "writer")))
    assert hash(a) == hash(ns("team:acme/agent:writer"))
    assert a != "team:acme/agent:writer"
    for clone in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert clone == a
        assert str(clone) == str(a)
        assert clone.depth() == 2
    assert repr(a) == "Namespace('team:acme/agent:writer')"
    nodes = [ns(t) for t in ["team:b", "agent:z", "root", "agent:a/agent:b", "agent:a", "ws:w"]]
    # Kind in declaration order (agent < team < ws), then id; a prefix first.
    assert [str(n) for n in sorted(nodes)] == [
        "root", "agent:a", "agent:a/agent:b", "agent:z", "team:b", "ws:w",
    ]
    assert ns("agent:a") < ns("team:a")
    assert ns("team:a") >= ns("agent:z")
    assert a.to_json() == "team:acme/agent:writer"
    assert Namespace.from_json("team:acme/agent:writer") == a


namespace_texts = st.lists(
    st.tuples(
        st.sampled_from([k.prefix for k in SegmentKind]),
        st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True),
    ),
    max_size=MAX_DEPTH,
).map(lambda parts: "/".join(f"{p}:{i}" for p, i in parts))


@settings(max_examples=200, deadline=None)
@given(namespace_texts)
def test_parse_print_round_trip(text: str) -> None:
    node = Namespace.parse(text)
    assert str(node) == (text or "root")
    assert Namespace.parse(str(node)) == node


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_parse_gives_a_namespace_or_invalid_request(text: str) -> None:
    try:
        node = Namespace.parse(text)
    except InvalidRequestError:
        return
    assert Namespace.parse(str(node)) == node


# ------------------------------------------------------------------ reach

R = Namespace.root()
T = ns("team:acme")
W = ns("team:acme/agent:writer")
H = ns("team:acme/agent:writer/agent:helper")
E = ns("team:acme/agent:editor")
S = ns("team:acme/agent:writer/service:flows")
TREE: Dict[str, Namespace] = {"R": R, "T": T, "W": W, "H": H, "E": E}


def seen(reach: Optional[Reach]) -> Set[str]:
    return {name for name, node in TREE.items() if admitted_by(reach, node)}


@pytest.mark.parametrize(
    ("reach", "expected"),
    [
        (Reach.of(W), "RTW"),
        (Reach.of(E), "RTE"),
        (Reach.exact(W), "W"),
        (Reach.of(H), "RTWH"),
        (Reach.subtree(W), "WH"),
        (Reach.subtree(T), "TWHE"),
        (Reach(T, inherit=True, descendants=True), "RTWHE"),
        (Reach.of(R), "R"),
        (Reach.default(), "R"),
        (Reach.subtree(R), "RTWHE"),
        (None, "RTWHE"),
    ],
)
def test_reach_worked_example(reach: Optional[Reach], expected: str) -> None:
    assert seen(reach) == set(expected)


def test_service_sandboxes_are_left_out_of_descendant_reads() -> None:
    for reach in (Reach.subtree(R), Reach.subtree(T), Reach.subtree(W), None):
        assert not admitted_by(reach, S)
        assert not admitted_by(reach, S.child(Segment(SegmentKind.AGENT, "x")))
    for reach in (Reach.exact(S), Reach.subtree(S), Reach.of(S)):
        assert admitted_by(reach, S)
    inner = S.child(Segment(SegmentKind.AGENT, "in"))
    assert Reach.subtree(S).admits(inner)
    nested = S.child(Segment(SegmentKind.SERVICE, "nested"))
    assert not Reach.subtree(S).admits(nested)  # a service in a service is its own sandbox
    assert Reach.of(inner).admits(S)  # inheriting reaches up into the sandbox it sits in


def test_reach_nodes() -> None:
    assert Reach.of(W).nodes() == (R, T, W)
    assert Reach.exact(W).nodes() == (W,)
    assert Reach.subtree(W).nodes() == (W,)


@pytest.mark.parametrize(
    ("inner", "outer", "expected"),
    [
        (Reach.exact(W), Reach.subtree(T), True),
        (Reach.of(T), Reach.of(W), True),
        (Reach.of(W), Reach.subtree(T), False),
        (Reach.subtree(T), Reach.of(W), False),
        (Reach.exact(ns("team:acme/service:flows")), Reach.subtree(T), False),
        (Reach.exact(ns("service:flows")), Reach.subtree(R), False),
        (Reach.subtree(W), Reach.subtree(T), True),
        (Reach.subtree(T), Reach.subtree(W), False),
        (Reach.subtree(R), Reach.subtree(R), True),
    ],
)
def test_within(inner: Reach, outer: Reach, expected: bool) -> None:
    assert inner.within(outer) is expected


def test_within_at_full_depth_counts_descendants_as_exact() -> None:
    deep = ns("/".join(f"agent:a{i}" for i in range(8)))
    assert Reach.subtree(deep).within(Reach.exact(deep))
    assert not Reach.subtree(deep.parent()).within(Reach.exact(deep.parent()))  # type: ignore[arg-type]


def test_reach_json() -> None:
    reach = Reach.subtree(W)
    assert reach.to_json() == {
        "at": "team:acme/agent:writer", "inherit": False, "descendants": True,
    }
    assert list(reach.to_json()) == ["at", "inherit", "descendants"]
    assert Reach.from_json(reach.to_json()) == reach
    assert Reach.from_json({}) == Reach.default()
    assert Reach.from_json({"at": "root"}).to_json() == {
        "at": "root", "inherit": True, "descendants": False,
    }


@pytest.mark.parametrize(
    "bad",
    [
        "team:acme",
        {"at": "robot:x"},
        {"at": 3},
        {"inherit": "yes"},
        {"descendants": 1},
    ],
)
def test_reach_from_json_refusals(bad: object) -> None:
    with pytest.raises(InvalidRequestError):
        Reach.from_json(bad)


def test_reach_types() -> None:
    with pytest.raises(TypeError):
        Reach("team:acme")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Reach(T, inherit=1)  # type: ignore[arg-type]


def _all_nodes() -> List[Namespace]:
    return [R, T, W, H, E, S, ns("team:other"), ns("agent:x/service:y/agent:z")]


@pytest.mark.parametrize("outer_at", _all_nodes(), ids=str)
@pytest.mark.parametrize("inner_at", _all_nodes(), ids=str)
def test_within_agrees_with_admits(inner_at: Namespace, outer_at: Namespace) -> None:
    nodes = _all_nodes() + [n.child(Segment(SegmentKind.AGENT, "leaf")) for n in _all_nodes()]
    for inner in (Reach.of(inner_at), Reach.exact(inner_at), Reach.subtree(inner_at)):
        for outer in (Reach.of(outer_at), Reach.exact(outer_at), Reach.subtree(outer_at)):
            if inner.within(outer):
                assert all(outer.admits(n) for n in nodes if inner.admits(n)), (inner, outer)
