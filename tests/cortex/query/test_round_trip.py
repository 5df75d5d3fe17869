"""The whole query side after real stores, on both wires through ``both_doubles()``."""

from __future__ import annotations

from cortex_memory.contract.consolidation import (
    BeliefsRequest,
    ConsolidateRequest,
    ConsolidateStatus,
)
from cortex_memory.contract.explore import ExploreRequest
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.requests import FetchMode, FetchRequest, RecallRequest
from cortex_memory.testing import both_doubles, sample_items

EVERYTHING = Reach.subtree(Namespace.root())


def test_store_then_fetch_recall_explore_consolidate_and_beliefs() -> None:
    items = sample_items()
    document, conversation, learning = items
    with both_doubles() as pairs:
        for engine, double in pairs:
            engine.store_many(items)
            page = engine.fetch(FetchRequest("helix", FetchMode.HYBRID, 10))
            # Conversations before learnings (scope order); the turn ranked first stands
            # for the whole conversation.
            assert [hit.id for hit in page.hits] == [
                conversation.fingerprint(), learning.fingerprint(),
            ]
            assert page.hits[0].text == conversation.render_text()
            assert page.hits[1].confidence == learning.item_confidence

            answer = engine.recall(RecallRequest("which editor uses helix", 5))
            assert answer.answer == "grounded answer for which editor uses helix"
            # The document holds none of the question's words, so the server ranks it out.
            assert [c.id for c in answer.citations] == [
                conversation.fingerprint(), learning.fingerprint(),
            ]
            assert answer.citations[0].snippet == "which editor do I use"
            assert document.fingerprint() not in {c.id for c in answer.citations}
            for citation in answer.citations:
                assert citation.score is None

            counts = engine.explore(ExploreRequest(Facet.KIND, 10))
            assert [(b.value, b.count) for b in counts.buckets] == [
                ("conversation", 1), ("document", 1), ("learning", 1),
            ]

            receipt = engine.consolidate(ConsolidateRequest(EVERYTHING))
            beliefs = engine.beliefs(BeliefsRequest(EVERYTHING, 10, "helix"))
            if double.wire == "hosted":
                assert receipt.status is ConsolidateStatus.SCHEDULED
                assert beliefs == []  # nothing built them on the hosted double
            else:
                assert receipt.status is ConsolidateStatus.COMPLETED
                assert receipt.built == 5  # one per event: 1 + 3 turns + 1
                assert receipt.scopes == 3
                texts = [b.text for b in beliefs]
                assert "user said prefers helix" in texts
                assert "user said you use helix" in texts
                assert all(b.kind is ItemKind.LEARNING for b in beliefs)
