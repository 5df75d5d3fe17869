"""The engine contract: pure types and rules shared by every engine (no I/O).

Items and metadata, namespaces and reach, filters, every request and response
with its ``validate()``, the JSON writer (float32 values, timestamps), the
fingerprint (which is the item id) and the ``MemoryEngine`` base class with its
default helpers. The conformance suite lives in ``contract.conformance``.
See ``docs/contract.md``.
"""

from __future__ import annotations

from cortex_memory.contract.bulk import Progress, store_in_batches
from cortex_memory.contract.consolidation import (
    BELIEF_TAG,
    CONSOLIDATED_TAG,
    BeliefsRequest,
    ConsolidateReceipt,
    ConsolidateRequest,
    ConsolidateStatus,
)
from cortex_memory.contract.content import (
    DocumentBody,
    ItemKind,
    LearningKind,
    Role,
    TextBody,
    Turn,
    UriBody,
)
from cortex_memory.contract.deadline import Deadline, DeadlineLike
from cortex_memory.contract.defaults import (
    cursor_from_offset,
    deadline_keywords,
    explore_by_listing,
    explore_page_of,
    forget_within_by_get,
    forget_within_ids,
    get_by_listing,
    in_request_order,
    offset_from_cursor,
)
from cortex_memory.contract.descriptor import (
    Consolidation,
    EngineDescriptor,
    EngineHealth,
    HealthState,
)
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.erase import EraseReport, EraseRequest
from cortex_memory.contract.explore import Bucket, ExplorePage, ExploreRequest
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.filter import MetaFilter, path_matches
from cortex_memory.contract.fingerprint import (
    ID_HEX_LEN,
    fingerprint,
    fingerprint_json,
    hash_json,
    is_item_id,
)
from cortex_memory.contract.forget import ForgetFilter, ForgetIds, ForgetReport, ForgetTarget
from cortex_memory.contract.items import (
    Conversation,
    Document,
    ItemId,
    Learning,
    StoreItem,
    StoreReceipt,
    validate_each,
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
    MAX_ITEM_BYTES,
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
from cortex_memory.contract.replacing import (
    SourceIdentity,
    VersionKey,
    is_version_of,
    source_identity,
    version_key,
)
from cortex_memory.contract.requests import (
    FetchMode,
    FetchRequest,
    GetRequest,
    ListRequest,
    RecallRequest,
    WaitFor,
    WriteOptions,
)
from cortex_memory.contract.responses import (
    Citation,
    Exported,
    ExportPage,
    FetchPage,
    Hit,
    ListPage,
    RecallAnswer,
)
from cortex_memory.contract.text import WHITE_SPACE, is_blank, trim
from cortex_memory.contract.timehint import TimeHint

__all__ = [
    "BELIEF_TAG",
    "BeliefsRequest",
    "Bucket",
    "CONSOLIDATED_TAG",
    "Citation",
    "ConsolidateReceipt",
    "ConsolidateRequest",
    "ConsolidateStatus",
    "Consolidation",
    "Conversation",
    "DEFAULT_SCAN_LIMIT",
    "Deadline",
    "DeadlineLike",
    "Document",
    "DocumentBody",
    "EngineDescriptor",
    "EngineHealth",
    "EraseReport",
    "EraseRequest",
    "ExplorePage",
    "ExploreRequest",
    "ExportPage",
    "Exported",
    "F32",
    "Facet",
    "FetchMode",
    "FetchPage",
    "FetchRequest",
    "ForgetFilter",
    "ForgetIds",
    "ForgetReport",
    "ForgetTarget",
    "GetRequest",
    "HealthState",
    "Hit",
    "ID_HEX_LEN",
    "ItemId",
    "ItemKind",
    "Learning",
    "LearningKind",
    "ListPage",
    "ListRequest",
    "MAX_BUCKETS",
    "MAX_DEPTH",
    "MAX_GET_IDS",
    "MAX_ITEM_BYTES",
    "MAX_SCAN_LIMIT",
    "MAX_SEGMENT_ID_LEN",
    "MAX_STORE_MANY",
    "MemoryEngine",
    "MemoryMeta",
    "MetaFilter",
    "Namespace",
    "ObservedActor",
    "Progress",
    "REDACTED_PREFIX",
    "Reach",
    "RecallAnswer",
    "RecallRequest",
    "Role",
    "SCAN_PAGE",
    "Segment",
    "SegmentKind",
    "Source",
    "SourceIdentity",
    "SourceKind",
    "StoreItem",
    "StoreReceipt",
    "TextBody",
    "TimeHint",
    "ToolCallRef",
    "Turn",
    "TurnRange",
    "UriBody",
    "VersionKey",
    "WHITE_SPACE",
    "WaitFor",
    "WriteOptions",
    "admitted_by",
    "cursor_from_offset",
    "deadline_keywords",
    "dumps",
    "explore_by_listing",
    "explore_page_of",
    "fingerprint",
    "fingerprint_json",
    "forget_within_by_get",
    "forget_within_ids",
    "format_f32",
    "format_f64",
    "format_timestamp",
    "format_timestamp_offset",
    "get_by_listing",
    "hash_json",
    "holds_phone_number",
    "in_request_order",
    "is_blank",
    "is_item_id",
    "is_version_of",
    "offset_from_cursor",
    "parse_timestamp",
    "path_matches",
    "redacted_id",
    "same_id",
    "source_identity",
    "store_in_batches",
    "to_f32",
    "trim",
    "validate_each",
    "validate_many",
    "version_key",
]
