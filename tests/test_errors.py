"""The exception tree: prefixes, equality, attributes and the hosted-code helpers."""

from __future__ import annotations

import copy
import pickle

import pytest

import cortex_memory as cm
from cortex_memory.errors import error_code, is_insufficient_credits

PREFIXES = [
    (cm.UnsupportedError, "unsupported: "),
    (cm.InvalidRequestError, "invalid request: "),
    (cm.UnauthorizedError, "unauthorized: "),
    (cm.NotFoundError, "not found: "),
    (cm.ConflictError, "conflict: "),
    (cm.UnavailableError, "unavailable: "),
    (cm.EngineError, "engine error: "),
    (cm.ConfigError, "configuration error: "),
]


@pytest.mark.parametrize(("cls", "prefix"), PREFIXES)
def test_str_starts_with_the_variant_prefix(cls: type[cm.Error], prefix: str) -> None:
    err = cls("something happened")
    assert str(err) == prefix + "something happened"
    assert err.message == "something happened"
    assert isinstance(err, cm.Error)
    assert err.is_transient is (cls is cm.UnavailableError)


def test_errors_compare_by_class_and_message_and_hash() -> None:
    assert cm.NotFoundError("x") == cm.NotFoundError("x")
    assert cm.NotFoundError("x") != cm.NotFoundError("y")
    assert cm.NotFoundError("x") != cm.ConflictError("x")
    assert len({cm.NotFoundError("x"), cm.NotFoundError("x")}) == 1


def test_status_and_code_survive_copy_and_pickle() -> None:
    err = cm.UnavailableError("busy", status=503, code="UNAVAILABLE")
    for clone in (copy.copy(err), copy.deepcopy(err), pickle.loads(pickle.dumps(err))):
        assert clone == err
        assert (clone.status, clone.code) == (503, "UNAVAILABLE")
    assert "status=503" in repr(err)


def test_message_must_be_text() -> None:
    with pytest.raises(TypeError):
        cm.EngineError(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (
            "[USER_INSUFFICIENT_CREDITS] memory API memory/experience on h: no credits",
            "USER_INSUFFICIENT_CREDITS",
        ),
        ("[HTTP_418] memory API x on h returned HTTP 418", "HTTP_418"),
        ("[] empty", None),
        ("[lower] not upper", None),
        ("[CODE]no space", None),
        ("memory API v1/events on h returned HTTP 500", None),
        ("[" + "A" * 65 + "] too long", None),
    ],
)
def test_error_code_reads_the_hosted_prefix(message: str, code: str | None) -> None:
    assert error_code(cm.EngineError(message)) == code


def test_error_code_ignores_non_library_errors() -> None:
    assert error_code(ValueError("[X] y")) is None


def test_is_insufficient_credits() -> None:
    hosted = cm.EngineError(
        "[USER_INSUFFICIENT_CREDITS] memory API m on h: the account has insufficient credits"
    )
    assert is_insufficient_credits(hosted)
    direct = cm.EngineError("direct", status=402, code="USER_INSUFFICIENT_CREDITS")
    assert is_insufficient_credits(direct)
    # Same code on another variant is not the credits condition.
    assert not is_insufficient_credits(cm.UnavailableError("[USER_INSUFFICIENT_CREDITS] x"))
    assert not is_insufficient_credits(cm.EngineError("[RATE_LIMITED] x"))
