"""The SQL condition built from a filter selects exactly what ``MetaFilter.matches`` admits.

The engine re-checks every row in Python anyway, so these tests query the
SQL condition on its own (through a plain ``sqlite3`` connection): it must
neither miss a matching item (that would be a wrong answer) nor admit a
foreign one (that would only cost time, but says the translation is off).
"""

from __future__ import annotations

import os
import random
import sqlite3
from datetime import datetime, timedelta, timezone
from typing import Iterator, List, Set, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract import (
    ItemKind,
    LearningKind,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    Source,
    SourceKind,
    StoreItem,
    ToolCallRef,
    TurnRange,
    admitted_by,
    redacted_id,
)
from cortex_memory.local import LocalEngine
from cortex_memory.local.sqlfilter import (
    filter_condition,
    micros,
    reach_condition,
    tags_key,
    tags_of,
)

NAMESPACES = [
    Namespace.parse(p)
    for p in (
        "root", "agent:a", "agent:a/agent:b", "agent:a/service:s", "agent:a/service:s/agent:c",
        "agent:ab", "agent:a_b", "agent:a-b", "team:t/agent:a", "service:x", "service:x/agent:y",
        "agent:a/agent:b/service:z/service:w",
    )
]
STRINGS = [None, "w", "w2", "", "x/y", "É"]
PATHS = [None, "/a", "/a/b", "/a/b/", "/a/bc", "/", "", "rel", "rel/x", "/a//", "/a/b/c.rs"]
WANTED_PATHS = ["/a", "/a/b", "/a/b/", "/a/b//", "/", "", "rel", "/a/bc", "///"]
IDS = [None, "t1", redacted_id("t1"), "t2", "tm-redacted:nope"]
WANTED_IDS = ["t1", "t2", redacted_id("t1"), "zz"]
TURNS = [None, TurnRange(1, 2), TurnRange(1, 3)]
CALLS = [None, ToolCallRef("grep"), ToolCallRef("grep", "c1"), ToolCallRef("sed")]
# Tags hold any text: the separator and escape characters of the tags column,
# the empty tag and tags that are pieces of others must all filter exactly.
TAGS = ["x", "y", "z", "", "xy", "x\x1e", "\x1ex", "\x1d", "\x1d\x1f", "\x1d\x1d\x1e", "\x1f"]
T0 = datetime(2001, 1, 1, tzinfo=timezone.utc)
TIMES = [None, T0, T0 + timedelta(microseconds=1), T0 + timedelta(days=1), T0 - timedelta(days=400)]


def _meta(rng: random.Random) -> MemoryMeta:
    return MemoryMeta(
        namespace=rng.choice(NAMESPACES),
        workspace=rng.choice(STRINGS),
        folder=rng.choice(PATHS),
        file_path=rng.choice(PATHS),
        language=rng.choice(STRINGS),
        repo=rng.choice(STRINGS),
        commit=rng.choice(STRINGS),
        url=rng.choice(STRINGS),
        thread_id=rng.choice(IDS),
        turns=rng.choice(TURNS),
        agent_id=rng.choice(IDS),
        tool_call=rng.choice(CALLS),
        source=Source(rng.choice(list(SourceKind)), rng.choice(IDS)),
        tags=tuple(rng.choices(TAGS, k=rng.randint(0, 3))),
        observed_at=rng.choice(TIMES),
    )


def _items(n: int) -> Iterator[StoreItem]:
    rng = random.Random(20240501)
    for i in range(n):
        meta = _meta(rng)
        if i % 3 == 2:
            yield StoreItem.learning(f"learning {i}", LearningKind.FACT, 0.5, meta)
        else:
            yield StoreItem.document(f"document {i}", meta)


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[sqlite3.Connection, list]]:
    """A file with 400 varied items (tenant ``t``) plus one foreign tenant's copy."""
    path = os.path.join(os.fspath(tmp_path_factory.mktemp("sqlfilter")), "pool.sqlite3")
    items = list(_items(400))
    with LocalEngine(path, tenant="t") as engine, LocalEngine(path, tenant="other") as other:
        for start in range(0, len(items), 100):
            engine.store_many(items[start : start + 100])
        other.store_many(items[:100])
    conn = sqlite3.connect(path)
    try:
        yield conn, items
    finally:
        conn.close()


def _selected(conn: sqlite3.Connection, flt: MetaFilter) -> Set[str]:
    where, params = filter_condition(flt, "t")
    return {row[0] for row in conn.execute(f"SELECT c.id FROM items c WHERE {where}", params)}


reaches = st.one_of(
    st.none(),
    st.builds(Reach, st.sampled_from(NAMESPACES), st.booleans(), st.booleans()),
)
filters = st.builds(
    MetaFilter,
    reach=reaches,
    workspace=st.sampled_from(STRINGS),
    folder=st.one_of(st.none(), st.sampled_from(WANTED_PATHS)),
    file_path=st.one_of(st.none(), st.sampled_from(WANTED_PATHS)),
    language=st.sampled_from(STRINGS),
    repo=st.sampled_from(STRINGS),
    commit=st.sampled_from(STRINGS),
    url=st.sampled_from(STRINGS),
    thread_id=st.one_of(st.none(), st.sampled_from(WANTED_IDS)),
    turns=st.sampled_from(TURNS),
    agent_id=st.one_of(st.none(), st.sampled_from(WANTED_IDS)),
    tool_call=st.sampled_from([None, "grep", "sed", "awk"]),
    source_id=st.one_of(st.none(), st.sampled_from(WANTED_IDS)),
    kinds=st.lists(st.sampled_from(list(ItemKind)), max_size=2),
    sources=st.lists(st.sampled_from(list(SourceKind)), max_size=3),
    tags_any=st.lists(st.sampled_from([*TAGS, "none", "\x1e", "x\x1e\x1ey"]), max_size=2),
    observed_after=st.sampled_from(TIMES),
    observed_before=st.sampled_from(TIMES),
)


def _sparse(flt: MetaFilter, rng: random.Random) -> MetaFilter:
    # Most generated filters set so many fields that nothing matches; also
    # try them with only a few of their fields kept.
    keep = {"reach": flt.reach}
    for name in rng.sample(
        [
            "workspace", "folder", "file_path", "thread_id", "agent_id", "source_id", "kinds",
            "sources", "tags_any", "observed_after", "observed_before", "turns", "tool_call",
            "language",
        ],
        2,
    ):
        keep[name] = getattr(flt, name)
    return MetaFilter(**keep)  # type: ignore[arg-type]


def test_sql_condition_is_exactly_matches(pool: Tuple[sqlite3.Connection, list]) -> None:
    conn, items = pool
    matched_any: List[int] = []

    @settings(max_examples=400, deadline=None)
    @given(filters, st.randoms(use_true_random=False))
    def check(flt: MetaFilter, rng: random.Random) -> None:
        for candidate in (flt, _sparse(flt, rng)):
            expected = {
                item.fingerprint() for item in items if candidate.matches(item.item_kind, item.meta)
            }
            assert _selected(conn, candidate) == expected, candidate
            matched_any.append(len(expected))

    check()
    assert max(matched_any) > 10  # the property was not tested on empty answers only


@pytest.mark.parametrize("at", NAMESPACES, ids=str)
def test_reach_condition_is_admits(pool: Tuple[sqlite3.Connection, list], at: Namespace) -> None:
    conn, items = pool
    for reach in (
        None, Reach.of(at), Reach.exact(at), Reach.subtree(at), Reach(at, True, True),
    ):
        sql, params = reach_condition(reach, "c")
        got = {
            row[0]
            for row in conn.execute(
                f"SELECT c.id FROM items c WHERE c.tenant = 't' AND {sql}", params
            )
        }
        expected = {i.fingerprint() for i in items if admitted_by(reach, i.meta.namespace)}
        assert got == expected, reach


def test_micros_is_exact() -> None:
    assert micros(datetime(1970, 1, 1, tzinfo=timezone.utc)) == 0
    assert micros(datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)) == -1
    at = datetime(2025, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc)
    assert micros(at) == 1746515289123456
    other_zone = at.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert micros(other_zone) == micros(at)


def test_foreign_tenant_is_never_selected(pool: Tuple[sqlite3.Connection, list]) -> None:
    conn, _items = pool
    where, params = filter_condition(MetaFilter(reach=Reach.subtree(Namespace.root())), "t")
    rows = conn.execute(f"SELECT count(*) FROM items c WHERE {where}", params).fetchone()
    total = conn.execute("SELECT count(*) FROM items").fetchone()
    assert rows[0] < total[0]
    where, params = filter_condition(MetaFilter(), "nobody")
    assert conn.execute(f"SELECT count(*) FROM items c WHERE {where}", params).fetchone() == (0,)


tag_texts = st.text(alphabet=st.sampled_from(["a", "b", "\x1d", "\x1e", "\x1f", "é"]), max_size=5)


@settings(max_examples=300, deadline=None)
@given(st.lists(tag_texts, max_size=4), tag_texts)
def test_the_tags_column_is_exact(tags: List[str], wanted: str) -> None:
    stored = tags_key(tags)
    assert tags_of(stored) == tags
    if not tags:
        assert stored is None
        return
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE items (tenant TEXT, svc INTEGER, tags TEXT)")
        conn.execute("INSERT INTO items VALUES ('t', 0, ?)", (stored,))
        where, params = filter_condition(MetaFilter(tags_any=(wanted,)), "t")
        found = conn.execute(f"SELECT count(*) FROM items c WHERE {where}", params)
        assert found.fetchone()[0] == (1 if wanted in tags else 0)
    finally:
        conn.close()


@settings(max_examples=200, deadline=None)
@given(st.lists(filters, min_size=1, max_size=3),
       st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["t1", "t2"]),
                          st.sampled_from(["c", "b"])), max_size=12))
def test_the_condition_remembered_is_the_one_asked(
    made: List[MetaFilter], calls: List[Tuple[int, str, str]]
) -> None:
    # filter_condition remembers the condition it made last: the same filter
    # object (or an equal one, another object), tenant or alias asked in any
    # order must give its own condition, and a caller changing the parameters
    # it got changes nobody else's.
    from cortex_memory.local.sqlfilter import _condition

    pool = [*made, MetaFilter(**{f: getattr(made[0], f) for f in ("reach", "workspace")})]
    for index, tenant, alias in calls:
        flt = pool[min(index, len(pool) - 1)]
        sql, params = filter_condition(flt, tenant, alias)
        assert (sql, params) == _condition(flt, tenant, alias)
        params.append("changed by the caller")
        assert filter_condition(flt, tenant, alias) == _condition(flt, tenant, alias)
