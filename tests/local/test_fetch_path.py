"""The keyword fetch's short cuts give what the general path gives: pages built
directly, keyword rankings without a vector space."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract import (
    FetchMode,
    FetchPage,
    FetchRequest,
    Hit,
    ItemKind,
    MemoryMeta,
    MetaFilter,
    Namespace,
    SourceKind,
    StoreItem,
)
from cortex_memory.contract import ItemKind as Kind
from cortex_memory.errors import EngineError
from cortex_memory.local import LocalEngine, reads
from cortex_memory.local.corpus import ITEMS
from cortex_memory.local.lexical import Terms
from cortex_memory.local.rows import kind_of, meta_of, page_hits, scored_hit
from cortex_memory.local.search import Query

# Words of ASCII letters and digits (the short way), and texts that are not
# one such word: spaces, punctuation, letters outside ASCII, CJK, stop words.
_QUERIES = st.one_of(
    st.text(alphabet="abcXYZ019", min_size=1, max_size=10),
    st.sampled_from(["The", "a", "I", "ships", "Shipping", "relational", "x2", "term01234"]),
    st.text(alphabet="aZ9 -_.é日本", max_size=8),
)


@settings(max_examples=300, deadline=None)
@given(_QUERIES, st.sampled_from([None, b"\x00" * 8, b"\x00\x00\x80?" * 2]))
def test_a_query_of_one_word_has_the_terms_the_general_way_gives(
    text: str, vector: Optional[bytes]
) -> None:
    fast, general = Terms.of(text), Terms._of_phrases(text)
    assert fast == general
    assert repr(fast) == repr(general)
    assert type(fast.stems) is tuple
    kinds = {term: type(forms) for term, forms in fast.forms.items()}
    assert kinds == dict.fromkeys(general.stems, frozenset)
    query = Query.of(text, vector)
    assert type(query) is Query
    assert query == Query(text, general, vector if vector and any(vector) else None)
    assert fast.match_expression() == fast._expression(fast.all_phrases)
    for phrase in fast.all_phrases:
        assert fast.match_expression([phrase]) == fast._expression([phrase])


_HITS = st.builds(
    Hit,
    st.text(min_size=1, max_size=8),
    st.sampled_from(list(ItemKind)),
    st.text(max_size=12),
    st.builds(MemoryMeta, workspace=st.one_of(st.none(), st.text(min_size=1, max_size=4))),
    st.floats(min_value=0.0, max_value=1.0),
    st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_HITS, max_size=4), st.one_of(st.none(), st.text(max_size=6)),
       st.lists(_HITS, max_size=3))
def test_a_page_built_directly_equals_the_checked_one(
    hits: List[Hit], cursor: Optional[str], beliefs: List[Hit]
) -> None:
    fast = reads.fetch_page(hits, cursor, beliefs)
    checked = FetchPage(tuple(hits), cursor, tuple(beliefs))
    assert type(fast) is FetchPage
    assert fast == checked
    assert hash(fast) == hash(checked)
    assert repr(fast) == repr(checked)
    assert fast.to_json() == checked.to_json()
    assert (fast.hits, fast.next_cursor, fast.beliefs) == (
        checked.hits, checked.next_cursor, checked.beliefs)
    assert type(fast.hits) is tuple
    assert type(fast.beliefs) is tuple


def test_a_keyword_ranking_is_the_same_without_a_vector_space(mem: LocalEngine) -> None:
    mem.store_many([StoreItem.document(f"ship plan {n} " + "word " * (n % 5)) for n in range(30)])
    query = Query.of("ship plan")
    ranked = []
    with mem._session("testing") as conn:
        for space in (mem._vectors.space(ITEMS), None):
            pairs, cursor, _ranking = reads.ranked_hits(
                conn, "default", FetchMode.KEYWORD, query, MetaFilter(), None, 0, 7,
                use_fts=mem.uses_fts, space=space,
            )
            ranked.append(([hit for hit, _ in pairs], cursor))
    assert ranked[0] == ranked[1]
    assert len(ranked[0][0]) == 7
    assert ranked[0][1] == "o7"
    page = mem.fetch(FetchRequest("ship plan", FetchMode.KEYWORD, 7))
    assert (list(page.hits), page.next_cursor) == ranked[0]


# Every way a stored row can differ from what the engine writes: item JSON
# (white space around it, trailing bytes, cut short, not an object, the meta
# missing, null, empty, not an object, holding members only the full read
# takes or values of the wrong type) and the row's values (other types, an
# unknown kind, a confidence that is an int or not finite).
def _stored(meta: object) -> str:
    return json.dumps({"type": "document", "body": {"text": None}, "meta": meta},
                      separators=(",", ":"))


_GOOD_META = {"workspace": "ws0", "namespace": "team:a/project:b", "tags": ["t0"],
              "source": {"kind": "file", "id": "f1"}, "observed_at": "2024-05-01T10:00:00Z"}
_JSONS = [
    _stored(_GOOD_META), _stored({"source": {"kind": "agent"}}), _stored({"derive": True}),
    _stored({"namespace": "team:a/service:x", "workspace": None}),
    f" {_stored(_GOOD_META)}\n", _stored(_GOOD_META) + " x", _stored(_GOOD_META)[:-1], "[]", "",
    '{"type":"document","body":{"text":null}}', _stored(None), _stored({}), _stored([_GOOD_META]),
    _stored({"turns": {"first": 1, "last": 2}}), _stored({"tool_call": {"name": "g", "id": "c"}}),
    _stored({"workspace": 3}), _stored({"namespace": "bad"}), _stored({"tags": ["a", 1]}),
    _stored({"source": {"kind": "nope"}}), _stored({"observed_at": "yesterday"}),
]
_ROW_VALUES = [  # (id, kind, text, confidence)
    ("id-1", "document", "some text", None), ("id-2", "learning", "", 0.7),
    ("id-3", "conversation", "text", 1 / 3), ("id-4", "learning", "text", 1),
    ("id-5", "learning", "text", float("nan")), ("id-6", "learning", "text", 2.5e40),
    (7, "document", "text", None), ("id-8", "document", 8, None),
    ("id-9", "nonsense", "text", None), ("id-10", None, "text", None),
]
_FILTERS = [MetaFilter(), MetaFilter(workspace="ws0"), MetaFilter(kinds=(Kind.LEARNING,)),
            MetaFilter(sources=(SourceKind.FILE,)), MetaFilter(tags_any=("t0",))]


def _general(page: Sequence[Tuple[int, float]], rows: Dict[int, Tuple[object, ...]],
             flt: MetaFilter) -> List[Tuple[Hit, str]]:
    out: List[Tuple[Hit, str]] = []
    for seq, score in page:
        row = rows[seq]
        item_json = str(row[5])
        meta = meta_of(str(row[1]), item_json)
        if flt.matches(kind_of(row[2]), meta):
            out.append((scored_hit(row, meta, score), item_json))
    return out


def _outcome(read: Any, page: Sequence[Tuple[int, float]],
             rows: Dict[int, Tuple[object, ...]], flt: MetaFilter) -> Any:
    # Hits compared by their repr and JSON (a NaN confidence equals nothing).
    try:
        pairs = read(page, rows, flt)
    except (EngineError, KeyError, TypeError, ValueError) as exc:
        return (type(exc).__name__, str(exc))
    assert all(type(hit) is Hit for hit, _ in pairs)
    return [(repr(hit), repr(hit.to_json()), item_json) for hit, item_json in pairs]


@pytest.mark.parametrize("item_json", _JSONS)
def test_page_hits_are_the_general_ways_hits_for_every_row(item_json: str) -> None:
    for values in _ROW_VALUES:
        rows = {1: (1, *values, item_json, None, None, None)}
        for flt in _FILTERS:
            for score in (0.0, 0.1, 1 / 3, 1.0):
                page = [(1, score)]
                assert _outcome(page_hits, page, rows, flt) == _outcome(
                    _general, page, rows, flt), (values, flt, score)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_ROW_VALUES), st.sampled_from(_JSONS),
                          st.floats(min_value=0.0, max_value=1.0)), min_size=1, max_size=6),
       st.sampled_from(_FILTERS))
def test_a_page_of_mixed_rows_is_the_general_ways_page(
    drawn: List[Tuple[Tuple[object, ...], str, float]], flt: MetaFilter
) -> None:
    rows = {seq: (seq, *values, item_json, None, None, None)
            for seq, (values, item_json, _score) in enumerate(drawn, start=1)}
    page = [(seq, score) for seq, (_values, _json, score) in enumerate(drawn, start=1)]
    page.reverse()  # page order, not row order
    assert _outcome(page_hits, page, rows, flt) == _outcome(_general, page, rows, flt)


def test_an_engine_row_takes_the_short_way(monkeypatch: pytest.MonkeyPatch) -> None:
    item_json = _stored(_GOOD_META)
    rows = {1: (1, "id-1", "document", "text", None, item_json, None, None, None),
            2: (2, "id-2", "learning", "text", 0.7, item_json, None, None, None)}
    page = [(2, 0.9), (1, 0.4)]
    expected = _general(page, rows, MetaFilter())
    # The short way calls none of the general way's steps.
    from cortex_memory.local import rows as rows_module
    monkeypatch.setattr(rows_module, "meta_of", None)
    monkeypatch.setattr(rows_module, "scored_hit", None)
    got = page_hits(page, rows, MetaFilter())
    assert got == expected
    assert [hit.meta.namespace for hit, _ in got] == [Namespace.parse("team:a/project:b")] * 2
