"""Fixtures for the doubles' self-tests: plain HTTP clients and a fake clock."""

from __future__ import annotations

import itertools
import json
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest
import urllib3

from cortex_memory.testing import TEST_TOKEN, DirectDouble, HostedDouble


class FakeClock:
    """A clock a test advances by hand; thread-safe."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


class Answer:
    """One HTTP answer: status, headers, raw bytes, parsed JSON and the hosted `data`."""

    def __init__(self, response: Any) -> None:
        self.status: int = response.status
        self.headers = response.headers
        self.raw: bytes = response.data

    @property
    def json(self) -> Any:
        return json.loads(self.raw)

    @property
    def data(self) -> Any:
        """The hosted envelope's `data` (asserting success), or the bare Direct body."""
        body = self.json
        if isinstance(body, dict) and "success" in body:
            assert body["success"] is True, body
            return body["data"]
        return body

    @property
    def code(self) -> Optional[str]:
        body = self.json
        return body.get("errorCode", body.get("error_code")) if isinstance(body, dict) else None

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.raw[:200]!r})"


class Wire:
    """A plain-HTTP client bound to one double (the wire decides the path prefix)."""

    def __init__(self, double: Any, pool: urllib3.PoolManager) -> None:
        self.double = double
        self.state = double.state
        self.pool = pool
        self.hosted = double.wire == "hosted"
        self.prefix = "/memory" if self.hosted else "/v1"
        self.actor: Optional[str] = None
        self._keys = itertools.count(1)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: Optional[str] = TEST_TOKEN,
        headers: Optional[Dict[str, str]] = None,
        raw: Optional[bytes] = None,
        content_type: str = "application/json",
    ) -> Answer:
        sent: Dict[str, str] = {}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        if self.actor is not None:
            sent["X-Cortex-Actor"] = self.actor
        payload = raw
        if body is not None:
            payload = json.dumps(body).encode()
        if payload is not None:
            sent["Content-Type"] = content_type
        sent.update(headers or {})
        response = self.pool.request(
            method, self.double.url + path, body=payload, headers=sent, retries=False
        )
        return Answer(response)

    def get(self, path: str, **kwargs: Any) -> Answer:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, body: Any, **kwargs: Any) -> Answer:
        return self.call("POST", path, body, **kwargs)

    def body(
        self,
        scope: str,
        text: str,
        *,
        key: Optional[str] = None,
        role: Optional[str] = "user",
        labels: Optional[List[str]] = None,
        **extra: Any,
    ) -> Dict[str, Any]:
        content: Dict[str, Any] = {"kind": "message", "text": text}
        if role is not None:
            content["role"] = role
        body: Dict[str, Any] = {
            "scope": scope,
            "modality": "observation",
            "idempotency_key": key if key is not None else f"k-{next(self._keys)}",
            "content": content,
            "context": {"labels": labels or []},
        }
        body.update(extra)
        return body

    def write(self, scope: str, text: str, *, query: str = "", **kwargs: Any) -> Answer:
        headers = kwargs.pop("headers", None)
        return self.post(
            f"{self.prefix}/experience{query}", self.body(scope, text, **kwargs), headers=headers
        )

    def events(self, query: str, **kwargs: Any) -> Answer:
        return self.get(f"{self.prefix}/events?{query}", **kwargs)

    def recall(self, body: Dict[str, Any], **kwargs: Any) -> Answer:
        return self.post(f"{self.prefix}/recall", body, **kwargs)

    def answer(self, body: Dict[str, Any], **kwargs: Any) -> Answer:
        return self.post(f"{self.prefix}/answer", body, **kwargs)

    def forget(self, body: Dict[str, Any], **kwargs: Any) -> Answer:
        return self.post(f"{self.prefix}/forget", body, **kwargs)

    def scopes(self, query: str = "", **kwargs: Any) -> Answer:
        path = "/memory/scopes" if self.hosted else "/v1/scopes/list"
        return self.get(f"{path}?{query}" if query else path, **kwargs)


@pytest.fixture
def pool() -> Iterator[urllib3.PoolManager]:
    manager = urllib3.PoolManager(timeout=urllib3.Timeout(connect=5.0, read=30.0))
    yield manager
    manager.clear()


@pytest.fixture
def make_wire(pool: urllib3.PoolManager) -> Iterator[Callable[..., Wire]]:
    """Build a started double of either wire (knobs as keywords) with its client."""
    made: List[Any] = []

    def make(kind: str = "direct", **knobs: Any) -> Wire:
        cls = DirectDouble if kind == "direct" else HostedDouble
        double = cls(**knobs)
        made.append(double)
        double.start()
        return Wire(double, pool)

    yield make
    for double in made:
        double.close()


@pytest.fixture
def direct(make_wire: Callable[..., Wire]) -> Wire:
    return make_wire("direct")


@pytest.fixture
def hosted(make_wire: Callable[..., Wire]) -> Wire:
    return make_wire("hosted")


@pytest.fixture(params=["direct", "hosted"])
def either(request: pytest.FixtureRequest, make_wire: Callable[..., Wire]) -> Wire:
    """Each test runs once per wire."""
    return make_wire(request.param)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
