"""Pure helpers of the query side: budgets, pack bodies, ranking and the interleave."""

from __future__ import annotations

from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemKind, LearningKind, StoreItem
from cortex_memory.cortex.engine.belief_hits import rank_score
from cortex_memory.cortex.engine.beliefs import beliefs_pack_body
from cortex_memory.cortex.engine.fetch import fetch_budget
from cortex_memory.cortex.engine.packs import (
    MAX_PACK_TOKENS,
    interleave,
    pack_body,
    ranked,
    whole_items_budget,
)
from cortex_memory.cortex.engine.recall import answer_limits
from cortex_memory.cortex.envelope import Keeper, encode_checked, envelopes, experience_request


def test_whole_items_budget_reaches_the_cap_from_eleven() -> None:
    assert whole_items_budget(0) == 786_432
    assert whole_items_budget(1) == 786_432
    assert whole_items_budget(10) == 7_864_320
    assert whole_items_budget(11) == MAX_PACK_TOKENS == 8_388_608
    assert whole_items_budget(10_000) == MAX_PACK_TOKENS


def test_fetch_budget_asks_three_events_per_hit_up_to_a_thousand() -> None:
    # A first page of 5: (5 + 1) × 3 = 18 events, which is past the token cap.
    assert fetch_budget(5) == (18, 8_388_608)
    assert fetch_budget(1) == (6, 6 * 786_432)
    assert fetch_budget(2) == (9, 9 * 786_432)
    assert fetch_budget(333) == (1000, MAX_PACK_TOKENS)
    assert fetch_budget(5000).events == 1000


def test_answer_limits_share_the_quarter_in_layer_order() -> None:
    assert answer_limits(6) == {
        "events": 12,
        "facts": 2,
        "beliefs": 2,
        "episodes": 1,
        "understanding": 1,
    }
    assert answer_limits(1) == {
        "events": 2,
        "facts": 1,
        "beliefs": 0,
        "episodes": 0,
        "understanding": 0,
    }
    assert answer_limits(8) == {
        "events": 16,
        "facts": 2,
        "beliefs": 2,
        "episodes": 2,
        "understanding": 2,
    }
    assert answer_limits(7)["understanding"] == 1
    assert answer_limits(7)["episodes"] == 2


def test_pack_body_shape_with_and_without_labels() -> None:
    plain = pack_body("s", "q", [], limits={"events": 3}, max_tokens=9)
    assert plain == {
        "scope": "s",
        "query": "q",
        "view": "granular",
        "include": ["events"],
        "budgets": {"max_tokens": 9, "per_layer_limits": {"events": 3}},
    }
    narrowed = pack_body("s", "q", ["tm:t:ab"], limits={"events": 3}, max_tokens=9)
    assert narrowed["filters"] == {"metadata": {"labels": ["tm:t:ab"]}}


def test_beliefs_pack_body_asks_beliefs_only() -> None:
    body = beliefs_pack_body("app:tinymemory/app:documents", "tea", 7)
    assert body["include"] == ["beliefs"]
    assert body["view"] == "granular"
    assert body["budgets"] == {
        "max_tokens": whole_items_budget(7),
        "per_layer_limits": {
            "events": 0,
            "facts": 0,
            "episodes": 0,
            "understanding": 0,
            "beliefs": 7,
        },
    }
    assert "filters" not in body


def test_interleave_is_round_robin_by_rank_keeping_the_best_rank() -> None:
    a = ["a0", "x", "a2"]
    b = ["b0", "b1", "x", "b3"]
    c = ["x"]
    assert interleave([a, b, c], str) == ["a0", "b0", "x", "b1", "a2", "b3"]
    assert interleave([a, b, c], str, 3) == ["a0", "b0", "x"]
    assert interleave([a, b], str, 0) == []
    assert interleave([], str) == []


def test_rank_score_is_float32_of_one_over_one_plus_rank() -> None:
    assert rank_score(0) == 1.0
    assert rank_score(1) == 0.5
    assert rank_score(2) == 0.3333333432674408  # float32(1/3), not the float64
    assert rank_score(3) == 0.25


def _events(item: StoreItem, start: int) -> list:
    out = []
    for offset, env in enumerate(envelopes(item)):
        body = experience_request(env, encode_checked(env)).to_json()
        out.append(
            {"id": f"evt_{start + offset}", "content": body["content"], "context": body["context"]}
        )
    return out


def test_ranked_decodes_filters_and_dedupes_each_item_at_its_first_event() -> None:
    doc = StoreItem.document("first doc")
    learn = StoreItem.learning("tea please", LearningKind.PREFERENCE, 0.5)
    events = _events(doc, 1) + _events(learn, 2) + _events(doc, 3)
    events.append({"id": "evt_9", "content": {"text": "not ours"}, "context": {"labels": []}})
    pack = {"pack_id": "p", "layers": {"events": events}}
    found = ranked(pack, Keeper(MetaFilter()))
    assert [env.id for env in found.envelopes] == [doc.fingerprint(), learn.fingerprint()]
    assert found.admitted == 3
    only_docs = ranked(pack, Keeper(MetaFilter(), ItemKind.DOCUMENT))
    assert [env.id for env in only_docs.envelopes] == [doc.fingerprint()]
    assert only_docs.admitted == 2
    assert ranked({"layers": {"events": "nope"}}, Keeper(MetaFilter())) == ([], 0)
    assert ranked({}, Keeper(MetaFilter())) == ([], 0)
