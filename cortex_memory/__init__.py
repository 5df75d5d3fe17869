"""cortex_memory: durable, synchronous memory for Python applications.

One contract (:class:`MemoryEngine`) served by three engines: CortexDB over its
Direct ``/v1`` API, CortexDB behind the TinyHumans hosted ``/memory`` API, and an
embedded SQLite engine that needs no server and no account.

The top level holds what an application writes in its own code: the engines,
the types in the contract's method signatures and what it takes to build them,
the errors and warnings, configuration, the registry and the credential. The
rest lives in its submodule: :mod:`cortex_memory.contract` (limits, tags, the
parts of items and results, id helpers), :mod:`cortex_memory.cortex` (wires,
timings, network options, descriptors), :mod:`cortex_memory.local`,
:mod:`cortex_memory.config`, :mod:`cortex_memory.registry` and
:mod:`cortex_memory.errors` (docs/versioning.md). The names that moved from
here in 0.2.0 still work until 0.3.0, with a ``DeprecationWarning`` naming
their new import path.

Importing the package has no side effects: it opens no file or socket and starts
no thread. The library logs through ``logging.getLogger("cortex_memory...")`` and
installs only a ``NullHandler``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Dict

from cortex_memory._deprecation import Moved, moved_names
from cortex_memory.config import ConfigWarning, EngineSettings, MemoryConfig
from cortex_memory.contract import (
    BeliefsRequest,
    ConsolidateReceipt,
    ConsolidateRequest,
    Conversation,
    Document,
    EngineDescriptor,
    EngineHealth,
    EraseReport,
    EraseRequest,
    ExplorePage,
    ExploreRequest,
    ExportPage,
    Facet,
    FetchMode,
    FetchPage,
    FetchRequest,
    ForgetReport,
    ForgetTarget,
    GetRequest,
    Hit,
    ItemKind,
    Learning,
    LearningKind,
    ListPage,
    ListRequest,
    MemoryEngine,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    RecallAnswer,
    RecallRequest,
    Role,
    Source,
    SourceKind,
    StoreItem,
    StoreReceipt,
    TextBody,
    Turn,
    WaitFor,
)
from cortex_memory.cortex import CortexEngine, Deadline
from cortex_memory.credential import CORTEX_CREDENTIAL_MOVED, BearerSource, EngineCredential
from cortex_memory.errors import (
    ConfigError,
    ConflictError,
    EngineError,
    Error,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedError,
    is_insufficient_credits,
)
from cortex_memory.local import InsecureFileWarning, LocalEngine
from cortex_memory.registry import build_engine, list_engines

#: The version of this package (the distribution's version, PEP 440).
__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BearerSource",
    "BeliefsRequest",
    "ConfigError",
    "ConfigWarning",
    "ConflictError",
    "ConsolidateReceipt",
    "ConsolidateRequest",
    "Conversation",
    "CortexEngine",
    "Deadline",
    "Document",
    "EngineCredential",
    "EngineDescriptor",
    "EngineError",
    "EngineHealth",
    "EngineSettings",
    "EraseReport",
    "EraseRequest",
    "Error",
    "ExplorePage",
    "ExploreRequest",
    "ExportPage",
    "Facet",
    "FetchMode",
    "FetchPage",
    "FetchRequest",
    "ForgetReport",
    "ForgetTarget",
    "GetRequest",
    "Hit",
    "InsecureFileWarning",
    "InvalidRequestError",
    "ItemKind",
    "Learning",
    "LearningKind",
    "ListPage",
    "ListRequest",
    "LocalEngine",
    "MemoryConfig",
    "MemoryEngine",
    "MemoryMeta",
    "MetaFilter",
    "Namespace",
    "NotFoundError",
    "Reach",
    "RecallAnswer",
    "RecallRequest",
    "Role",
    "Source",
    "SourceKind",
    "StoreItem",
    "StoreReceipt",
    "TextBody",
    "Turn",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedError",
    "WaitFor",
    "__version__",
    "build_engine",
    "is_insufficient_credits",
    "list_engines",
]

# Names that left the top level in 0.2.0 (docs/versioning.md): each still works,
# with a DeprecationWarning naming its new import path, until 0.3.0. They are
# not module globals, so neither `__all__` nor `dir()` lists them.
_MOVED: Dict[str, Moved] = {
    "DEFAULT_ENGINE": Moved("cortex_memory.config"),
    "BELIEF_TAG": Moved("cortex_memory.contract"),
    "Bucket": Moved("cortex_memory.contract"),
    "CONSOLIDATED_TAG": Moved("cortex_memory.contract"),
    "Citation": Moved("cortex_memory.contract"),
    "ConsolidateStatus": Moved("cortex_memory.contract"),
    "Consolidation": Moved("cortex_memory.contract"),
    "DocumentBody": Moved("cortex_memory.contract"),
    "Exported": Moved("cortex_memory.contract"),
    "ForgetFilter": Moved("cortex_memory.contract"),
    "ForgetIds": Moved("cortex_memory.contract"),
    "HealthState": Moved("cortex_memory.contract"),
    "ItemId": Moved("cortex_memory.contract"),
    "MAX_GET_IDS": Moved("cortex_memory.contract"),
    "MAX_STORE_MANY": Moved("cortex_memory.contract"),
    "ObservedActor": Moved("cortex_memory.contract"),
    "Segment": Moved("cortex_memory.contract"),
    "SegmentKind": Moved("cortex_memory.contract"),
    "TimeHint": Moved("cortex_memory.contract"),
    "ToolCallRef": Moved("cortex_memory.contract"),
    "TurnRange": Moved("cortex_memory.contract"),
    "UriBody": Moved("cortex_memory.contract"),
    "WriteOptions": Moved("cortex_memory.contract"),
    "admitted_by": Moved("cortex_memory.contract"),
    "holds_phone_number": Moved("cortex_memory.contract"),
    "redacted_id": Moved("cortex_memory.contract"),
    "same_id": Moved("cortex_memory.contract"),
    "validate_many": Moved("cortex_memory.contract"),
    "CORTEXDB_ENGINE_ID": Moved("cortex_memory.cortex"),
    "CORTEX_API_ENDPOINT": Moved("cortex_memory.cortex"),
    "CortexWire": Moved("cortex_memory.cortex"),
    "StaticBearer": Moved("cortex_memory.cortex"),
    "TINYHUMANS_API_ENDPOINT": Moved("cortex_memory.cortex"),
    "TINYHUMANS_ENGINE_ID": Moved("cortex_memory.cortex"),
    "Timing": Moved("cortex_memory.cortex"),
    "cortexdb_descriptor": Moved("cortex_memory.cortex"),
    "tinyhumans_descriptor": Moved("cortex_memory.cortex"),
    "error_code": Moved("cortex_memory.errors"),
    "LOCAL_ENGINE_ID": Moved("cortex_memory.local"),
    "local_descriptor": Moved("cortex_memory.local"),
    "CortexCredential": CORTEX_CREDENTIAL_MOVED,
}

if TYPE_CHECKING:  # type checkers see the old names (and still catch a misspelt one)
    from cortex_memory.config import DEFAULT_ENGINE as DEFAULT_ENGINE
    from cortex_memory.contract import BELIEF_TAG as BELIEF_TAG
    from cortex_memory.contract import CONSOLIDATED_TAG as CONSOLIDATED_TAG
    from cortex_memory.contract import MAX_GET_IDS as MAX_GET_IDS
    from cortex_memory.contract import MAX_STORE_MANY as MAX_STORE_MANY
    from cortex_memory.contract import Bucket as Bucket
    from cortex_memory.contract import Citation as Citation
    from cortex_memory.contract import ConsolidateStatus as ConsolidateStatus
    from cortex_memory.contract import Consolidation as Consolidation
    from cortex_memory.contract import DocumentBody as DocumentBody
    from cortex_memory.contract import Exported as Exported
    from cortex_memory.contract import ForgetFilter as ForgetFilter
    from cortex_memory.contract import ForgetIds as ForgetIds
    from cortex_memory.contract import HealthState as HealthState
    from cortex_memory.contract import ItemId as ItemId
    from cortex_memory.contract import ObservedActor as ObservedActor
    from cortex_memory.contract import Segment as Segment
    from cortex_memory.contract import SegmentKind as SegmentKind
    from cortex_memory.contract import TimeHint as TimeHint
    from cortex_memory.contract import ToolCallRef as ToolCallRef
    from cortex_memory.contract import TurnRange as TurnRange
    from cortex_memory.contract import UriBody as UriBody
    from cortex_memory.contract import WriteOptions as WriteOptions
    from cortex_memory.contract import admitted_by as admitted_by
    from cortex_memory.contract import holds_phone_number as holds_phone_number
    from cortex_memory.contract import redacted_id as redacted_id
    from cortex_memory.contract import same_id as same_id
    from cortex_memory.contract import validate_many as validate_many
    from cortex_memory.cortex import CORTEX_API_ENDPOINT as CORTEX_API_ENDPOINT
    from cortex_memory.cortex import CORTEXDB_ENGINE_ID as CORTEXDB_ENGINE_ID
    from cortex_memory.cortex import TINYHUMANS_API_ENDPOINT as TINYHUMANS_API_ENDPOINT
    from cortex_memory.cortex import TINYHUMANS_ENGINE_ID as TINYHUMANS_ENGINE_ID
    from cortex_memory.cortex import CortexWire as CortexWire
    from cortex_memory.cortex import StaticBearer as StaticBearer
    from cortex_memory.cortex import Timing as Timing
    from cortex_memory.cortex import cortexdb_descriptor as cortexdb_descriptor
    from cortex_memory.cortex import tinyhumans_descriptor as tinyhumans_descriptor
    from cortex_memory.credential import EngineCredential as CortexCredential  # noqa: F401
    from cortex_memory.errors import error_code as error_code
    from cortex_memory.local import LOCAL_ENGINE_ID as LOCAL_ENGINE_ID
    from cortex_memory.local import local_descriptor as local_descriptor
else:
    __getattr__ = moved_names(__name__, _MOVED)
