"""The ``consolidate`` lifecycle check (contract.md §9.3, check 17).

The engine must answer a build request exactly as its descriptor promises,
validate before it builds, and give back only well-formed beliefs: learning
hits tagged ``belief`` at nodes inside the asked reach.
"""

from __future__ import annotations

from cortex_memory.contract.conformance.errors import CheckEngineFailure
from cortex_memory.contract.conformance.harness import Session
from cortex_memory.contract.conformance.report import brief
from cortex_memory.contract.consolidation import (
    BELIEF_TAG,
    BeliefsRequest,
    ConsolidateRequest,
    ConsolidateStatus,
)
from cortex_memory.contract.descriptor import Consolidation
from cortex_memory.contract.items import ItemKind, StoreItem
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.errors import Error, InvalidRequestError, UnsupportedError

__all__ = ["BELIEFS_QUERY", "check_consolidate"]

#: The query the check reads beliefs with (the second sentence of its document).
BELIEFS_QUERY = "A fact to build on"
_BELIEFS_LIMIT = 10

# What an explicit consolidate may answer under each promise.
_ALLOWED = {
    Consolidation.ON_DEMAND: (ConsolidateStatus.STARTED, ConsolidateStatus.COMPLETED),
    Consolidation.AUTOMATIC: (ConsolidateStatus.STARTED, ConsolidateStatus.COMPLETED),
    Consolidation.SCHEDULED: (ConsolidateStatus.SCHEDULED,),
}


def check_consolidate(s: Session) -> None:
    """17. Consolidate keeps the descriptor's promise; beliefs are tagged and in reach."""
    run, engine = s.run, s.engine
    node = Namespace.parse(f"agent:{run.marker}-beliefs")
    reach = Reach.exact(node)
    s.store(
        StoreItem.document(
            f"{run.marker} consolidate. {BELIEFS_QUERY}. note", run.meta().with_namespace(node)
        )
    )
    s.refused(
        "consolidate naming document twice",
        (InvalidRequestError,),
        engine.consolidate,
        ConsolidateRequest(reach, (ItemKind.DOCUMENT, ItemKind.DOCUMENT)),
    )
    promise = s.call("descriptor", engine.descriptor).consolidation
    request = ConsolidateRequest(reach, (ItemKind.DOCUMENT,))
    try:
        receipt = engine.consolidate(request)
    except UnsupportedError as exc:
        if promise is not Consolidation.NONE:
            raise CheckEngineFailure(s.check, exc, "consolidate") from exc
    except Error as exc:
        raise CheckEngineFailure(s.check, exc, "consolidate") from exc
    else:
        if promise is Consolidation.NONE:
            s.fail(
                f"consolidate answered {brief(receipt)} although the engine declares "
                "consolidation none; it must raise UnsupportedError"
            )
        allowed = _ALLOWED[promise]
        s.expect(
            receipt.status in allowed,
            f"consolidate answered `{receipt.status}` while the engine declares `{promise}`, "
            f"which allows only {' or '.join(f'`{a}`' for a in allowed)}",
        )
    _check_beliefs(s, reach)


def _check_beliefs(s: Session, reach: Reach) -> None:
    s.refused(
        "beliefs with limit 0",
        (InvalidRequestError,),
        s.engine.beliefs,
        BeliefsRequest(reach, 0),
    )
    hits = s.call(
        "beliefs", s.engine.beliefs, BeliefsRequest(reach, _BELIEFS_LIMIT, BELIEFS_QUERY)
    )
    s.expect(
        len(hits) <= _BELIEFS_LIMIT,
        f"beliefs with limit {_BELIEFS_LIMIT} answered {len(hits)} hits",
    )
    for hit in hits:
        s.expect(
            hit.kind is ItemKind.LEARNING, f"belief `{hit.id}` is a {hit.kind}, not a learning"
        )
        s.expect(BELIEF_TAG in hit.meta.tags, f"belief `{hit.id}` is not tagged `{BELIEF_TAG}`")
        s.expect(
            reach.admits(hit.meta.namespace),
            f"belief `{hit.id}` lives at `{hit.meta.namespace}`, outside the asked reach "
            f"exact({reach.at})",
        )
