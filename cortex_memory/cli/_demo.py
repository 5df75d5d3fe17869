"""``cortex-memory demo``: a short end-to-end session on the local engine.

It stores a document, a conversation and a learning, lists them, fetches with
a query, recalls an answer with citations and forgets one item, printing a
short labelled section for each step (README decision 13). Everything shown is
what the engine returned: real ids, real scores, real citations.

The database is a temporary file deleted afterwards, so every run starts empty
and shows ``created``; ``--path DB`` runs on that file instead and keeps it
(a second run then shows ``replayed``: same content, same id).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from cortex_memory import registry
from cortex_memory.cli._console import one_line
from cortex_memory.cli._context import Command, Context
from cortex_memory.cli._render import (
    citation_lines,
    fetch_lines,
    list_lines,
    plural,
    receipt_line,
)
from cortex_memory.cli._select import UsageError, check_path
from cortex_memory.config import EngineSettings
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.forget import ForgetTarget
from cortex_memory.contract.items import (
    Conversation,
    Document,
    Learning,
    LearningKind,
    Role,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind
from cortex_memory.contract.requests import FetchMode, FetchRequest, ListRequest, RecallRequest
from cortex_memory.registry import LOCAL_ENGINE_ID

__all__ = ["DEMO", "DEMO_TAG", "demo_items"]

#: Every demo item carries this tag, so a demo on a real database touches only its own items.
DEMO_TAG = "cortex-memory-demo"
_QUERY = "changelog before releases"
_QUESTION = "When do we ship releases?"
_WIDTH = 80


def demo_items() -> Tuple[StoreItem, StoreItem, StoreItem]:
    """The three items the demo stores: a document, a conversation and a learning."""
    tags = (DEMO_TAG,)
    document = Document(
        TextBody(
            "Before every release: run the full test suite, update the changelog, "
            "tag the commit and announce the release in the team channel."
        ),
        title="Release checklist",
        mime="text/markdown",
        meta=MemoryMeta(tags=tags, source=Source(SourceKind.FILE, "docs/release.md")),
    )
    conversation = Conversation(
        (
            Turn(Role.USER, "When do we usually ship releases?"),
            Turn(Role.ASSISTANT, "We ship on Tuesday mornings, after the weekly planning."),
        ),
        MemoryMeta(
            thread_id="demo-thread-1",
            tags=tags,
            source=Source(SourceKind.CONVERSATION, "demo-thread-1"),
        ),
    )
    learning = Learning(
        "The team ships releases on Tuesday mornings.",
        LearningKind.FACT,
        0.9,
        evidence="said in the release conversation",
        meta=MemoryMeta(tags=tags),
    )
    return document, conversation, learning


def _configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Store a document, a conversation and a learning on the local engine, then list, "
        "fetch, recall with citations and forget. Runs on a temporary database deleted "
        "afterwards, unless --path DB is given (then the file is kept)."
    )


class _Report:
    """Collects the demo's sections: text lines, or one JSON document."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.data: Dict[str, Any] = {}

    def section(self, title: str, lines: List[str]) -> None:
        if self.ctx.console.json_mode:
            return
        self.ctx.console.out()
        self.ctx.console.out(title)
        for line in lines:
            self.ctx.console.out(f"  {line}")


def _session(engine: MemoryEngine, report: _Report) -> None:
    items = demo_items()
    mine = MetaFilter(tags_any=(DEMO_TAG,))

    receipts = engine.store_many(items)
    report.data["stored"] = [
        {"type": item.item_kind.value, **receipt.to_json()}
        for item, receipt in zip(items, receipts)
    ]
    report.section(
        f"stored ({plural(len(items), 'item')})",
        [
            receipt_line(item.item_kind.value, r.id, r.replayed, item.render_text())
            for item, r in zip(items, receipts)
        ],
    )

    listed = engine.list(ListRequest(mine, 10))
    report.data["listed"] = listed.to_json()
    report.section(
        f"listed (tag {DEMO_TAG}: {plural(len(listed.items), 'item')})", list_lines(listed)
    )

    fetched = engine.fetch(FetchRequest(_QUERY, FetchMode.HYBRID, 3, mine))
    report.data["fetched"] = {"query": _QUERY, "mode": "hybrid", "page": fetched.to_json()}
    report.section(
        f'fetched "{_QUERY}" (hybrid ranking, best first)', fetch_lines(fetched)
    )

    answer = engine.recall(RecallRequest(_QUESTION, 3, mine))
    report.data["recalled"] = {"question": _QUESTION, "answer": answer.to_json()}
    # The answer is wrapped, not cut: it is what the engine said.
    said = textwrap.wrap(one_line(answer.answer), _WIDTH) or [""]
    lines = [f"answer: {said[0]}"] + [f"        {line}" for line in said[1:]]
    lines.append(f"citations ({len(answer.citations)}):")
    lines += citation_lines(answer.citations)
    report.section(f'recalled "{_QUESTION}"', lines)

    conversation_id = receipts[1].id
    forgotten = engine.forget(ForgetTarget.ids([conversation_id]))
    left = engine.list(ListRequest(mine, 10))
    report.data["forgotten"] = {
        "ids": [conversation_id],
        "report": forgotten.to_json(),
        "remaining": [hit.id for hit in left.items],
    }
    report.section(
        "forgotten",
        [
            f"forgot {plural(forgotten.forgotten, 'item')}: {conversation_id} (the conversation)",
            f"{plural(len(left.items), 'item')} left: "
            + (", ".join(hit.kind.value for hit in left.items) or "none"),
        ],
    )


def _run(ctx: Context) -> int:
    args = ctx.args
    if args.engine is not None and args.engine != LOCAL_ENGINE_ID:
        raise UsageError("the demo runs on the local engine only (no account, no server)")
    if args.endpoint is not None:
        raise UsageError("the demo runs on the local engine, which takes no --endpoint")
    keep: Optional[str] = args.path
    if keep is not None:
        check_path(keep, create=bool(args.create))
    scratch = None if keep is not None else tempfile.mkdtemp(prefix="cortex-memory-demo-")
    try:
        database = keep if keep is not None else str(Path(scratch or ".") / "memory.sqlite3")
        report = _Report(ctx)
        engine = registry.build_engine(LOCAL_ENGINE_ID, EngineSettings(path=database))
        with engine:
            descriptor = engine.descriptor()
            where = (
                f"database {database} (kept)" if keep is not None
                else "a temporary database (deleted afterwards)"
            )
            if not ctx.console.json_mode:
                ctx.console.out(f"cortex-memory demo: {descriptor.label} engine, {where}")
            report.data["engine"] = descriptor.to_json()
            report.data["database"] = keep
            _session(engine, report)
        if ctx.console.json_mode:
            ctx.console.json(report.data)
        else:
            ctx.console.out()
            ctx.console.out("next: `cortex-memory --help`, or `cortex-memory store \"...\"` "
                            "to keep notes in your own per-user database")
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


DEMO = Command(
    "demo",
    "a short end-to-end session on a temporary local database (no account, no server)",
    _configure,
    _run,
)
