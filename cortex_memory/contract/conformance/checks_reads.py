"""Checks on reading: explore, get, fetch_filters, unsupported_modes and recall
(contract.md §9.3, checks 5, 6, 9, 10 and 16)."""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List, Mapping

from cortex_memory.contract.conformance.fixtures import Probe, probes
from cortex_memory.contract.conformance.harness import Session
from cortex_memory.contract.conformance.report import id_list, name_set, text
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.items import ItemId, ItemKind
from cortex_memory.contract.limits import MAX_GET_IDS
from cortex_memory.contract.requests import (
    ExploreRequest,
    FetchMode,
    FetchRequest,
    GetRequest,
    RecallRequest,
)
from cortex_memory.contract.text import is_blank
from cortex_memory.errors import InvalidRequestError, UnsupportedError

__all__ = [
    "FETCH_LIMIT",
    "check_explore",
    "check_fetch_filters",
    "check_get",
    "check_recall",
    "check_unsupported_modes",
]

#: Page size of the probe fetches: more than there are probes.
FETCH_LIMIT = 50
_RECALL_LIMIT = 5


def _counts(counts: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{value}: {n}" for value, n in sorted(counts.items())) + "}"


def check_explore(s: Session) -> None:
    """5. Kind and workspace facets agree with the listing; limit 0 is refused."""
    run, engine = s.run, s.engine
    listing = s.list_all(run.filter())
    per_kind = Counter(hit.kind.value for hit in listing)
    page = s.call("explore", engine.explore, ExploreRequest(Facet.KIND, 10, run.filter()))
    s.expect(page.facet is Facet.KIND, f"explore by kind answered facet `{page.facet}`")
    s.expect(not page.truncated, "explore by kind over a handful of items was truncated")
    s.expect(
        page.total == len(listing),
        f"explore by kind counted total {page.total}, but {len(listing)} items list",
    )
    buckets = {bucket.value: bucket.count for bucket in page.buckets}
    s.expect(
        len(buckets) == len(page.buckets),
        f"explore by kind returned a value twice: {[b.value for b in page.buckets]}",
    )
    s.expect(
        buckets == dict(per_kind),
        f"explore by kind counted {_counts(buckets)}, but listing counts {_counts(per_kind)}",
    )
    counts = [bucket.count for bucket in page.buckets]
    s.expect(
        all(x >= y for x, y in zip(counts, counts[1:])),
        f"explore buckets are not ordered by count, largest first: {counts}",
    )
    for bucket in page.buckets:
        try:
            narrowed = Facet.KIND.narrow(run.filter(), bucket.value)
        except InvalidRequestError as exc:
            s.fail(f"explore returned a kind bucket {text(bucket.value)} that is no kind", exc)
        listed = len(s.list_all(narrowed))
        s.expect(
            listed == bucket.count,
            f"the kind bucket `{bucket.value}` counts {bucket.count}, but narrowing by it "
            f"lists {listed}",
        )
    ws = s.call("explore", engine.explore, ExploreRequest(Facet.WORKSPACE, 10, run.filter()))
    shown = _counts({b.value: b.count for b in ws.buckets})
    s.expect(
        len(ws.buckets) == 1
        and ws.buckets[0].value == run.workspace
        and ws.buckets[0].count == len(listing),
        f"explore by workspace gave {shown}; expected one bucket `{run.workspace}` "
        f"counting {len(listing)}",
    )
    s.expect(ws.missing == 0, f"explore by workspace counted {ws.missing} items as missing it")
    s.refused(
        "explore with limit 0",
        (InvalidRequestError,),
        engine.explore,
        ExploreRequest(Facet.KIND, 0, run.filter()),
    )


def check_get(s: Session) -> None:
    """6. Get answers the known ids in the order asked, as they list; no ids is refused."""
    run = s.run
    listing = list(reversed(s.list_all(run.filter())))[: MAX_GET_IDS - 1]
    asked: List[ItemId] = [hit.id for hit in listing]
    unknown = f"{run.marker}-missing"
    asked.insert(1 if asked else 0, unknown)
    hits = s.call("get", s.engine.get, GetRequest(tuple(asked)))
    got = [hit.id for hit in hits]
    expected = [hit.id for hit in listing]
    if got != expected:
        if unknown in got:
            s.fail(f"get returned the unknown id `{unknown}`")
        if sorted(got) == sorted(expected):
            s.fail(f"get returned the ids out of the asked order: asked {id_list(expected)}, "
                   f"got {id_list(got)}")
        s.fail(f"get returned {id_list(got)}; expected {id_list(expected)}")
    for hit, want in zip(hits, listing):
        for name in ("kind", "meta", "text"):
            s.expect(
                getattr(hit, name) == getattr(want, name),
                f"get of `{hit.id}` answered a different {name} than its listing",
            )
    s.refused("get with no ids", (InvalidRequestError,), s.engine.get, GetRequest(()))


def _probe_names(ids: Iterable[ItemId], names: Mapping[ItemId, str]) -> str:
    return name_set(names.get(i, f"`{i}`") for i in ids)


def check_fetch_filters(s: Session) -> None:
    """9. Each probe's filter selects exactly that probe, in every declared mode and in
    a listing; the probe workspace finds every probe in every mode."""
    run, engine = s.run, s.engine
    all_probes = probes(run)
    names: Dict[ItemId, str] = {}
    for probe in all_probes:
        receipt = s.store(probe.item)
        expected = probe.item.fingerprint()
        s.expect(
            receipt.id == expected,
            f"storing the {probe.field} probe answered id `{receipt.id}`, not its "
            f"fingerprint `{expected}`",
        )
        names[expected] = probe.field
    modes = s.call("descriptor", engine.descriptor).fetch_modes
    for probe in all_probes:
        _check_probe(s, probe, modes, names)
    for mode in modes:
        page = s.call(
            "fetch",
            engine.fetch,
            FetchRequest(run.marker, mode, FETCH_LIMIT, run.probe_filter()),
        )
        found = {hit.id for hit in page.hits}
        missing = [names[i] for i in names if i not in found]
        s.expect(
            not missing,
            f"a {mode} fetch of the marker over the probe workspace missed the probes "
            f"{name_set(missing)}",
        )


def _check_probe(
    s: Session, probe: Probe, modes: Iterable[FetchMode], names: Mapping[ItemId, str]
) -> None:
    want = {probe.item.fingerprint()}
    for mode in modes:
        page = s.call(
            "fetch",
            s.engine.fetch,
            FetchRequest(s.run.marker, mode, FETCH_LIMIT, probe.filter),
        )
        got = {hit.id for hit in page.hits}
        s.expect(
            got == want,
            f"a {mode} fetch filtered by {probe.field} found {_probe_names(got, names)}; "
            f"expected only the {probe.field} probe",
        )
    listed = set(s.list_ids(probe.filter))
    s.expect(
        listed == want,
        f"listing filtered by {probe.field} gave {_probe_names(listed, names)}; "
        f"expected only the {probe.field} probe",
    )


def check_unsupported_modes(s: Session) -> None:
    """10. Every fetch mode the descriptor does not declare is refused as unsupported."""
    declared = s.call("descriptor", s.engine.descriptor).fetch_modes
    for mode in FetchMode:
        if mode not in declared:
            s.refused(
                f"a {mode} fetch (not declared)",
                (UnsupportedError,),
                s.engine.fetch,
                FetchRequest(s.run.marker, mode, 5),
            )


def check_recall(s: Session) -> None:
    """16. Recall of the marker answers, citing 1..=5 items that list with their kind."""
    run = s.run
    answer = s.call(
        "recall", s.engine.recall, RecallRequest(run.marker, _RECALL_LIMIT, run.filter())
    )
    s.expect(not is_blank(answer.answer), "recall of the run marker answered a blank answer")
    cited = len(answer.citations)
    s.expect(
        1 <= cited <= _RECALL_LIMIT,
        f"recall with limit {_RECALL_LIMIT} cited {cited} items; expected 1 to {_RECALL_LIMIT}",
    )
    kinds: Dict[ItemId, ItemKind] = {hit.id: hit.kind for hit in s.list_all(run.filter())}
    for citation in answer.citations:
        kind = kinds.get(citation.id)
        if kind is None:
            s.fail(f"recall cited `{citation.id}`, which does not list under the run filter")
        s.expect(
            kind is citation.kind,
            f"recall cited `{citation.id}` as a {citation.kind}, but it lists as a {kind}",
        )
