"""The write of a one-turn conversation in one pass (the turn-logging hot path, engine.md §9.4).

:func:`plan_turn` gives what the general path (``plan_item``: the fingerprint,
:func:`~.build.envelopes`, :func:`~.codec.encode_checked`,
:func:`~.request.experience_request`, then :meth:`~.request.ExperienceRequest.body`)
gives for a conversation of one turn: the item id, the scope and the exact request
body bytes, idempotency key included. It writes the fixed frame of each JSON text
around the values directly instead of building and then serializing the envelope,
the turn, the request and their dictionaries, which is most of that path's cost
(a store runs it once per write). For a meta with nothing to hide, hash or look up
(no path, no id, no actor) it skips the wire meta and the lookup label loop, and a
meta that sets only its namespace and source kind is written out directly. It is
one function on purpose: measured between two requests (the client resumes with cold
caches), every further call and object costs about three times what it costs in a
tight loop, and this path ran about 60 µs so before, against 40 now.

It answers only the common case and says ``None`` for anything else, which the
caller sends through the general path (which then decides, and raises where it
must): a subclass of an item, a turn or a meta (they may write other JSON), a turn
text over ``LONG_STR`` characters (the fingerprint hashes it in pieces), an event
over the size limit or over 64 labels (v2), and any text UTF-8 cannot carry (a lone
surrogate). Each byte it writes is the general path's byte, which
``tests/envelope/test_turn_plan.py`` checks on generated items.
"""

from __future__ import annotations

import hashlib
import json.encoder
from typing import Callable, Dict, NamedTuple, Optional

from cortex_memory.contract.content import ItemKind, Role, Turn
from cortex_memory.contract.fingerprint import hash_json
from cortex_memory.contract.items import Conversation, StoreItem
from cortex_memory.contract.jsonfmt import LONG_STR, c_dumps
from cortex_memory.contract.meta import MemoryMeta, SourceKind
from cortex_memory.contract.timestamps import format_timestamp, format_timestamp_offset
from cortex_memory.cortex.envelope.codec import (
    MAX_EVENT_BYTES,
    MAX_LABELS,
    PART_BYTES,
    PART_TAG,
    part_labels,
)
from cortex_memory.cortex.envelope.digests import LOOKUP_HEX
from cortex_memory.cortex.envelope.labels import (
    WORKSPACE_TAG,
    item_label,
    lookup_labels,
    readable_labels_of,
    source_kind_label,
)
from cortex_memory.cortex.envelope.paths import path_digests, wire_meta
from cortex_memory.cortex.envelope.request import BODY_KEY_HEX, BODY_KEY_PREFIX
from cortex_memory.cortex.envelope.scopes import scope_path

__all__ = ["TurnWrite", "plan_turn"]

_CONVERSATION = ItemKind.CONVERSATION
_TOOL = Role.TOOL
# json's own string writer (ensure_ascii off): what dumps, c_dumps and the
# request body's encoder all write for a string.
_escape: Callable[[str], str] = json.encoder.encode_basestring
_ROLE_JSON = {role: _escape(role.value) for role in Role}
_READABLE_KIND = readable_labels_of(_CONVERSATION, MemoryMeta())  # ["kind:conversation"]
_FIRST_PART = PART_TAG + "00:"
_SOURCE_KIND_JSON = {kind: _escape(kind.value) + "}}" for kind in SourceKind}
_NO_EXTRACT = ',"directives":{"extract":[]}'
_KEY_HEAD = b',"idempotency_key":"' + BODY_KEY_PREFIX.encode()


class TurnWrite(NamedTuple):
    """One one-turn conversation ready to send: its id, scope path and request body."""

    id: str
    scope: str
    body: bytes


def plan_turn(item: StoreItem) -> Optional[TurnWrite]:
    """The id, scope and body of a validated one-turn conversation, or ``None``
    where the general path must plan it (see the module docs)."""
    if type(item) is not Conversation:
        return None
    meta = item.meta
    turns = item.turns
    if len(turns) != 1 or type(meta) is not MemoryMeta:
        return None
    turn = turns[0]
    if type(turn) is not Turn:
        return None
    text = turn.text
    if not text or len(text) > LONG_STR:
        return None
    role = turn.role
    role_json = _ROLE_JSON[role]
    text_json = _escape(text)
    # The turn's own members after role and text: the same in the identity JSON
    # ({role, text, at?, tool_calls?}) and the envelope's turn ({index, count,
    # role, at?, tool_calls?}).
    at = turn.at
    tail = "" if at is None else ',"at":"' + format_timestamp(at) + '"'
    if turn.tool_calls:
        tail += ',"tool_calls":' + c_dumps([call.to_json() for call in turn.tool_calls])

    # Nothing wire_meta would change (no path, no id that could hold a phone
    # number, no actor), no path digest, no readable label but the kind's.
    source = meta.source
    plain = (
        meta.workspace is None
        and meta.file_path is None
        and meta.folder is None
        and meta.thread_id is None
        and meta.agent_id is None
        and source.id is None
        and meta.observed_actor is None
    )
    sent = meta if plain else wire_meta(meta)
    call = meta.tool_call
    if (
        plain
        and meta.language is None
        and meta.repo is None
        and meta.commit is None
        and meta.url is None
        and meta.turns is None
        and call is None
        and not meta.tags
        and meta.observed_at is None
        and meta.derive is None
    ):
        # MemoryMeta.to_json() of a meta that sets no more than its namespace and
        # its source kind: the wire meta and the identity meta.
        namespace = meta.namespace
        meta_json = (
            '{"namespace":' + _escape(str(namespace)) + ',"source":{"kind":'
            if namespace.segments
            else '{"source":{"kind":'
        ) + _SOURCE_KIND_JSON[source.kind]
        identity_meta = meta_json
    else:
        meta_json = c_dumps(sent.to_json())
        if (
            sent is meta
            and meta.observed_at is None
            and meta.observed_actor is None
            and (call is None or call.id is None)
        ):
            identity_meta = meta_json  # nothing the identity leaves out is set
        else:
            identity_meta = c_dumps(meta.identity_json())
    # StoreItem.fingerprint(): an exact Conversation, Turn and MemoryMeta hold no float,
    # so c_dumps writes the identity JSON as dumps would.
    item_id = hash_json(
        '{"type":"conversation","turns":[{"role":' + role_json + ',"text":' + text_json
        + tail + '}],"meta":' + identity_meta + "}"
    )  # fmt: skip

    # The v3 envelope JSON (Envelope.to_json(3, text="")), members in order.
    paths = ""
    ws: Optional[str] = None
    if not plain and (
        meta.workspace is not None or meta.file_path is not None or meta.folder is not None
    ):
        digests = path_digests(meta)
        ws = digests.ws
        if ws is not None:
            paths = ',"ws":"' + ws + '"'
        if digests.fp:
            paths += ',"fp":' + c_dumps(list(digests.fp))
        if digests.fd:
            paths += ',"fd":' + c_dumps(list(digests.fd))
    v3 = (
        '{"v":3,"id":"' + item_id + '","kind":"conversation","text":"","meta":' + meta_json
        + paths + ',"turn":{"index":0,"count":1,"role":' + role_json + tail + "}}"
    )  # fmt: skip
    # encode_checked's size: the v2 encoding is the v3 JSON with the text in place.
    if len(v3) + len(text_json) > MAX_EVENT_BYTES // 4 and (
        len(v3.encode("utf-8", "surrogatepass"))
        - 2
        + len(text_json.encode("utf-8", "surrogatepass"))
        > MAX_EVENT_BYTES
    ):
        return None
    if plain and meta.repo is None and meta.language is None:
        # lookup_labels: the item, no looked-up field, the source kind.
        labels = [item_label(item_id), source_kind_label(source.kind), *_READABLE_KIND]
    else:
        labels = lookup_labels(item_id, sent)
        if ws is not None:
            labels.append(WORKSPACE_TAG + ws[:LOOKUP_HEX])
        labels += readable_labels_of(_CONVERSATION, sent)
    if len(v3) <= PART_BYTES and v3.isascii():
        labels.append(_FIRST_PART + v3)  # part_labels(v3): one part
    else:
        labels += part_labels(v3)
    if len(labels) > MAX_LABELS:
        return None  # v2: the general path writes it

    # The request body (compact, keys sorted; experience_request): observed_at is
    # the turn's time, else the meta's; derivation is off for derive=False or a tool.
    observed = at if at is not None else meta.observed_at
    context: Dict[str, object] = {"labels": labels}
    if observed is not None:
        context["observed_at"] = format_timestamp_offset(observed)
    scope = scope_path(meta.namespace, _CONVERSATION)
    try:
        head = (
            '{"content":{"kind":"message","role":' + role_json + ',"text":' + text_json
        ).encode()
        middle = (
            '},"context":' + c_dumps(context)
            + ("" if meta.derive is not False and role is not _TOOL else _NO_EXTRACT)
        ).encode()  # fmt: skip
        end = (',"modality":"conversation","scope":' + _escape(scope) + "}").encode()
    except UnicodeEncodeError:
        return None  # a lone surrogate: the general path fails it as unsendable
    key = hashlib.sha256(head + middle + end).hexdigest()[:BODY_KEY_HEX]
    body = b"".join((head, middle, _KEY_HEAD, key.encode(), b'"', end))
    return TurnWrite(item_id, scope, body)
