"""A success body read in many pieces is gathered in one buffer (body.py).

The memory a read holds stays about the body's size: tracemalloc sees every
allocation of the pieces and the buffer, and the peak of a read of an 8 MiB
body stays well under twice that (joining a list of pieces at the end peaks at
twice the body). Bodies of one piece stay ``bytes``; unparsed data is ``bytes``.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any, Tuple

import pytest
import urllib3

from cortex_memory.cortex.timing import Deadline
from cortex_memory.cortex.transport.body import read_success_body
from cortex_memory.cortex.transport.request import Read, Request
from cortex_memory.cortex.transport.watchdog import WATCHDOG
from cortex_memory.testing.hostile import LoopbackServer, RawRequest

BIG = 8 * 1024 * 1024


def big_json(request: RawRequest) -> Tuple[int, dict, object]:
    # A JSON list of short strings, BIG bytes or a little more.
    return 200, {}, ["x" * 1000] * (BIG // 1003 + 1)


def small_json(request: RawRequest) -> Tuple[int, dict, object]:
    return 200, {}, {"ok": True}


def read(url: str) -> Tuple[Any, int]:
    """The body read by read_success_body and the peak bytes traced during the read."""
    manager = urllib3.PoolManager(retries=False)
    try:
        response = manager.request("GET", url + "/x", preload_content=False)
        watch = WATCHDOG.arm(30.0)
        tracemalloc.start()
        try:
            body = read_success_body(response, watch)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            WATCHDOG.disarm(watch)
        return body, peak
    finally:
        manager.clear()


def test_a_long_body_is_gathered_in_one_buffer_under_twice_its_size() -> None:
    with LoopbackServer(big_json) as server:
        body, peak = read(server.url)
    assert isinstance(body, bytearray)
    assert len(body) >= BIG
    assert json.loads(body) == ["x" * 1000] * (BIG // 1003 + 1)
    # The buffer (with its growth slack) plus one piece in flight; a join of the
    # pieces would reach twice the body.
    assert peak < 1.5 * len(body), (peak, len(body))


def test_a_one_piece_body_stays_bytes() -> None:
    with LoopbackServer(small_json) as server:
        body, _ = read(server.url)
    assert type(body) is bytes
    assert json.loads(body) == {"ok": True}


@pytest.mark.parametrize("parse", [True, False])
def test_long_bodies_through_the_client(make_client, parse: bool) -> None:
    with LoopbackServer(big_json) as server:
        client = make_client(server.url)
        read = Read.JSON if parse else Read.BYTES  # BYTES: the mode the actor lookup uses
        response = client._exchange.attempt(Request("GET", "v1/events", read=read), _unbounded())
    if parse:
        assert response.data == ["x" * 1000] * (BIG // 1003 + 1)
    else:
        assert type(response.data) is bytes
        assert json.loads(response.data) == ["x" * 1000] * (BIG // 1003 + 1)


def _unbounded() -> Deadline:
    return Deadline.of(None)
