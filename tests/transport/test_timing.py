"""Timing (engine.md §3) and the per-call Deadline."""

from __future__ import annotations

import dataclasses

import pytest

from cortex_memory.cortex import Deadline, Timing
from cortex_memory.errors import ConfigError, InvalidRequestError, UnavailableError

from ._clock import FakeClock


def test_defaults_are_the_specification_numbers() -> None:
    timing = Timing()
    assert dataclasses.asdict(timing) == {
        "request_timeout": 60.0,
        "connect_timeout": 10.0,
        "read_backoff": 0.25,
        "poll_interval": 0.25,
        "hosted_poll_ceiling": 2.0,
        "visibility": 30.0,
        "settle": 10.0,
        "recovery": 30.0,
        "max_pause": 10.0,
    }
    assert timing.effective_connect_timeout == 10.0


def test_connect_timeout_never_exceeds_the_request_timeout() -> None:
    assert Timing(request_timeout=0.5).effective_connect_timeout == 0.5
    assert Timing(request_timeout=5, connect_timeout=2).effective_connect_timeout == 2.0


def test_timing_is_frozen_and_normalised_to_floats() -> None:
    timing = Timing(request_timeout=2)
    assert isinstance(timing.request_timeout, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        timing.request_timeout = 1.0  # type: ignore[misc]
    assert Timing(request_timeout=2) == Timing(request_timeout=2.0)


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Timing)])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0])
def test_bad_values_name_the_field(name: str, value: float) -> None:
    with pytest.raises(ConfigError) as caught:
        Timing(**{name: value})
    assert f"Timing.{name}" in caught.value.message


@pytest.mark.parametrize("name", ["request_timeout", "connect_timeout"])
def test_timeouts_must_be_positive(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Timing(**{name: 0})
    assert caught.value.message == f"Timing.{name} must be greater than zero"


def test_other_timings_may_be_zero() -> None:
    assert Timing(read_backoff=0, poll_interval=0, max_pause=0).read_backoff == 0.0


@pytest.mark.parametrize("value", ["60", None, True, [1]])
def test_wrong_types_are_type_errors(value: object) -> None:
    with pytest.raises(TypeError) as caught:
        Timing(request_timeout=value)  # type: ignore[arg-type]
    assert "Timing.request_timeout" in str(caught.value)


def test_unbounded_deadline() -> None:
    deadline = Deadline(None)
    assert not deadline.bounded
    assert deadline.remaining() is None
    assert not deadline.expired()
    assert deadline.cap(5.0) == 5.0
    deadline.check("x")
    assert Deadline.of(None).remaining() is None
    assert repr(deadline) == "Deadline(None)"


def test_bounded_deadline_counts_down_on_its_clock() -> None:
    clock = FakeClock()
    deadline = Deadline(2, clock=clock)
    assert deadline.bounded
    assert deadline.seconds == 2.0
    assert deadline.remaining() == 2.0
    clock.now += 1.5
    assert deadline.remaining() == pytest.approx(0.5)
    assert deadline.cap(5.0) == pytest.approx(0.5)
    assert deadline.cap(0.1) == 0.1
    clock.now += 1.0
    assert deadline.expired()
    assert deadline.remaining() == 0.0
    with pytest.raises(UnavailableError) as caught:
        deadline.check("memory API v1/events on h")
    assert caught.value.message == "memory API v1/events on h: deadline exceeded (2 s)"
    assert caught.value.is_transient


def test_deadline_sleep_fails_at_once_when_it_cannot_finish() -> None:
    clock = FakeClock()
    deadline = Deadline(1.0, clock=clock)
    deadline.sleep(0.25, "w", sleep=clock.sleep)
    assert clock.slept == [0.25]
    with pytest.raises(UnavailableError) as caught:
        deadline.sleep(0.9, "w", sleep=clock.sleep)
    assert "deadline exceeded" in caught.value.message
    assert clock.slept == [0.25]  # did not sleep before failing
    deadline.sleep(0, "w", sleep=clock.sleep)  # a zero sleep only checks
    clock.now += 1
    with pytest.raises(UnavailableError):
        deadline.sleep(0, "w", sleep=clock.sleep)


def test_deadline_of_passes_deadlines_through() -> None:
    deadline = Deadline(3)
    assert Deadline.of(deadline) is deadline
    assert Deadline.of(2.5).seconds == 2.5


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf")])
def test_invalid_deadlines_are_invalid_requests(value: float) -> None:
    with pytest.raises(InvalidRequestError):
        Deadline(value)


@pytest.mark.parametrize("value", ["1", True])
def test_deadline_type_errors(value: object) -> None:
    with pytest.raises(TypeError):
        Deadline(value)  # type: ignore[arg-type]
