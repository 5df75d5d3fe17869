"""The rows of plain items in one pass: :func:`prepare_all` and its fast path :func:`plain_row`.

:func:`~cortex_memory.local.store.prepare` computes an item's id, stored JSON
and columns through the contract's general methods: the meta's JSON dict
is built twice (identity and wire), each written by the JSON encoder, and
each column read through a helper. Most items are of the exact contract
types with a meta of common members, and for those :func:`plain_row` writes
the same bytes around the values: the meta's JSON text once (twice only when
it holds a member the identity leaves out), the item's identity and stored
JSON by joining pieces, and the columns from the fields it read on the way.
Anything else (a subclass, a body that is not a :class:`TextBody`, a text
longer than :data:`~cortex_memory.contract.jsonfmt.LONG_STR`, an observed
actor, a tool call on a turn, a value of an unexpected type) gives None and
goes the general way. Tests check both ways give the same :class:`Prepared`,
byte for byte, on generated items.

Nothing is cached: every piece is computed from the item each time (the id
is still kept on the item, as ``fingerprint()`` keeps it).
"""

from __future__ import annotations

import hashlib
import json.encoder
from dataclasses import fields
from operator import attrgetter
from typing import Callable, List, Optional, Sequence, Tuple

from cortex_memory.contract import (
    Conversation,
    Document,
    Learning,
    MemoryMeta,
    Namespace,
    Source,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.contract.fingerprint import ID_HEX_LEN
from cortex_memory.contract.jsonfmt import F32, LONG_STR, format_f32, format_timestamp
from cortex_memory.contract.meta import ToolCallRef, TurnRange
from cortex_memory.contract.text import is_blank
from cortex_memory.local.embedders import Embedder, embed_all
from cortex_memory.local.sqlfilter import micros, tags_key
from cortex_memory.local.store import ITEM_COLUMNS, Prepared, prepare

__all__ = ["plain_row", "prepare_all"]

# The encoder the contract's writers use for strings (jsonfmt's ``_encode_str``).
_enc: Callable[[str], str] = json.encoder.encode_basestring

#: Every field of a meta, in one call (in C). :func:`_meta` unpacks them in order: a
#: field added to ``MemoryMeta`` fails that unpacking (and the tests) instead of
#: being left out of the JSON.
_FIELDS = attrgetter(*(field.name for field in fields(MemoryMeta)))
#: The JSON member prefix of each of the meta's optional strings, in wire order.
_STRINGS = tuple(
    (f'"{name}":', ITEM_COLUMNS.index("vcs_commit" if name == "commit" else name))
    for name in (
        "workspace", "folder", "file_path", "language", "repo", "commit", "url", "thread_id"
    )
)
_NAMESPACE = ITEM_COLUMNS.index("namespace")  # then svc
_TURNS = (ITEM_COLUMNS.index("turns_first"), ITEM_COLUMNS.index("turns_last"))
_AGENT = ITEM_COLUMNS.index("agent_id")  # then tool_call
_SOURCE = ITEM_COLUMNS.index("source_kind")  # then source_id
_OBSERVED = ITEM_COLUMNS.index("observed_us")  # then confidence, tags
_TEXT = ITEM_COLUMNS.index("text")  # then item_json
_SIGN = 1 << 63
_WRAP = 1 << 64


def prepare_all(items: Sequence[StoreItem], embedder: Optional[Embedder]) -> List[Prepared]:
    """:func:`~cortex_memory.local.store.prepare` every item, embedding their texts in batches."""
    prepared = [plain_row(item) or prepare(item) for item in items]
    if embedder is None:
        return prepared
    vectors = embed_all(embedder, [p.text for p in prepared])
    return [p._replace(vector=v) for p, v in zip(prepared, vectors)]


def plain_row(item: StoreItem) -> Optional[Prepared]:
    """``prepare(item)`` of an item of the exact contract types, or None (the general way)."""
    kind = type(item)
    if kind is Document:
        return _document(item)  # type: ignore[arg-type]
    if kind is Conversation:
        return _conversation(item)  # type: ignore[arg-type]
    if kind is Learning:
        return _learning(item)  # type: ignore[arg-type]
    return None


#: What :func:`_meta` gives: the identity JSON of the meta, its wire JSON, and
#: the columns it fills (positions in ITEM_COLUMNS, from ``namespace`` to
#: ``tags``, the item's ``confidence`` included) with their values.
_Meta = Tuple[str, str, List[int], List[object]]


def _meta(meta: MemoryMeta, confidence: Optional[float]) -> Optional[_Meta]:
    """The meta's JSON texts and columns in one pass, or None when it is not plain."""
    if type(meta) is not MemoryMeta:
        return None
    (
        ns, workspace, folder, file_path, language, repo, commit, url, thread_id, turns,
        agent_id, call, source, tags, observed, derive, actor,
    ) = _FIELDS(meta)
    if actor is not None or type(ns) is not Namespace or type(source) is not Source:
        return None
    parts: List[str] = []
    put = parts.append
    path = ns._path
    if path:
        put(f'"namespace":{_enc(path)}')
    columns: List[int] = [_NAMESPACE, _NAMESPACE + 1]
    values: List[object] = [path, ns._last_service + 1]
    for (prefix, column), value in zip(
        _STRINGS, (workspace, folder, file_path, language, repo, commit, url, thread_id)
    ):
        if value is not None:
            if type(value) is not str:
                return None
            put(prefix + _enc(value))
            columns.append(column)
            values.append(value)
    if turns is not None:
        first, last = turns.first, turns.last
        if type(turns) is not TurnRange or type(first) is not int or type(last) is not int:
            return None
        put(f'"turns":{{"first":{first},"last":{last}}}')
        columns += _TURNS
        values += (first, last)
    if agent_id is not None:
        if type(agent_id) is not str:
            return None
        put(f'"agent_id":{_enc(agent_id)}')
        columns.append(_AGENT)
        values.append(agent_id)
    # Where the identity and the wire JSON part: a tool call's id, observed_at.
    split: Optional[Tuple[int, str]] = None
    if call is not None:
        name = call.name
        if type(call) is not ToolCallRef or type(name) is not str:
            return None
        if call.id is not None:
            if type(call.id) is not str:
                return None
            split = (len(parts), f'"tool_call":{{"name":{_enc(name)},"id":{_enc(call.id)}}}')
        put(f'"tool_call":{{"name":{_enc(name)}}}')
        columns.append(_AGENT + 1)
        values.append(name)
    source_kind = source.kind.value
    source_id = source.id
    columns.append(_SOURCE)
    values.append(source_kind)
    if source_id is None:
        put(f'"source":{{"kind":"{source_kind}"}}')
    elif type(source_id) is str:
        put(f'"source":{{"kind":"{source_kind}","id":{_enc(source_id)}}}')
        columns.append(_SOURCE + 1)
        values.append(source_id)
    else:
        return None
    if observed is not None:
        columns.append(_OBSERVED)
        values.append(micros(observed))
    if confidence is not None:
        columns.append(_OBSERVED + 1)
        values.append(confidence)
    if tags:
        for tag in tags:
            if type(tag) is not str:
                return None
        put(f'"tags":[{",".join(map(_enc, tags))}]')
        columns.append(_OBSERVED + 2)
        values.append(tags_key(tags))
    identity_end = len(parts)
    if observed is not None:
        put(f'"observed_at":"{format_timestamp(observed)}"')
    if derive is True:
        put('"derive":true')
    elif derive is False:
        put('"derive":false')
    elif derive is not None:
        return None
    wire = "{" + ",".join(parts) + "}"
    if split is None and observed is None:
        return wire, wire, columns, values
    kept = parts[:identity_end] + parts[identity_end + (observed is not None) :]
    if split is not None:
        parts[split[0]] = split[1]
        wire = "{" + ",".join(parts) + "}"
    return "{" + ",".join(kept) + "}", wire, columns, values


def _row(item: StoreItem, kind: str, identity: str, stored: str, meta: _Meta, text: str
         ) -> Prepared:
    """The :class:`Prepared` of an item whose identity JSON text is ``identity``."""
    item_id = item.__dict__.get("_fingerprint")
    if item_id is None:
        digest = hashlib.sha256(identity.encode("utf-8", "surrogatepass"))
        item_id = digest.hexdigest()[:ID_HEX_LEN]
        item.__dict__["_fingerprint"] = item_id  # as fingerprint() keeps it
    key = int(item_id[:16], 16)
    return Prepared(
        item_id,
        (0, 1, 2, *meta[2], _TEXT, _TEXT + 1),
        (key - _WRAP if key >= _SIGN else key, item_id, kind, *meta[3], text, stored),
        text,
        None,
    )


def _document(item: Document) -> Optional[Prepared]:
    body, title, mime = item.body, item.title, item.mime
    if type(body) is not TextBody:
        return None
    text = body.text
    if type(text) is not str or len(text) > LONG_STR:
        return None
    head = '{"type":"document",'
    if title is not None:
        if type(title) is not str or len(title) > LONG_STR:
            return None
        head += f'"title":{_enc(title)},'
    tail = "" if mime is None else f',"mime":{_enc(mime)}' if type(mime) is str else None
    meta = _meta(item.meta, None)
    if meta is None or tail is None:
        return None
    tail += ',"meta":'
    identity = f'{head}"body":{{"text":{_enc(text)}}}{tail}{meta[0]}}}'
    stored = f'{head}"body":{{"text":null}}{tail}{meta[1]}}}'
    rendered = text if title is None or is_blank(title) else f"# {title}\n\n{text}"
    return _row(item, "document", identity, stored, meta, rendered)


def _conversation(item: Conversation) -> Optional[Prepared]:
    turns: List[str] = []
    lines: List[str] = []
    for turn in item.turns:
        text = turn.text
        if (
            type(turn) is not Turn or turn.tool_calls or type(text) is not str
            or len(text) > LONG_STR
        ):
            return None
        role = turn.role.value
        at = turn.at
        when = "" if at is None else f',"at":"{format_timestamp(at)}"'
        turns.append(f'{{"role":"{role}","text":{_enc(text)}{when}}}')
        lines.append(f"{role}: {text}")
    meta = _meta(item.meta, None)
    if meta is None:
        return None
    head = '{"type":"conversation","turns":[' + ",".join(turns) + '],"meta":'
    stored = f"{head}{meta[1]}}}"
    identity = stored if meta[0] is meta[1] else f"{head}{meta[0]}}}"
    return _row(item, "conversation", identity, stored, meta, "\n".join(lines))


def _learning(item: Learning) -> Optional[Prepared]:
    text, evidence, confidence = item.text, item.evidence, item.confidence
    if type(text) is not str or len(text) > LONG_STR or type(confidence) is not float:
        return None
    if evidence is not None and (type(evidence) is not str or len(evidence) > LONG_STR):
        return None
    meta = _meta(item.meta, confidence)
    if meta is None:
        return None
    kind = item.kind.value
    rest = "" if evidence is None else f',"evidence":{_enc(evidence)}'
    rest += ',"meta":'
    # The identity is written as dumps() writes a float32; the stored JSON as
    # c_dumps() does (float's repr), which reads back to the same value.
    identity = (
        f'{{"type":"learning","text":{_enc(text)},"kind":"{kind}",'
        f'"confidence":{format_f32(F32(confidence))}{rest}{meta[0]}}}'
    )
    stored = (
        f'{{"type":"learning","text":null,"kind":"{kind}",'
        f'"confidence":{float.__repr__(confidence)}{rest}{meta[1]}}}'
    )
    return _row(item, "learning", identity, stored, meta, text)
