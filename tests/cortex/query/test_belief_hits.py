"""Beliefs read as hits (engine.md §9.12): every rule, one at a time."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Dict

import pytest

from cortex_memory.contract.consolidation import BELIEF_TAG
from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.namespace import Namespace
from cortex_memory.cortex.engine.belief_hits import (
    belief_hit,
    belief_hits,
    by_confidence,
    merge_beliefs,
)

SCOPE = "app:tinymemory/agent:writer/app:documents"


def belief(**changes: Any) -> Dict[str, Any]:
    """The double's belief shape (doubles.md §6.9), with changes."""
    out: Dict[str, Any] = {
        "id": "belief_evt_1",
        "scope": SCOPE,
        "source": "evt_1",
        "claim": {
            "subject": {"id": "ent_user", "name": "user"},
            "predicate": "said",
            "object": {"datatype": "string", "value": "prefers helix"},
        },
        "stance": "supported",
        "confidence": 0.9,
        "valid_from": "2026-09-01T09:00:00Z",
    }
    out.update(changes)
    return out


def claim(subject: Any = None, predicate: Any = "said", obj: Any = "x") -> Dict[str, Any]:
    out: Dict[str, Any] = {"predicate": predicate, "object": obj}
    if subject is not None:
        out["subject"] = subject
    return out


def test_the_doubles_belief_reads_as_a_tagged_learning() -> None:
    found = belief_hit(belief(), 0)
    assert found is not None
    assert found.id == "belief_evt_1"
    assert found.kind is ItemKind.LEARNING
    assert found.text == "user said prefers helix"
    assert found.confidence == pytest.approx(0.9, abs=1e-7)
    assert found.confidence == 0.8999999761581421  # float32
    assert found.score == 1.0
    assert found.meta.namespace == Namespace.parse("agent:writer")
    assert found.meta.tags == (BELIEF_TAG,)
    assert found.meta.observed_at == datetime(2026, 9, 1, 9, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "changes",
    [
        {"id": 7},
        {"id": None},
        {"stance": "refuted"},
        {"stance": 1},
        {"scope": "team:acme/app:documents"},  # not ours: no app:tinymemory
        {"scope": "app:tinymemory/agent:a"},  # no kind leaf
        {"scope": None},
        {"claim": None},
        {"claim": "user said x"},
        {"claim": claim(predicate=None)},
        {"claim": claim(obj=None)},
        {"claim": claim(obj={"datatype": "string"})},
        {"claim": claim(obj="   ")},
        {"claim": claim(obj=[1, 2])},
        {"claim": claim(predicate={"value": {"nested": True}})},
    ],
)
def test_unusable_beliefs_are_skipped(changes: Dict[str, Any]) -> None:
    assert belief_hit(belief(**changes), 0) is None


def test_missing_stance_is_supported_and_contested_gets_a_suffix() -> None:
    plain = belief()
    del plain["stance"]
    found = belief_hit(plain, 0)
    assert found is not None
    assert found.text == "user said prefers helix"
    contested = belief_hit(belief(stance="contested"), 0)
    assert contested is not None
    assert contested.text == "user said prefers helix (contested)"


def test_claim_part_text_rules() -> None:
    def text(c: Dict[str, Any]) -> str:
        found = belief_hit(belief(claim=c), 0)
        assert found is not None
        return found.text

    # No subject: "predicate object"; underscores in the predicate read as spaces.
    assert text(claim(predicate="works_at", obj="acme")) == "works at acme"
    # name wins over value; a part may be a bare string, number or boolean.
    assert text(claim({"name": "ann", "value": "x"}, "likes", {"value": 42})) == "ann likes 42"
    assert text(claim("bob", "is_admin", True)) == "bob is admin true"
    assert text(claim("bob", "score", 2.5)) == "bob score 2.5"
    assert text(claim("bob", "count", 3)) == "bob count 3"
    # A subject without text is left out rather than dropping the belief.
    assert text(claim({"id": "ent_1"}, "said", "hi")) == "said hi"
    # Text is trimmed; a blank name falls back to the value.
    assert text(claim({"name": "  ", "value": " eve "}, " said ", " hi ")) == "eve said hi"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, 0.5),
        ("0.7", 0.5),
        (True, 0.5),
        (float("nan"), 0.5),
        (-1, 0.0),
        (7, 1.0),
        (float("inf"), 1.0),
        (0.3, 0.30000001192092896),
    ],
)
def test_confidence_is_clamped_float32_with_a_default(value: Any, expected: float) -> None:
    found = belief_hit(belief(confidence=value), 0)
    assert found is not None
    assert found.confidence == expected


def test_observed_at_is_the_first_parseable_time() -> None:
    found = belief_hit(
        belief(valid_from="soon", updated_at=5, created_at="2025-01-02T03:04:05.123456789Z"), 0
    )
    assert found is not None
    assert found.meta.observed_at == datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
    none = belief_hit(belief(valid_from=None), 0)
    assert none is not None
    assert none.meta.observed_at is None


def test_scores_follow_array_positions_with_skipped_entries_counting() -> None:
    found = belief_hits([belief(id="a"), {"junk": 1}, belief(id="c"), "x", belief(id="e")])
    assert [(b.id, b.score) for b in found] == [
        ("a", 1.0),
        ("c", 0.3333333432674408),
        ("e", 0.20000000298023224),
    ]


def test_merge_is_round_robin_with_case_insensitive_text_dedupe() -> None:
    def one(ident: str, text: str) -> Any:
        found = belief_hit(belief(id=ident, claim=claim(predicate="said", obj=text)), 0)
        assert found is not None
        return found

    first = [one("a1", "Tea"), one("a2", "coffee")]
    second = [one("b1", "TEA"), one("b2", "water"), one("b3", "juice")]
    merged = merge_beliefs([first, second], 10)
    assert [b.id for b in merged] == ["a1", "a2", "b2", "b3"]
    assert [b.id for b in merge_beliefs([first, second], 2)] == ["a1", "a2"]


def test_by_confidence_sorts_confident_then_newest_undated_last() -> None:
    def one(ident: str, confidence: float, at: Any) -> Any:
        found = belief_hit(belief(id=ident, confidence=confidence, valid_from=at), 0)
        assert found is not None
        return found

    hits = [
        one("low", 0.2, "2026-01-01T00:00:00Z"),
        one("old", 0.9, "2020-01-01T00:00:00Z"),
        one("undated", 0.9, None),
        one("new", 0.9, "2026-01-01T00:00:00Z"),
        one("old2", 0.9, "2020-01-01T00:00:00Z"),
    ]
    assert [b.id for b in by_confidence(hits)] == ["new", "old", "old2", "undated", "low"]
