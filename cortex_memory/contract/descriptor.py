"""What an engine is and offers (``EngineDescriptor``) and how it is (``EngineHealth``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Dict, Optional, Tuple

from cortex_memory.contract._coerce import enum_member, opt_str, set_attr
from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract._wire import BOOL, OPT_TEXT, TEXT, Shape, Written, enum, enums
from cortex_memory.contract.requests import FetchMode
from cortex_memory.errors import UnsupportedError

__all__ = ["Consolidation", "EngineDescriptor", "EngineHealth", "HealthState"]


class HealthState(WireEnum):
    """An engine's state: serving, serving with trouble, or not serving."""

    OK = "ok"
    DEGRADED = "degraded"
    DOWN = "down"


@dataclass(frozen=True)
class EngineHealth:
    """An engine's health (serialize only) ↔ ``{"state": "ok"}`` or ``{state, reason}``.

    ``health()`` never raises: trouble is ``degraded`` or ``down``. The reason
    never carries a credential.
    """

    state: HealthState
    reason: Optional[str] = None

    def __post_init__(self) -> None:
        if type(self.state) is not HealthState:
            set_attr(self, "state", enum_member(self, "state", HealthState, self.state))
        opt_str(self, "reason", self.reason)

    @classmethod
    def ok(cls) -> EngineHealth:
        """Serving normally."""
        return _OK

    @classmethod
    def degraded(cls, reason: str) -> EngineHealth:
        """Serving, with trouble worth reporting."""
        return cls(HealthState.DEGRADED, reason)

    @classmethod
    def down(cls, reason: str) -> EngineHealth:
        """Not serving."""
        return cls(HealthState.DOWN, reason)

    def is_serving(self) -> bool:
        """False only when ``down``."""
        return self.state is not HealthState.DOWN

    def to_json(self) -> Dict[str, Any]:
        """``{"state": ...}`` plus ``reason`` for degraded and down."""
        out: Dict[str, Any] = {"state": self.state.value}
        if self.state is not HealthState.OK:
            out["reason"] = self.reason or ""
        return out


_OK = EngineHealth(HealthState.OK)


class Consolidation(WireEnum):
    """What an engine promises about ``consolidate`` (building beliefs).

    ``NONE``: refuses it. ``ON_DEMAND``: answers started or completed.
    ``SCHEDULED``: answers scheduled only. ``AUTOMATIC``: rebuilds after writes
    by itself; an explicit call still answers started or completed.
    """

    NONE = "none"
    ON_DEMAND = "on_demand"
    SCHEDULED = "scheduled"
    AUTOMATIC = "automatic"


@dataclass(frozen=True)
class EngineDescriptor(Written):
    """What an engine is and offers (serialize only; no I/O to build).

    Wire order: ``id, label, description, hosted, needs_endpoint, needs_key,
    default_endpoint`` (``null`` when absent), ``fetch_modes, consolidation``.
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "engine descriptor",
        id=TEXT,
        label=TEXT,
        description=TEXT,
        hosted=BOOL,
        needs_endpoint=BOOL,
        needs_key=BOOL,
        default_endpoint=OPT_TEXT.always_written(),
        fetch_modes=enums(FetchMode).always_written(),
        consolidation=enum(Consolidation),
    )

    id: str
    label: str
    description: str
    hosted: bool = False
    needs_endpoint: bool = False
    needs_key: bool = False
    default_endpoint: Optional[str] = None
    fetch_modes: Tuple[FetchMode, ...] = ()
    consolidation: Consolidation = Consolidation.NONE

    def supports(self, mode: FetchMode) -> bool:
        """True when ``fetch`` serves ``mode``."""
        return mode in self.fetch_modes

    def ensure_mode(self, mode: FetchMode) -> None:
        """Raise ``UnsupportedError`` unless ``fetch`` serves ``mode``."""
        if mode not in self.fetch_modes:
            raise UnsupportedError(f"engine `{self.id}` does not offer {mode.value} fetch")
