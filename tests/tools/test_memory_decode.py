"""The memory tool's surface: closed schemas and a decoder at least as strict as they are."""

from __future__ import annotations

import json
from typing import Any, Dict

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.errors import InvalidRequestError
from cortex_memory.tools.memory import (
    LocalMemoryStore,
    MemoryKey,
    MemoryRequestError,
    MemoryTool,
    RootSessions,
    input_schema,
    output_schema,
)
from cortex_memory.tools.memory.decode import (
    DeleteCall,
    PutCall,
    ReadCall,
    ScanCall,
    decode_call,
)
from cortex_memory.tools.memory.schemas import TOOL_DESCRIPTION


def _walk_objects(schema: Any) -> Any:
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from _walk_objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _walk_objects(value)


def _branch(schema: Dict[str, Any], operation: str) -> Dict[str, Any]:
    for branch in schema["oneOf"]:
        if branch["properties"]["operation"]["const"] == operation:
            return branch
    raise AssertionError(operation)


def test_definition_is_one_closed_tagged_surface() -> None:
    tool = MemoryTool(LocalMemoryStore(), RootSessions("root"))
    definition = tool.definition()
    assert definition["name"] == "memory"
    for schema in (definition["input_schema"], definition["output_schema"]):
        jsonschema.Draft202012Validator.check_schema(schema)
        assert len(schema["oneOf"]) == 4
        objects = list(_walk_objects(schema))
        assert objects
        assert all(o["additionalProperties"] is False for o in objects)
    scan_out = _branch(definition["output_schema"], "scan")
    assert scan_out["properties"]["candidates"]["items"]["properties"]["preview"]["maxLength"] == 64
    assert scan_out["properties"]["candidates"]["maxItems"] == 5


def test_description_names_the_example_and_the_rules() -> None:
    example = '{"operation":"read","keys":[{"id":7,"version":1,"namespace":"alice"}]}'
    assert example in TOOL_DESCRIPTION
    lowered = TOOL_DESCRIPTION.lower()
    assert "authenticated and team namespaces" in lowered
    assert "root agents only" in lowered
    assert "writer credential" in lowered


def test_operations_share_one_key_shape() -> None:
    schema = input_schema()
    read, delete, put = (_branch(schema, op) for op in ("read", "delete", "put"))
    assert read["required"] == ["operation", "keys"]
    assert "ids" not in read["properties"]
    assert "scan" in read["properties"]["keys"]["description"]
    assert delete["required"] == ["operation", "key"]
    key = delete["properties"]["key"]
    assert key == read["properties"]["keys"]["items"] == put["properties"]["replace"]
    assert key["required"] == ["id", "version"]
    assert "returned" in key["description"]
    assert "unchanged" in key["description"]
    assert _branch(output_schema(), "delete")["required"] == ["operation", "backend", "key"]


def test_schema_functions_return_fresh_copies() -> None:
    first = input_schema()
    first["oneOf"].clear()
    assert len(input_schema()["oneOf"]) == 4


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"operation": "scan", "query": "q"}, ScanCall("q", 5)),
        ({"operation": "scan", "query": "q", "limit": 2}, ScanCall("q", 2)),
        ({"operation": "read", "keys": [{"id": 1, "version": 2}]}, ReadCall((MemoryKey(1, 2),))),
        ({"operation": "put", "content": "c"}, PutCall("c")),
        (
            {"operation": "put", "content": "c", "replace": {"id": 3, "version": 1,
                                                              "namespace": "ns"}},
            PutCall("c", MemoryKey(3, 1, "ns")),
        ),
        ({"operation": "delete", "key": {"id": 1, "version": 2}}, DeleteCall(MemoryKey(1, 2))),
    ],
)
def test_valid_calls_decode(value: Dict[str, Any], expected: object) -> None:
    assert decode_call(json.dumps(value)) == expected
    assert decode_call(value) == expected  # an already parsed mapping works too
    jsonschema.validate(value, input_schema())


def test_read_drops_duplicate_keys_in_order() -> None:
    call = decode_call({"operation": "read", "keys": [
        {"id": 2, "version": 1}, {"id": 1, "version": 1}, {"id": 2, "version": 1}]})
    assert call == ReadCall((MemoryKey(2, 1), MemoryKey(1, 1)))


REFUSED = [
    ('{"operation":"read","ids":[1]}', "memory read does not take `ids`"),
    ('{"operation":"delete","key":{"id":1,"version":1},"is_root":true}',
     "memory delete does not take `is_root`"),
    ('{"operation":"delete","key":{"id":1,"version":1,"root":true}}',
     "memory key does not take `root`"),
    ('{"operation":"drop"}', "memory `operation` must be one of scan, read, put, delete"),
    ('{"query":"x"}', "memory `operation` must be one of scan, read, put, delete"),
    ('[1, 2]', "memory input must be a JSON object"),
    ('{"operation":', "memory input is not valid JSON"),
    ('{"operation":"scan","query":"x","limit":NaN}', "memory input is not valid JSON"),
    ('{"operation":"scan"}', "memory scan needs `query`"),
    ('{"operation":"scan","query":7}', "memory scan `query` must be a string"),
    ('{"operation":"scan","query":"x","limit":true}', "memory scan `limit` must be an integer"),
    ('{"operation":"scan","query":"x","limit":2.0}', "memory scan `limit` must be an integer"),
    ('{"operation":"scan","query":"   "}', "memory scan query is empty"),
    ('{"operation":"scan","query":""}', "memory scan query is empty"),
    ('{"operation":"scan","query":"x","limit":0}', "memory scan limit must be between 1 and 5"),
    ('{"operation":"scan","query":"x","limit":6}', "memory scan limit must be between 1 and 5"),
    ('{"operation":"read","keys":[]}', "memory read requires at least one key"),
    ('{"operation":"read","keys":{"id":1}}', "memory read `keys` must be an array of memory keys"),
    ('{"operation":"read","keys":[{"id":0,"version":1}]}',
     "memory key `id` must be an integer of at least 1"),
    ('{"operation":"read","keys":[{"id":true,"version":1}]}',
     "memory key `id` must be an integer of at least 1"),
    ('{"operation":"read","keys":[{"id":1}]}', "memory key needs `version`"),
    ('{"operation":"read","keys":[{"id":1,"version":1,"namespace":""}]}',
     "memory key `namespace` must be a non-empty string"),
    ('{"operation":"read","keys":[7]}', "memory key must be an object with `id` and `version`"),
    ('{"operation":"put"}', "memory put needs `content`"),
    ('{"operation":"put","content":" \\n "}', "memory content is empty"),
    ('{"operation":"put","content":"x","replace":{"id":1}}',
     "memory put `replace` needs `version`"),
    ('{"operation":"delete"}', "memory delete needs `key`"),
]


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_wrong_shapes_are_refused_with_their_message(text: str, message: str) -> None:
    with pytest.raises(MemoryRequestError) as info:
        decode_call(text)
    assert info.value.message == message
    assert isinstance(info.value, InvalidRequestError)


def test_a_strange_field_name_is_not_quoted() -> None:
    with pytest.raises(MemoryRequestError) as info:
        decode_call({"operation": "scan", "query": "x", "password=hunter2": 1})
    assert "hunter2" not in info.value.message
    assert info.value.message == "memory scan does not take an unknown field"


def test_length_bounds_have_exact_messages_and_count_code_points() -> None:
    assert decode_call({"operation": "scan", "query": "é" * 512}) == ScanCall("é" * 512)
    with pytest.raises(MemoryRequestError) as info:
        decode_call({"operation": "scan", "query": "é" * 513})
    assert info.value.message == "memory scan query is too long (at most 512 characters)"
    assert decode_call({"operation": "put", "content": "😀" * 1024}) == PutCall("😀" * 1024)
    with pytest.raises(MemoryRequestError) as info:
        decode_call({"operation": "put", "content": "x" * 1025})
    assert info.value.message == "memory content is too long (at most 1024 characters)"


def test_bounds_come_before_other_checks() -> None:
    # An over-long blank query is "too long", not "empty": bounds are checked first.
    with pytest.raises(MemoryRequestError) as info:
        decode_call({"operation": "scan", "query": " " * 600, "limit": 9})
    assert info.value.message == "memory scan query is too long (at most 512 characters)"


def test_too_many_read_keys_is_refused_and_published() -> None:
    keys = [{"id": i, "version": 1} for i in range(1, 102)]
    with pytest.raises(MemoryRequestError) as info:
        decode_call({"operation": "read", "keys": keys})
    assert info.value.message == "memory read takes at most 100 keys"
    assert _branch(input_schema(), "read")["properties"]["keys"]["maxItems"] == 100


def test_input_of_the_wrong_python_type_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        decode_call(7)  # type: ignore[arg-type]


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 9) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=8,
)
_candidates = st.fixed_dictionaries(
    {"operation": st.sampled_from(["scan", "read", "put", "delete", "nope"])},
    optional={
        "query": st.text(max_size=4) | _json_values,
        "limit": st.integers(-1, 7) | _json_values,
        "keys": st.lists(st.fixed_dictionaries({"id": st.integers(0, 3),
                                                "version": st.integers(0, 3)}), max_size=2)
        | _json_values,
        "content": st.text(max_size=4) | _json_values,
        "key": st.fixed_dictionaries({"id": st.integers(0, 3), "version": st.integers(0, 3)})
        | _json_values,
        "extra": _json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(_candidates)
def test_whatever_decodes_is_schema_valid(candidate: Dict[str, Any]) -> None:
    """The decoder never accepts what the published schema refuses."""
    try:
        decode_call(candidate)
    except MemoryRequestError:
        return
    jsonschema.validate(candidate, input_schema())
