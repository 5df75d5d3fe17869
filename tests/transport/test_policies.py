"""The wait policies of ``cortex_memory.cortex.timing``: backoff, the rate-limit pause cap,
RetryPolicy and PollPolicy/poll_until, on a fake clock (nothing here really sleeps, except
the one loopback check at the end)."""

from __future__ import annotations

import logging
from typing import List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.cortex.timing import (
    AUTHORIZATION_STATE_CHANGED,
    HOSTED_FORGETS,
    HOSTED_WRITES,
    READS,
    Deadline,
    PollPolicy,
    RetryPolicy,
    Timing,
    backoff,
    next_poll,
    pause_for,
    poll_until,
)
from cortex_memory.errors import (
    ConfigError,
    ConflictError,
    EngineError,
    Error,
    NotFoundError,
    UnavailableError,
)
from cortex_memory.testing.hostile import CountingServer

from ._clock import FakeClock

WHERE = "memory API v1/events on h"


class Script:
    """A call that raises the given errors in turn, then answers ``"ok"``."""

    def __init__(self, *errors: Error) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def busy(code: Optional[str] = None) -> UnavailableError:
    return UnavailableError("busy", status=503, code=code)


# -- backoff and the pause cap -------------------------------------------------------------


def test_backoff_sequence() -> None:
    assert [backoff(n, 0.25) for n in range(1, 6)] == [0.25, 0.5, 1.0, 2.0, 4.0]
    assert [READS.delay(n) for n in (1, 2)] == [0.25, 0.5]
    assert backoff(3, 0.0) == 0.0


@given(st.floats(min_value=0.0, max_value=100.0), st.integers(min_value=1, max_value=30))
def test_backoff_doubles_exactly(base: float, attempt: int) -> None:
    assert backoff(attempt + 1, base) == 2 * backoff(attempt, base)
    assert backoff(1, base) == base


@pytest.mark.parametrize(
    ("asked", "cap", "pause"),
    [
        (None, 10.0, 0.0),  # no Retry-After
        (0, 10.0, 0.0),  # "0": no pause
        (3, 10.0, 3.0),  # honoured as asked
        (3600, 10.0, 10.0),  # capped
        (2**64 - 1, 0.5, 0.5),  # the largest parsed value, capped
        (5, 0.0, 0.0),  # a zero cap turns pauses off
    ],
)
def test_pause_for_honours_retry_after_up_to_the_cap(
    asked: Optional[int], cap: float, pause: float
) -> None:
    assert pause_for(asked, cap) == pause


@given(st.none() | st.integers(min_value=0, max_value=2**64 - 1), st.floats(0.0, 60.0))
def test_pause_for_is_never_longer_than_asked_or_the_cap(asked: Optional[int], cap: float) -> None:
    pause = pause_for(asked, cap)
    assert 0.0 <= pause <= cap
    assert pause <= (asked or 0)
    if asked and cap:
        assert pause == min(float(asked), cap)


# -- RetryPolicy ---------------------------------------------------------------------------


def test_the_engine_policies() -> None:
    assert RetryPolicy().backoff == Timing().read_backoff
    assert (READS.attempts, READS.retry_on, READS.applied_on_retry) == (3, (UnavailableError,), ())
    assert READS.longer == ((AUTHORIZATION_STATE_CHANGED, 6),)
    assert (HOSTED_WRITES.attempts, HOSTED_WRITES.applied_on_retry) == (3, (ConflictError,))
    assert (HOSTED_FORGETS.attempts, HOSTED_FORGETS.applied_on_retry) == (3, (NotFoundError,))


def test_a_retried_call_sleeps_the_backoff_between_attempts() -> None:
    clock = FakeClock(500.0)
    call = Script(busy(), busy())
    policy = RetryPolicy(attempts=3, backoff=0.1)
    assert policy.run(call, Deadline(None), WHERE, sleep=clock.sleep) == ("ok", 3)
    assert clock.slept == [0.1, 0.2]


def test_the_last_error_propagates_when_the_attempts_are_spent() -> None:
    clock = FakeClock(500.0)
    errors = [busy(), busy(), UnavailableError("third")]
    call = Script(*errors)
    with pytest.raises(UnavailableError) as caught:
        RetryPolicy(attempts=3, backoff=0.1).run(call, Deadline(None), WHERE, sleep=clock.sleep)
    assert caught.value is errors[2]
    assert call.calls == 3
    assert clock.slept == [0.1, 0.2]  # no sleep after the last attempt


@pytest.mark.parametrize("error", [EngineError("x"), NotFoundError("x"), ConflictError("x")])
def test_other_errors_are_not_retried(error: Error) -> None:
    clock = FakeClock(500.0)
    call = Script(error)
    with pytest.raises(type(error)):
        READS.run(call, Deadline(None), WHERE, sleep=clock.sleep)
    assert (call.calls, clock.slept) == (1, [])


def test_a_longer_code_earns_its_attempts_each_time_it_is_seen() -> None:
    clock = FakeClock(500.0)
    state = busy(AUTHORIZATION_STATE_CHANGED)
    call = Script(*[state] * 6)
    with pytest.raises(UnavailableError):
        READS.run(call, Deadline(None), WHERE, sleep=clock.sleep)
    assert call.calls == 6
    assert clock.slept == [0.25, 0.5, 1.0, 2.0, 4.0]
    # Three state changes, then a plain failure: the fourth attempt is past 3, so it ends.
    call = Script(state, state, state, busy(), busy())
    with pytest.raises(UnavailableError) as caught:
        READS.run(call, Deadline(None), WHERE, backoff=0.0, sleep=clock.sleep)
    assert call.calls == 4
    assert caught.value.code is None


def test_a_backoff_past_the_deadline_fails_at_once_chained_to_the_failure() -> None:
    clock = FakeClock(500.0)
    first = busy()
    call = Script(first, busy(), busy())
    deadline = Deadline(0.6, clock=clock)
    policy = RetryPolicy(attempts=3, backoff=0.4)
    with pytest.raises(UnavailableError) as caught:
        policy.run(call, deadline, WHERE, sleep=clock.sleep)
    # Attempt 1, sleep 0.4, attempt 2; the 0.8 s sleep cannot fit, so it fails at once.
    assert call.calls == 2
    assert clock.slept == [0.4]
    assert caught.value.message == f"{WHERE}: deadline exceeded (0.6 s)"
    assert isinstance(caught.value.__cause__, UnavailableError)
    assert caught.value.__cause__ is not first  # the failure of attempt 2


def test_applied_on_retry_ends_the_loop_with_the_callers_answer() -> None:
    clock = FakeClock(500.0)
    conflict = ConflictError("claimed")
    call = Script(busy(), conflict)
    seen: List[Error] = []

    def applied(err: Error) -> str:
        seen.append(err)
        return "recovered"

    result = HOSTED_WRITES.run(call, Deadline(None), WHERE, applied=applied, sleep=clock.sleep)
    assert result == ("recovered", 2)
    assert seen == [conflict]


def test_applied_on_retry_is_an_error_on_the_first_attempt_or_without_applied() -> None:
    clock = FakeClock(500.0)
    with pytest.raises(ConflictError):
        HOSTED_WRITES.run(
            Script(ConflictError("x")), Deadline(None), WHERE, applied=str, sleep=clock.sleep
        )
    call = Script(busy(), NotFoundError("x"))
    with pytest.raises(NotFoundError):
        HOSTED_FORGETS.run(call, Deadline(None), WHERE, sleep=clock.sleep)
    assert call.calls == 2


def test_what_applied_raises_is_never_retried() -> None:
    clock = FakeClock(500.0)
    call = Script(busy(), ConflictError("claimed"))
    unknown = UnavailableError("the outcome is unknown")

    def applied(err: Error) -> str:
        raise unknown

    with pytest.raises(UnavailableError) as caught:
        HOSTED_WRITES.run(call, Deadline(None), WHERE, applied=applied, sleep=clock.sleep)
    assert caught.value is unknown
    assert call.calls == 2


def test_a_call_may_bring_its_own_backoff_base() -> None:
    clock = FakeClock(500.0)
    call = Script(busy(), busy())
    assert READS.run(call, Deadline(None), WHERE, backoff=0.005, sleep=clock.sleep) == ("ok", 3)
    assert clock.slept == [0.005, 0.01]
    assert (READS.delay(2), READS.delay(2, 0.005)) == (0.5, 0.01)


def test_where_may_be_built_only_on_failure() -> None:
    clock = FakeClock(500.0)
    built: List[int] = []

    def where() -> str:
        built.append(1)
        return WHERE

    assert READS.run(Script(), Deadline(None), where, sleep=clock.sleep) == ("ok", 1)
    assert built == []  # a first attempt that succeeds never names itself
    with pytest.raises(UnavailableError) as caught:
        READS.run(Script(busy()), Deadline(0.1, clock=clock), where, sleep=clock.sleep)
    assert caught.value.message == f"{WHERE}: deadline exceeded (0.1 s)"


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"attempts": 0}, ConfigError),
        ({"attempts": True}, TypeError),
        ({"attempts": 2.0}, TypeError),
        ({"backoff": -1.0}, ConfigError),
        ({"backoff": float("nan")}, ConfigError),
        ({"backoff": "1"}, TypeError),
        ({"retry_on": (ValueError,)}, TypeError),
        ({"retry_on": [UnavailableError]}, TypeError),
        ({"applied_on_retry": (UnavailableError,)}, ConfigError),
        ({"longer": (("CODE",),)}, TypeError),
        ({"longer": (("CODE", 0),)}, ConfigError),
    ],
)
def test_retry_policies_validate(changes: dict, error: type) -> None:  # type: ignore[type-arg]
    with pytest.raises(error) as caught:
        RetryPolicy(**changes)
    assert "RetryPolicy" in str(caught.value) or "retried and taken" in str(caught.value)


@settings(max_examples=200, deadline=None)
@given(
    attempts=st.integers(min_value=1, max_value=8),
    failures=st.integers(min_value=0, max_value=10),
    base=st.sampled_from([0.0, 0.005, 0.25, 1.5]),
)
def test_retry_property(attempts: int, failures: int, base: float) -> None:
    clock = FakeClock(500.0)
    call = Script(*[busy() for _ in range(failures)])
    policy = RetryPolicy(attempts=attempts, backoff=base)
    if failures < attempts:
        assert policy.run(call, Deadline(None), WHERE, sleep=clock.sleep) == ("ok", failures + 1)
        made = failures
    else:
        with pytest.raises(UnavailableError):
            policy.run(call, Deadline(None), WHERE, sleep=clock.sleep)
        made = attempts - 1
    assert call.calls == made + 1
    assert clock.slept == [backoff(n, base) for n in range(1, made + 1) if backoff(n, base) > 0]


# -- PollPolicy and poll_until --------------------------------------------------------------


def never() -> Optional[str]:
    return None


def test_poll_gaps_direct_keep_hosted_double_to_the_ceiling() -> None:
    timing = Timing()
    hosted = PollPolicy.of(timing, 30.0, hosted=True)
    gaps = [hosted.interval]
    for _ in range(5):
        gaps.append(hosted.after(gaps[-1]))
    assert gaps == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert PollPolicy.of(timing, 30.0, hosted=False).after(0.25) == 0.25
    assert next_poll(0.5, timing, hosted=True) == 1.0
    assert next_poll(0.5, timing, hosted=False) == 0.5


def test_poll_until_returns_the_first_answer() -> None:
    clock = FakeClock(500.0)
    answers = iter([None, None, "event-1"])
    policy = PollPolicy(budget=10.0, interval=0.25)
    found = poll_until(lambda: next(answers), policy, Deadline(None), WHERE,
                       clock=clock, sleep=clock.sleep)  # fmt: skip
    assert found == "event-1"
    assert clock.slept == [0.25, 0.25]


def test_poll_until_spends_the_budget_and_clips_the_last_gap() -> None:
    clock = FakeClock(500.0)
    calls: List[float] = []

    def check() -> Optional[str]:
        calls.append(clock.now)
        return None

    policy = PollPolicy(budget=5.0, interval=0.25, ceiling=2.0)
    assert poll_until(check, policy, Deadline(None), WHERE, clock=clock, sleep=clock.sleep) is None
    assert clock.slept == [0.25, 0.5, 1.0, 2.0, 1.25]  # the last one ends with the budget
    assert len(calls) == 6  # one more check at the very end of the budget
    assert sum(clock.slept) == pytest.approx(5.0)


def test_a_zero_budget_checks_once() -> None:
    clock = FakeClock(500.0)
    policy = PollPolicy(budget=0.0, interval=0.25)
    assert poll_until(never, policy, Deadline(None), WHERE, clock=clock, sleep=clock.sleep) is None
    assert clock.slept == []


def test_poll_until_stops_at_the_deadline_with_its_error() -> None:
    clock = FakeClock(500.0)
    deadline = Deadline(1.0, clock=clock)
    policy = PollPolicy(budget=30.0, interval=0.25)
    with pytest.raises(UnavailableError) as caught:
        poll_until(never, policy, deadline, WHERE, clock=clock, sleep=clock.sleep)
    assert caught.value.message == f"{WHERE}: deadline exceeded (1 s)"
    # 0.25 x 3; a fourth 0.25 s sleep would end exactly at the deadline, so it is not begun.
    assert clock.slept == [0.25, 0.25, 0.25]


def test_what_the_check_raises_propagates() -> None:
    clock = FakeClock(500.0)

    def check() -> Optional[str]:
        raise EngineError("the listing is malformed")

    with pytest.raises(EngineError):
        poll_until(check, PollPolicy(1.0, 0.1), Deadline(None), WHERE,
                   clock=clock, sleep=clock.sleep)  # fmt: skip
    assert clock.slept == []


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"budget": -1.0}, ConfigError),
        ({"interval": float("inf")}, ConfigError),
        ({"ceiling": -0.5}, ConfigError),
        ({"budget": None}, TypeError),
    ],
)
def test_poll_policies_validate(changes: dict, error: type) -> None:  # type: ignore[type-arg]
    fields = {"budget": 1.0, "interval": 0.25, **changes}
    with pytest.raises(error) as caught:
        PollPolicy(**fields)
    assert "PollPolicy." in str(caught.value)


@settings(max_examples=300, deadline=None)
@given(
    budget=st.floats(min_value=0.0, max_value=40.0),
    interval=st.floats(min_value=0.001, max_value=3.0),
    ceiling=st.none() | st.floats(min_value=0.001, max_value=4.0),
    bound=st.none() | st.floats(min_value=0.01, max_value=60.0),
    answer_after=st.none() | st.integers(min_value=0, max_value=50),
)
def test_poll_property(
    budget: float,
    interval: float,
    ceiling: Optional[float],
    bound: Optional[float],
    answer_after: Optional[int],
) -> None:
    clock = FakeClock(500.0)
    deadline = Deadline(bound, clock=clock)
    policy = PollPolicy(budget, interval, ceiling)
    checks = {"n": 0}

    def check() -> Optional[int]:
        checks["n"] += 1
        return checks["n"] if answer_after is not None and checks["n"] > answer_after else None

    start = clock.now
    failure: Optional[UnavailableError] = None
    result: Optional[int] = None
    try:
        result = poll_until(check, policy, deadline, WHERE, clock=clock, sleep=clock.sleep)
    except UnavailableError as err:
        failure = err
    if failure is not None:  # only a deadline ends a poll with an error
        assert bound is not None
        assert failure.message == deadline.error(WHERE).message
    elif result is None:  # the budget is spent
        assert clock.now >= start + budget - 1e-9
    else:
        assert result == checks["n"]
    # Never a sleep past the budget or the deadline.
    assert clock.now <= start + budget + 1e-9
    if bound is not None:
        assert clock.now <= start + bound
    # Each sleep is the policy's gap at that step, or shorter (clipped to the budget).
    gap = interval
    for slept in clock.slept:
        assert slept <= gap + 1e-12
        gap = policy.after(gap)
    assert checks["n"] == len(clock.slept) + 1


# -- over a real socket --------------------------------------------------------------------


def test_retries_log_without_the_query_string(make_client, caplog) -> None:  # type: ignore[no-untyped-def]
    with CountingServer(503) as server:
        client = make_client(server.url)
        with caplog.at_level(logging.DEBUG, logger="cortex_memory.cortex.timing"):
            with pytest.raises(UnavailableError):
                client.retry_transient("GET", "v1/events?scope=secret-scope&limit=5")
        assert server.hits == 3
    lines = [r.getMessage() for r in caplog.records if r.name == "cortex_memory.cortex.timing"]
    assert len(lines) == 2
    assert lines[0].startswith("memory API v1/events on 127.0.0.1: attempt 1 failed")
    assert not any("secret-scope" in line for line in lines)
