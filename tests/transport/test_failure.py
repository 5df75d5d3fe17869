"""Failure mapping: statuses, messages, codes and transport faults (engine.md §5.7-5.8)."""

from __future__ import annotations

import json
import socket
import ssl
from typing import Type

import pytest
import urllib3.exceptions as u3

from cortex_memory.cortex import CortexWire
from cortex_memory.cortex.transport import health_reason, status_failure, status_text
from cortex_memory.cortex.transport.failure import (
    build_failure,
    clean_code,
    strip_query,
    transport_failure,
    variant_for,
)
from cortex_memory.errors import (
    ConflictError,
    EngineError,
    Error,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
    error_code,
    is_insufficient_credits,
)
from cortex_memory.testing.hostile import CountingServer, LoopbackServer

DASH = " \u2014 "


@pytest.mark.parametrize(
    ("status", "text"),
    [
        (503, "503 Service Unavailable"),
        (413, "413 Payload Too Large"),
        (422, "422 Unprocessable Entity"),
        (200, "200 OK"),
        (307, "307 Temporary Redirect"),
        (402, "402 Payment Required"),
        (429, "429 Too Many Requests"),
        (599, "599 <unknown status code>"),
        (499, "499 <unknown status code>"),
    ],
)
def test_status_text_uses_the_classic_phrases(status: int, text: str) -> None:
    assert status_text(status) == text


@pytest.mark.parametrize(
    ("status", "variant"),
    [
        (400, InvalidRequestError),
        (413, InvalidRequestError),
        (422, InvalidRequestError),
        (401, UnauthorizedError),
        (403, UnauthorizedError),
        (402, EngineError),
        (404, NotFoundError),
        (409, ConflictError),
        (408, UnavailableError),
        (429, UnavailableError),
        (500, UnavailableError),
        (502, UnavailableError),
        (503, UnavailableError),
        (504, UnavailableError),
        (301, EngineError),
        (307, EngineError),
        (405, EngineError),
        (418, EngineError),
        (501, EngineError),
        (200, EngineError),
    ],
)
def test_variant_table(status: int, variant: Type[Error]) -> None:
    assert variant_for(status) is variant
    for hosted in (False, True):
        err = status_failure(status, b"", route="v1/x", host="h", hosted=hosted)
        assert type(err) is variant
        assert err.status == status


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("not_found", "NOT_FOUND"),
        ("rate-limited!", "RATELIMITED"),
        ("", None),
        ("---", None),
        (None, None),
        (42, None),
        ("x" * 80, "X" * 64),
    ],
)
def test_clean_code(raw: object, code: object) -> None:
    assert clean_code(raw) == code


def test_strip_query() -> None:
    assert strip_query("v1/events?scope=secret&cursor=c") == "v1/events"
    assert strip_query("v1/events#frag") == "v1/events"
    assert strip_query("v1/events") == "v1/events"


# -- Direct messages ------------------------------------------------------------------------


def test_direct_other_status_message() -> None:
    err = status_failure(
        503, b"  busy right now \n", route="v1/events?scope=S3CRET", host="h.example", hosted=False
    )
    assert err.message == (
        "memory API v1/events on h.example returned HTTP 503 Service Unavailable"
        + DASH
        + "busy right now"
    )
    assert str(err) == "unavailable: " + err.message
    assert "S3CRET" not in str(err)
    assert err.code is None
    assert error_code(err) is None


@pytest.mark.parametrize("status", [401, 403])
def test_direct_credential_rejected_message(status: int) -> None:
    err = status_failure(status, b"", route="v1/events", host="h", hosted=False)
    assert err.message == (
        f"memory API v1/events on h: the credential was rejected (HTTP {status_text(status)}); "
        "check the API key"
    )


def test_direct_code_comes_from_a_json_error_code() -> None:
    body = json.dumps({"error_code": "authorization_state_changed", "retriable": True}).encode()
    err = status_failure(503, body, route="v1/events", host="h", hosted=False)
    assert err.code == "AUTHORIZATION_STATE_CHANGED"
    assert error_code(err) is None  # Direct messages carry no prefix
    only_details = json.dumps({"details": "AUTHORIZATION_STATE_CHANGED"}).encode()
    assert status_failure(503, only_details, route="r", host="h", hosted=False).code is None


def test_excerpt_is_cut_to_300_characters() -> None:
    err = status_failure(500, b"y" * 5000, route="v1/x", host="h", hosted=False)
    head, _, excerpt = err.message.partition(DASH)
    assert excerpt == "y" * 300
    assert head == "memory API v1/x on h returned HTTP 500 Internal Server Error"


def test_excerpt_is_lossy_and_empty_bodies_add_nothing() -> None:
    err = status_failure(500, b"bad \xff\xfe bytes", route="v1/x", host="h", hosted=False)
    assert err.message.endswith(DASH + "bad \ufffd\ufffd bytes")
    blank = status_failure(500, b"   \n ", route="v1/x", host="h", hosted=False)
    assert DASH not in blank.message


def test_direct_402_is_engine_but_not_credits_without_the_code() -> None:
    err = status_failure(402, b"pay", route="v1/x", host="h", hosted=False)
    assert isinstance(err, EngineError)
    assert not is_insufficient_credits(err)


# -- hosted messages --------------------------------------------------------------------------


def hosted_body(**fields: object) -> bytes:
    return json.dumps(fields).encode()


def test_hosted_failure_message_and_code() -> None:
    err = status_failure(
        404,
        hosted_body(success=False, error="no such thing", errorCode="not-found"),
        route="memory/events?scope=S",
        host="api.tinyhumans.ai",
        hosted=True,
    )
    assert isinstance(err, NotFoundError)
    assert err.message == (
        "[NOTFOUND] memory API memory/events on api.tinyhumans.ai returned HTTP 404 Not Found"
        + DASH
        + "no such thing"
    )
    assert err.code == "NOTFOUND"
    assert error_code(err) == "NOTFOUND"


@pytest.mark.parametrize(
    ("status", "code"),
    [(401, "UNAUTHORIZED"), (403, "UNAUTHORIZED"), (402, "USER_INSUFFICIENT_CREDITS"),
     (429, "RATE_LIMITED"), (500, "HTTP_500"), (418, "HTTP_418")],
)  # fmt: skip
def test_hosted_default_codes(status: int, code: str) -> None:
    err = status_failure(status, b"not json", route="memory/x", host="h", hosted=True)
    assert err.message.startswith(f"[{code}] memory API memory/x on h")
    assert err.message.endswith(DASH + "not json")
    assert error_code(err) == code == err.code


def test_hosted_401_and_402_heads() -> None:
    unauthorized = status_failure(401, b"", route="memory/x", host="h", hosted=True)
    assert unauthorized.message == (
        "[UNAUTHORIZED] memory API memory/x on h: the session expired or the API key was "
        "rejected (HTTP 401 Unauthorized); re-authenticate"
    )
    credits = status_failure(
        402, hosted_body(error="top up"), route="memory/x", host="h", hosted=True
    )
    assert credits.message == (
        "[USER_INSUFFICIENT_CREDITS] memory API memory/x on h: the account has insufficient "
        "credits (HTTP 402 Payment Required)" + DASH + "top up"
    )
    assert isinstance(credits, EngineError)
    assert is_insufficient_credits(credits)
    assert not credits.is_transient


def test_hosted_400_conflict_is_a_conflict() -> None:
    err = status_failure(
        400,
        hosted_body(errorCode="CONFLICT", error="claimed"),
        route="memory/experience",
        host="h",
        hosted=True,
    )
    assert isinstance(err, ConflictError)
    assert err.status == 400
    assert err.code == "CONFLICT"
    other = status_failure(
        400, hosted_body(errorCode="VALIDATION_ERROR"), route="m", host="h", hosted=True
    )
    assert isinstance(other, InvalidRequestError)


def test_hosted_detail_rules() -> None:
    structured = status_failure(
        500, hosted_body(error={"why": "x", "n": 1}), route="m", host="h", hosted=True
    )
    assert structured.message.endswith(DASH + '{"why":"x","n":1}')
    no_error = status_failure(500, b'{"errorCode":"E"}', route="m", host="h", hosted=True)
    assert no_error.message.endswith(DASH + '{"errorCode":"E"}')
    not_object = status_failure(500, b"[1,2]", route="m", host="h", hosted=True)
    assert not_object.message.startswith("[HTTP_500] ")
    assert not_object.message.endswith("[1,2]")


def test_hosted_success_false_on_2xx_is_engine() -> None:
    err = status_failure(200, hosted_body(success=False, errorCode="QUOTA", error="later"),
                         route="memory/recall", host="h", hosted=True)  # fmt: skip
    assert isinstance(err, EngineError)
    assert (
        err.message == "[QUOTA] memory API memory/recall on h returned HTTP 200 OK" + DASH + "later"
    )


def test_health_reason_withholds_the_backend_text() -> None:
    err = status_failure(503, b"private detail", route="v1/x", host="h", hosted=False)
    assert health_reason(err) == (
        "unavailable: memory API v1/x on h returned HTTP 503 Service Unavailable (detail withheld)"
    )
    plain = UnavailableError("memory API request to h: timed out")
    assert health_reason(plain) == "unavailable: memory API request to h: timed out"


def test_build_failure() -> None:
    err = build_failure("h")
    assert isinstance(err, EngineError)
    assert err.message == "request to h could not be built"


# -- transport faults -------------------------------------------------------------------------


def chained(top: BaseException, cause: BaseException) -> BaseException:
    top.__cause__ = cause
    return top


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (u3.ReadTimeoutError(None, "/v1/x", "Read timed out."), "timed out"),  # type: ignore[arg-type]
        (u3.ConnectTimeoutError("connect timed out"), "timed out"),
        (chained(u3.ProtocolError("aborted"), socket.timeout("timed out")), "timed out"),
        (u3.NameResolutionError("h", None, socket.gaierror(-2, "Name or service not known")),  # type: ignore[arg-type]
         "the host could not be resolved; check the URL"),
        (chained(u3.ProtocolError("x"), OSError("dns lookup failed")),
         "the host could not be resolved; check the URL"),
        (u3.SSLError("bad"), "TLS failed: the endpoint answered but could not set up a secure "
                             "connection; check it is the real API host"),
        (chained(u3.ProtocolError("x"), ssl.SSLError(1, "certificate verify failed")),
         "TLS failed: the endpoint answered but could not set up a secure connection; "
         "check it is the real API host"),
        (chained(u3.NewConnectionError(None, "Failed"), ConnectionRefusedError(111, "refused")),  # type: ignore[arg-type]
         "could not connect; check the URL and that the service is reachable"),
        (chained(u3.ProtocolError("Connection aborted."), ConnectionResetError(104, "reset")),
         "the request did not complete"),
    ],
)  # fmt: skip
def test_transport_faults_are_named_by_class(exc: BaseException, kind: str) -> None:
    err = transport_failure(exc, host="h")
    assert isinstance(err, UnavailableError)
    assert err.message.startswith(f"memory API request to h: {kind}")


def test_host_names_do_not_steer_the_classification() -> None:
    exc = chained(
        u3.NewConnectionError(None, "HTTPConnection(host='tls.dns.example'): failed"),  # type: ignore[arg-type]
        ConnectionRefusedError(111, "Connection refused"),
    )
    err = transport_failure(exc, host="tls.dns.example")
    assert err.message == (
        "memory API request to tls.dns.example: could not connect; check the URL and that the "
        "service is reachable" + DASH + "[Errno 111] Connection refused"
    )


def test_urls_and_queries_are_cut_out_of_the_chain() -> None:
    url = "http://127.0.0.1:9/v1/events?scope=S3CRET"
    exc = chained(u3.ProtocolError("x"), OSError(f"failed for {url} and /v1/events?scope=S3CRET"))
    err = transport_failure(exc, host="127.0.0.1", hide=(url, "/v1/events?scope=S3CRET"))
    assert "S3CRET" not in err.message
    generic = transport_failure(
        chained(u3.ProtocolError("x"), OSError("see https://other.example/p?token=S3CRET")),
        host="h",
    )
    assert "S3CRET" not in generic.message
    assert "<url>" in generic.message


def test_our_own_timeout_has_no_chain() -> None:
    err = transport_failure(OSError("socket shut down"), host="h", timed_out=True)
    assert err.message == "memory API request to h: timed out"


# -- over the wire ---------------------------------------------------------------------------


STATUSES = [400, 401, 402, 403, 404, 405, 408, 409, 413, 422, 429, 500, 502, 503, 504, 307, 418]


@pytest.mark.parametrize("status", STATUSES)
def test_statuses_over_the_wire_direct(make_client, status: int) -> None:
    with CountingServer(status, body=b"backend says no") as server:
        client = make_client(server.url)
        with pytest.raises(Error) as caught:
            client.once("POST", "v1/experience?wait=indexed", {"a": 1})
    err = caught.value
    assert type(err) is variant_for(status)
    assert err.status == status
    assert err.code is None
    assert err.message.startswith("memory API v1/experience on 127.0.0.1")
    assert err.message.endswith(DASH + "backend says no")
    assert "wait=indexed" not in str(err)


@pytest.mark.parametrize("status", STATUSES)
def test_statuses_over_the_wire_hosted(make_client, status: int) -> None:
    body = {"success": False, "error": "hosted says no", "errorCode": "some_code"}
    with CountingServer(status, json=body) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(Error) as caught:
            client.once("POST", "memory/experience", {"a": 1})
    err = caught.value
    assert type(err) is variant_for(status)
    assert err.status == status
    assert err.code == "SOME_CODE"
    assert err.message.startswith("[SOME_CODE] memory API memory/experience on 127.0.0.1")
    assert err.message.endswith(DASH + "hosted says no")


def test_hosted_2xx_refusal_over_the_wire(make_client) -> None:
    body = {"success": False, "errorCode": "USER_INSUFFICIENT_CREDITS", "error": "top up"}
    with CountingServer(200, json=body) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(EngineError) as caught:
            client.retry_transient("GET", "memory/events")
        assert server.hits == 1
    assert is_insufficient_credits(caught.value)
    assert caught.value.status == 200


@pytest.mark.parametrize(
    "body",
    [b'{"data": []}', b'{"success": true}', b"[]", b"", b"not json", b'{"success":"yes","data":1}'],
)
def test_malformed_hosted_bodies_are_engine_errors(make_client, body: bytes) -> None:
    with LoopbackServer(
        lambda request: (200, {"Content-Type": "application/json"}, body)
    ) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(EngineError) as caught:
            client.retry_transient("GET", "memory/events?scope=a")
        assert server.hits == 1  # Engine is not retried
    assert caught.value.message.startswith("memory API memory/events on 127.0.0.1")
