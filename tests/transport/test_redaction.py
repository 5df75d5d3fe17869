"""Secrets stay secret: a canary token never shows in a log record, repr, str or message.

Every logger is captured at DEBUG (urllib3's included: the test, not the
library, turns it on), while the client goes through successes, rejections,
retries, timeouts, refused connections, invalid tokens and hostile servers.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any, Iterator, List

import pytest

from cortex_memory.cortex import CortexWire, EngineCredential, StaticBearer, Timing
from cortex_memory.cortex.log.read import Log
from cortex_memory.cortex.timing import Deadline
from cortex_memory.cortex.transport.redact import Scrubber, scrub
from cortex_memory.cortex.transport.response import Response
from cortex_memory.errors import Error
from cortex_memory.testing.hostile import (
    CountingServer,
    HostileServer,
    LoopbackServer,
    RawRequest,
    unused_url,
)


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: List[logging.LogRecord] = []
        self.texts: List[str] = []
        self.formatter_ = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.texts.append(self.formatter_.format(record))  # includes exc_info text
        self.texts.append(repr(record.args))


@pytest.fixture
def captured() -> Iterator[Capture]:
    handler = Capture()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    touched = []
    for name in [*logging.root.manager.loggerDict, "urllib3", "cortex_memory"]:
        logger = logging.getLogger(name)
        touched.append((logger, logger.level, logger.disabled))
        logger.setLevel(logging.DEBUG)
        logger.disabled = False
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        for logger, level, disabled in touched:
            logger.setLevel(level)
            logger.disabled = disabled


def test_canary_never_leaks(make_client, canary: str, captured: Capture) -> None:
    shown: List[str] = []
    errors: List[Error] = []

    def attempt(call) -> None:  # type: ignore[no-untyped-def]
        try:
            result = call()
            shown.append(repr(result))
        except Error as err:
            errors.append(err)

    key = EngineCredential.static(canary)
    dynamic = EngineCredential.dynamic(StaticBearer(canary))
    shown += [repr(key), str(key), repr(dynamic), repr(StaticBearer(canary))]

    def handler(request: RawRequest):  # type: ignore[no-untyped-def]
        if request.path == "/v1/auth/whoami":
            return 200, {}, {"caller": "user:local"}
        if request.path.endswith("/reject"):
            return 401, {}, {"error_code": "ACTOR_MISMATCH"}
        if request.path.endswith("/busy"):
            return 503, {"Retry-After": "0"}, b"busy"
        return 200, {}, {"ok": True}

    with LoopbackServer(handler) as server:
        for wire in CortexWire:
            for credential in (key, dynamic):
                c = make_client(server.url, wire=wire, credential=credential)
                shown += [repr(c), str(c), repr(copy.copy(c))]
                attempt(lambda c=c: c.once("POST", "v1/experience?x=1", {"text": "hello"}))
                attempt(lambda c=c: c.retry_transient("GET", "v1/events?scope=a"))
                attempt(lambda c=c: c.retry_transient("GET", "v1/busy"))
                attempt(lambda c=c: c.once("GET", "v1/reject"))
                attempt(lambda c=c: c.probe("v1/admin/health"))
        request_lines = [raw.split(b"\r\n", 1)[0] for raw in server.raw_requests]
        assert all(canary.encode() not in line for line in request_lines)
        assert all(r.header("authorization") == f"Bearer {canary}" for r in server.requests)

    for bad in (canary + "\r\nX: 1", canary + "\x00", "  ", canary + "\u00e9"):
        bad_key = EngineCredential.static(bad)
        attempt(lambda k=bad_key: make_client(server.url, credential=k).once("GET", "v1/events"))

    attempt(lambda: make_client(unused_url(), credential=key).retry_transient("GET", "v1/events"))
    with HostileServer("slow_headers", interval=0.05) as slow:
        attempt(lambda: make_client(slow.url, credential=key).once("GET", "v1/events"))
    with HostileServer("length_understated", declared=3, body=b'{"a":1}') as under:
        attempt(lambda: make_client(under.url, credential=key).once("GET", "v1/events"))
    with CountingServer(200, json={}) as target:
        with HostileServer("redirect_elsewhere", location=target.url + "/v1/events") as redirect:
            attempt(lambda: make_client(redirect.url, credential=key).once("GET", "v1/events"))
        assert target.hits == 0  # the bearer never followed the redirect

    assert len(errors) >= 12
    for err in errors:
        shown += [str(err), repr(err), err.message]
        cause = err.__cause__
        while cause is not None:
            shown.append(str(cause))
            cause = cause.__cause__
    assert captured.records, "nothing was logged at DEBUG"
    leaks = [text for text in shown + captured.texts if canary in text]
    assert leaks == []


def test_messages_never_hold_header_dicts(make_client, canary: str) -> None:
    with LoopbackServer(lambda request: (500, {}, b"")) as server:
        client = make_client(server.url, timing=Timing(request_timeout=1, read_backoff=0))
        with pytest.raises(Error) as caught:
            client.retry_transient("GET", "v1/events")
    text = str(caught.value) + repr(caught.value)
    assert "Authorization" not in text
    assert "Bearer" not in text
    assert canary not in text


# -- scrubbing echoed secrets out of backend text (redact.py) -------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("invalid token tok_Secret.9", "invalid token [redacted]"),
        ("INVALID TOKEN TOK_SECRET.9", "INVALID TOKEN [redacted]"),  # any case
        ("in a url: ?key=tok_Secret.9&x=1", "in a url: ?key=[redacted]&x=1"),
        ("Authorization: Bearer someone-else", "Authorization: [redacted]"),
        ("proxy-authorization: Basic dXNlcjpw\nnext", "proxy-authorization: [redacted]\nnext"),
        ('{"authorization":"Bearer x y","a":1}', '{"authorization":[redacted],"a":1}'),
        ("authorization='Bearer q'; rest", "authorization=[redacted]; rest"),
        ("sent bearer abc.def-ghi, then", "sent bearer [redacted], then"),
        # The bearer value ends at a quote: a challenge's quoted parameters stay readable.
        ('WWW-Authenticate: Bearer realm="m"', 'WWW-Authenticate: Bearer [redacted]"m"'),
        ("nothing secret here", "nothing secret here"),
        ("", ""),
    ],
)
def test_the_scrubber_replaces_the_credential_and_every_bearer(text: str, expected: str) -> None:
    assert Scrubber("tok_Secret.9")(text) == expected


def test_a_credential_with_regex_and_url_characters_is_scrubbed_literally() -> None:
    secret = "a+b(c)*[d]/e=f"
    scrubbed = Scrubber(secret)
    assert scrubbed(f"x {secret} y") == "x [redacted] y"
    assert scrubbed("x a%2Bb%28c%29%2A%5Bd%5D%2Fe%3Df y") == "x [redacted] y"  # URL-encoded
    assert scrubbed("a+b and c") == "a+b and c"  # only the whole credential


def test_without_a_credential_only_the_patterns_go() -> None:
    assert scrub("token tok_1 and Bearer tok_2") == "token tok_1 and Bearer [redacted]"
    assert Scrubber(None)("Authorization: Bearer x") == "Authorization: [redacted]"
    assert Scrubber("")("Authorization: Bearer x") == "Authorization: [redacted]"


def test_the_scrubber_never_shows_its_credential() -> None:
    scrubbed = Scrubber("tok_Secret.9")
    assert repr(scrubbed) == str(scrubbed) == "Scrubber(<redacted>)"
    assert "tok_Secret" not in repr(Response(200, {}, {}, scrub=scrubbed))


def test_a_recall_packs_warnings_are_logged_scrubbed(
    make_client, canary: str, captured: Capture
) -> None:
    pack = {"pack_id": "p", "layers": {}, "warnings": [f"token {canary} near its limit",
            f"parent_pack_unranked_sample: Authorization: Bearer {canary}"]}  # fmt: skip

    def handler(request: RawRequest) -> Any:
        return 200, {}, json.dumps(pack).encode()

    with LoopbackServer(handler) as server:
        client = make_client(server.url)
        Log(client).recall({"scope": "app:a", "query": "q"}, Deadline.of(5))
    logged = "\n".join(captured.texts)
    assert "[redacted] near its limit" in logged
    assert canary not in logged
