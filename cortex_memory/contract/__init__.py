"""The engine contract: pure types and rules shared by every engine (no I/O).

Items, metadata, namespaces and reach, the JSON writer and the fingerprint
(which is the item id). See ``docs/contract.md``.
"""

from __future__ import annotations

from cortex_memory.contract.filter import MetaFilter, path_matches
from cortex_memory.contract.fingerprint import (
    ID_HEX_LEN,
    fingerprint,
    fingerprint_json,
    hash_json,
    is_item_id,
)
from cortex_memory.contract.items import (
    Conversation,
    Document,
    DocumentBody,
    ItemId,
    ItemKind,
    Learning,
    LearningKind,
    Role,
    StoreItem,
    StoreReceipt,
    TextBody,
    Turn,
    UriBody,
    validate_many,
)
from cortex_memory.contract.jsonfmt import (
    F32,
    dumps,
    format_f32,
    format_f64,
    format_timestamp,
    format_timestamp_offset,
    parse_timestamp,
    to_f32,
)
from cortex_memory.contract.limits import (
    DEFAULT_SCAN_LIMIT,
    MAX_BUCKETS,
    MAX_DEPTH,
    MAX_GET_IDS,
    MAX_SCAN_LIMIT,
    MAX_SEGMENT_ID_LEN,
    MAX_STORE_MANY,
    SCAN_PAGE,
)
from cortex_memory.contract.meta import (
    REDACTED_PREFIX,
    MemoryMeta,
    ObservedActor,
    Source,
    SourceKind,
    ToolCallRef,
    TurnRange,
    holds_phone_number,
    redacted_id,
    same_id,
)
from cortex_memory.contract.namespace import Namespace, Reach, Segment, SegmentKind, admitted_by
from cortex_memory.contract.text import WHITE_SPACE, is_blank, trim

__all__ = [
    "DEFAULT_SCAN_LIMIT",
    "F32",
    "ID_HEX_LEN",
    "MAX_BUCKETS",
    "MAX_DEPTH",
    "MAX_GET_IDS",
    "MAX_SCAN_LIMIT",
    "MAX_SEGMENT_ID_LEN",
    "MAX_STORE_MANY",
    "REDACTED_PREFIX",
    "SCAN_PAGE",
    "WHITE_SPACE",
    "Conversation",
    "Document",
    "DocumentBody",
    "ItemId",
    "ItemKind",
    "Learning",
    "LearningKind",
    "MemoryMeta",
    "MetaFilter",
    "Namespace",
    "ObservedActor",
    "Reach",
    "Role",
    "Segment",
    "SegmentKind",
    "Source",
    "SourceKind",
    "StoreItem",
    "StoreReceipt",
    "TextBody",
    "ToolCallRef",
    "Turn",
    "TurnRange",
    "UriBody",
    "admitted_by",
    "dumps",
    "fingerprint",
    "fingerprint_json",
    "format_f32",
    "format_f64",
    "format_timestamp",
    "format_timestamp_offset",
    "hash_json",
    "holds_phone_number",
    "is_blank",
    "is_item_id",
    "parse_timestamp",
    "path_matches",
    "redacted_id",
    "same_id",
    "to_f32",
    "trim",
    "validate_many",
]
