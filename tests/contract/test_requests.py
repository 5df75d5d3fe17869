"""Requests: validation messages, constructors, defaults and exact JSON round trips."""

from __future__ import annotations

from datetime import date
from typing import Any, Callable, List

import pytest

from cortex_memory.contract import (
    DEFAULT_SCAN_LIMIT,
    BeliefsRequest,
    ConsolidateRequest,
    EraseRequest,
    ExploreRequest,
    Facet,
    FetchMode,
    FetchRequest,
    ForgetFilter,
    ForgetIds,
    ForgetTarget,
    GetRequest,
    ItemKind,
    ListRequest,
    MetaFilter,
    Namespace,
    Reach,
    RecallRequest,
    TimeHint,
    WaitFor,
    WriteOptions,
)
from cortex_memory.contract.jsonfmt import dumps
from cortex_memory.errors import InvalidRequestError

NODE = Namespace.parse("team:acme/agent:writer")
FLT = MetaFilter(workspace="w", kinds=(ItemKind.LEARNING,))
FETCH = FetchRequest.new("q", FetchMode.HYBRID, 5)
SCAN = "explore scan_limit must be between 1 and 50000"
WHOLE = "erasing the whole tree needs whole_tree: true"
BLANK_QUERY = "a beliefs query must not be blank"
HINT = TimeHint(date(2025, 1, 3), date(2025, 1, 4), "Asia/Kolkata")


def refused(call: Callable[[], Any], message: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        call()
    assert caught.value.message == message


# ------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (RecallRequest.new(" \n", 5), "recall question must not be empty"),
        (RecallRequest.new("q", 0), "recall limit must be positive"),
        (RecallRequest.new("q", -1), "recall limit must be positive"),
        (
            RecallRequest.new("q", 5).with_refers_to(TimeHint(date(2025, 1, 2), date(2025, 1, 1))),
            "time hint `from` must not be after `to`",
        ),
        (FetchRequest.new("", FetchMode.HYBRID, 5), "fetch query must not be empty"),
        (FetchRequest.new("q", FetchMode.HYBRID, 0), "fetch limit must be positive"),
        (FETCH.with_max_scopes(0), "fetch max_scopes must be positive"),
        (FETCH.with_beliefs(-1), "fetch beliefs must not be negative"),
        (
            FetchRequest.new("q", FetchMode.HYBRID, 5).with_refers_to(
                TimeHint(date(2025, 1, 1), date(2025, 1, 2), "IST")
            ),
            "unknown time zone `IST`",
        ),
        (ListRequest(MetaFilter(), 0), "list limit must be positive"),
        (GetRequest(()), "get takes between 1 and 200 ids"),
        (GetRequest(["x"] * 201), "get takes between 1 and 200 ids"),
        (GetRequest(["a", "\u3000"]), "an id must not be blank"),
        (ExploreRequest.new(Facet.KIND, 0), "explore limit must be between 1 and 500"),
        (ExploreRequest.new(Facet.KIND, 501), "explore limit must be between 1 and 500"),
        (ExploreRequest(Facet.KIND, 5, MetaFilter(), 0), SCAN),
        (ExploreRequest(Facet.KIND, 5, MetaFilter(), 50_001), SCAN),
        (EraseRequest.new(Reach.subtree(Namespace.root())), WHOLE),
        (EraseRequest(Reach(Namespace.root(), True, True)), WHOLE),
        (ForgetIds(()), "forget needs at least one id"),
        (ForgetFilter(MetaFilter()), "forget refuses an empty filter, which would mean everything"),
        (
            ConsolidateRequest(Reach.exact(NODE), (ItemKind.DOCUMENT, ItemKind.DOCUMENT)),
            "consolidate names the kind `document` twice",
        ),
        (BeliefsRequest.new(Reach.exact(NODE), 0), "a beliefs limit must be positive"),
        (BeliefsRequest.new(Reach.exact(NODE), 3).with_query(" "), BLANK_QUERY),
    ],
)
def test_validate_refusals(request_: Any, message: str) -> None:
    refused(request_.validate, message)


@pytest.mark.parametrize(
    "request_",
    [
        RecallRequest.new("q", 1).with_refers_to(HINT),
        FetchRequest.new("\x1f", FetchMode.KEYWORD, 1).with_max_scopes(1).with_beliefs(3),
        ListRequest(MetaFilter(), 10**9),
        GetRequest(["a"] * 200),
        ExploreRequest(Facet.TAG, 500, MetaFilter(), 50_000),
        ExploreRequest(Facet.TAG, 1, MetaFilter(), 1),
        EraseRequest.new(Reach.subtree(Namespace.root())).with_whole_tree(),
        EraseRequest.new(Reach.subtree(Namespace.root())).with_kinds([ItemKind.LEARNING]),
        EraseRequest.new(Reach.subtree(NODE)),
        EraseRequest.new(Reach.of(Namespace.root())),
        ForgetTarget.ids(["x"]),
        ForgetTarget.filter(MetaFilter(reach=Reach.default())),
        ConsolidateRequest(Reach.exact(NODE), (ItemKind.DOCUMENT, ItemKind.LEARNING)),
        BeliefsRequest.new(Reach.exact(NODE), 1).with_query("q"),
    ],
)
def test_validate_accepts(request_: Any) -> None:
    request_.validate()


def test_fetch_validate_does_not_check_the_mode() -> None:
    FetchRequest.new("q", FetchMode.VECTOR, 1).validate()


# ------------------------------------------------------------ constructors


def test_named_constructors_set_nothing_optional() -> None:
    recall = RecallRequest.new("q", 5)
    assert (recall.filter, recall.instructions, recall.refers_to) == (MetaFilter(), None, None)
    fetch = FetchRequest.new("q", FetchMode.HYBRID, 5)
    assert fetch.to_json() == {"query": "q", "mode": "hybrid", "filter": {}, "limit": 5}
    assert ListRequest.new(FLT, 5) == ListRequest(FLT, 5, None)
    assert ExploreRequest.new(Facet.KIND, 10).scan_limit == DEFAULT_SCAN_LIMIT == 5000
    assert EraseRequest.new(Reach.exact(NODE)) == EraseRequest(Reach.exact(NODE), (), False)
    assert ConsolidateRequest.new(Reach.exact(NODE)).with_kinds([ItemKind.DOCUMENT]).kinds == (
        ItemKind.DOCUMENT,
    )
    assert BeliefsRequest.new(Reach.exact(NODE), 3).query is None
    assert WriteOptions() == WriteOptions.visible() != WriteOptions.accepted()
    assert [w.value for w in WaitFor] == ["accepted", "visible"]
    assert [m.value for m in FetchMode] == ["keyword", "vector", "hybrid"]


def test_with_methods_return_copies() -> None:
    base = FetchRequest.new("q", FetchMode.HYBRID, 5)
    paged = base.with_cursor("7").with_filter(FLT)
    assert base.cursor is None
    assert paged.cursor == "7"
    assert paged.filter == FLT
    assert ListRequest.new(FLT, 5).with_cursor("x").cursor == "x"
    assert GetRequest(["a"]).with_reach(Reach.default()).reach == Reach.default()
    assert RecallRequest.new("q", 1).with_instructions("be brief").instructions == "be brief"
    assert ExploreRequest.new(Facet.KIND, 1).with_filter(FLT).with_scan_limit(9).scan_limit == 9


def test_consolidate_admitted_kinds() -> None:
    assert ConsolidateRequest.new(Reach.default()).admitted_kinds() == tuple(ItemKind)
    assert ConsolidateRequest(Reach.default(), [ItemKind.LEARNING]).admitted_kinds() == (  # type: ignore[arg-type]
        ItemKind.LEARNING,
    )


def test_forget_target_factories_and_variants() -> None:
    by_ids = ForgetTarget.ids(iter(["a", "b"]))
    assert isinstance(by_ids, ForgetIds)
    assert isinstance(by_ids, ForgetTarget)
    assert by_ids.ids == ("a", "b")
    by_filter = ForgetTarget.filter(FLT)
    assert isinstance(by_filter, ForgetFilter)
    assert by_filter.filter == FLT
    assert by_ids == ForgetIds(["a", "b"])  # type: ignore[arg-type]
    assert hash(by_ids) == hash(ForgetIds(("a", "b")))


@pytest.mark.parametrize(
    "build",
    [
        lambda: RecallRequest(5, 5),  # type: ignore[arg-type]
        lambda: RecallRequest("q", "5"),  # type: ignore[arg-type]
        lambda: RecallRequest("q", True),
        lambda: RecallRequest("q", 5, {}),  # type: ignore[arg-type]
        lambda: FetchRequest("q", FetchMode.HYBRID, 5, MetaFilter(), 7),  # type: ignore[arg-type]
        lambda: ListRequest(None, 5),  # type: ignore[arg-type]
        lambda: GetRequest("abc"),  # type: ignore[arg-type]
        lambda: ForgetIds("abc"),  # type: ignore[arg-type]
        lambda: ForgetFilter({}),  # type: ignore[arg-type]
        lambda: EraseRequest(NODE),  # type: ignore[arg-type]
        lambda: BeliefsRequest(Reach.default(), 1.5),  # type: ignore[arg-type]
        lambda: TimeHint("2025-01-01", date(2025, 1, 2)),  # type: ignore[arg-type]
    ],
)
def test_wrong_python_types_are_type_errors(build: Callable[[], Any]) -> None:
    with pytest.raises(TypeError):
        build()


def test_enum_fields_take_wire_strings() -> None:
    assert FetchRequest("q", "vector", 5).mode is FetchMode.VECTOR  # type: ignore[arg-type]
    assert ExploreRequest("tag", 5).facet is Facet.TAG  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError):
        FetchRequest("q", "fuzzy", 5)  # type: ignore[arg-type]


# --------------------------------------------------------------------- JSON

FULL_REQUESTS: List[Any] = [
    RecallRequest("q", 5, FLT, "be brief", HINT),
    RecallRequest.new("q", 5),
    FetchRequest("q", FetchMode.KEYWORD, 5, FLT, "c1", 2, HINT, 3),
    FetchRequest.new("q", FetchMode.VECTOR, 5),
    ListRequest(FLT, 5, "c"),
    ListRequest(MetaFilter(), 5),
    GetRequest(["a", "b"], Reach.of(NODE)),
    GetRequest(["a"]),
    ExploreRequest(Facet.NAMESPACE, 10, FLT, 100),
    EraseRequest(Reach.subtree(NODE), (ItemKind.LEARNING,), True),
    EraseRequest.new(Reach.exact(NODE)),
    ConsolidateRequest(Reach.exact(NODE), (ItemKind.DOCUMENT,)),
    ConsolidateRequest.new(Reach.exact(NODE)),
    BeliefsRequest(Reach.exact(NODE), 10, "q"),
    BeliefsRequest.new(Reach.exact(NODE), 10),
    WriteOptions.accepted(),
    HINT,
    TimeHint(date(2025, 1, 3), date(2025, 1, 4)),
]


@pytest.mark.parametrize("request_", FULL_REQUESTS, ids=lambda r: type(r).__name__)
def test_json_round_trip(request_: Any) -> None:
    wire = request_.to_json()
    back = type(request_).from_json(wire)
    assert back == request_
    assert dumps(back.to_json()) == dumps(wire)


@pytest.mark.parametrize("target", [ForgetIds(("a", "b")), ForgetFilter(FLT)], ids=str)
def test_forget_target_json(target: ForgetTarget) -> None:
    assert ForgetTarget.from_json(target.to_json()) == target


def test_json_key_orders_and_omission() -> None:
    assert list(FULL_REQUESTS[0].to_json()) == [
        "question", "filter", "limit", "instructions", "refers_to",
    ]
    assert list(FULL_REQUESTS[1].to_json()) == ["question", "filter", "limit"]
    assert list(FULL_REQUESTS[2].to_json()) == [
        "query", "mode", "filter", "limit", "cursor", "beliefs", "refers_to", "max_scopes",
    ]
    assert list(FULL_REQUESTS[8].to_json()) == ["facet", "filter", "limit", "scan_limit"]
    assert EraseRequest.new(Reach.exact(NODE)).to_json() == {
        "reach": {"at": str(NODE), "inherit": False, "descendants": False},
        "whole_tree": False,
    }
    assert list(FULL_REQUESTS[9].to_json()) == ["reach", "kinds", "whole_tree"]
    assert list(FULL_REQUESTS[13].to_json()) == ["reach", "query", "limit"]
    assert GetRequest(["a"]).to_json() == {"ids": ["a"]}
    assert ForgetIds(("a",)).to_json() == {"ids": ["a"]}
    assert ForgetFilter(MetaFilter(workspace="w")).to_json() == {"filter": {"workspace": "w"}}
    assert WriteOptions().to_json() == {"wait": "visible"}
    assert HINT.to_json() == {"from": "2025-01-03", "to": "2025-01-04", "zone": "Asia/Kolkata"}


def test_json_defaults_on_input() -> None:
    assert RecallRequest.from_json({"question": "q", "limit": 3}) == RecallRequest.new("q", 3)
    assert ExploreRequest.from_json({"facet": "kind", "limit": 3}).scan_limit == 5000
    assert FetchRequest.from_json({"query": "q", "mode": "hybrid", "limit": 1}).beliefs == 0
    assert EraseRequest.from_json({"reach": {}}).whole_tree is False
    assert WriteOptions.from_json({}) == WriteOptions()


@pytest.mark.parametrize(
    ("cls", "bad"),
    [
        (RecallRequest, {"limit": 3}),
        (RecallRequest, {"question": "q", "limit": -3}),
        (RecallRequest, {"question": "q", "limit": "3"}),
        (RecallRequest, {"question": "q", "limit": 3, "filter": []}),
        (RecallRequest, {"question": "q", "limit": 3, "refers_to": {"from": "2025-1-1"}}),
        (TimeHint, {"from": "2025-1-1", "to": "2025-01-02"}),
        (TimeHint, {"from": "2025-02-30", "to": "2025-03-01"}),
        (FetchRequest, {"query": "q", "mode": "fuzzy", "limit": 1}),
        (FetchRequest, {"query": "q", "mode": "hybrid", "limit": 1, "max_scopes": -1}),
        (ListRequest, {"filter": {}}),
        (GetRequest, {"ids": "a"}),
        (GetRequest, {}),
        (ExploreRequest, {"facet": "colour", "limit": 3}),
        (EraseRequest, {"kinds": []}),
        (EraseRequest, {"reach": {}, "kinds": ["memo"]}),
        (ConsolidateRequest, {"reach": "root"}),
        (BeliefsRequest, {"reach": {}}),
        (WriteOptions, {"wait": "soon"}),
        (ForgetTarget, {"ids": ["a"], "filter": {}}),
        (ForgetTarget, {}),
        (ForgetTarget, {"ids": "a"}),
        (ForgetTarget, [1]),
        (TimeHint, {"from": "2025-01-01"}),
    ],
)
def test_from_json_refusals(cls: Any, bad: Any) -> None:
    with pytest.raises(InvalidRequestError):
        cls.from_json(bad)
