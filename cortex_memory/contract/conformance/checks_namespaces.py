"""The ``namespaces`` check: reach, sandboxes and scoped forgets (contract.md §9.3, check 11).

Five learnings live at five nodes: the root, two sibling agents ``a`` and
``b``, a sub-agent ``scout`` under ``a`` and a service sandbox ``job`` under
``a``. Every read must see exactly the nodes its reach admits, and a read
without a reach never enters the sandbox. Failures name the nodes, not ids.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, Iterable, List, Optional, Set, Tuple

from cortex_memory.contract.conformance.harness import Session
from cortex_memory.contract.conformance.report import name_set
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.forget import ForgetFilter, ForgetIds, ForgetReport
from cortex_memory.contract.items import ItemId, Learning, LearningKind
from cortex_memory.contract.namespace import Namespace, Reach, Segment, SegmentKind
from cortex_memory.contract.requests import ExploreRequest, FetchRequest, GetRequest

__all__ = ["NAMESPACES_TAG", "check_namespaces"]

#: Tag of the check's five learnings.
NAMESPACES_TAG = "namespaces"
_NODES = ("root", "a", "b", "scout", "job")
_LABELS = {"root": "root", "a": "same", "b": "same", "scout": "scout", "job": "job"}


class _Tree:
    """The check's nodes, items and id ↔ node-name lookups."""

    def __init__(self, s: Session) -> None:
        m = s.run.marker
        a = Namespace.parse(f"agent:{m}-a")
        self.nodes: Dict[str, Namespace] = {
            "root": Namespace.root(),
            "a": a,
            "b": Namespace.parse(f"agent:{m}-b"),
            "scout": a.child(Segment(SegmentKind.AGENT, "scout")),
            "job": a.child(Segment(SegmentKind.SERVICE, "job")),
        }
        meta = s.run.meta().with_tags([NAMESPACES_TAG])
        self.items = [
            Learning(
                f"{m} {_LABELS[name]} shared fact",
                LearningKind.FACT,
                0.9,
                meta=meta.with_namespace(self.nodes[name]),
            )
            for name in _NODES
        ]
        self.ids: Dict[str, ItemId] = {
            name: item.fingerprint() for name, item in zip(_NODES, self.items)
        }
        self._names = {item_id: name for name, item_id in self.ids.items()}
        self.tagged = replace(s.run.filter(), tags_any=(NAMESPACES_TAG,))

    def names(self, ids: Iterable[ItemId]) -> List[str]:
        """Node names for ids, in order; an id of no node shows as itself."""
        return [self._names.get(i, f"`{i}`") for i in ids]

    def reach(self, label: str) -> Reach:
        """Parse ``of(a)``, ``exact(job)``, ``subtree(root)``..."""
        kind, _, node = label.rstrip(")").partition("(")
        at = self.nodes[node]
        return {"of": Reach.of, "exact": Reach.exact, "subtree": Reach.subtree}[kind](at)


#: Each reach and the nodes a listing with it must give.
REACH_CASES: Tuple[Tuple[str, Set[str]], ...] = (
    ("of(a)", {"root", "a"}),
    ("of(b)", {"root", "b"}),
    ("of(scout)", {"root", "a", "scout"}),
    ("of(root)", {"root"}),
    ("exact(a)", {"a"}),
    ("subtree(a)", {"a", "scout"}),
    ("subtree(root)", {"root", "a", "b", "scout"}),
    ("exact(job)", {"job"}),
    ("subtree(job)", {"job"}),
    ("of(job)", {"root", "a", "job"}),
)


def check_namespaces(s: Session) -> None:
    """11. Reach confines list, export, get, fetch, explore and forget; sandboxes stay out."""
    tree = _Tree(s)
    receipts = s.store_many(tree.items)
    got_ids = [receipt.id for receipt in receipts]
    s.expect(
        got_ids == [tree.ids[name] for name in _NODES],
        f"store_many of the five namespace learnings answered ids for {tree.names(got_ids)}",
    )
    s.expect(tree.ids["a"] != tree.ids["b"], "the same text at agents a and b got one id")
    for label, want in REACH_CASES:
        _expect_listing(s, tree, label, tree.reach(label), want)
    _expect_listing(s, tree, "none", None, {"root", "a", "b", "scout"})
    _check_export(s, tree)
    _check_get_fetch_explore(s, tree)
    _check_forgets(s, tree)


def _listed(s: Session, tree: _Tree, reach: Optional[Reach]) -> List[str]:
    return tree.names(s.list_ids(tree.tagged.with_reach(reach)))


def _expect_listing(
    s: Session, tree: _Tree, label: str, reach: Optional[Reach], want: Set[str]
) -> None:
    got = _listed(s, tree, reach)
    s.expect(
        sorted(got) == sorted(want),
        f"listing with reach {label} gave {name_set(got)}; expected {name_set(want)}",
    )


def _check_export(s: Session, tree: _Tree) -> None:
    cases: Tuple[Tuple[str, Optional[Reach], Set[str]], ...] = (
        ("none", None, {"root", "a", "b", "scout"}),
        ("subtree(a)", tree.reach("subtree(a)"), {"a", "scout"}),
        ("exact(job)", tree.reach("exact(job)"), {"job"}),
    )
    for label, reach, want in cases:
        exported = s.export_all(tree.tagged.with_reach(reach))
        if exported is None:
            return  # the engine does not export: nothing to confine
        got = tree.names(entry.id for entry in exported)
        s.expect(
            sorted(got) == sorted(want),
            f"export with reach {label} gave {name_set(got)}; expected {name_set(want)}",
        )


def _check_get_fetch_explore(s: Session, tree: _Tree) -> None:
    engine, m = s.engine, s.run.marker
    asked = tuple(tree.ids[name] for name in _NODES)
    hits = s.call("get", engine.get, GetRequest(asked, tree.reach("of(b)")))
    got = tree.names(hit.id for hit in hits)
    s.expect(
        got == ["root", "b"],
        f"get of all five ids with reach of(b) gave {got}; expected ['root', 'b'] in that order",
    )
    modes = s.call("descriptor", engine.descriptor).fetch_modes
    if modes:
        mode = modes[0]
        page = s.call(
            "fetch",
            engine.fetch,
            FetchRequest(f"{m} shared fact", mode, 10, tree.tagged.with_reach(tree.reach("of(a)"))),
        )
        got = tree.names(hit.id for hit in page.hits)
        s.expect(
            set(got) <= {"root", "a"},
            f"a {mode} fetch with reach of(a) found {name_set(got)}; only root and a are in reach",
        )
        page = s.call(
            "fetch", engine.fetch, FetchRequest(f"{m} job shared fact", mode, 10, tree.tagged)
        )
        got = tree.names(hit.id for hit in page.hits)
        s.expect(
            "job" not in got,
            f"a {mode} fetch without a reach found the item in the service sandbox job",
        )
    page_ns = s.call("explore", engine.explore, ExploreRequest(Facet.NAMESPACE, 10, tree.tagged))
    got_buckets = {(bucket.value, bucket.count) for bucket in page_ns.buckets}
    want_buckets = {(str(tree.nodes[name]), 1) for name in ("root", "a", "b", "scout")}
    s.expect(
        got_buckets == want_buckets,
        "explore by namespace gave "
        + name_set(f"{value}: {count}" for value, count in got_buckets)
        + "; expected one item at each of root, a, b and scout (the sandbox job left out)",
    )


def _expect_forgotten(s: Session, what: str, report: ForgetReport, expected: int) -> None:
    s.expect(
        report.forgotten == expected,
        f"{what} forgot {report.forgotten} items; expected {expected}",
    )


def _check_forgets(s: Session, tree: _Tree) -> None:
    engine, ids = s.engine, tree.ids
    report = s.call(
        "forget_within",
        engine.forget_within,
        [ids["a"], ids["scout"], ids["job"]],
        tree.reach("of(b)"),
    )
    _expect_forgotten(s, "forget_within([a, scout, job], of(b))", report, 0)
    flt: MetaFilter = tree.tagged.with_reach(tree.reach("exact(b)"))
    report = s.call("forget", engine.forget, ForgetFilter(flt))
    _expect_forgotten(s, "forget by filter with reach exact(b)", report, 1)
    _expect_listing(s, tree, "subtree(root)", tree.reach("subtree(root)"), {"root", "a", "scout"})
    report = s.call("forget", engine.forget, ForgetIds((ids["job"],)))
    _expect_forgotten(s, "forget of the sandboxed job id", report, 1)
    _expect_listing(s, tree, "exact(job)", tree.reach("exact(job)"), set())
    report = s.call(
        "forget_within",
        engine.forget_within,
        [ids["scout"], ids["root"]],
        tree.reach("subtree(a)"),
    )
    _expect_forgotten(s, "forget_within([scout, root], subtree(a))", report, 1)
    _expect_listing(s, tree, "subtree(root)", tree.reach("subtree(root)"), {"root", "a"})
