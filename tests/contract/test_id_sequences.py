"""Every parameter that takes a sequence of ids (or tags, kinds, jobs) refuses a bare string.

A ``str`` is iterable, so ``ForgetTarget.ids(receipt.id)`` used to become forty
one-character ids and forget nothing, silently. Each public entry point now
raises ``TypeError`` saying to wrap the value in a list, and nothing is sent or
removed.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from cortex_memory import (
    CortexEngine,
    EngineCredential,
    ForgetTarget,
    GetRequest,
    ItemKind,
    ListRequest,
    LocalEngine,
    MemoryEngine,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    StoreItem,
)
from cortex_memory.contract import (
    ConsolidateReceipt,
    ConsolidateRequest,
    EraseRequest,
    ForgetIds,
    forget_within_by_get,
    forget_within_ids,
)
from cortex_memory.testing import DirectDouble
from cortex_memory.tools import RootSessions

ITEM_ID = "3f2a9c1e" + "0" * 32

_WRAP = r"must be a list or tuple of \w+, not a single (str|bytes); wrap one value in a list"

# (label, call with a bare value): each must raise TypeError with the hint.
BARE_CALLS: list[tuple[str, Callable[[Any], object]]] = [
    ("ForgetTarget.ids", lambda v: ForgetTarget.ids(v)),
    ("ForgetIds", lambda v: ForgetIds(v)),
    ("GetRequest", lambda v: GetRequest(v)),
    ("forget_within_ids", lambda v: forget_within_ids(v)),
    ("MetaFilter.tags_any", lambda v: MetaFilter(tags_any=v)),
    ("MetaFilter.kinds", lambda v: MetaFilter(kinds=v)),
    ("MetaFilter.for_kinds", lambda v: MetaFilter.for_kinds(v)),
    ("MemoryMeta.tags", lambda v: MemoryMeta(tags=v)),
    ("MemoryMeta.with_tags", lambda v: MemoryMeta().with_tags(v)),
    ("ConsolidateRequest.with_kinds",
     lambda v: ConsolidateRequest(Reach.subtree(Namespace.root())).with_kinds(v)),
    ("EraseRequest.with_kinds",
     lambda v: EraseRequest(Reach.exact(Namespace.root())).with_kinds(v)),
    ("ConsolidateReceipt.started", lambda v: ConsolidateReceipt.started(v, 1)),
    ("StoreItem.conversation", lambda v: StoreItem.conversation(v)),
]


@pytest.mark.parametrize(("label", "call"), BARE_CALLS, ids=[c[0] for c in BARE_CALLS])
@pytest.mark.parametrize("bare", [ITEM_ID, ITEM_ID.encode(), "document"])
def test_a_bare_string_is_refused_with_a_hint(
    label: str, call: Callable[[Any], object], bare: Any
) -> None:
    with pytest.raises(TypeError, match=_WRAP):
        call(bare)


def test_the_message_names_the_parameter() -> None:
    with pytest.raises(TypeError, match=r"^ForgetTarget\.ids must be a list or tuple of str"):
        ForgetTarget.ids(ITEM_ID)
    with pytest.raises(TypeError, match=r"^GetRequest\.ids must be"):
        GetRequest(ITEM_ID)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^forget_within\.ids must be"):
        forget_within_ids(ITEM_ID)
    with pytest.raises(TypeError, match=r"^MemoryMeta\.tags must be a list or tuple of str"):
        MemoryMeta().with_tags("urgent")


def test_lists_tuples_and_iterators_still_work() -> None:
    assert ForgetTarget.ids([ITEM_ID]).ids == (ITEM_ID,)
    assert ForgetTarget.ids(iter([ITEM_ID, ITEM_ID])).ids == (ITEM_ID, ITEM_ID)
    assert GetRequest((ITEM_ID,)).ids == (ITEM_ID,)
    assert forget_within_ids(i for i in [ITEM_ID, ITEM_ID]) == [ITEM_ID]
    assert MemoryMeta().with_tags(["a", "b"]).tags == ("a", "b")
    assert MetaFilter.for_kinds(["document"]).kinds == (ItemKind.DOCUMENT,)
    assert ConsolidateReceipt.started(["j1"], 1).jobs == ("j1",)


def test_root_sessions_refuses_a_list_of_ids() -> None:
    with pytest.raises(TypeError, match=r"RootSessions\('a', 'b'\) or RootSessions\(\*ids\)"):
        RootSessions(["a", "b"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a tuple"):
        RootSessions(("a", "b"))  # type: ignore[arg-type]
    RootSessions("a", "b").authorize_memory_mutation("b")


# ----------------------------------------------------- every engine's forget_within


@pytest.fixture(params=["local", "direct", "default"])
def engine(request: pytest.FixtureRequest) -> Iterator[MemoryEngine]:
    """Each engine kind: local, CortexDB Direct on the double, and the contract default."""
    if request.param == "local":
        with LocalEngine(":memory:") as local:
            yield local
        return
    with DirectDouble() as double:
        cortex = CortexEngine.direct(double.url, EngineCredential.static("ctx_test"))
        with cortex:
            if request.param == "direct":
                yield cortex
            else:
                yield _DefaultForgetWithin(cortex)


class _DefaultForgetWithin(MemoryEngine):
    """An engine that keeps the contract's default ``forget_within``."""

    def __init__(self, inner: CortexEngine) -> None:
        self._inner = inner

    def descriptor(self) -> Any:
        return self._inner.descriptor()

    def health(self) -> Any:
        return self._inner.health()

    def recall(self, request: Any) -> Any:
        return self._inner.recall(request)

    def fetch(self, request: Any) -> Any:
        return self._inner.fetch(request)

    def store(self, item: Any, **kwargs: Any) -> Any:
        return self._inner.store(item, **kwargs)

    def forget(self, target: Any) -> Any:
        return self._inner.forget(target)

    def list(self, request: Any) -> Any:
        return self._inner.list(request)

    def get(self, request: Any) -> Any:
        return self._inner.get(request)


def test_forget_within_refuses_a_bare_id_and_forgets_nothing(engine: MemoryEngine) -> None:
    receipt = engine.store(StoreItem.document("keep me"))
    root = Reach.subtree(Namespace.root())
    with pytest.raises(TypeError, match=_WRAP):
        engine.forget_within(receipt.id, root)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=_WRAP):
        engine.forget(ForgetTarget.ids(receipt.id))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=_WRAP):
        forget_within_by_get(engine, receipt.id, root)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=_WRAP):
        engine.get(GetRequest(receipt.id))  # type: ignore[arg-type]
    page = engine.list(ListRequest(MetaFilter(), 10))
    assert [hit.id for hit in page.items] == [receipt.id]
    assert engine.forget_within([receipt.id], root).forgotten == 1
