"""The MCP write contract: names, hints, codes, schemas, and lowering that fails closed."""

from __future__ import annotations

import hashlib
import json
import socket
import sqlite3
import ssl
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
import urllib3.exceptions as u3

from cortex_memory.errors import (
    ConfigError,
    ConflictError,
    EngineError,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedError,
)
from cortex_memory.tools.mcp import (
    HANDOFF_HINTS,
    HANDOFF_INPUT_SCHEMA_JSON,
    MAX_ERROR_MESSAGE_LENGTH,
    RETRYABLE_CODES,
    SAVE_HINTS,
    TOOL_HANDOFF,
    TOOL_SAVE,
    WRITE_OUTPUT_SCHEMA_JSON,
    HandoffConflictError,
    ObservationRef,
    PayloadTooLargeError,
    PersistenceError,
    WriteResult,
    WriteValidationError,
    from_error,
    from_write_result,
    handoff_input_schema,
    save_input_schema,
    unavailable_error,
    validation_error,
    write_output_schema,
)
from cortex_memory.tools.mcp.contract import ERROR_CODES, MESSAGES

SEED = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "001_98c0b70285d3bbbe.txt"
# SHA-256 of the seed's HandoffInputSchemaJSON text, pinned so the check runs without the seed.
HANDOFF_SCHEMA_SHA256 = "1975365ce66af2cc562eb2743f7f17b1216204de36aaad73e2905176d61e2b9f"


def _seed_raw(name: str) -> str:
    text = SEED.read_text(encoding="utf-8")
    start = text.index(f"{name} = json.RawMessage(`") + len(f"{name} = json.RawMessage(`")
    return text[start : text.index("`)", start)]


def test_names_and_hints() -> None:
    assert (TOOL_SAVE, TOOL_HANDOFF) == ("cortex_save", "cortex_handoff")
    assert SAVE_HINTS.to_json() == {
        "title": "Save Memory",
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    assert HANDOFF_HINTS.to_json() == {
        "title": "Record Handoff",
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }


def test_codes_messages_and_retryable() -> None:
    assert ERROR_CODES == ("validation", "payload_too_large", "forbidden", "conflict",
                           "timeout", "persistence", "transport", "unavailable")
    assert set(RETRYABLE_CODES) == {"timeout", "transport", "unavailable"}
    assert MESSAGES == {
        "validation": "the request is invalid",
        "payload_too_large": "the observation is too large",
        "forbidden": "this operation is not allowed",
        "conflict": "the idempotency key was already used with a different payload",
        "timeout": "the memory store did not answer in time",
        "persistence": "the memory store could not save the observation",
        "transport": "the memory service could not be reached",
        "unavailable": "the memory service is not available",
    }
    assert MAX_ERROR_MESSAGE_LENGTH == 200


def test_handoff_schema_is_the_seed_text_byte_for_byte() -> None:
    assert hashlib.sha256(HANDOFF_INPUT_SCHEMA_JSON.encode()).hexdigest() == (
        HANDOFF_SCHEMA_SHA256
    )
    if not SEED.is_file():
        pytest.skip("the seed documents are not next to this checkout")
    assert _seed_raw("HandoffInputSchemaJSON") == HANDOFF_INPUT_SCHEMA_JSON


def test_handoff_schema_shape() -> None:
    schema = handoff_input_schema()
    assert schema["required"] == ["idempotency_key", "observation"]
    assert schema["additionalProperties"] is False
    observation = schema["properties"]["observation"]
    assert list(observation["properties"]) == [
        "title", "content", "type", "project", "scope", "session_id", "topic_key",
        "confidence", "source", "tags",
    ]
    assert observation["properties"]["scope"]["enum"] == ["project", "personal"]
    target = schema["properties"]["relation"]["properties"]["target"]["oneOf"]
    assert [list(t["properties"]) for t in target] == [["local_id"], ["public_id"]]
    assert "capability_tuple" in schema["properties"]


def test_save_schema_is_the_closed_observation_object() -> None:
    schema = save_input_schema()
    assert schema == handoff_input_schema()["properties"]["observation"]
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["title", "content"]


def test_output_schema_is_the_seed_plus_retryable() -> None:
    schema = write_output_schema()
    assert schema["properties"]["error"]["properties"]["retryable"] == {"type": "boolean"}
    assert schema["properties"]["status"]["enum"] == ["created", "replayed", "updated"]
    if not SEED.is_file():
        pytest.skip("the seed documents are not next to this checkout")
    seed = json.loads(_seed_raw("WriteOutputSchemaJSON"))
    seed["properties"]["error"]["properties"]["retryable"] = {"type": "boolean"}
    assert json.loads(WRITE_OUTPUT_SCHEMA_JSON) == seed


def test_from_write_result_lowers_valid_results(write_output: Callable[[Any], None]) -> None:
    local = from_write_result(WriteResult(ObservationRef.local(7), "created"))
    assert local == {"observation_ref": {"local_id": 7}, "status": "created"}
    public_id = "6ba7b811-9dad-11d1-80b4-00c04fd430c8"
    public = from_write_result(WriteResult(ObservationRef.public(public_id), "updated"))
    assert public == {"observation_ref": {"public_id": public_id}, "status": "updated"}
    write_output(local)
    write_output(public)


@pytest.mark.parametrize(
    "result",
    [
        WriteResult(ObservationRef(local_id=1, public_id="6ba7b811-9dad-11d1-80b4-00c04fd430c8"),
                    "created"),
        WriteResult(ObservationRef(), "created"),
        WriteResult(ObservationRef(local_id=0), "created"),
        WriteResult(ObservationRef(local_id=-3), "created"),
        WriteResult(ObservationRef(local_id=True), "created"),
        WriteResult(ObservationRef(local_id="1"), "created"),  # type: ignore[arg-type]
        WriteResult(ObservationRef(public_id="not-a-uuid"), "created"),
        WriteResult(ObservationRef(public_id="6BA7B811-9DAD-11D1-80B4-00C04FD430C8"), "created"),
        WriteResult(ObservationRef(local_id=1), "deleted"),
        WriteResult(ObservationRef(local_id=1), None),  # type: ignore[arg-type]
        {"observation_ref": {"local_id": 1}, "status": "created"},
    ],
)
def test_from_write_result_fails_closed(result: Any) -> None:
    with pytest.raises(EngineError):
        from_write_result(result)


def test_checked_refs_refuse_at_once() -> None:
    with pytest.raises(EngineError):
        ObservationRef.local(0)
    with pytest.raises(EngineError):
        ObservationRef.public("nope")


LOWERED = [
    (WriteValidationError("observation.title must not be blank"), "validation",
     "observation.title must not be blank"),
    (PayloadTooLargeError("the observation is too large"), "payload_too_large",
     "the observation is too large"),
    (HandoffConflictError("key used"), "conflict", "key used"),
    (PersistenceError("the memory store could not save the observation"), "persistence",
     "the memory store could not save the observation"),
    (InvalidRequestError("learning text must not be empty: `hunter2`"), "validation",
     "the request is invalid"),
    (UnauthorizedError("key sk-live rejected"), "forbidden", "this operation is not allowed"),
    (UnsupportedError("engine `x` does not erase"), "forbidden", "this operation is not allowed"),
    (ConflictError("409 from backend"), "conflict",
     "the idempotency key was already used with a different payload"),
    (TimeoutError("read timed out"), "timeout", "the memory store did not answer in time"),
    (socket.timeout("timed out"), "timeout", "the memory store did not answer in time"),
    (u3.ReadTimeoutError(None, "/v1/x", "read timed out"), "timeout",
     "the memory store did not answer in time"),
    (u3.NewConnectionError(None, "refused"), "transport",  # type: ignore[arg-type]
     "the memory service could not be reached"),
    (u3.ProtocolError("connection aborted"), "transport",
     "the memory service could not be reached"),
    (ConnectionRefusedError(111, "refused"), "transport",
     "the memory service could not be reached"),
    (ConnectionResetError(104, "reset"), "transport", "the memory service could not be reached"),
    (socket.gaierror(-2, "Name or service not known"), "transport",
     "the memory service could not be reached"),
    (ssl.SSLError("bad cert"), "transport", "the memory service could not be reached"),
    (UnavailableError("memory API request to h: timed out"), "transport",
     "the memory service could not be reached"),
    (sqlite3.OperationalError("database is locked"), "persistence",
     "the memory store could not save the observation"),
    (OSError(28, "No space left on device"), "persistence",
     "the memory store could not save the observation"),
    (EngineError("backend said 500"), "persistence",
     "the memory store could not save the observation"),
    (NotFoundError("route"), "persistence", "the memory store could not save the observation"),
    (ConfigError("no key"), "persistence", "the memory store could not save the observation"),
    (ValueError("bug"), "persistence", "the memory store could not save the observation"),
]


@pytest.mark.parametrize(("err", "code", "message"), LOWERED)
def test_from_error_classifies_by_type(err: BaseException, code: str, message: str,
                                       write_output: Callable[[Any], None]) -> None:
    payload = from_error(err)
    assert payload == {"error": {"code": code, "message": message,
                                 "retryable": code in ("timeout", "transport", "unavailable")}}
    write_output(payload)


def _chained(outer: BaseException, inner: BaseException) -> BaseException:
    outer.__cause__ = inner  # what `raise outer from inner` leaves behind
    return outer


def test_causes_are_never_walked() -> None:
    # A persistence failure caused by a network error stays persistence...
    wrapped = _chained(EngineError("could not save"), ConnectionResetError(104, "reset"))
    assert from_error(wrapped)["error"]["code"] == "persistence"
    # ...a wrapped SQLite lock is persistence, not transport...
    locked = _chained(PersistenceError(MESSAGES["persistence"]),
                      sqlite3.OperationalError("database is locked"))
    assert from_error(locked)["error"]["code"] == "persistence"
    # ...and a context chain (`raise` inside `except`) is not followed either.
    context = EngineError("could not save")
    context.__context__ = u3.ProtocolError("aborted")
    assert from_error(context)["error"]["code"] == "persistence"


def test_messages_are_redacted_then_cut_to_200_code_points() -> None:
    long = from_error(WriteValidationError("é" * 500))["error"]["message"]
    assert long == "é" * 200
    secret = "ghp_" + "A1b2C3d4" * 5
    # The token straddles the cut: cutting first would leak a prefix the detector
    # no longer recognises; redacting first hides all of it.
    message = "x" * 185 + " " + secret
    lowered = from_error(WriteValidationError(message))["error"]["message"]
    assert len(lowered) <= 200
    assert "A1b2" not in lowered
    assert "ghp_" not in lowered
    assert "hunter2" not in from_error(HandoffConflictError("password=hunter2"))["error"][
        "message"]


def test_error_payloads_carry_nothing_else() -> None:
    for err, _, _ in LOWERED:
        payload = from_error(err)
        assert set(payload) == {"error"}
        assert set(payload["error"]) == {"code", "message", "retryable"}


def test_validation_and_unavailable_helpers(write_output: Callable[[Any], None]) -> None:
    assert validation_error("relation.%s is missing", "type") == {
        "error": {"code": "validation", "message": "relation.type is missing",
                  "retryable": False}
    }
    assert validation_error("") == {
        "error": {"code": "validation", "message": "the request is invalid", "retryable": False}
    }
    assert unavailable_error() == {
        "error": {"code": "unavailable", "message": "the memory service is not available",
                  "retryable": True}
    }
    missing = unavailable_error("the %s module is missing", "sqlite3")
    assert missing["error"]["message"] == "the sqlite3 module is missing"
    assert missing["error"]["retryable"] is True
    assert len(validation_error("%s", "y" * 999)["error"]["message"]) == 200
    assert validation_error("100% sure %d", "x")["error"]["message"] == "100% sure %d"
    for payload in (missing, unavailable_error(), validation_error("x")):
        write_output(payload)


def test_schema_functions_return_fresh_copies() -> None:
    first: Dict[str, Any] = handoff_input_schema()
    first["properties"].clear()
    assert handoff_input_schema()["properties"]
