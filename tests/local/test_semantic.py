"""The ``[semantic]`` extra: a real offline model, loaded from the wheel's own files."""

from __future__ import annotations

import socket

import pytest

from cortex_memory.contract import FetchMode, FetchRequest, RecallRequest, StoreItem
from cortex_memory.errors import ConfigError
from cortex_memory.local import LocalEngine
from cortex_memory.local.embedders import cosine

semantic = pytest.importorskip(
    "cortex_memory.local.semantic", reason="cortex_memory.local.semantic does not import"
)
try:
    EMBEDDER = semantic.static_embedder()
except ConfigError as exc:  # pragma: no cover - the test command installs the extra
    pytest.skip(f"the [semantic] extra is not installed here: {exc}", allow_module_level=True)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a socket fails the test: nothing may be downloaded."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the semantic embedder tried to reach the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_it_is_the_bundled_256_dimension_model(no_network: None) -> None:
    semantic._CACHED = None
    loaded = semantic.static_embedder()
    assert loaded.dimension == 256
    assert loaded.model_id == semantic.MODEL_ID
    assert len(loaded.embed(["hello world"])[0]) == 256


def test_meanings_not_spellings() -> None:
    car, automobile, banana, carpet = EMBEDDER.embed(
        ["I bought a new car", "the automobile I purchased", "a ripe banana", "carpet"]
    )
    assert cosine(car, automobile) > cosine(car, banana)
    assert cosine(car, automobile) > cosine(car, carpet)


def test_the_engine_finds_synonyms(no_network: None) -> None:
    with LocalEngine(":memory:", embedder="semantic") as engine:
        engine.store_many([
            StoreItem.document("My physician told me to rest for a week."),
            StoreItem.document("The garden needs watering on Sundays."),
            StoreItem.document("Our flat has two bedrooms and a balcony."),
        ])
        top = engine.fetch(FetchRequest("what did the doctor say", FetchMode.VECTOR, 1)).hits
        assert top[0].text.startswith("My physician")
        hybrid = engine.fetch(FetchRequest("how many rooms in the apartment", FetchMode.HYBRID, 2))
        assert hybrid.hits[0].text.startswith("Our flat")
        answer = engine.recall(RecallRequest("What did my doctor recommend?", 2))
        assert "rest for a week" in answer.answer
        assert engine.embedder.model_id == semantic.MODEL_ID


def test_a_missing_extra_is_a_clear_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "_CACHED", None)
    monkeypatch.setattr(semantic.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"pip install 'cortex-memory\[semantic\]'"):
        semantic.static_embedder()
    with pytest.raises(ConfigError, match="wordllama"):
        LocalEngine(":memory:", embedder="semantic")
