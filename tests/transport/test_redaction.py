"""Secrets stay secret: a canary token never shows in a log record, repr, str or message.

Every logger is captured at DEBUG (urllib3's included: the test, not the
library, turns it on), while the client goes through successes, rejections,
retries, timeouts, refused connections, invalid tokens and hostile servers.
"""

from __future__ import annotations

import copy
import logging
from typing import Iterator, List

import pytest

from cortex_memory.cortex import CortexCredential, CortexWire, StaticBearer, Timing
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

    key = CortexCredential.api_key(canary)
    dynamic = CortexCredential.dynamic(StaticBearer(canary))
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
        bad_key = CortexCredential.api_key(bad)
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
