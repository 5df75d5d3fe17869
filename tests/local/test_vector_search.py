"""Vector search: the Python and NumPy backends, the NumPy index kept in step with
writes, forgets and tenants, and the bounded set compared without NumPy."""

from __future__ import annotations

from typing import List

import pytest

from cortex_memory.contract import (
    FetchMode,
    FetchRequest,
    MemoryMeta,
    MetaFilter,
    StoreItem,
)
from cortex_memory.local import LocalEngine, NgramEmbedder, search

from .conftest import EngineFactory, hit_texts


def _stored_ngrams() -> NgramEmbedder:
    # The n-gram embedder, made to store its vectors: vector search then runs
    # on the stored rows (the NumPy index when the backend allows it).
    embedder = NgramEmbedder()
    embedder.stores_vectors = True
    return embedder


@pytest.mark.parametrize("backend", ["python", "numpy"])
@pytest.mark.parametrize("stored", [False, True])
def test_vector_search_backends(make_engine: EngineFactory, backend: str, stored: bool) -> None:
    if backend == "numpy":
        pytest.importorskip("numpy", reason="NumPy is not installed: the NumPy index is not tested")
    embedder = _stored_ngrams() if stored else NgramEmbedder()
    engine = make_engine(":memory:", vector_backend=backend, embedder=embedder)
    engine.health()
    assert engine._vectors.numpy == (stored and backend == "numpy")
    engine.store_many([
        StoreItem.document("planning the garden beds"),
        StoreItem.document("quarterly budget review"),
        StoreItem.document("garden planning notes", MemoryMeta(workspace="w")),
    ])
    hits = engine.fetch(FetchRequest("garden planing", FetchMode.VECTOR, 5)).hits  # a typo
    assert {h.text for h in hits} >= {"planning the garden beds", "garden planning notes"}
    assert "quarterly budget review" not in {h.text for h in hits}
    flt = MetaFilter(workspace="w")
    assert hit_texts(engine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5, flt)).hits) == [
        "garden planning notes"
    ]


def test_the_numpy_index_follows_writes_and_forgets(make_engine: EngineFactory) -> None:
    pytest.importorskip("numpy", reason="NumPy is not installed: the NumPy index is not tested")
    from cortex_memory.contract import ForgetTarget

    engine = make_engine("", vector_backend="numpy", embedder=_stored_ngrams())
    first = engine.store(StoreItem.document("garden planning"))
    assert engine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits
    index = engine._vectors._indexes["items"]
    loaded = index._epoch
    second = engine.store(StoreItem.document("garden planting"))
    ids = [h.id for h in engine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits]
    assert set(ids) == {first.id, second.id}
    # The new row was appended as a block of its own: nothing was reloaded.
    assert index._epoch == loaded
    assert len(index._blocks) == 2
    engine.forget(ForgetTarget.ids([first.id]))
    ids = [h.id for h in engine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits]
    assert ids == [second.id]
    assert index._epoch != loaded  # reloaded after the forget
    assert len(index._blocks) == 1
    # Another engine (another process, for all it knows) writes: this one sees it.
    with LocalEngine(engine._path, vector_backend="numpy", embedder=_stored_ngrams()) as other:
        third = other.store(StoreItem.document("garden paths"))
    ids = {h.id for h in engine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits}
    assert ids == {second.id, third.id}


def test_the_numpy_index_holds_one_tenant(make_engine: EngineFactory, db_path: str) -> None:
    pytest.importorskip("numpy", reason="NumPy is not installed: the NumPy index is not tested")
    mine = make_engine(vector_backend="numpy", embedder=_stored_ngrams(), tenant="mine")
    theirs = make_engine(vector_backend="numpy", embedder=_stored_ngrams(), tenant="theirs")
    mine.store(StoreItem.document("garden planning"))
    theirs.store_many([StoreItem.document("garden planting"), StoreItem.document("garden")])
    assert hit_texts(mine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits) == [
        "garden planning"
    ]
    assert len(theirs.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits) == 2
    assert sum(len(seqs) for seqs, _m in mine._vectors._indexes["items"]._blocks) == 1


def test_a_filter_the_nearest_rows_miss_searches_the_rows_it_admits(
    make_engine: EngineFactory,
) -> None:
    pytest.importorskip("numpy", reason="NumPy is not installed: the NumPy index is not tested")
    engine = make_engine(":memory:", vector_backend="numpy", embedder=_stored_ngrams())
    engine.store_many([StoreItem.document(f"garden planning {i}") for i in range(40)])
    engine.store(StoreItem.document("garden shed", MemoryMeta(workspace="w")))
    flt = MetaFilter(workspace="w")
    hits = engine.fetch(FetchRequest("garden planning", FetchMode.VECTOR, 3, flt)).hits
    assert hit_texts(hits) == ["garden shed"]


@pytest.mark.parametrize("stored", [False, True])
def test_without_numpy_vector_search_compares_a_bounded_set(
    make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch, stored: bool
) -> None:
    embedder = _stored_ngrams() if stored else NgramEmbedder()
    engine = make_engine(":memory:", vector_backend="python", embedder=embedder)
    for start in range(0, 400, 100):
        engine.store_many([StoreItem.document(f"note {i}") for i in range(start, start + 100)])
    engine.store_many([StoreItem.document(f"garden bed {i}") for i in range(5)])
    engine.store_many([StoreItem.document(f"late note {i}") for i in range(100)])
    compared: List[int] = []
    name = "scan_candidates" if stored else "live_candidates"
    real = getattr(search, name)

    def counting(*args: object) -> object:
        compared.append(len(args[-1]))  # type: ignore[arg-type]
        return real(*args)

    monkeypatch.setattr(search, name, counting)
    hits = engine.fetch(FetchRequest("garden", FetchMode.HYBRID, 5)).hits
    assert {h.text for h in hits} == {f"garden bed {i}" for i in range(5)}
    # The keyword candidates and the newest rows, not the 505 stored.
    assert compared == [5 + search.RECENT_ROWS]
