"""Item metadata (``MemoryMeta``); its parts (:mod:`.provenance`) and the phone-number
redaction helpers (:mod:`.redaction`) are re-exported here.

Metadata is not validated beyond its Python types: it says where an item came
from (workspace, file, thread, agent, tool call, source) and when it was
observed. Its JSON keys follow the 17-field wire order of contract.md §4.2.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any, Dict, Iterable, Optional, Tuple

from cortex_memory.contract._coerce import (
    opt_str,
    opt_type,
    req_type,
    set_attr,
    str_tuple,
    utc,
)
from cortex_memory.contract._read import (
    get_opt_str,
    get_str_tuple,
    obj,
    opt_bool,
    opt_timestamp,
)
from cortex_memory.contract.jsonfmt import format_timestamp, parse_timestamp
from cortex_memory.contract.namespace import Namespace

# Namespace.from_json of a string, without its frame: the memoised parse it calls.
from cortex_memory.contract.namespace import _parse as _parse_namespace
from cortex_memory.contract.provenance import (
    SOURCES_BY_KIND,
    ObservedActor,
    Source,
    SourceKind,
    ToolCallRef,
    TurnRange,
)
from cortex_memory.contract.redaction import (
    REDACTED_PREFIX,
    holds_phone_number,
    redacted_id,
    same_id,
)
from cortex_memory.errors import Error, InvalidRequestError

__all__ = [
    "REDACTED_PREFIX",
    "MemoryMeta",
    "ObservedActor",
    "Source",
    "SourceKind",
    "ToolCallRef",
    "TurnRange",
    "holds_phone_number",
    "redacted_id",
    "same_id",
]

_SOURCE_OF_KIND = SOURCES_BY_KIND
_ROOT = Namespace.root()
_DEFAULT_SOURCE = _SOURCE_OF_KIND[SourceKind.AGENT]
_META_STRINGS = (
    "workspace", "folder", "file_path", "language", "repo", "commit", "url", "thread_id",
)


@dataclass(frozen=True)
class MemoryMeta:
    """Metadata of an item; every field is optional (``MemoryMeta()`` is the default).

    Field order is the wire order. ``namespace`` is where the item lives (part of
    its identity); ``observed_at`` and ``observed_actor`` are not part of the
    fingerprint. ``tags`` accepts any iterable of strings.
    """

    namespace: Namespace = _ROOT
    workspace: Optional[str] = None
    folder: Optional[str] = None
    file_path: Optional[str] = None
    language: Optional[str] = None
    repo: Optional[str] = None
    commit: Optional[str] = None
    url: Optional[str] = None
    thread_id: Optional[str] = None
    turns: Optional[TurnRange] = None
    agent_id: Optional[str] = None
    tool_call: Optional[ToolCallRef] = None
    source: Source = _DEFAULT_SOURCE
    tags: Tuple[str, ...] = ()
    observed_at: Optional[datetime] = None
    derive: Optional[bool] = None
    observed_actor: Optional[ObservedActor] = None

    def __post_init__(self) -> None:
        # Metadata is built for every listed item, so the common case is one
        # pass of cheap identity checks; the named checks below run only to
        # report a wrong type precisely.
        fine = type(self.namespace) is Namespace and type(self.source) is Source
        if fine:
            for value in (
                self.workspace, self.folder, self.file_path, self.language, self.repo,
                self.commit, self.url, self.thread_id, self.agent_id,
            ):
                if value is not None and type(value) is not str:
                    fine = False
                    break
        if not fine or not (
            (self.turns is None or type(self.turns) is TurnRange)
            and (self.tool_call is None or type(self.tool_call) is ToolCallRef)
            and (self.derive is None or self.derive is True or self.derive is False)
            and (self.observed_actor is None or type(self.observed_actor) is ObservedActor)
        ):
            self._check_types()
        if type(self.tags) is not tuple or self.tags:
            set_attr(self, "tags", str_tuple(self, "tags", self.tags))
        if self.observed_at is not None:
            set_attr(self, "observed_at", utc(self, "observed_at", self.observed_at))

    def _check_types(self) -> None:
        req_type(self, "namespace", Namespace, self.namespace)
        for name in _META_STRINGS:
            opt_str(self, name, getattr(self, name))
        opt_type(self, "turns", TurnRange, self.turns)
        opt_str(self, "agent_id", self.agent_id)
        opt_type(self, "tool_call", ToolCallRef, self.tool_call)
        req_type(self, "source", Source, self.source)
        opt_type(self, "derive", bool, self.derive)
        opt_type(self, "observed_actor", ObservedActor, self.observed_actor)

    @classmethod
    def from_source(cls, kind: SourceKind, id: Optional[str] = None) -> MemoryMeta:
        """A default meta with only ``source`` set."""
        return cls(source=Source(kind, id))

    def with_tags(self, tags: Iterable[str]) -> MemoryMeta:
        """A copy whose tags are ``tags`` (a list; a single ``str`` is ``TypeError``)."""
        return _replace(self, tags=str_tuple(self, "tags", tags))

    def with_namespace(self, namespace: Namespace) -> MemoryMeta:
        """A copy living at ``namespace``."""
        return _replace(self, namespace=namespace)

    def to_json(self) -> Dict[str, Any]:
        """The wire object: unset fields, empty tags and the root namespace omitted;
        ``source`` always written."""
        return self._json(False)

    def identity_json(self) -> Dict[str, Any]:
        """The meta as the fingerprint hashes it: ``to_json()`` without
        ``observed_at``, ``observed_actor`` and ``tool_call.id``."""
        return self._json(True)

    def _json(self, identity: bool) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        if self.namespace.segments:
            out["namespace"] = str(self.namespace)
        for name in _META_STRINGS:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.turns is not None:
            out["turns"] = {"first": self.turns.first, "last": self.turns.last}
        if self.agent_id is not None:
            out["agent_id"] = self.agent_id
        call = self.tool_call
        if call is not None:
            out["tool_call"] = (
                {"name": call.name} if identity or call.id is None else call.to_json()
            )
        source = self.source
        out["source"] = (
            {"kind": source.kind.value} if source.id is None else source.to_json()
        )
        if self.tags:
            out["tags"] = list(self.tags)
        if self.observed_at is not None and not identity:
            out["observed_at"] = format_timestamp(self.observed_at)
        if self.derive is not None:
            out["derive"] = self.derive
        if self.observed_actor is not None and not identity:
            out["observed_actor"] = self.observed_actor.to_json()
        return out

    @classmethod
    def from_json(cls, value: object) -> MemoryMeta:
        """Read the wire object; missing keys take their defaults."""
        o = obj(value, "meta")
        if not o:
            return _DEFAULT_META
        if cls is MemoryMeta:
            quick = common_meta(o)
            if quick is not None:
                return quick
        return cls._read(o)

    @classmethod
    def _read(cls, o: Dict[str, Any]) -> MemoryMeta:
        """The full read of :meth:`from_json` (``o`` non-empty), without ``common_meta``.

        For a reader that tried ``common_meta`` itself and got None.
        """
        get = o.get
        found = dict(_DEFAULT_FIELDS)
        for name in _META_STRINGS:
            text = get(name)
            if text is not None:
                if type(text) is not str:
                    raise InvalidRequestError(f"meta.{name} must be a string")
                found[name] = text
        # Read in the order the fields were always read, so the first fault found
        # (and its message) stays the same.
        ns = get("namespace")
        if ns is not None:
            found["namespace"] = Namespace.from_json(ns)
        turns = get("turns")
        if turns is not None:
            found["turns"] = TurnRange.from_json(turns)
        found["agent_id"] = get_opt_str(o, "agent_id", "meta")
        call = get("tool_call")
        if call is not None:
            found["tool_call"] = ToolCallRef.from_json(call)
        source = get("source")
        if source is not None:
            found["source"] = Source.from_json(source)
        found["tags"] = get_str_tuple(o, "tags", "meta")
        found["observed_at"] = opt_timestamp(o, "observed_at", "meta")
        found["derive"] = opt_bool(o, "derive", "meta")
        actor = get("observed_actor")
        if actor is not None:
            found["observed_actor"] = ObservedActor.from_json(actor)
        if cls is not MemoryMeta:
            return cls(**found)
        # Every value read is of its field's type and already normalised (a tuple
        # of str; a UTC datetime from parse_timestamp), so __init__'s checks would
        # neither fail nor change anything: the fields are set directly. This runs
        # for every event a read decodes.
        meta = object.__new__(MemoryMeta)
        meta.__dict__.update(found)
        return meta


def common_meta(o: Dict[str, Any]) -> Optional[MemoryMeta]:
    """``MemoryMeta.from_json(o)`` of a meta holding only its common members, or None.

    Every read decodes one meta per event, and most metas hold a few strings,
    tags, a namespace, a timestamp and a source kind. This reads the members
    present (not every field by name) and returns None, for the full read, at
    anything else: a member of the wrong type (whose error must be the one the
    full read finds first), turns, a tool call, an actor, a source with no kind
    or a retired one.
    A meta it returns equals the one the full read builds: every member the
    full read looks at was read here by the same rules, and unknown members
    are ignored by both. A null member reads as missing in both.

    Only the members present are set on the instance: every field of
    ``MemoryMeta`` has a default, which the class holds, so a field left unset
    reads as its default (equality, hashing, ``repr`` and ``replace`` read
    fields as attributes).
    """
    if o == _DEFAULT_JSON:
        # The default meta as written (a source of kind agent): the shared instance,
        # told apart by one comparison in C.
        return _DEFAULT_META
    meta = _new(MemoryMeta)
    found = meta.__dict__
    # Most members are strings: their type is asked first, then their name.
    for key, value in o.items():
        if type(value) is str:
            if key in _COMMON_STRINGS:
                found[key] = value
            elif key == "observed_at":
                try:
                    found["observed_at"] = parse_timestamp(value)
                except Error:
                    return None
            elif key == "namespace":
                try:
                    found["namespace"] = _parse_namespace(value)
                except Error:
                    return None
            elif key in _NOT_STRINGS:
                return None
        elif value is None:
            continue
        elif key == "source":
            if type(value) is not dict:
                return None
            kind = value.get("kind")
            source = _SOURCE_OF_VALUE.get(kind) if type(kind) is str else None
            if source is None:
                return None  # no kind, a retired or unknown one: the full read
            source_id = value.get("id")
            if source_id is not None:
                if type(source_id) is not str:
                    return None
                # Source(kind, id) with its checks passed (a SourceKind, a str id),
                # the kind taken from the shared source of that kind.
                with_id = _new(Source)
                fields_of = with_id.__dict__
                fields_of["kind"] = source.kind
                fields_of["id"] = source_id
                source = with_id
            found["source"] = source
        elif key == "tags":
            if type(value) is not list:
                return None
            for tag in value:
                if type(tag) is not str:
                    return None
            found["tags"] = tuple(value)
        elif key == "derive":
            if type(value) is not bool:
                return None
            found["derive"] = value
        elif key in _READ:
            return None  # a member read here or by the full read, of another type
    return meta


def _replace(meta: MemoryMeta, **changes: Any) -> MemoryMeta:
    return replace(meta, **changes)


_DEFAULT_META = MemoryMeta()
_DEFAULT_FIELDS: Dict[str, Any] = {
    field.name: getattr(_DEFAULT_META, field.name) for field in fields(MemoryMeta)
}
_DEFAULT_JSON = _DEFAULT_META.to_json()
_COMMON_STRINGS = frozenset((*_META_STRINGS, "agent_id"))
_SOURCE_OF_VALUE = {kind.value: source for kind, source in _SOURCE_OF_KIND.items()}
# The members the full read knows that common_meta leaves to it.
_FULL_READ_ONLY = frozenset(("turns", "tool_call", "observed_actor"))
# Members that are never strings (a string there: the full read words its refusal).
_NOT_STRINGS = frozenset(("source", "tags", "derive", *_FULL_READ_ONLY))
# Every member either read knows.
_READ = _COMMON_STRINGS | _NOT_STRINGS | {"namespace", "observed_at"}
# object.__new__ without its attribute lookup: values built without __init__.
_new = object.__new__
