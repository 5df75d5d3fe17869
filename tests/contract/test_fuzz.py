"""Property tests: exact JSON round trips, and from_json never leaks a stray exception."""

from __future__ import annotations

import contextlib
import copy
import json
from datetime import date, datetime, timezone
from typing import Any, List, Tuple

from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract import (
    BeliefsRequest,
    Citation,
    ConsolidateReceipt,
    ConsolidateRequest,
    ConsolidateStatus,
    Document,
    EraseReport,
    EraseRequest,
    ExplorePage,
    ExploreRequest,
    ExportPage,
    Facet,
    FetchMode,
    FetchPage,
    FetchRequest,
    ForgetTarget,
    GetRequest,
    Hit,
    ItemKind,
    Learning,
    LearningKind,
    ListPage,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    ObservedActor,
    Reach,
    RecallAnswer,
    RecallRequest,
    Role,
    Segment,
    SegmentKind,
    Source,
    SourceKind,
    StoreItem,
    TextBody,
    TimeHint,
    ToolCallRef,
    Turn,
    TurnRange,
    UriBody,
    WriteOptions,
    fingerprint_json,
)
from cortex_memory.contract.fingerprint import hash_json
from cortex_memory.contract.jsonfmt import dumps
from cortex_memory.errors import InvalidRequestError

text = st.text(max_size=12)
opt_text = st.none() | text
instants = st.datetimes(
    min_value=datetime(1970, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.just(timezone.utc),
)
namespaces = st.lists(
    st.builds(
        Segment,
        st.sampled_from(list(SegmentKind)),
        st.from_regex(r"[A-Za-z0-9_-]{1,10}", fullmatch=True),
    ),
    max_size=4,
).map(tuple).map(Namespace)
metas = st.builds(
    MemoryMeta,
    namespace=namespaces,
    workspace=opt_text,
    folder=opt_text,
    file_path=opt_text,
    thread_id=opt_text,
    turns=st.none() | st.builds(TurnRange, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    agent_id=opt_text,
    tool_call=st.none() | st.builds(ToolCallRef, text, opt_text),
    source=st.builds(Source, st.sampled_from(list(SourceKind)), opt_text),
    tags=st.lists(text, max_size=3).map(tuple),
    observed_at=st.none() | instants,
    derive=st.none() | st.booleans(),
    observed_actor=st.none() | st.builds(ObservedActor, text, opt_text),
)
floats = st.floats(allow_nan=False, allow_infinity=False, width=32)
turns = st.builds(
    Turn,
    st.sampled_from(list(Role)),
    text,
    st.none() | instants,
    st.lists(st.builds(ToolCallRef, text, opt_text), max_size=2).map(tuple),
)
bodies = st.builds(TextBody, text) | st.builds(UriBody, text)
items = st.one_of(
    st.builds(Document, bodies, opt_text, opt_text, metas),
    st.builds(lambda t, m: StoreItem.conversation(t, m), st.lists(turns, max_size=3), metas),
    st.builds(Learning, text, st.sampled_from(list(LearningKind)), floats, opt_text, metas),
)
reaches = st.builds(Reach, namespaces, st.booleans(), st.booleans())
filters = st.builds(
    MetaFilter,
    reach=st.none() | reaches,
    workspace=opt_text,
    folder=opt_text,
    tool_call=opt_text,
    source_id=opt_text,
    turns=st.none() | st.builds(TurnRange, st.integers(0, 9), st.integers(0, 9)),
    kinds=st.lists(st.sampled_from(list(ItemKind)), max_size=2).map(tuple),
    sources=st.lists(st.sampled_from(list(SourceKind)), max_size=2).map(tuple),
    tags_any=st.lists(text, max_size=2).map(tuple),
    observed_after=st.none() | instants,
)
item_kinds = st.sampled_from(list(ItemKind))
kind_tuples = st.lists(item_kinds, max_size=3).map(tuple)
hits = st.builds(Hit, text, item_kinds, text, metas, floats, st.none() | floats)
citations = st.builds(Citation, text, item_kinds, text, metas, st.none() | floats)
text_tuples = st.lists(text, max_size=2).map(tuple)
hit_tuples = st.lists(hits, max_size=2).map(tuple)


def _round_trips(value: Any) -> None:
    wire = value.to_json()
    # Through real JSON text, as a peer would send it.
    parsed = json.loads(dumps(wire))
    back = type(value).from_json(parsed)
    assert back == value
    assert dumps(back.to_json()) == dumps(wire)


@settings(max_examples=150, deadline=None)
@given(items)
def test_items_round_trip_exactly(item: StoreItem) -> None:
    _round_trips(item)
    back = StoreItem.from_json(json.loads(dumps(item.to_json())))
    assert back.fingerprint() == item.fingerprint()


@settings(max_examples=200, deadline=None)
@given(items)
def test_fingerprint_hashes_the_contract_writers_bytes(item: StoreItem) -> None:
    # Documents and conversations are hashed through the C encoder: the
    # bytes must be the contract writer's, for every text, meta and turn.
    assert item.fingerprint() == hash_json(fingerprint_json(item))


@settings(max_examples=100, deadline=None)
@given(st.one_of(
    filters,
    st.builds(RecallRequest, text, st.integers(0, 99), filters, opt_text),
    st.builds(FetchRequest, text, st.sampled_from(list(FetchMode)), st.integers(0, 99), filters,
              opt_text, st.integers(0, 5), st.none(), st.none() | st.integers(0, 9)),
    st.builds(ListRequest, filters, st.integers(0, 99), opt_text),
    st.builds(GetRequest, st.lists(text, max_size=3).map(tuple), st.none() | reaches),
    st.builds(ExploreRequest, st.sampled_from(list(Facet)), st.integers(0, 600), filters),
    st.builds(EraseRequest, reaches, kind_tuples, st.booleans()),
    st.builds(ConsolidateRequest, reaches, kind_tuples),
    st.builds(BeliefsRequest, reaches, st.integers(0, 9), opt_text),
    st.builds(TimeHint, st.dates(), st.dates(), st.none() | st.just("UTC")),
))
def test_requests_round_trip_exactly(request_: Any) -> None:
    _round_trips(request_)


@settings(max_examples=100, deadline=None)
@given(st.one_of(
    hits,
    citations,
    st.builds(RecallAnswer, text, st.lists(citations, max_size=2).map(tuple), opt_text),
    st.builds(FetchPage, hit_tuples, opt_text, hit_tuples),
    st.builds(ListPage, hit_tuples, opt_text),
    st.builds(EraseReport, st.integers(0, 9), text_tuples),
    st.builds(
        ConsolidateReceipt,
        st.sampled_from(list(ConsolidateStatus)),
        text_tuples,
        st.integers(0, 9),
        st.none() | st.integers(0, 9),
    ),
))
def test_responses_round_trip_exactly(response: Any) -> None:
    _round_trips(response)


# ----------------------------------------------------- malformed input fuzz

json_junk = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)

FULL_META = MemoryMeta(
    namespace=Namespace.parse("team:acme/agent:w"),
    workspace="w",
    turns=TurnRange(1, 2),
    tool_call=ToolCallRef("t", "i"),
    source=Source(SourceKind.FILE, "s"),
    tags=("a",),
    observed_at=datetime(2025, 1, 1, tzinfo=timezone.utc),
    derive=True,
    observed_actor=ObservedActor("user:x", "X"),
)
HIT = Hit("i", ItemKind.LEARNING, "t", FULL_META, 0.5, 0.5)
CITATION = Citation("i", ItemKind.DOCUMENT, "s", FULL_META, 0.5)
AT = datetime(2025, 1, 1, tzinfo=timezone.utc)
CALL = ToolCallRef("a", "b")
HINT = TimeHint(date(2025, 1, 1), date(2025, 1, 2), "UTC")
FULL_FILTER = MetaFilter(
    reach=Reach.of(Namespace.parse("agent:a")),
    turns=TurnRange(1, 2),
    kinds=(ItemKind.DOCUMENT,),
    sources=(SourceKind.FILE,),
    tags_any=("x",),
    observed_after=datetime(2025, 1, 1, tzinfo=timezone.utc),
)
SAMPLES: List[Tuple[Any, Any]] = [
    (MemoryMeta, FULL_META.to_json()),
    (StoreItem, Learning("t", LearningKind.FACT, 0.5, "e", FULL_META).to_json()),
    (StoreItem, Document(TextBody("b"), "t", "m", FULL_META).to_json()),
    (StoreItem, StoreItem.conversation([Turn(Role.USER, "u", AT, (CALL,))]).to_json()),
    (MetaFilter, FULL_FILTER.to_json()),
    (RecallRequest, RecallRequest("q", 3, FULL_FILTER, "i", HINT).to_json()),
    (FetchRequest, FetchRequest("q", FetchMode.HYBRID, 3, FULL_FILTER, "c", 1, None, 2).to_json()),
    (ListRequest, ListRequest(FULL_FILTER, 3, "c").to_json()),
    (GetRequest, GetRequest(["a"], Reach.default()).to_json()),
    (ExploreRequest, ExploreRequest(Facet.TAG, 3, FULL_FILTER).to_json()),
    (EraseRequest, EraseRequest(Reach.default(), (ItemKind.DOCUMENT,)).to_json()),
    (ConsolidateRequest, ConsolidateRequest(Reach.default(), (ItemKind.DOCUMENT,)).to_json()),
    (BeliefsRequest, BeliefsRequest(Reach.default(), 3, "q").to_json()),
    (ForgetTarget, ForgetTarget.filter(FULL_FILTER).to_json()),
    (WriteOptions, WriteOptions().to_json()),
    (FetchPage, FetchPage((HIT,), "c", (HIT,)).to_json()),
    (ListPage, ListPage((HIT,), "c").to_json()),
    (RecallAnswer, RecallAnswer("a", (CITATION,), "m").to_json()),
    (ExportPage, ExportPage((), ("x",), "c").to_json()),
    (ExplorePage, ExplorePage(Facet.KIND, (), 1, 0, 0, False).to_json()),
    (ConsolidateReceipt, ConsolidateReceipt.started(["j"], 1).to_json()),
]


def _paths(value: Any, prefix: Tuple[Any, ...] = ()) -> List[Tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*prefix, index))
    return found


def _replace(value: Any, path: Tuple[Any, ...], junk: Any) -> Any:
    if not path:
        return junk
    copied = copy.deepcopy(value)
    target = copied
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = junk
    return copied


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(SAMPLES), st.data(), json_junk)
def test_from_json_gives_a_value_or_invalid_request(sample: Any, data: Any, junk: Any) -> None:
    cls, wire = sample
    path = data.draw(st.sampled_from(_paths(wire)))
    mutated = _replace(wire, path, junk)
    with contextlib.suppress(InvalidRequestError):
        cls.from_json(mutated)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SAMPLES), json_junk)
def test_from_json_of_junk_gives_a_value_or_invalid_request(sample: Any, junk: Any) -> None:
    with contextlib.suppress(InvalidRequestError):
        sample[0].from_json(junk)
