"""Credentials: reprs, construction, and resolution inside every attempt (engine.md §4)."""

from __future__ import annotations

import copy
import threading
from typing import List

import pytest

from cortex_memory.cortex import BearerSource, CortexWire, EngineCredential, StaticBearer
from cortex_memory.cortex.transport import HttpClient
from cortex_memory.errors import ConfigError, UnauthorizedError
from cortex_memory.testing.hostile import CountingServer, LoopbackServer


class Rotating:
    """A source answering the next token of a list on each call (thread-safe)."""

    def __init__(self, *tokens: str) -> None:
        self.tokens = list(tokens)
        self.calls = 0
        self.lock = threading.Lock()

    def bearer(self) -> str:
        with self.lock:
            token = self.tokens[min(self.calls, len(self.tokens) - 1)]
            self.calls += 1
            return token

    def __repr__(self) -> str:  # never called by our reprs
        raise AssertionError("the source's repr must not be called")


class Failing:
    def __init__(self, message: str) -> None:
        self.message = message
        self.calls = 0

    def bearer(self) -> str:
        self.calls += 1
        raise RuntimeError(self.message)


# -- reprs and construction ----------------------------------------------------------------


def test_reprs_are_fixed_texts(canary: str) -> None:
    static = EngineCredential.static(canary)
    dynamic = EngineCredential.dynamic(Rotating(canary))
    bearer = StaticBearer(canary)
    assert repr(static) == str(static) == "EngineCredential.Static(<redacted>)"
    assert repr(dynamic) == str(dynamic) == "EngineCredential.Dynamic(<source>)"
    assert repr(bearer) == str(bearer) == "StaticBearer(<redacted>)"
    assert f"{static} {dynamic} {bearer!r}".count(canary) == 0


def test_static_bearer_is_a_bearer_source(canary: str) -> None:
    bearer = StaticBearer(canary)
    assert isinstance(bearer, BearerSource)
    assert bearer.bearer() == canary
    assert EngineCredential.dynamic(bearer).source is bearer


def test_credential_kinds_and_copies(canary: str) -> None:
    static = EngineCredential.static(canary)
    assert static.is_static
    assert static.source is None
    assert static.bearer() == canary
    dynamic = EngineCredential.dynamic(StaticBearer("b"))
    assert not dynamic.is_static
    clone = copy.copy(static)
    assert clone.bearer() == canary
    assert repr(clone) == repr(static)


@pytest.mark.parametrize("bad", [None, 42, b"bytes"])
def test_api_key_needs_a_str(bad: object) -> None:
    with pytest.raises(TypeError):
        EngineCredential.static(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        StaticBearer(bad)  # type: ignore[arg-type]


def test_dynamic_needs_a_bearer_method() -> None:
    with pytest.raises(TypeError):
        EngineCredential.dynamic(object())  # type: ignore[arg-type]


def test_credentials_are_built_by_the_factories_and_immutable(canary: str) -> None:
    with pytest.raises(TypeError):
        EngineCredential()
    credential = EngineCredential.static(canary)
    with pytest.raises(AttributeError):
        credential._token = "other"  # type: ignore[misc]


@pytest.mark.parametrize("blank", ["", "   ", "\t\n", "\u3000\u2003", "\x85"])
def test_blank_static_key_is_refused_when_the_client_is_built(blank: str) -> None:
    with pytest.raises(ConfigError) as caught:
        HttpClient(CortexWire.DIRECT, "http://127.0.0.1:9", EngineCredential.static(blank))
    assert caught.value.message == "the API key must not be empty"


def test_information_separators_are_not_white_space() -> None:
    # str.strip() would remove U+001C-U+001F; Unicode White_Space does not, so this
    # key is not blank (it is refused later, as an invalid header value).
    HttpClient(CortexWire.DIRECT, "http://127.0.0.1:9", EngineCredential.static("\x1c"))


# -- resolution inside each attempt ----------------------------------------------------------


def test_token_is_trimmed_and_sent_as_bearer(make_client, canary: str) -> None:
    with CountingServer(200, json={}) as server:
        client = make_client(server.url, credential=EngineCredential.static(f"  {canary}\t\n"))
        client.once("GET", "v1/events")
        sent = server.requests[-1]
        assert sent.header("authorization") == f"Bearer {canary}"


def test_source_is_asked_on_every_attempt(make_client) -> None:
    source = Rotating("tok-1", "tok-2", "tok-3")
    with CountingServer(503) as server:
        client = make_client(server.url, credential=EngineCredential.dynamic(source))
        with pytest.raises(Exception):  # noqa: B017 - the 503 itself is tested elsewhere
            client.retry_transient("GET", "v1/events")
        seen = [r.header("authorization") for r in server.requests]
    # Attempt 1 resolves tok-1, then the actor lookup (its own attempt) resolves tok-2
    # and is sent first; attempts 2 and 3 resolve again.
    assert seen == ["Bearer tok-2", "Bearer tok-1", "Bearer tok-3", "Bearer tok-3"]
    assert source.calls == 4


def test_rotated_token_is_used_at_once(make_client) -> None:
    source = Rotating("old", "new")
    with CountingServer(200, json={}) as server:
        client = make_client(
            server.url, wire=CortexWire.TINYHUMANS, credential=EngineCredential.dynamic(source)
        )
        with pytest.raises(Exception):  # noqa: B017 - {} is not the hosted envelope
            client.once("GET", "memory/events")
        with pytest.raises(Exception):  # noqa: B017
            client.once("GET", "memory/events")
        assert [r.header("authorization") for r in server.requests] == [
            "Bearer old",
            "Bearer new",
        ]


def test_failing_source_is_unauthorized_and_nothing_is_sent(make_client) -> None:
    source = Failing("signed out")
    with CountingServer(200, json={}) as server:
        client = make_client(server.url, credential=EngineCredential.dynamic(source))
        with pytest.raises(UnauthorizedError) as caught:
            client.retry_transient("GET", "v1/events")
        assert server.raw_requests == []
    assert caught.value.message == "the bearer source could not supply a credential — signed out"
    assert source.calls == 1  # Unauthorized is not retried


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("", "credential is empty"),
        ("  \u2028 ", "credential is empty"),
        ("tok\r\nX-Injected: 1", "credential is not a valid HTTP header value"),
        ("tok\nX-Injected: 1", "credential is not a valid HTTP header value"),
        ("tok\rX", "credential is not a valid HTTP header value"),
        ("tok\x00", "credential is not a valid HTTP header value"),
        ("tok\x7f", "credential is not a valid HTTP header value"),
        ("tok\x1c", "credential is not a valid HTTP header value"),
        ("t\u00e9k", "credential is not a valid HTTP header value"),
        ("tok\u2603", "credential is not a valid HTTP header value"),
    ],
)
@pytest.mark.parametrize("wire", list(CortexWire))
def test_bad_tokens_are_unauthorized_and_nothing_is_sent(
    make_client, wire: CortexWire, answer: str, message: str
) -> None:
    with CountingServer(200, json={}) as server:
        client = make_client(
            server.url, wire=wire, credential=EngineCredential.dynamic(Rotating(answer))
        )
        with pytest.raises(UnauthorizedError) as caught:
            client.once("POST", "v1/experience", {"a": 1})
        assert server.raw_requests == []
        assert server.connections == 0
    assert caught.value.message == message
    assert "tok" not in str(caught.value)


def test_static_key_with_a_newline_is_refused_per_attempt(make_client, canary: str) -> None:
    with CountingServer(200, json={}) as server:
        client = make_client(server.url, credential=EngineCredential.static(canary + "\r\nX: 1"))
        with pytest.raises(UnauthorizedError) as caught:
            client.once("GET", "v1/events")
        assert server.raw_requests == []
    assert canary not in str(caught.value)
    assert canary not in repr(caught.value)


def test_tab_inside_a_token_is_a_valid_header_value(make_client) -> None:
    with LoopbackServer(lambda request: (200, {}, {})) as server:
        client = make_client(server.url, credential=EngineCredential.dynamic(Rotating("a\tb")))
        client.once("GET", "v1/events")
        assert b"Authorization: Bearer a\tb\r\n" in server.raw_requests[-1]


def test_source_returning_a_non_string_is_unauthorized(make_client) -> None:
    class Numeric:
        def bearer(self) -> str:
            return 12345  # type: ignore[return-value]

    with CountingServer(200, json={}) as server:
        client = make_client(server.url, credential=EngineCredential.dynamic(Numeric()))
        with pytest.raises(UnauthorizedError):
            client.once("GET", "v1/events")
        assert server.raw_requests == []


def test_sources_are_called_from_many_threads(make_client) -> None:
    source = Rotating("tok")
    errors: List[BaseException] = []
    with CountingServer(200, json={}) as server:
        client = make_client(server.url, credential=EngineCredential.dynamic(source))

        def work() -> None:
            try:
                for _ in range(5):
                    client.once("GET", "v1/events")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert server.hits == 40
    assert source.calls == 41  # 40 requests and one whoami
