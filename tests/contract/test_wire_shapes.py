"""The shared field tables (contract/_wire.py): order, renamed keys, defaults and refusals."""

from __future__ import annotations

from datetime import date
from typing import Any, Dict, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract._wire import Shape, Written
from cortex_memory.contract.consolidation import BeliefsRequest
from cortex_memory.contract.descriptor import EngineDescriptor
from cortex_memory.contract.filter import MetaFilter
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


# A field's value of its exact type, of a subclass, of a type the check turns
# into it (a mode's wire string) and of a wrong type, for each FetchRequest field.
class _Text(str):
    pass


class _Count(int):
    pass


class _Filter(MetaFilter):
    pass


_HINT = TimeHint(date(2024, 1, 2), date(2024, 1, 3))
_FIELDS = {
    "query": ["tea", "", _Text("tea"), 3, None],
    "mode": [FetchMode.KEYWORD, FetchMode.HYBRID, "vector", "nope", 1],
    "limit": [10, 0, -1, _Count(4), True, 2.0, "10"],
    "filter": [MetaFilter(), MetaFilter(workspace="w"), _Filter(), None, {}],
    "cursor": [None, "o10", _Text("k3"), 5],
    "beliefs": [0, 3, _Count(1), False, None],
    "refers_to": [None, _HINT, "2024-01-02"],
    "max_scopes": [None, 2, _Count(2), True, "2"],
}


def _checked(values: Dict[str, Any]) -> Any:
    """What the shape's checks make of ``values`` (the general way), or their error."""
    request = object.__new__(FetchRequest)
    request.__dict__.update(values)
    try:
        Written.__post_init__(request)
    except (TypeError, InvalidRequestError) as exc:
        return (type(exc), str(exc))
    return [(name, type(value), value) for name, value in request.__dict__.items()]


def _built(values: Dict[str, Any]) -> Any:
    try:
        request = FetchRequest(**values)
    except (TypeError, InvalidRequestError) as exc:
        return (type(exc), str(exc))
    return [(name, type(getattr(request, name)), getattr(request, name)) for name in values]


@settings(max_examples=500, deadline=None)
@given(st.fixed_dictionaries({name: st.sampled_from(values) for name, values in _FIELDS.items()}))
def test_a_fetch_request_of_exact_types_is_what_the_checks_make_of_it(
    values: Dict[str, Any]
) -> None:
    assert _built(values) == _checked(values)


@pytest.mark.parametrize("name", list(_FIELDS))
def test_each_field_of_a_fetch_request_is_what_the_checks_make_of_it(name: str) -> None:
    for value in _FIELDS[name]:
        values = {field: choices[0] for field, choices in _FIELDS.items()}
        values[name] = value
        assert _built(values) == _checked(values), value


def test_a_fetch_request_of_exact_types_skips_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[object] = []
    monkeypatch.setattr(Shape, "check", lambda shape, owner: calls.append(owner))
    FetchRequest("tea", FetchMode.KEYWORD, 10, MetaFilter(), "o10", 2, _HINT, 3)
    assert calls == []
    odd = FetchRequest("tea", "keyword", 10)  # type: ignore[arg-type]
    assert calls == [odd]
