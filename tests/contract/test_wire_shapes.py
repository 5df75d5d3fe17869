"""The shared field tables (contract/_wire.py): order, renamed keys, defaults and refusals."""

from __future__ import annotations

from datetime import date

import pytest

from cortex_memory.contract.consolidation import BeliefsRequest
from cortex_memory.contract.descriptor import EngineDescriptor
from cortex_memory.contract.namespace import Reach
from cortex_memory.contract.requests import FetchMode, FetchRequest
from cortex_memory.contract.timehint import TimeHint
from cortex_memory.errors import InvalidRequestError


def test_keys_are_written_in_wire_order_not_constructor_order() -> None:
    request = BeliefsRequest(Reach.default(), 3, "tea")
    assert list(request.to_json()) == ["reach", "query", "limit"]
    fetch = FetchRequest("q", FetchMode.KEYWORD, 5, beliefs=2, max_scopes=1)
    assert list(fetch.to_json()) == [
        "query", "mode", "filter", "limit", "beliefs", "max_scopes",
    ]


def test_a_bad_wire_object_is_refused_at_the_first_field_in_constructor_order() -> None:
    # limit comes before query in the constructor, though after it on the wire.
    bad = {"reach": Reach.default().to_json(), "query": 7, "limit": "x"}
    with pytest.raises(InvalidRequestError) as caught:
        BeliefsRequest.from_json(bad)
    assert caught.value.message == "beliefs request.limit must be a non-negative integer"


def test_a_renamed_key_is_read_and_written_under_its_wire_name() -> None:
    hint = TimeHint(date(2024, 1, 2), date(2024, 1, 3))
    assert hint.to_json() == {"from": "2024-01-02", "to": "2024-01-03"}
    assert TimeHint.from_json({"from": "2024-01-02", "to": "2024-01-03"}) == hint
    with pytest.raises(TypeError, match=r"TimeHint\.from_ must be a date, not str"):
        TimeHint("2024-01-02", date(2024, 1, 3))  # type: ignore[arg-type]


def test_optional_and_defaulted_fields_read_as_their_defaults_when_missing() -> None:
    fetch = FetchRequest.from_json({"query": "q", "mode": "keyword", "limit": 3})
    assert fetch == FetchRequest("q", FetchMode.KEYWORD, 3)
    assert "beliefs" not in fetch.to_json()


def test_a_serialize_only_value_writes_null_where_its_wire_says_so() -> None:
    described = EngineDescriptor("x", "X", "an engine").to_json()
    assert described["default_endpoint"] is None
    assert described["fetch_modes"] == []
    assert not hasattr(EngineDescriptor, "from_json")
