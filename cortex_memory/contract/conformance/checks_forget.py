"""Checks on removing items: empty_forget, forget_by_id, forget_by_filter and erase
(contract.md §9.3, checks 12-15)."""

from __future__ import annotations

from dataclasses import replace

from cortex_memory.contract.conformance.errors import CheckEngineFailure
from cortex_memory.contract.conformance.harness import Session
from cortex_memory.contract.conformance.report import id_list
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.forget import ForgetFilter, ForgetIds
from cortex_memory.contract.items import ItemKind, Learning, LearningKind
from cortex_memory.contract.namespace import Namespace, Reach, Segment, SegmentKind
from cortex_memory.contract.requests import EraseRequest
from cortex_memory.errors import Error, InvalidRequestError, UnsupportedError

__all__ = [
    "ERASE_TAG",
    "check_empty_forget",
    "check_erase",
    "check_forget_by_filter",
    "check_forget_by_id",
]

#: Tag of the erase check's learnings.
ERASE_TAG = "erase"


def check_empty_forget(s: Session) -> None:
    """12. Forgetting no ids or the empty filter is refused and removes nothing."""
    before = len(s.list_all(s.run.filter()))
    s.refused("forget(ForgetIds([]))", (InvalidRequestError,), s.engine.forget, ForgetIds(()))
    s.refused(
        "forget(ForgetFilter(MetaFilter()))",
        (InvalidRequestError,),
        s.engine.forget,
        ForgetFilter(MetaFilter()),
    )
    after = len(s.list_all(s.run.filter()))
    s.expect(
        after == before,
        f"{before} items listed before the refused forgets and {after} after",
    )


def check_forget_by_id(s: Session) -> None:
    """13. Forgetting an id removes exactly that item, once."""
    before = s.list_ids(s.run.filter())
    item = s.run.document("forget-by-id")
    item_id = s.store(item).id
    report = s.call("forget", s.engine.forget, ForgetIds((item_id,)))
    s.expect(
        report.forgotten == 1,
        f"forgetting the stored id `{item_id}` forgot {report.forgotten} items; expected 1",
    )
    after = s.list_ids(s.run.filter())
    s.expect(item_id not in after, f"the forgotten item `{item_id}` still lists")
    s.expect(
        sorted(after) == sorted(before),
        f"forgetting `{item_id}` changed the other items: {len(before)} listed before, "
        f"{len(after)} after",
    )
    again = s.call("forget", s.engine.forget, ForgetIds((item_id,)))
    s.expect(
        again.forgotten == 0,
        f"forgetting `{item_id}` a second time forgot {again.forgotten} items; expected 0",
    )


def check_forget_by_filter(s: Session) -> None:
    """14. Forgetting by a tag filter removes exactly the two tagged items."""
    run = s.run
    before = s.list_ids(run.filter())
    tag = f"{run.marker}-drop"
    meta = run.meta().with_tags([tag])
    for i in range(2):
        s.store(run.document(f"drop-{i}", meta))
    dropped = replace(run.filter(), tags_any=(tag,))
    report = s.call("forget", s.engine.forget, ForgetFilter(dropped))
    s.expect(
        report.forgotten == 2,
        f"forgetting the two items tagged `{tag}` forgot {report.forgotten}; expected 2",
    )
    left = s.list_ids(dropped)
    s.expect(not left, f"items tagged `{tag}` still list after forgetting them: {id_list(left)}")
    after = s.list_ids(run.filter())
    s.expect(
        sorted(after) == sorted(before),
        f"forgetting by tag changed the other items: {len(before)} listed before, "
        f"{len(after)} after",
    )


def check_erase(s: Session) -> None:
    """15. Erasing a node's subtree removes it and its child, not its sibling.

    The whole tree is never erased without ``whole_tree``. An engine that
    answers the node erase with ``UnsupportedError`` skips the rest.
    """
    run, engine = s.run, s.engine
    m = run.marker
    erased = Namespace.parse(f"agent:{m}-erased")
    child = erased.child(Segment(SegmentKind.AGENT, "child"))
    kept = Namespace.parse(f"agent:{m}-kept")
    meta = run.meta().with_tags([ERASE_TAG])

    def learning(label: str, node: Namespace) -> Learning:
        return Learning(
            f"{m} {label} erase fact", LearningKind.FACT, 0.9, meta=meta.with_namespace(node)
        )

    node_item, child_item, kept_item = (
        learning("node", erased), learning("child", child), learning("kept", kept),
    )
    for item in (node_item, child_item, kept_item):
        s.store(item)
    s.refused(
        "erase(subtree(root)) without whole_tree",
        (InvalidRequestError, UnsupportedError),
        engine.erase,
        EraseRequest(Reach.subtree(Namespace.root())),
    )
    try:
        engine.erase(EraseRequest(Reach.subtree(erased)))
    except UnsupportedError:
        s.skip("the engine does not erase")
        return
    except Error as exc:
        raise CheckEngineFailure(s.check, exc, "erase") from exc
    tagged = replace(run.filter(), kinds=(ItemKind.LEARNING,), tags_any=(ERASE_TAG,))
    left = s.list_ids(tagged)
    s.expect(
        left == [kept_item.fingerprint()],
        f"after erasing subtree({erased}), the erase learnings listing gave {id_list(left)}; "
        f"expected only the sibling's `{kept_item.fingerprint()}`",
    )
    for label, item in (("node", node_item), ("child", child_item)):
        receipt = s.store(item)
        s.expect(
            not receipt.replayed,
            f"re-storing the erased {label} learning `{receipt.id}` was a replay; "
            "the erase left it behind",
        )
    count = len(s.list_ids(tagged))
    s.expect(count == 3, f"after re-storing the erased learnings {count} list; expected 3")
