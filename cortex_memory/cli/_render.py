"""Text renderings of contract values for the terminal (``--json`` skips all of this).

Lines stay short: ids are printed whole (they are what ``get`` and ``forget``
take), text is cut to one line with ``…`` in listings and shown in full by
``get``. Control characters in stored text are made visible, never sent raw.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

from cortex_memory.cli._console import clean, shorten
from cortex_memory.contract.descriptor import EngineDescriptor, EngineHealth
from cortex_memory.contract.jsonfmt import dumps, format_f32
from cortex_memory.contract.responses import Citation, FetchPage, Hit, ListPage, RecallAnswer

__all__ = [
    "SNIPPET",
    "citation_lines",
    "descriptor_lines",
    "fetch_lines",
    "health_line",
    "hit_detail",
    "list_lines",
    "plural",
    "recall_lines",
    "receipt_line",
]

#: Characters of text shown per hit in listings.
SNIPPET = 60
_KIND_WIDTH = 12


def plural(count: int, word: str) -> str:
    """``"1 item"``, ``"2 items"``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _score(value: float) -> str:
    return f"{value:.3f}"


def _where(hit_namespace: str) -> str:
    return "" if hit_namespace == "root" else f"[{hit_namespace}] "


def _hit_line(hit: Hit, *, score: bool) -> str:
    head = f"{_score(hit.score)}  " if score else ""
    text = _where(str(hit.meta.namespace)) + hit.text
    return f"{head}{hit.id}  {hit.kind.value:<{_KIND_WIDTH}}  {shorten(text, SNIPPET)}"


def receipt_line(kind: str, item_id: str, replayed: bool, text: str) -> str:
    """One stored item: ``created`` or ``replayed`` (already held), kind, id, text."""
    status = "replayed" if replayed else "created"
    return f"{status:<8}  {kind:<{_KIND_WIDTH}}  {item_id}  {shorten(text, SNIPPET - 10)}"


def _cursor_line(cursor: Optional[str], command: str) -> List[str]:
    if cursor is None:
        return []
    return [f"more: {command} --cursor {cursor}"]


def list_lines(page: ListPage, command: str = "cortex-memory list") -> List[str]:
    """A listing: one line per item, then how to get the next page."""
    if not page.items:
        return ["no items"]
    lines = [_hit_line(hit, score=False) for hit in page.items]
    return lines + _cursor_line(page.next_cursor, command)


def fetch_lines(page: FetchPage, command: str = "cortex-memory fetch ...") -> List[str]:
    """Ranked hits, best first, each with its score; then beliefs, if any."""
    lines = [_hit_line(hit, score=True) for hit in page.hits] or ["no hits"]
    lines += _cursor_line(page.next_cursor, command)
    if page.beliefs:
        lines.append("beliefs:")
        lines += ["  " + _hit_line(hit, score=True) for hit in page.beliefs]
    return lines


def citation_lines(citations: Sequence[Citation], indent: str = "  ") -> List[str]:
    """Numbered citations: id, kind and score, then the cited snippet."""
    lines: List[str] = []
    for number, cite in enumerate(citations, 1):
        score = "" if cite.score is None else f"  score {_score(cite.score)}"
        lines.append(f"{indent}[{number}] {cite.id}  {cite.kind.value}{score}")
        lines.append(f"{indent}    {shorten(cite.snippet, SNIPPET + 16)}")
    return lines


def recall_lines(answer: RecallAnswer) -> List[str]:
    """The answer, then its citations."""
    lines = clean(answer.answer).splitlines() or [""]
    if answer.model is not None:
        lines.append(f"(answered by {clean(answer.model)})")
    if answer.citations:
        lines.append("")
        lines.append(f"citations ({len(answer.citations)}):")
        lines += citation_lines(answer.citations)
    else:
        lines.append("no citations")
    return lines


def _meta_value(value: object) -> str:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(clean(v) for v in value)
    return clean(dumps(value))


def hit_detail(hit: Hit) -> List[str]:
    """One item in full: id, kind, confidence, every metadata field, then the text."""
    lines = [f"id:          {hit.id}", f"type:        {hit.kind.value}"]
    if hit.confidence is not None:
        lines.append(f"confidence:  {format_f32(hit.confidence)}")
    lines.append(f"namespace:   {hit.meta.namespace}")
    for key, value in hit.meta.to_json().items():
        if key == "namespace":
            continue
        lines.append(f"{key + ':':<12} {_meta_value(value)}")
    lines.append("text:")
    lines += ["  " + line for line in clean(hit.text).splitlines()] or ["  "]
    return lines


def descriptor_lines(descriptors: Iterable[EngineDescriptor]) -> List[str]:
    """The engines this build offers, one block each."""
    lines: List[str] = []
    for d in descriptors:
        needs = [n for n, on in (("an endpoint", d.needs_endpoint), ("a key", d.needs_key)) if on]
        lines.append(f"{d.id}  {d.label}{'  (hosted)' if d.hosted else ''}")
        lines.append(f"  {d.description}")
        lines.append(f"  needs: {' and '.join(needs) if needs else 'nothing (no account)'}")
        if d.default_endpoint is not None:
            lines.append(f"  default endpoint: {d.default_endpoint}")
        modes = ", ".join(m.value for m in d.fetch_modes) or "none"
        lines.append(f"  fetch modes: {modes}; consolidation: {d.consolidation.value}")
    return lines


def health_line(engine_id: str, health: EngineHealth) -> str:
    """``local: ok`` or ``cortexdb: degraded: <reason>``."""
    if health.reason is None:
        return f"{engine_id}: {health.state.value}"
    return f"{engine_id}: {health.state.value}: {clean(health.reason)}"
