"""Responses, descriptor and health, facets and time hints."""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any, List, Optional

import pytest

from cortex_memory.contract import (
    BELIEF_TAG,
    CONSOLIDATED_TAG,
    Bucket,
    Citation,
    ConsolidateReceipt,
    ConsolidateStatus,
    Consolidation,
    EngineDescriptor,
    EngineHealth,
    EraseReport,
    ExplorePage,
    Exported,
    ExportPage,
    Facet,
    FetchMode,
    FetchPage,
    ForgetReport,
    HealthState,
    Hit,
    ItemKind,
    LearningKind,
    ListPage,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    RecallAnswer,
    Source,
    SourceKind,
    StoreItem,
    TimeHint,
    ToolCallRef,
)
from cortex_memory.contract.jsonfmt import F32, dumps
from cortex_memory.errors import InvalidRequestError, UnsupportedError

META = MemoryMeta(workspace="w", tags=("a", "b"))
HIT = Hit("id1", ItemKind.LEARNING, "text", META, 0.9, 0.75)


def test_hit_rounds_float32_and_writes_f32() -> None:
    assert HIT.score == F32(0.9)
    wire = HIT.to_json()
    assert list(wire) == ["id", "kind", "text", "meta", "score", "confidence"]
    assert isinstance(wire["score"], F32)
    assert dumps(wire["score"]) == "0.9"
    listed = Hit("id2", ItemKind.DOCUMENT, "t", MemoryMeta())
    assert listed.score == 0.0
    assert listed.confidence is None
    assert "confidence" not in listed.to_json()


def test_hit_of_item() -> None:
    item = StoreItem.learning("tea", LearningKind.PREFERENCE, 0.9, META)
    hit = Hit.of(item)
    assert hit == Hit(item.fingerprint(), ItemKind.LEARNING, "tea", META, 0.0, 0.9)
    doc = StoreItem.document("body")
    assert Hit.of(doc, 0.5).confidence is None
    assert Hit.of(doc, 0.5).score == 0.5


RESPONSES: List[Any] = [
    HIT,
    Hit("id2", ItemKind.DOCUMENT, "t", MemoryMeta()),
    Citation("id1", ItemKind.DOCUMENT, "snip", META, 0.33),
    Citation("id1", ItemKind.DOCUMENT, "snip", META),
    RecallAnswer("answer", (Citation("id1", ItemKind.DOCUMENT, "s", META),), "model-x"),
    RecallAnswer("nothing"),
    FetchPage((HIT,), "next", (HIT,)),
    FetchPage(()),
    ListPage((HIT,), "c2"),
    ListPage(()),
    ForgetReport(3),
    Exported("id1", StoreItem.document("x")),
    ExportPage((Exported("id1", StoreItem.document("x")),), ("id9",), "c"),
    ExportPage(()),
    EraseReport(2, ("r1",)),
    EraseReport(0),
    Bucket("document", 4),
    ExplorePage(Facet.KIND, (Bucket("document", 4),), 5, 1, 0, False),
    ConsolidateReceipt.scheduled(),
    ConsolidateReceipt.started(["job-1"], 3),
    ConsolidateReceipt.completed(2, 7),
]


@pytest.mark.parametrize("response", RESPONSES, ids=lambda r: type(r).__name__)
def test_json_round_trip(response: Any) -> None:
    wire = response.to_json()
    back = type(response).from_json(wire)
    assert back == response
    assert dumps(back.to_json()) == dumps(wire)


def test_json_shapes() -> None:
    assert RecallAnswer("x").to_json() == {"answer": "x", "citations": []}
    assert FetchPage(()).to_json() == {"hits": []}
    assert list(FetchPage((HIT,), "n", (HIT,)).to_json()) == ["hits", "next_cursor", "beliefs"]
    assert ListPage(()).to_json() == {"items": []}
    assert ExportPage(()).to_json() == {"items": []}
    assert EraseReport(0).to_json() == {"erased_scopes": 0}
    assert ConsolidateReceipt.scheduled().to_json() == {"status": "scheduled", "scopes": 0}
    assert ConsolidateReceipt.started(["j"], 1).to_json() == {
        "status": "started", "jobs": ["j"], "scopes": 1,
    }
    assert list(ExplorePage(Facet.TAG, (), 0, 0, 0, True).to_json()) == [
        "facet", "buckets", "total", "missing", "more_buckets", "truncated",
    ]
    assert [s.value for s in ConsolidateStatus] == ["started", "scheduled", "completed"]
    assert (BELIEF_TAG, CONSOLIDATED_TAG) == ("belief", "consolidated")


@pytest.mark.parametrize(
    ("cls", "bad"),
    [
        (Hit, {"id": "x", "kind": "memo", "text": "t"}),
        (Hit, {"id": "x", "kind": "document", "text": "t", "score": "1"}),
        (Citation, {"id": "x", "kind": "document"}),
        (RecallAnswer, {"citations": []}),
        (FetchPage, {}),
        (ListPage, {"items": {}}),
        (Exported, {"id": "x"}),
        (ExportPage, {"items": [{"id": "x", "item": {"type": "memo"}}]}),
        (EraseReport, {"erased_scopes": -1}),
        (ExplorePage, {"facet": "kind", "buckets": [], "total": 0, "missing": 0}),
        (ConsolidateReceipt, {"status": "done"}),
        (ForgetReport, {}),
    ],
)
def test_from_json_refusals(cls: Any, bad: Any) -> None:
    with pytest.raises(InvalidRequestError):
        cls.from_json(bad)


def test_hit_types() -> None:
    with pytest.raises(TypeError):
        Hit("x", ItemKind.DOCUMENT, "t", META, "0.5")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ListPage([1])  # type: ignore[list-item]
    assert ListPage([HIT]).items == (HIT,)  # type: ignore[arg-type]


# --------------------------------------------------------------- descriptor


def descriptor(consolidation: Consolidation = Consolidation.NONE) -> EngineDescriptor:
    return EngineDescriptor(
        "cortexdb",
        "CortexDB",
        "CortexDB over its Direct API",
        hosted=False,
        needs_endpoint=False,
        needs_key=True,
        default_endpoint="https://api-v1.cortexdb.ai",
        fetch_modes=(FetchMode.HYBRID,),
        consolidation=consolidation,
    )


def test_descriptor_json_and_modes() -> None:
    wire = descriptor().to_json()
    assert list(wire) == [
        "id", "label", "description", "hosted", "needs_endpoint", "needs_key",
        "default_endpoint", "fetch_modes", "consolidation",
    ]
    assert wire["fetch_modes"] == ["hybrid"]
    assert wire["consolidation"] == "none"
    local = EngineDescriptor("local", "Local (SQLite)", "d", fetch_modes=list(FetchMode))  # type: ignore[arg-type]
    assert dumps(local.to_json()).count('"default_endpoint":null') == 1
    assert descriptor().supports(FetchMode.HYBRID)
    assert not descriptor().supports(FetchMode.KEYWORD)
    descriptor().ensure_mode(FetchMode.HYBRID)
    with pytest.raises(UnsupportedError) as caught:
        descriptor().ensure_mode(FetchMode.VECTOR)
    assert caught.value.message == "engine `cortexdb` does not offer vector fetch"
    assert [c.value for c in Consolidation] == ["none", "on_demand", "scheduled", "automatic"]


def test_health() -> None:
    assert EngineHealth.ok().to_json() == {"state": "ok"}
    assert EngineHealth.degraded("slow").to_json() == {"state": "degraded", "reason": "slow"}
    assert EngineHealth.down("gone").to_json() == {"state": "down", "reason": "gone"}
    assert EngineHealth.ok().is_serving()
    assert EngineHealth.degraded("slow").is_serving()
    assert not EngineHealth.down("gone").is_serving()
    assert EngineHealth("down", "x").state is HealthState.DOWN  # type: ignore[arg-type]


# -------------------------------------------------------------------- facets

FULL_META = MemoryMeta(
    namespace=Namespace.parse("team:acme"),
    workspace="w",
    folder="/f",
    file_path="/f/x",
    language="en",
    repo="o/r",
    url="u",
    thread_id="t",
    agent_id="a",
    tool_call=ToolCallRef("grep", "id"),
    source=Source(SourceKind.FILE, "s1"),
    tags=("x", "y"),
)


@pytest.mark.parametrize(
    ("facet", "full", "empty"),
    [
        (Facet.KIND, ("learning",), ("learning",)),
        (Facet.SOURCE, ("file",), ("agent",)),
        (Facet.SOURCE_ID, ("s1",), ()),
        (Facet.WORKSPACE, ("w",), ()),
        (Facet.FOLDER, ("/f",), ()),
        (Facet.FILE_PATH, ("/f/x",), ()),
        (Facet.LANGUAGE, ("en",), ()),
        (Facet.REPO, ("o/r",), ()),
        (Facet.URL, ("u",), ()),
        (Facet.THREAD, ("t",), ()),
        (Facet.AGENT, ("a",), ()),
        (Facet.TOOL_CALL, ("grep",), ()),
        (Facet.TAG, ("x", "y"), ()),
        (Facet.NAMESPACE, ("team:acme",), ("root",)),
    ],
)
def test_facet_values(facet: Facet, full: Any, empty: Any) -> None:
    assert facet.values(ItemKind.LEARNING, FULL_META) == full
    assert facet.values(ItemKind.LEARNING, MemoryMeta()) == empty
    if full and facet is not Facet.TAG:
        narrowed = facet.narrow(MetaFilter(), full[0])
        assert narrowed.matches(ItemKind.LEARNING, FULL_META)
        assert narrowed != MetaFilter()


def test_facet_narrow_sets_exactly_one_field() -> None:
    base = MetaFilter(workspace="w")
    documents = MetaFilter(workspace="w", kinds=(ItemKind.DOCUMENT,))
    assert Facet.KIND.narrow(base, "document") == documents
    assert Facet.SOURCE.narrow(base, "github").sources == (SourceKind.IMPORT,)
    assert Facet.TAG.narrow(base, "x") == MetaFilter(workspace="w", tags_any=("x",))
    assert Facet.FOLDER.narrow(base, "/f").folder == "/f"
    assert Facet.THREAD.narrow(base, "t").thread_id == "t"
    assert Facet.AGENT.narrow(base, "a").agent_id == "a"
    assert Facet.TOOL_CALL.narrow(base, "grep").tool_call == "grep"
    assert Facet.SOURCE_ID.narrow(base, "s").source_id == "s"
    assert Facet.WORKSPACE.narrow(base, "v").workspace == "v"
    acme = Reach.exact(Namespace.parse("team:acme"))
    assert Facet.NAMESPACE.narrow(base, "team:acme").reach == acme
    assert Facet.NAMESPACE.narrow(base, "root").reach == Reach.exact(Namespace.root())


@pytest.mark.parametrize(
    ("facet", "value"),
    [
        (Facet.KIND, "memo"),
        (Facet.SOURCE, "web"),
        (Facet.NAMESPACE, "robot:x"),
        (Facet.TAG, ""),
        (Facet.WORKSPACE, " \t"),
    ],
)
def test_facet_narrow_refusals(facet: Facet, value: str) -> None:
    base = MetaFilter(workspace="w")
    with pytest.raises(InvalidRequestError):
        facet.narrow(base, value)
    assert base == MetaFilter(workspace="w")


def test_facet_wire_names() -> None:
    assert [f.value for f in Facet] == [
        "kind", "source", "source_id", "workspace", "folder", "file_path", "language", "repo",
        "url", "thread", "agent", "tool_call", "tag", "namespace",
    ]


# ---------------------------------------------------------------- time hint


def dated(name: str, day: Optional[int]) -> Hit:
    at = None if day is None else datetime(2025, 1, day, 12, tzinfo=timezone.utc)
    return Hit(name, ItemKind.DOCUMENT, name, MemoryMeta(observed_at=at))


def test_time_hint_rank_example() -> None:
    hint = TimeHint(date(2025, 1, 3), date(2025, 1, 4))
    hits = [dated("a", 1), dated("b", 4), dated("undated", None), dated("c", 3), dated("d", 6)]
    assert [h.id for h in hint.rank(hits)] == ["b", "c", "a", "undated", "d"]


def test_time_hint_zone_moves_the_day() -> None:
    late = datetime(2025, 1, 2, 20, 0, tzinfo=timezone.utc)  # 01:30 on the 3rd in Kolkata
    assert not TimeHint(date(2025, 1, 3), date(2025, 1, 3)).covers(late)
    assert TimeHint(date(2025, 1, 3), date(2025, 1, 3), "Asia/Kolkata").covers(late)
    with pytest.raises(TypeError):
        TimeHint(date(2025, 1, 3), date(2025, 1, 3)).covers(datetime(2025, 1, 3))


@pytest.mark.parametrize("zone", ["IST", "Not/AZone", "", "../etc/passwd", "/etc/localtime"])
def test_time_hint_refuses_unknown_zones(zone: str) -> None:
    with pytest.raises(InvalidRequestError):
        TimeHint(date(2025, 1, 3), date(2025, 1, 4), zone).validate()


def test_time_hint_accepts_iana_zones() -> None:
    TimeHint(date(2025, 1, 3), date(2025, 1, 4), "Asia/Kolkata").validate()
    TimeHint(date(2025, 1, 3), date(2025, 1, 3), "UTC").validate()
