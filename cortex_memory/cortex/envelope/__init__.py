"""The event envelope: contract items as CortexDB experience bodies, and back (engine.md §7).

A pure layer (no I/O). Writing: :func:`envelopes` turns an item into one envelope
per event (a document piece, a conversation turn, a learning), applying the
local-path privacy rule; :func:`encode_checked` encodes each as v3 labels and parts
(or v2 text); :func:`experience_request` builds the request body with its
``tm3:`` idempotency key. Reading: :func:`decode_event` turns a listed or recalled
event back into an envelope (None when it is not ours); :func:`keeps` filters it;
:func:`rebuild_whole` puts an item back together. The wire format is described in
``docs/wire.md``.
"""

from __future__ import annotations

from cortex_memory.cortex.envelope.build import (
    CHUNK_TARGET,
    SECTION_RESERVE,
    document_overhead,
    envelopes,
)
from cortex_memory.cortex.envelope.chunks import Piece, escaped_len, split
from cortex_memory.cortex.envelope.codec import (
    MAX_EVENT_BYTES,
    MAX_LABELS,
    PART_BYTES,
    PART_TAG,
    Encoded,
    decode,
    decode_event,
    encode,
    encode_checked,
    from_labels,
    part_labels,
)
from cortex_memory.cortex.envelope.digests import digest, path_digest, prefixes
from cortex_memory.cortex.envelope.envelope import (
    U32_MAX,
    ChunkInfo,
    Envelope,
    TurnInfo,
)
from cortex_memory.cortex.envelope.labels import (
    item_label,
    lookup_labels,
    narrowing,
    readable_labels,
)
from cortex_memory.cortex.envelope.paths import (
    PathDigests,
    file_name,
    is_absolute,
    path_digests,
    wire_id,
    wire_meta,
)
from cortex_memory.cortex.envelope.reader import parse_envelope
from cortex_memory.cortex.envelope.reads import (
    Keeper,
    event_hit,
    hit,
    keeps,
    located_meta,
    one_turn_conversation,
)
from cortex_memory.cortex.envelope.rebuild import is_complete, rebuild, rebuild_whole
from cortex_memory.cortex.envelope.request import (
    BODY_KEY_PREFIX,
    ExperienceRequest,
    body_key,
    compact_sorted,
    experience_request,
)
from cortex_memory.cortex.envelope.scopes import (
    KIND_LEAVES,
    ROOT_SEGMENT,
    node_prefixes,
    parse_scope,
    scope_path,
)

__all__ = [
    "BODY_KEY_PREFIX",
    "CHUNK_TARGET",
    "ChunkInfo",
    "Encoded",
    "Envelope",
    "ExperienceRequest",
    "KIND_LEAVES",
    "Keeper",
    "MAX_EVENT_BYTES",
    "MAX_LABELS",
    "PART_BYTES",
    "PART_TAG",
    "PathDigests",
    "Piece",
    "ROOT_SEGMENT",
    "SECTION_RESERVE",
    "TurnInfo",
    "U32_MAX",
    "body_key",
    "compact_sorted",
    "decode",
    "decode_event",
    "digest",
    "document_overhead",
    "encode",
    "encode_checked",
    "envelopes",
    "escaped_len",
    "event_hit",
    "experience_request",
    "file_name",
    "from_labels",
    "hit",
    "is_absolute",
    "is_complete",
    "item_label",
    "keeps",
    "located_meta",
    "lookup_labels",
    "narrowing",
    "node_prefixes",
    "one_turn_conversation",
    "parse_envelope",
    "parse_scope",
    "part_labels",
    "path_digest",
    "path_digests",
    "prefixes",
    "readable_labels",
    "rebuild",
    "rebuild_whole",
    "scope_path",
    "split",
    "wire_id",
    "wire_meta",
]
