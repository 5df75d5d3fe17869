"""Body caps, cut bodies, invalid JSON and compression (engine.md §5.6), on hostile servers."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest

from cortex_memory.cortex import CortexWire, Timing
from cortex_memory.cortex.transport import ERROR_CAP, SUCCESS_CAP
from cortex_memory.cortex.transport.body import PIECE, BodyTooLarge, read_success_body
from cortex_memory.cortex.transport.watchdog import WATCHDOG
from cortex_memory.errors import EngineError, InvalidRequestError, UnavailableError
from cortex_memory.testing.hostile import HostileServer, LoopbackServer, RawRequest

DASH = " \u2014 "
ROOMY = Timing(request_timeout=30, read_backoff=0.005)


def test_caps() -> None:
    assert SUCCESS_CAP == 67_108_864
    assert ERROR_CAP == 65_536


def test_declared_length_over_the_cap_is_refused_before_reading(make_client) -> None:
    declared = SUCCESS_CAP + 1

    def handler(request: RawRequest):  # type: ignore[no-untyped-def]
        if request.path == "/v1/auth/whoami":
            return 404, {}, b""
        return 200, {"Content-Length": str(declared)}, b'{"a":'

    with LoopbackServer(handler) as server:
        client = make_client(server.url)
        with pytest.raises(EngineError) as caught:
            client.once("GET", "v1/events?scope=S")
    assert caught.value.message == (
        f"memory API v1/events on 127.0.0.1: the response declares {declared} bytes, "
        f"over the limit of {SUCCESS_CAP} bytes"
    )


def test_endless_chunked_success_stops_at_the_cap(make_client) -> None:
    with HostileServer("endless_chunked", chunk=65536, spare_whoami=True) as server:
        client = make_client(server.url, timing=ROOMY)
        with pytest.raises(EngineError) as caught:
            client.once("GET", "v1/events")
    assert caught.value.message == (
        "memory API v1/events on 127.0.0.1: "
        f"the response body exceeds the limit of {SUCCESS_CAP} bytes"
    )


def test_body_without_length_stops_at_the_cap(make_client) -> None:
    with HostileServer("length_omitted", spare_whoami=True) as server:
        client = make_client(server.url, timing=ROOMY)
        with pytest.raises(EngineError) as caught:
            client.once("GET", "v1/events")
    assert "exceeds the limit of 67108864 bytes" in caught.value.message


def test_body_without_length_that_ends_is_read(make_client) -> None:
    with HostileServer("length_omitted", body=b'{"items":[]}', spare_whoami=True) as server:
        assert make_client(server.url).once("GET", "v1/events").data == {"items": []}


def test_endless_chunked_error_is_read_lossily_to_64_kib(make_client) -> None:
    with HostileServer(
        "endless_chunked", status=400, fill="é".encode(), spare_whoami=True
    ) as server:
        client = make_client(server.url, timing=ROOMY)
        with pytest.raises(InvalidRequestError) as caught:
            client.once("POST", "v1/experience", {"a": 1})
    head, _, excerpt = caught.value.message.partition(DASH)
    assert head == "memory API v1/experience on 127.0.0.1 returned HTTP 400 Bad Request"
    assert 0 < len(excerpt) <= 300
    assert set(excerpt) <= {"é", "\ufffd"}
    assert caught.value.status == 400


def test_error_body_over_the_cap_is_truncated_not_failed(make_client) -> None:
    big = b"E" * (ERROR_CAP * 3)

    def handler(request: RawRequest):  # type: ignore[no-untyped-def]
        return 503, {}, big

    with LoopbackServer(handler) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(UnavailableError) as caught:
            client.once("GET", "memory/events")
    assert caught.value.message.endswith(DASH + "E" * 300)


def test_chunk_cut_short_is_unavailable(make_client) -> None:
    with HostileServer("chunk_cut", declared=1000, sent=10, spare_whoami=True) as server:
        client = make_client(server.url)
        with pytest.raises(UnavailableError) as caught:
            client.retry_transient("GET", "v1/events")
        assert server.hits == 4  # whoami + 3 attempts: a cut read is transient
    assert caught.value.message == (
        "memory API v1/events on 127.0.0.1: the response body was cut off while reading"
    )


def test_overstated_length_then_close_is_unavailable(make_client) -> None:
    with HostileServer(
        "length_overstated", declared=100, body=b'{"a":1}', spare_whoami=True
    ) as server:
        client = make_client(server.url)
        with pytest.raises(UnavailableError) as caught:
            client.once("POST", "v1/experience", {})
        assert server.hits == 2  # a write is sent once
    assert "cut off while reading" in caught.value.message


def test_understated_length_never_leaks_the_surplus(make_client) -> None:
    smuggled = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n"
        b'{"smug":42}\n'
    )
    body = b'{"ok":true}' + smuggled
    with HostileServer("length_understated", declared=5, body=body, spare_whoami=True) as server:
        client = make_client(server.url)
        for _ in range(3):
            with pytest.raises((EngineError, UnavailableError)) as caught:
                client.once("GET", "v1/events")
            assert "smug" not in str(caught.value)
        assert isinstance(caught.value, EngineError)
        assert caught.value.message == "memory API v1/events on 127.0.0.1 returned invalid JSON"


@pytest.mark.parametrize("body", [b'{"items": [', b"NaN", b'{"a": Infinity}', b"\xff\xfe{", b"   "])
def test_invalid_json_is_an_engine_error(make_client, body: bytes) -> None:
    with HostileServer("invalid_json", body=body, spare_whoami=True) as server:
        client = make_client(server.url)
        with pytest.raises(EngineError) as caught:
            client.retry_transient("GET", "v1/events")
        assert server.hits == 2  # not retried
    assert caught.value.message == "memory API v1/events on 127.0.0.1 returned invalid JSON"


def test_empty_direct_body_is_none(make_client) -> None:
    with LoopbackServer(
        lambda request: (204 if request.method == "POST" else 404, {}, b"")
    ) as server:
        assert make_client(server.url).once("POST", "v1/forget", {}).data is None


def test_gzip_body_is_decoded_although_identity_was_asked(make_client) -> None:
    with HostileServer("gzip_body", size=5000, spare_whoami=True) as server:
        response = make_client(server.url).once("GET", "v1/events")
        assert server.requests[-1].header("accept-encoding") == "identity"
    assert isinstance(response.data, dict)
    assert len(response.data["pad"]) == 4990


def test_gzip_bomb_is_capped_on_decoded_bytes(make_client) -> None:
    with HostileServer("gzip_body", size=SUCCESS_CAP + 1024, spare_whoami=True) as server:
        client = make_client(server.url, timing=ROOMY)
        with pytest.raises(EngineError) as caught:
            client.once("GET", "v1/events")
    assert "exceeds the limit of 67108864 bytes" in caught.value.message


def test_gzip_at_exactly_the_cap_is_fine(make_client) -> None:
    with HostileServer("gzip_body", size=SUCCESS_CAP, spare_whoami=True) as server:
        data = make_client(server.url, timing=ROOMY).once("GET", "v1/events").data
    assert isinstance(data, dict)
    assert len(data["pad"]) == SUCCESS_CAP - 10


@pytest.mark.parametrize(
    ("encoding", "packed"),
    [
        ("deflate", zlib.compress(b'{"z":1}')),
        ("deflate", zlib.compress(b'{"z":1}')[2:-4]),  # raw deflate, no zlib wrapper
        ("gzip", gzip.compress(b'{"z":') + gzip.compress(b"1}")),  # two members
        ("x-gzip", gzip.compress(b'{"z":1}')),
        ("identity", b'{"z":1}'),
        ("Identity, gzip", gzip.compress(b'{"z":1}')),
    ],
    # Named ids: gzip output carries a timestamp, and pytest-xdist needs every
    # worker to collect the same test ids.
    ids=["zlib", "raw-deflate", "two-gzip-members", "x-gzip", "identity", "identity-then-gzip"],
)
def test_other_encodings(make_client, encoding: str, packed: bytes) -> None:
    with LoopbackServer(lambda request: (200, {"Content-Encoding": encoding}, packed)) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(EngineError):  # decoded fine, but not the hosted envelope
            client.once("GET", "memory/events")
    with LoopbackServer(
        lambda request: (
            (404, {}, b"")
            if "whoami" in request.path
            else (200, {"Content-Encoding": encoding}, packed)
        )
    ) as server:
        assert make_client(server.url).once("GET", "v1/events").data == {"z": 1}


@pytest.mark.parametrize(
    ("encoding", "packed", "reason"),
    [
        ("br", b"\x0b\x02\x80{}\x03", "unsupported content encoding"),
        ("gzip, gzip", gzip.compress(gzip.compress(b"{}")), "unsupported content encoding"),
        ("gzip", b"\x1f\x8b not really gzip", "the compressed body is corrupt"),
        ("gzip", gzip.compress(b'{"z":1}')[:-8], "the compressed body ends early"),
    ],
    ids=["brotli", "gzip-twice", "not-gzip", "gzip-truncated"],
)
def test_undecodable_bodies_are_engine_errors(
    make_client, encoding: str, packed: bytes, reason: str
) -> None:
    def handler(request: RawRequest):  # type: ignore[no-untyped-def]
        if "whoami" in request.path:
            return 404, {}, b""
        return 200, {"Content-Encoding": encoding}, packed

    with LoopbackServer(handler) as server:
        with pytest.raises(EngineError) as caught:
            make_client(server.url).once("GET", "v1/events")
    assert caught.value.message == (
        f"memory API v1/events on 127.0.0.1: the response body could not be decoded ({reason})"
    )


def test_compressed_error_bodies_are_decoded_for_the_excerpt(make_client) -> None:
    packed = gzip.compress(
        json.dumps({"success": False, "error": "nope", "errorCode": "X"}).encode()
    )
    with LoopbackServer(lambda request: (500, {"Content-Encoding": "gzip"}, packed)) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(UnavailableError) as caught:
            client.once("GET", "memory/events")
    assert caught.value.message.startswith("[X] ")
    assert caught.value.message.endswith(DASH + "nope")


def test_connections_are_reused_after_full_reads_and_dropped_after_early_stops(make_client) -> None:
    big_error = b"x" * (ERROR_CAP * 2)

    def handler(request: RawRequest):  # type: ignore[no-untyped-def]
        if "whoami" in request.path:
            return 404, {}, b""
        if request.path == "/big":
            return 400, {}, big_error
        return 200, {}, {"ok": 1}

    with LoopbackServer(handler) as server:
        client = make_client(server.url, timing=ROOMY)  # no timeout on a loaded machine
        for _ in range(3):
            client.once("GET", "v1/events")
        assert server.connections == 1
        with pytest.raises(InvalidRequestError):
            client.once("GET", "big")  # stopped at 64 KiB: the connection is closed
        client.once("GET", "v1/events")
        assert server.connections == 2


@pytest.mark.parametrize("form", ["bare_lf", "obs_fold", "nul", "long_line", "many_headers"])
def test_malformed_response_headers_never_hang(make_client, form: str) -> None:
    with HostileServer("header_injection", variant="response", form=form, spare_whoami=True) as s:
        client = make_client(s.url)
        try:
            outcome: object = client.once("GET", "v1/events").data
        except (UnavailableError, EngineError) as err:
            outcome = err
    if form in ("long_line", "many_headers"):
        assert isinstance(outcome, UnavailableError)
        assert outcome.message.startswith("memory API request to 127.0.0.1: ")
    else:  # tolerated by the HTTP parser: the body still has to be right
        assert outcome == {} or isinstance(outcome, (UnavailableError, EngineError))


def test_redirects_are_not_followed(make_client, canary: str) -> None:
    with LoopbackServer(lambda request: (200, {}, {"stolen": True})) as elsewhere:
        target = elsewhere.url + "/v1/events"
        with HostileServer("redirect_elsewhere", location=target, spare_whoami=True) as server:
            client = make_client(server.url)
            with pytest.raises(EngineError) as caught:
                client.retry_transient("GET", "v1/events")
            assert server.hits == 2  # whoami and one attempt: Engine is not retried
        assert elsewhere.hits == 0  # the bearer never went there
    assert caught.value.message == (
        "memory API v1/events on 127.0.0.1 returned HTTP 307 Temporary Redirect"
    )
    assert caught.value.status == 307


# -- the one-piece read (no coding, a declared length of at most one piece) -------------


@pytest.mark.parametrize("size", [2, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 7])
def test_declared_bodies_around_one_piece_are_read_whole_and_reuse_the_connection(
    make_client, size: int
) -> None:
    # Either side of the one-piece read: the same bytes, the connection kept.
    text = "a" * (size - 2)

    def handler(request: RawRequest):  # type: ignore[no-untyped-def]
        if "whoami" in request.path:
            return 404, {}, b""
        return 200, {"Content-Type": "application/json"}, json.dumps(text).encode()

    with LoopbackServer(handler) as server:
        client = make_client(server.url, timing=ROOMY)
        for _ in range(2):
            assert client.retry_transient("GET", "v1/events").data == text
        assert server.connections == 1


def test_a_declared_identity_coding_is_read_by_the_general_loop(make_client) -> None:
    def handler(request: RawRequest):  # type: ignore[no-untyped-def]
        if "whoami" in request.path:
            return 404, {}, b""
        return 200, {"Content-Encoding": "identity"}, b'{"ok":1}'

    with LoopbackServer(handler) as server:
        client = make_client(server.url, timing=ROOMY)
        assert client.once("GET", "v1/events").data == {"ok": 1}
        assert client.once("GET", "v1/events").data == {"ok": 1}
        assert server.connections == 1


def test_a_small_declared_body_over_a_smaller_cap_is_refused_with_its_length() -> None:
    # read_success_body itself, on a real urllib3 response: a declared length of one
    # piece over the caller's cap never takes the one-piece read.
    import urllib3

    with LoopbackServer(lambda request: (200, {}, b'{"pad":"' + b"x" * 100 + b'"}')) as server:
        manager = urllib3.PoolManager(retries=False)
        response = manager.request("GET", server.url + "/x", preload_content=False)
        watch = WATCHDOG.arm(30.0)
        try:
            with pytest.raises(BodyTooLarge) as caught:
                read_success_body(response, watch, cap=50)
        finally:
            WATCHDOG.disarm(watch)
        assert caught.value.declared == 110
        manager.clear()
