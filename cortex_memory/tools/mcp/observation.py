"""Decoding ``cortex_save`` / ``cortex_handoff`` arguments and lowering them to items.

The decoder enforces the published input schemas exactly (closed objects,
types, ``minLength``, the scope enum, the confidence range, the relation
target's ``local_id`` XOR ``public_id``) plus what a schema cannot say: a
title or content of only whitespace is refused, JSON must be finite, and the
whole payload is bounded (:data:`MAX_PAYLOAD_BYTES`). Refusals are
:class:`~.contract.WriteValidationError` (or ``PayloadTooLargeError``) with
messages that name fields and rules, never values.

:func:`to_item` maps an observation to a learning (content of at most 1024
characters) or a document (longer), with the observation's tags plus
``project:``, ``scope:`` and ``topic:`` tags (tools.md §B).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Tuple

from cortex_memory.contract.items import Document, Learning, LearningKind, StoreItem, TextBody
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind
from cortex_memory.contract.namespace import Namespace
from cortex_memory.contract.text import is_blank
from cortex_memory.tools.mcp.contract import PayloadTooLargeError, WriteValidationError

__all__ = [
    "DEFAULT_CONFIDENCE",
    "HandoffRequest",
    "MAX_LEARNING_CHARS",
    "MAX_PAYLOAD_BYTES",
    "Observation",
    "Relation",
    "decode_handoff",
    "decode_observation",
    "payload_digest",
    "to_item",
]

#: The largest arguments object accepted, in UTF-8 bytes of its compact JSON.
MAX_PAYLOAD_BYTES = 256 * 1024
#: Content up to this many characters is a learning; longer content is a document.
MAX_LEARNING_CHARS = 1024
#: A learning's confidence when the observation gives none.
DEFAULT_CONFIDENCE = 0.8

_OBSERVATION_FIELDS = (
    "title", "content", "type", "project", "scope", "session_id", "topic_key", "confidence",
    "source", "tags",
)
_HANDOFF_FIELDS = ("idempotency_key", "observation", "relation", "capability_tuple")
_RELATION_FIELDS = ("target", "type", "weight", "confidence", "reasoning")
_SCOPES = ("project", "personal")
_QUOTABLE = re.compile(r"[A-Za-z0-9_.-]{1,40}")


@dataclass(frozen=True)
class Observation:
    """What an agent wants remembered (the ``observation`` object)."""

    title: str
    content: str
    type: Optional[str] = None
    project: Optional[str] = None
    scope: Optional[str] = None
    session_id: Optional[str] = None
    topic_key: Optional[str] = None
    confidence: Optional[float] = None
    source: Optional[str] = None
    tags: Tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Observation(<{len(self.content)} chars>, topic={self.topic_key is not None})"


@dataclass(frozen=True)
class Relation:
    """A link from the handed-off observation to an existing one."""

    type: str
    target_local_id: Optional[int] = None
    target_public_id: Optional[str] = None
    weight: Optional[float] = None
    confidence: Optional[float] = None
    reasoning: Optional[str] = None


@dataclass(frozen=True)
class HandoffRequest:
    """A decoded ``cortex_handoff`` call; ``digest`` fingerprints the payload (not the key)."""

    idempotency_key: str
    observation: Observation
    relation: Optional[Relation]
    capability_json: Optional[str]
    digest: str

    def __repr__(self) -> str:
        return f"HandoffRequest(observation={self.observation!r})"


def _invalid(message: str) -> WriteValidationError:
    return WriteValidationError(message)


def _closed(obj: Mapping[str, Any], allowed: Tuple[str, ...], what: str) -> None:
    for field in obj:
        if field not in allowed:
            name = f"`{field}`" if isinstance(field, str) and _QUOTABLE.fullmatch(field) else (
                "an unknown field"
            )
            raise _invalid(f"{what} does not take {name}")


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _invalid(f"{what} must be an object")
    return value


def _opt_str(obj: Mapping[str, Any], field: str, what: str) -> Optional[str]:
    value = obj.get(field)
    if field in obj and not isinstance(value, str):
        raise _invalid(f"{what}.{field} must be a string")
    return value


def _text(obj: Mapping[str, Any], field: str, what: str) -> str:
    value = _opt_str(obj, field, what)
    if value is None:
        raise _invalid(f"{what} needs `{field}`")
    if is_blank(value):
        raise _invalid(f"{what}.{field} must not be blank")
    return value


def _number(obj: Mapping[str, Any], field: str, what: str) -> Optional[float]:
    if field not in obj:
        return None
    value = obj[field]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise _invalid(f"{what}.{field} must be a number")
    if value in (float("inf"), float("-inf")):
        raise _invalid(f"{what}.{field} must be a finite number")
    return float(value)


def _check_size(arguments: object) -> None:
    try:
        size = len(json.dumps(arguments, ensure_ascii=False, separators=(",", ":"),
                              allow_nan=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise _invalid("the arguments must be JSON") from exc
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadTooLargeError("the observation is too large")


def decode_observation(value: object, what: str = "observation") -> Observation:
    """Read an observation object (the whole ``cortex_save`` input)."""
    obj = _object(value, what)
    _closed(obj, _OBSERVATION_FIELDS, what)
    title = _text(obj, "title", what)
    content = _text(obj, "content", what)
    scope = _opt_str(obj, "scope", what)
    if scope is not None and scope not in _SCOPES:
        raise _invalid(f"{what}.scope must be project or personal")
    confidence = _number(obj, "confidence", what)
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise _invalid(f"{what}.confidence must be between 0 and 1")
    tags: Tuple[str, ...] = ()
    if "tags" in obj:
        raw = obj["tags"]
        if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
            raise _invalid(f"{what}.tags must be an array of strings")
        tags = tuple(raw)
    return Observation(
        title,
        content,
        _opt_str(obj, "type", what),
        _opt_str(obj, "project", what),
        scope,
        _opt_str(obj, "session_id", what),
        _opt_str(obj, "topic_key", what),
        confidence,
        _opt_str(obj, "source", what),
        tags,
    )


def _relation(value: object) -> Relation:
    obj = _object(value, "relation")
    _closed(obj, _RELATION_FIELDS, "relation")
    if "target" not in obj:
        raise _invalid("relation needs `target`")
    target = _object(obj["target"], "relation.target")
    if len(target) != 1 or not ("local_id" in target or "public_id" in target):
        raise _invalid("relation.target must hold exactly one of local_id, public_id")
    local_id = target.get("local_id")
    public_id = target.get("public_id")
    if "local_id" in target and (
        isinstance(local_id, bool) or not isinstance(local_id, int) or local_id < 1
    ):
        raise _invalid("relation.target.local_id must be an integer of at least 1")
    if "public_id" in target:
        if not isinstance(public_id, str):
            raise _invalid("relation.target.public_id must be a UUID string")
        try:
            public_id = str(uuid.UUID(public_id))
        except ValueError as exc:
            raise _invalid("relation.target.public_id must be a UUID string") from exc
    kind = _opt_str(obj, "type", "relation")
    if kind is None or not kind:
        raise _invalid("relation needs a non-empty `type`")
    return Relation(
        kind,
        local_id,
        public_id,
        _number(obj, "weight", "relation"),
        _number(obj, "confidence", "relation"),
        _opt_str(obj, "reasoning", "relation"),
    )


def payload_digest(payload: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of ``payload`` (sorted keys, compact)."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def decode_handoff(arguments: object) -> HandoffRequest:
    """Read a ``cortex_handoff`` arguments object (size checked first)."""
    obj = _object(arguments, "the arguments")
    _check_size(obj)
    _closed(obj, _HANDOFF_FIELDS, "cortex_handoff")
    key = obj.get("idempotency_key")
    if not isinstance(key, str) or not key:
        raise _invalid("cortex_handoff needs a non-empty `idempotency_key`")
    if "observation" not in obj:
        raise _invalid("cortex_handoff needs `observation`")
    observation = decode_observation(obj["observation"])
    relation = _relation(obj["relation"]) if "relation" in obj else None
    capability = None
    if "capability_tuple" in obj:
        capability = json.dumps(obj["capability_tuple"], sort_keys=True, ensure_ascii=False,
                                separators=(",", ":"), allow_nan=False)
    # The digest covers everything but the key: same key + same payload replays.
    digest = payload_digest({k: v for k, v in obj.items() if k != "idempotency_key"})
    return HandoffRequest(key, observation, relation, capability, digest)


def decode_save(arguments: object) -> Observation:
    """Read a ``cortex_save`` arguments object (size checked first)."""
    obj = _object(arguments, "the arguments")
    _check_size(obj)
    return decode_observation(obj)


def _learning_kind(kind: Optional[str]) -> LearningKind:
    if kind is not None:
        for member in LearningKind:
            if member.value == kind.strip().lower():
                return member
    return LearningKind.OTHER


def _tags(observation: Observation) -> Tuple[str, ...]:
    tags: List[str] = list(observation.tags)
    if observation.project is not None:
        tags.append(f"project:{observation.project}")
    if observation.scope is not None:
        tags.append(f"scope:{observation.scope}")
    if observation.topic_key is not None:
        tags.append(f"topic:{observation.topic_key}")
    return tuple(dict.fromkeys(tags))  # first occurrence wins; order kept


def to_item(observation: Observation, namespace: Namespace) -> StoreItem:
    """The item an observation is stored as (a learning, or a document when long)."""
    meta = MemoryMeta(
        namespace=namespace,
        thread_id=observation.session_id,
        source=Source(SourceKind.IMPORT, observation.source)
        if observation.source is not None
        else Source(),
        tags=_tags(observation),
    )
    if len(observation.content) <= MAX_LEARNING_CHARS:
        confidence = (
            DEFAULT_CONFIDENCE if observation.confidence is None else observation.confidence
        )
        return Learning(
            observation.content,
            _learning_kind(observation.type),
            confidence,
            evidence=observation.title,
            meta=meta,
        )
    return Document(TextBody(observation.content), title=observation.title, meta=meta)


def topic_digest(observation: Observation) -> Optional[str]:
    """The digest naming an observation's topic within its project and scope (or None)."""
    if observation.topic_key is None:
        return None
    return payload_digest(
        {
            "project": observation.project,
            "scope": observation.scope or "project",
            "topic": observation.topic_key,
        }
    )
