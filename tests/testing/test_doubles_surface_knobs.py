"""The knob tables are public and read-only."""

from __future__ import annotations

import pytest

from cortex_memory.testing import KNOB_DEFAULTS, LEGACY_KNOBS, DirectDouble


def test_every_knob_is_listed_with_its_default_and_cannot_be_edited() -> None:
    with DirectDouble() as double:
        for name, default in KNOB_DEFAULTS.items():
            assert getattr(double.state, name) == default, name
    assert set(LEGACY_KNOBS) <= set(KNOB_DEFAULTS)
    with pytest.raises(TypeError):
        KNOB_DEFAULTS["fail_all"] = (503, "X")  # type: ignore[index]
    with pytest.raises(TypeError):
        LEGACY_KNOBS["check_actor"] = True  # type: ignore[index]


def test_the_legacy_profile_sets_every_legacy_value() -> None:
    with DirectDouble(legacy=True) as double:
        for name, value in LEGACY_KNOBS.items():
            assert getattr(double.state, name) == value, name
