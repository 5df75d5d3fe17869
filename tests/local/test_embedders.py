"""The Embedder seam: the built-in n-gram embedder, custom embedders, stored vectors, models."""

from __future__ import annotations

import importlib.util
import math
import random
import sqlite3
import string
from typing import List, Sequence

import pytest

from cortex_memory.contract import FetchMode, FetchRequest, RecallRequest, StoreItem
from cortex_memory.errors import ConfigError, EngineError
from cortex_memory.local import Embedder, LocalEngine, NgramEmbedder
from cortex_memory.local.embedders import (
    check_embedder,
    cosine,
    cosines,
    embed_all,
    embedder_named,
    embedding_text,
    pack,
    unpack,
)

from .conftest import EngineFactory


class Letters:
    """A toy embedder: how often each of four letters occurs."""

    model_id = "letters-4"
    dimension = 4
    min_similarity = 0.5
    fusion_weight = 1.0

    def __init__(self) -> None:
        self.calls: List[Sequence[str]] = []

    def embed(self, texts: Sequence[str]) -> List[List[float]]:
        self.calls.append(list(texts))
        return [[float(t.lower().count(c)) for c in "aeio"] for t in texts]


def _vectors(path: str) -> List[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT e.model_id, e.dimension, length(v.vec) FROM item_vectors v "
            "JOIN embedders e ON e.key = v.model ORDER BY v.seq"
        ).fetchall()
    finally:
        conn.close()


def test_the_ngram_embedder_is_about_spelling() -> None:
    ngrams = NgramEmbedder()
    assert isinstance(ngrams, Embedder)
    assert (ngrams.model_id, ngrams.dimension) == ("ngram-signed-3x64", 64)
    plan, planning, budget, empty = ngrams.embed(["plan", "planning", "budget review", ""])
    assert len(plan) == 64
    assert cosine(plan, planning) > 0.35
    assert cosine(plan, budget) < cosine(plan, planning)
    assert not any(empty)
    # Deterministic across instances (and processes: the hash is CRC-32).
    assert NgramEmbedder().embed(["plan"])[0] == plan
    # Signed buckets: unrelated texts are near 0, not near 0.5.
    rng = random.Random(3)
    texts = [
        " ".join("".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(5))
        for _ in range(40)
    ]
    vectors = NgramEmbedder(128).embed(texts)
    sims = [cosine(vectors[i], vectors[j]) for i in range(40) for j in range(i + 1, 40)]
    assert abs(sum(sims) / len(sims)) < 0.1
    with pytest.raises(ConfigError):
        NgramEmbedder(4)
    with pytest.raises(TypeError):
        NgramEmbedder("64")  # type: ignore[arg-type]


def test_speaker_labels_are_not_embedded() -> None:
    assert embedding_text("Maya: I got a lemon tree") == "I got a lemon tree"
    ngrams = NgramEmbedder()
    a, b = embed_all(ngrams, ["Maya: I got a lemon tree", "Tom: I got a lemon tree"])
    assert a == b


def test_vectors_are_checked_and_packed() -> None:
    assert list(unpack(pack([1, 2.5, -3], 3))) == [1.0, 2.5, -3.0]
    with pytest.raises(EngineError, match="dimension is 4"):
        pack([1.0, 2.0], 4)
    with pytest.raises(EngineError, match="finite"):
        pack([1.0, math.nan], 2)
    with pytest.raises(EngineError, match="not a number"):
        pack(["x", 1.0], 2)  # type: ignore[list-item]


def test_embedders_are_checked() -> None:
    with pytest.raises(TypeError, match="model_id, dimension and embed"):
        check_embedder(object())

    class NoName(Letters):
        model_id = " "

    with pytest.raises(ConfigError, match="model_id"):
        check_embedder(NoName())

    class Weird(Letters):
        min_similarity = 2.0

    with pytest.raises(ConfigError, match="min_similarity"):
        check_embedder(Weird())
    with pytest.raises(ConfigError, match="unknown embedder"):
        embedder_named("fancy")
    with pytest.raises(ConfigError, match="cannot be imported"):
        embedder_named("no_such_module_here:make")
    assert isinstance(embedder_named(" ngram "), NgramEmbedder)
    made = embedder_named("tests.local.test_embedders:Letters")
    assert made.model_id == "letters-4"


def test_a_custom_embedder_ranks_vector_fetches(make_engine: EngineFactory, db_path: str) -> None:
    letters = Letters()
    engine = make_engine(embedder=letters, vector_backend="python")
    engine.store_many([StoreItem.document("aaaa"), StoreItem.document("eeee"),
                       StoreItem.document("aaae")])
    assert ["aaaa", "eeee", "aaae"] in letters.calls  # one batch, before any lock
    hits = engine.fetch(FetchRequest("aa", FetchMode.VECTOR, 5)).hits
    assert [h.text for h in hits] == ["aaaa", "aaae"]  # "eeee" is below 0.5
    assert _vectors(db_path) == [("letters-4#text-1", 4, 16)] * 3


class Vowels(Letters):
    """Another model: the same letters, one more dimension."""

    model_id = "vowels-5"
    dimension = 5

    def embed(self, texts: Sequence[str]) -> List[List[float]]:
        return [[float(t.lower().count(c)) for c in "aeiou"] for t in texts]


def test_a_changed_model_reembeds_instead_of_mixing(
    make_engine: EngineFactory, db_path: str
) -> None:
    with LocalEngine(db_path, embedder=Letters()) as first:
        first.store_many([StoreItem.document("aaaa"), StoreItem.document("eeee")])
    assert {row[:2] for row in _vectors(db_path)} == {("letters-4#text-1", 4)}
    engine = make_engine(embedder=Vowels(), vector_backend="python")
    assert engine.health().ok
    assert _vectors(db_path) == [("vowels-5#text-1", 5, 20)] * 2
    assert [h.text for h in engine.fetch(FetchRequest("ee", FetchMode.VECTOR, 5)).hits] == [
        "eeee"
    ]
    # The built-in embedder stores no vectors: the other model's go.
    with LocalEngine(db_path) as ngrams:
        assert ngrams.fetch(FetchRequest("aaaa", FetchMode.VECTOR, 5)).hits
    assert _vectors(db_path) == []


def test_an_embedder_that_fails_stores_nothing(make_engine: EngineFactory) -> None:
    class Broken(Letters):
        def embed(self, texts: Sequence[str]) -> List[List[float]]:
            raise RuntimeError("model fell over")

    class Short(Letters):
        def embed(self, texts: Sequence[str]) -> List[List[float]]:
            return [[1.0, 2.0]]

    for bad, message in ((Broken(), "failed"), (Short(), "returned")):
        engine = make_engine(":memory:", embedder=bad)
        with pytest.raises(EngineError, match=message):
            engine.store(StoreItem.document("aaaa"))
        assert engine.fetch(FetchRequest("aaaa", FetchMode.KEYWORD, 5)).hits == ()


def test_recall_uses_the_embedder_for_sentences(make_engine: EngineFactory) -> None:
    letters = Letters()
    engine = make_engine(":memory:", embedder=letters)
    engine.store(StoreItem.document("aaaa"))
    assert engine.recall(RecallRequest("aa", 3)).answer == "aaaa."
    assert any("aaaa" in batch for batch in letters.calls[1:])


def test_without_the_extra_semantic_is_a_config_error() -> None:
    if importlib.util.find_spec("wordllama") is not None:
        pytest.skip("the [semantic] extra is installed: tests/local/test_semantic.py covers it")
    with pytest.raises(ConfigError, match=r"pip install 'cortex-memory\[semantic\]'"):
        LocalEngine(":memory:", embedder="semantic")


def test_the_ngram_fast_cosines_equal_embedding_and_comparing() -> None:
    rng = random.Random(12)
    embedder = NgramEmbedder()
    words = ["plan", "planning", "release", "ships", "Café", "user:", "Maya:", "the", "42", "é"]
    texts = [" ".join(rng.choices(words, k=rng.randint(0, 12))) for _ in range(150)]
    texts += ["Maya: we ship on Tuesday\nuser: when?", "x" * 9000 + " plan", "", "the a of"]
    for question in ("when do we ship the release?", "planning", "the", "zzz"):
        query = embed_all(embedder, [question])[0]
        slow = [cosine(unpack(query), unpack(blob)) for blob in embed_all(embedder, texts)]
        for _ in range(2):  # computed, then remembered
            fast = cosines(embedder, query, texts)
            assert fast == pytest.approx(slow, abs=1e-12)
