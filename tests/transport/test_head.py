"""A response's head read without the e-mail parser gives what http.client gives.

- ``parse_head(read_head_lines(fp))`` builds the ``HTTPMessage`` that
  ``http.client.parse_headers(fp)`` builds (headers in order, payload, defects,
  every attribute) and leaves ``fp`` at the same place, on generated heads: plain
  ones (read here) and odd ones (folded lines, no colon, an empty name, bytes
  outside ASCII, a lone CR, multipart or message types, a missing end);
- the limits are http.client's, with its errors;
- ``HeadResponse.begin`` frames a response as ``HTTPResponse.begin`` does (status,
  reason, version, chunked, length, whether the connection closes, the body read),
  on generated responses, and refuses what it refuses with the same errors;
- the pool's connections read their responses with it (through a real socket).
"""

from __future__ import annotations

import http.client
import io
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.cortex.transport.head import (
    MAX_HEADERS,
    MAX_LINE,
    HeadResponse,
    parse_head,
    read_head_lines,
)
from cortex_memory.cortex.transport.pool import _watched_pool_classes
from cortex_memory.testing import DirectDouble


def _state(message: Any) -> Dict[str, Any]:
    """Every attribute of a message, its defects by type and text, an enclosed
    message (a ``message/...`` type's payload) by its own state."""
    state = dict(vars(message))
    state["defects"] = [(type(d), str(d)) for d in message.defects]
    if isinstance(message.get_payload(), list):
        state["_payload"] = [(type(p), _state(p)) for p in message.get_payload()]
    return state


def _both(block: bytes) -> Tuple[Any, Any]:
    ours_fp, theirs_fp = io.BytesIO(block), io.BytesIO(block)
    ours = parse_head(read_head_lines(ours_fp))
    theirs = http.client.parse_headers(theirs_fp)
    assert ours_fp.tell() == theirs_fp.tell()
    return ours, theirs


_NAMES = st.sampled_from(
    ["Content-Type", "content-type", "Content-Length", "Server", "X-Cortex-Trace", "Set-Cookie",
     "Transfer-Encoding", "Connection", "From", "a", "x~!#$%&'*+-.^_`|"]
)  # fmt: skip
_VALUES = st.one_of(
    st.sampled_from(
        ["application/json", "multipart/mixed; boundary=x", " Multipart /form-data",
         "message/rfc822", "text/plain; charset=utf-8", "", " ", "  padded \t", "12",
         "close", "keep-alive", "chunked", "\tafter a tab", " \t mixed\t"]
    ),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20),
    st.text(max_size=8),
)  # fmt: skip
_PLAIN_LINES = st.builds(
    lambda name, value, end: f"{name}:{value}".encode("utf-8", "surrogatepass") + end,
    _NAMES,
    _VALUES,
    st.sampled_from([b"\r\n", b"\n"]),
)
_ODD_LINES = st.sampled_from(
    [b" folded continuation\r\n", b"\tfolded\r\n", b"no colon here\r\n", b": no name\r\n",
     b"From someone@example.com\r\n", b"Bad Name: value\r\n", b"X: caf\xc3\xa9\r\n",
     b"X: \xe9\r\n", b"X: a\rb\r\n", b"X: a\x00b\r\n", b"X:\x7f\r\n", b"\r"]
)  # fmt: skip
_ENDS = st.sampled_from([b"\r\n", b"\n", b"", b"\r\nbody after", b"\nX: after"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_PLAIN_LINES, _PLAIN_LINES, _ODD_LINES), max_size=8), _ENDS)
def test_a_head_reads_as_http_client_reads_it(lines: List[bytes], end: bytes) -> None:
    ours, theirs = _both(b"".join(lines) + end)
    assert type(ours) is type(theirs) is http.client.HTTPMessage
    assert _state(ours) == _state(theirs)
    assert ours.items() == theirs.items()


@pytest.mark.parametrize(
    "block",
    [
        b"Server: x\r\nContent-Length: 5\r\n\r\n",  # plain: read here
        b"A:  b \t\r\nA: c\r\n\r\n",  # leading blanks dropped, trailing kept, repeats kept
        b"\r\n",
        b"X: y\n\n",
        b"Content-Type: multipart/mixed; boundary=b\r\n\r\n",  # the e-mail parser's
        b"Content-Type: message/rfc822\r\n\r\n",
        b"X: y\r\n",  # no empty line: the end of the input
        b" y\r\nX: z\r\n\r\n",
    ],
)
def test_known_heads(block: bytes) -> None:
    ours, theirs = _both(block)
    assert _state(ours) == _state(theirs)


def test_a_plain_head_is_read_without_the_email_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    import email.parser

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the e-mail parser ran")

    monkeypatch.setattr(email.parser.Parser, "parsestr", refuse)
    message = parse_head(read_head_lines(io.BytesIO(b"A: 1\r\nB:2\r\n\r\n")))
    assert message.items() == [("A", "1"), ("B", "2")]
    with pytest.raises(AssertionError, match="e-mail parser"):
        parse_head(read_head_lines(io.BytesIO(b" folded\r\n\r\n")))


def test_the_limits_are_http_clients() -> None:
    long_line = b"X: " + b"a" * MAX_LINE + b"\r\n\r\n"
    for parse in (read_head_lines, http.client.parse_headers):
        with pytest.raises(http.client.LineTooLong, match="header line"):
            parse(io.BytesIO(long_line))
    many = b"X: y\r\n" * MAX_HEADERS + b"\r\n"
    for parse in (read_head_lines, http.client.parse_headers):
        with pytest.raises(http.client.HTTPException, match="more than 100 headers"):
            parse(io.BytesIO(many))
    # Exactly at the limits: both read it.
    at_limit = b"X: y\r\n" * (MAX_HEADERS - 1) + b"\r\n"
    ours, theirs = _both(at_limit)
    assert ours.items() == theirs.items()
    assert len(ours.items()) == MAX_HEADERS - 1


class _Socket:
    """What HTTPResponse asks of a socket: ``makefile``, over fixed bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self.data))  # type: ignore[arg-type]


def _framing(cls: type, data: bytes, method: str) -> Tuple[Any, ...]:
    response = cls(_Socket(data), method=method)
    try:
        response.begin()
    except Exception as exc:  # compared by type and text
        return ("error", type(exc), str(exc))
    framing = (
        response.status, response.reason, response.version, response.chunked,
        getattr(response, "chunk_left", None), response.length, response.will_close,
        response.msg.items(), _state(response.msg),
    )  # fmt: skip
    try:
        body: Any = response.read()
    except Exception as exc:
        body = (type(exc), str(exc))
    return (*framing, body)


_STATUS_LINES = st.sampled_from(
    [b"HTTP/1.1 200 OK", b"HTTP/1.0 200 OK", b"HTTP/0.9 200 OK", b"HTTP/1.2 201 Created ",
     b"HTTP/1.1 204 No Content", b"HTTP/1.1 304 Not Modified", b"HTTP/1.1 404 Not Found",
     b"HTTP/2.0 200 OK", b"HTTP/1.1 99 Low", b"HTTP/1.1 1000 High", b"ICY 200 OK", b"garbage",
     b"HTTP/1.1 100 Continue\r\nX: skipped\r\n\r\nHTTP/1.1 200 OK"]
)  # fmt: skip
_FRAMING_HEADERS = st.lists(
    st.sampled_from(
        [b"Content-Length: 5", b"Content-Length: 0", b"Content-Length: -3", b"Content-Length: x",
         b"Content-Length:  7 ", b"Transfer-Encoding: chunked", b"Transfer-Encoding: CHUNKED",
         b"Transfer-Encoding: gzip", b"Connection: close", b"Connection: keep-alive",
         b"Keep-Alive: timeout=5", b"Proxy-Connection: keep-alive", b"Server: test",
         b" folded", b"Content-Type: multipart/mixed"]
    ),
    max_size=5,
)  # fmt: skip
_BODIES = st.sampled_from([b"", b"hello", b"5\r\nhello\r\n0\r\n\r\n", b"hello world"])


@settings(max_examples=300, deadline=None)
@given(_STATUS_LINES, _FRAMING_HEADERS, _BODIES, st.sampled_from(["GET", "HEAD", "POST"]))
def test_begin_frames_a_response_as_http_client_does(
    status: bytes, headers: List[bytes], body: bytes, method: str
) -> None:
    data = status + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body
    ours = _framing(HeadResponse, data, method)
    theirs = _framing(http.client.HTTPResponse, data, method)
    assert ours == theirs


def test_begin_twice_reads_once() -> None:
    response = HeadResponse(_Socket(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
    response.begin()
    response.begin()  # already begun: nothing more is read
    assert (response.status, response.length, response.read()) == (200, 2, b"ok")


def test_the_pools_connections_read_with_it() -> None:
    classes = _watched_pool_classes()
    for scheme in ("http", "https"):
        assert classes[scheme].ConnectionCls.response_class is HeadResponse
    with DirectDouble() as double:
        port = int(double.url.rsplit(":", 1)[1].strip("/"))
        pool = classes["http"]("127.0.0.1", port)
        try:
            answer = pool.urlopen(
                "GET", "/v1/events?scope=x", headers={"Authorization": "Bearer tiny_live_test"},
                retries=False, preload_content=True,
            )  # fmt: skip
            assert answer.status == 200
            assert answer.headers["Content-Type"].startswith("application/json")
            assert int(answer.headers["Content-Length"]) == len(answer.data)
            assert isinstance(answer._original_response, HeadResponse)
        finally:
            pool.close()
