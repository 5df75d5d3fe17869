"""The keyword fetch's short cuts give what the general path gives: pages built
directly, keyword rankings without a vector space."""

from __future__ import annotations

from typing import List, Optional

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
    StoreItem,
)
from cortex_memory.local import LocalEngine, reads
from cortex_memory.local.corpus import ITEMS
from cortex_memory.local.search import Query

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
