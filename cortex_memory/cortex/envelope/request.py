"""The experience request of one event and its body idempotency key (engine.md §7.9, §5.11).

The body is serialized with sorted keys (``json.dumps(sort_keys=True, ...)``) by
whoever sends it; the key is computed the same way over the body without the key,
so the same event always carries the same key and a host's retry is a replay.
Request bodies carry no floats: the float32 confidence lives inside the envelope
text or parts, already written by ``jsonfmt``.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from cortex_memory.contract.items import ItemKind, Role
from cortex_memory.contract.jsonfmt import format_timestamp_offset
from cortex_memory.cortex.envelope.codec import Encoded, encode_checked
from cortex_memory.cortex.envelope.envelope import Envelope
from cortex_memory.cortex.envelope.scopes import scope_path

__all__ = [
    "BODY_KEY_HEX",
    "BODY_KEY_PREFIX",
    "ExperienceRequest",
    "body_key",
    "compact_sorted",
    "experience_request",
]

BODY_KEY_PREFIX = "tm3:"
BODY_KEY_HEX = 56
"""Hex characters of a body key after its prefix (28 bytes of SHA-256); 60 characters in all."""

_KEY_MEMBER = "idempotency_key"
_KEY_MEMBER_JSON = '"idempotency_key"'
_MODALITY_MEMBER = ',"modality":'
# experience_request keeps the body's JSON around the text (not fields: equality,
# repr and replace() ignore them; a copy made by replace() writes its own).
_HALVES = "_body_halves"
_UNSENDABLE = "_unsendable"
# The text member of the body's JSON, written with an empty text: ``content`` sorts
# first and ``text`` last in it, and a ``"`` inside a JSON string is escaped, so
# the first occurrence is the member.
_EMPTY_TEXT = '"text":""'
_escape = json.encoder.encode_basestring


# json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) builds
# this same encoder on every call; building it once spares that on every write.
# encode() keeps no state between calls, so threads may share it.
_COMPACT_SORTED = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def compact_sorted(value: Any) -> str:
    """Compact JSON with keys sorted recursively: the form of every request body."""
    return _COMPACT_SORTED.encode(value)


def body_key(body: Mapping[str, Any]) -> str:
    """``tm3:`` + 56 hex of SHA-256 over the compact sorted body without its key."""
    return _key_of({name: value for name, value in body.items() if name != _KEY_MEMBER})


def _key_of(unkeyed: Mapping[str, Any]) -> str:
    return _key_of_json(compact_sorted(unkeyed))


def _key_of_json(unkeyed_json: str) -> str:
    data = unkeyed_json.encode("utf-8", "surrogatepass")
    return BODY_KEY_PREFIX + hashlib.sha256(data).hexdigest()[:BODY_KEY_HEX]


def _with_key(unkeyed_json: str, key: str) -> str:
    """The compact sorted JSON of the body with ``idempotency_key`` added.

    Sorted, the key sits right before ``modality`` (``content``, ``context`` and
    ``directives`` sort before it; ``modality`` and ``scope`` after). No nested
    object has a ``modality`` member, and a ``"`` inside a JSON string is always
    escaped, so the first ``,"modality":`` is the top-level member.
    """
    at = unkeyed_json.index(_MODALITY_MEMBER)
    # The key is ours: "tm3:" and hex digits, which JSON writes between quotes as is.
    return f'{unkeyed_json[:at]},{_KEY_MEMBER_JSON}:"{key}"{unkeyed_json[at:]}'


@dataclass(frozen=True)
class ExperienceRequest:
    """One event to write: ``{scope, modality, content, context, directives?, idempotency_key}``.

    ``extract`` False adds ``directives: {"extract": []}`` (index the event, derive
    nothing). ``observed_at`` is already formatted (RFC 3339 ending ``+00:00``).
    """

    scope: str
    modality: str
    role: str
    text: str
    labels: Tuple[str, ...]
    observed_at: Optional[str] = None
    extract: bool = True
    idempotency_key: str = ""

    @property
    def item_label(self) -> str:
        """The ``tm:i:`` label every event of the item carries first."""
        return self.labels[0]

    def to_json(self) -> Dict[str, Any]:
        """The request body (send it with :func:`compact_sorted`, or send :meth:`body`)."""
        body = self._unkeyed()
        body[_KEY_MEMBER] = self.idempotency_key
        return body

    def body(self) -> bytes:
        """The bytes to send: ``compact_sorted(self.to_json())`` in UTF-8, as the
        transport would encode :meth:`to_json`.

        A lone surrogate (possible in a Python ``str``) cannot be sent as UTF-8:
        ``UnicodeEncodeError`` (the writer reports it as the transport reports a
        body it cannot encode).
        """
        # The JSON before and after the text is kept from experience_request; the
        # text is escaped only now, so a planned write holds the text once.
        halves: Optional[Tuple[str, str]] = self.__dict__.get(_HALVES)
        if halves is None:
            return compact_sorted(self.to_json()).encode("utf-8")
        return f"{halves[0]}{_escape(self.text)}{halves[1]}".encode()

    @property
    def sendable(self) -> bool:
        """False when the text holds a lone surrogate, which UTF-8 cannot carry
        (known for requests made by :func:`experience_request`)."""
        return _UNSENDABLE not in self.__dict__

    def _unkeyed(self) -> Dict[str, Any]:
        return _unkeyed_body(
            self.scope, self.modality, self.role, self.text, self.labels, self.observed_at,
            self.extract,
        )  # fmt: skip


def _unkeyed_body(
    scope: str,
    modality: str,
    role: str,
    text: str,
    labels: Tuple[str, ...],
    observed_at: Optional[str],
    extract: bool,
) -> Dict[str, Any]:
    context: Dict[str, Any] = {"labels": list(labels)}
    if observed_at is not None:
        context["observed_at"] = observed_at
    body: Dict[str, Any] = {
        "scope": scope,
        "modality": modality,
        "content": {"kind": "message", "role": role, "text": text},
        "context": context,
    }
    if not extract:
        body["directives"] = {"extract": []}
    return body


def experience_request(env: Envelope, encoded: Optional[Encoded] = None) -> ExperienceRequest:
    """The request writing ``env`` (encoded with ``encode_checked`` unless given).

    A conversation turn is modality ``conversation`` with the turn's role; a document
    (whole or piece) ``document``/``user``; a learning ``observation``/``user``.
    ``observed_at`` is the turn's time, else the meta's. Derivation is turned off when
    ``meta.derive`` is False or the turn is a tool's.
    """
    if encoded is None:
        encoded = encode_checked(env)
    role = Role.USER
    if env.kind is ItemKind.CONVERSATION:
        modality = "conversation"
        if env.turn is not None:
            role = env.turn.role
    elif env.kind is ItemKind.DOCUMENT:
        modality = "document"
    else:
        modality = "observation"
    at = env.turn.at if env.turn is not None and env.turn.at is not None else env.meta.observed_at
    scope = scope_path(env.meta.namespace, env.kind)
    observed_at = None if at is None else format_timestamp_offset(at)
    extract = env.meta.derive is not False and role is not Role.TOOL
    # The key is computed over everything else the body holds: the JSON written
    # with an empty text, the escaped text hashed in its place.
    text, labels = encoded
    empty = compact_sorted(
        _unkeyed_body(scope, modality, role.value, "", labels, observed_at, extract)
    )
    cut = empty.index(_EMPTY_TEXT) + len(_EMPTY_TEXT) - 2
    before, after = empty[:cut], empty[cut + 2 :]
    digest = hashlib.sha256()
    sendable = True
    for part in (before, _escape(text), after):
        try:
            digest.update(part.encode("utf-8"))
        except UnicodeEncodeError:  # hashed as the key always was; never sent
            digest.update(part.encode("utf-8", "surrogatepass"))
            sendable = False
    key = BODY_KEY_PREFIX + digest.hexdigest()[:BODY_KEY_HEX]
    request = ExperienceRequest(
        scope, modality, role.value, text, labels, observed_at, extract, key
    )
    request.__dict__[_HALVES] = (before, _with_key(after, key))
    if not sendable:
        request.__dict__[_UNSENDABLE] = True
    return request
