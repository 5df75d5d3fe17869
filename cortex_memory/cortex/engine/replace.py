"""Replace on re-store: finding and forgetting the other versions of a source (engine.md §9.4).

Runs after a store with ``replace=True`` has written its items (and, with
``VISIBLE``, after they are listed), so a failure or a deadline in between
leaves the new version and the old ones, never neither. For each scope (one
namespace and kind) a surviving item was written to:

1. **Find** the held versions: a walk of the scope narrowed by the source id
   labels (``tm:s:``) when every source of the batch in that scope is named by
   a source id, else a walk of the whole scope (a file path has no label: it
   is sent as a digest only). An event is a version when its item's source
   identity equals the survivor's (a redacted source id matches through
   ``same_id``; a file path is matched by the digest of the whole path, so the
   local path never leaves the machine) and its id is not the survivor's.
2. **Forget** the events of those items by event id (100 per request).

Direct: 1 walk (+1 per further page of 200 events) and, when a version is
found, 1 forget per 100 events, per scope. Hosted: the same requests on its
routes.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, Tuple

from cortex_memory.contract.items import ItemId
from cortex_memory.contract.meta import holds_phone_number, redacted_id, same_id
from cortex_memory.contract.replacing import FILE_PATH, ReplaceBatch, VersionKey
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.scopes import KindScope
from cortex_memory.cortex.envelope.codec import decode_event
from cortex_memory.cortex.envelope.digests import digest, path_digest
from cortex_memory.cortex.envelope.envelope import Envelope
from cortex_memory.cortex.envelope.labels import SOURCE_ID_TAG
from cortex_memory.cortex.log.forget import forget_events
from cortex_memory.cortex.log.read import event_id
from cortex_memory.cortex.timing import Deadline

__all__ = ["replace_versions"]

#: One survivor of a batch: its version key, its index in the batch, its id.
_Survivor = Tuple[VersionKey, int, ItemId]


class _Matcher:
    """Which survivor (if any) an envelope of one scope is another version of."""

    def __init__(self, survivors: Sequence[_Survivor]) -> None:
        self._by_source: Dict[str, List[_Survivor]] = {}
        self._by_digest: Dict[str, List[_Survivor]] = {}
        self._by_path: Dict[str, List[_Survivor]] = {}
        for survivor in survivors:
            identity = survivor[0].identity
            if identity.field == FILE_PATH:
                self._by_digest.setdefault(path_digest(identity.value), []).append(survivor)
                self._by_path.setdefault(identity.value, []).append(survivor)
                continue
            # A held id may be the redacted form of the one asked (as the wire sends it).
            for value in dict.fromkeys((identity.value, _sent(identity.value))):
                self._by_source.setdefault(value, []).append(survivor)

    @property
    def needs_whole_scope(self) -> bool:
        """True when a file path names a source (there is no label to narrow by)."""
        return bool(self._by_digest)

    def labels(self) -> List[str]:
        """The ``tm:s:`` labels of every source id asked (as sent, and as given)."""
        return [SOURCE_ID_TAG + digest(value) for value in self._by_source]

    def survivors_of(self, env: Envelope) -> List[_Survivor]:
        """The survivors ``env`` is another version of (never the survivor itself)."""
        held = env.meta.source.id
        if held is not None:
            candidates = self._by_source.get(held, [])
            wanted = [s for s in candidates if same_id(held, s[0].identity.value)]
        elif env.fp:
            wanted = self._by_digest.get(env.fp[-1], [])
        elif env.meta.file_path is not None:
            wanted = self._by_path.get(env.meta.file_path, [])
        else:
            wanted = []
        return [s for s in wanted if s[2] != env.id]


def _sent(value: str) -> str:
    return redacted_id(value) if holds_phone_number(value) else value


def _find(
    ctx: EngineContext, scope: KindScope, matcher: _Matcher, deadline: Deadline
) -> Dict[int, Dict[ItemId, Dict[str, None]]]:
    """Per survivor index: each other version's id and its event ids, in listing order."""
    if matcher.needs_whole_scope:
        events = ctx.log.walk(scope.path, None, deadline)
    else:
        events = ctx.log.walk_labels(scope.path, matcher.labels(), deadline)
    found: Dict[int, Dict[ItemId, Dict[str, None]]] = {}
    for event in events:
        env = decode_event(event)
        eid = event_id(event)
        if env is None or eid is None or env.kind is not scope.kind:
            continue
        for _, index, _ in matcher.survivors_of(env):
            found.setdefault(index, {}).setdefault(env.id, {}).setdefault(eid, None)
    return found


def replace_versions(
    ctx: EngineContext,
    batch: ReplaceBatch,
    scopes: Sequence[KindScope],
    deadline: Deadline,
) -> Mapping[int, List[ItemId]]:
    """Forget the other versions of every survivor of ``batch``; what went, per survivor.

    ``scopes[i]`` is the scope of item ``i``. Scopes are handled in order; a
    failure leaves the versions of the scopes not reached yet in place.
    """
    by_scope: Dict[KindScope, List[_Survivor]] = {}
    for key, index in batch.survivors().items():
        by_scope.setdefault(scopes[index], []).append((key, index, batch.ids[index]))
    gone: Dict[int, List[ItemId]] = {}
    for scope in sorted(by_scope):
        found = _find(ctx, scope, _Matcher(by_scope[scope]), deadline)
        events: Dict[str, None] = {}
        for index, versions in found.items():
            gone[index] = list(versions)
            for eids in versions.values():
                events.update(eids)
        forget_events(ctx.log, scope.path, list(events), deadline)
    return gone

