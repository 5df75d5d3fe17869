"""The ``store`` command: a document, a learning or a conversation from the command line.

The text comes from the arguments, a file (``--file PATH``) or standard input,
read whole but bounded; one trailing newline of piped text is dropped so that
``echo note | cortex-memory store`` stores what ``cortex-memory store note``
stores.
"""

from __future__ import annotations

import argparse
import json
from typing import Optional

from cortex_memory.cli._context import Context
from cortex_memory.cli._options import add_meta_options, meta_from
from cortex_memory.cli._render import receipt_line
from cortex_memory.cli._select import UsageError
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
from cortex_memory.contract.requests import WaitFor
from cortex_memory.errors import InvalidRequestError

__all__ = ["configure_store", "read_input", "run_store"]

# Input read by `store` is held in memory whole; this bounds a wrong path or
# an endless pipe.
_MAX_INPUT_BYTES = 32 * 1024 * 1024
_DEFAULT_CONFIDENCE = 0.8


def read_input(ctx: Context, path: Optional[str], what: str) -> str:
    """Text from ``path`` (``-`` or ``None``: stdin, when it is not a terminal).

    Text read from stdin loses one trailing newline (``\n`` or ``\r\n``), the
    one ``echo`` and most editors add, so ``echo TEXT | cortex-memory store``
    stores (and fingerprints) exactly what ``cortex-memory store TEXT`` does.
    A file is stored as it is.
    """
    if path is None or path == "-":
        stream = ctx.console.stdin
        isatty = getattr(stream, "isatty", None)
        if path is None and isatty is not None and isatty():
            raise UsageError(f"nothing to store: give {what}, --file PATH, or pipe text on stdin")
        try:
            text = stream.read(_MAX_INPUT_BYTES + 1)
        except UnicodeDecodeError:
            raise UsageError(
                "stdin could not be decoded as text; set PYTHONIOENCODING=utf-8 or use --file"
            ) from None
        if len(text) > _MAX_INPUT_BYTES:
            raise UsageError(f"stdin holds more than {_MAX_INPUT_BYTES} characters")
        return _drop_one_newline(text)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(_MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > _MAX_INPUT_BYTES:
        raise UsageError(f"{path} is larger than {_MAX_INPUT_BYTES} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text") from None


def _drop_one_newline(text: str) -> str:
    if text.endswith("\r\n"):
        return text[:-2]
    if text.endswith("\n"):
        return text[:-1]
    return text


# -------------------------------------------------------------------- store


def configure_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="*", help="the text to store (else --file, or stdin)")
    p.add_argument("--file", metavar="PATH", help="read the text from PATH (`-`: stdin)")
    p.add_argument(
        "--item", metavar="PATH",
        help="store a whole item given as JSON in the contract's shape (`-`: stdin)",
    )
    p.add_argument(
        "--type", dest="item_type", choices=("document", "conversation", "learning"),
        help="what to store (default: document; --kind implies learning, --turn conversation)",
    )
    p.add_argument("--title", help="document title")
    p.add_argument("--mime", help="document media type, e.g. text/markdown")
    p.add_argument(
        "--kind", choices=[k.value for k in LearningKind],
        help="learning kind (default: fact)",
    )
    p.add_argument(
        "--confidence", type=float,
        help=f"learning confidence, 0 to 1 (default: {_DEFAULT_CONFIDENCE})",
    )
    p.add_argument("--evidence", help="why the learning holds")
    p.add_argument(
        "--turn", dest="turns", metavar="ROLE:TEXT", action="append", default=[],
        help="a conversation turn, e.g. 'user:hello' (repeatable; roles: user, assistant, "
        "system, tool)",
    )
    p.add_argument(
        "--wait", choices=("visible", "accepted"), default="visible",
        help="return once the item is readable (visible, default) or durably accepted",
    )
    add_meta_options(p)


def _turn(text: str) -> Turn:
    role, sep, said = text.partition(":")
    if not sep:
        raise UsageError(f"--turn takes ROLE:TEXT, got {text[:40]!r}")
    try:
        return Turn(Role.parse(role.strip(), "role"), said.strip())
    except InvalidRequestError as exc:
        raise UsageError(f"--turn: {exc.message}") from None


def _item_type(args: argparse.Namespace) -> str:
    if args.item_type is not None:
        return str(args.item_type)
    if args.turns:
        return "conversation"
    if args.kind is not None or args.confidence is not None or args.evidence is not None:
        return "learning"
    return "document"


def _item_from_args(ctx: Context) -> StoreItem:
    args = ctx.args
    if args.item is not None:
        if args.text or args.file or args.turns or args.item_type:
            raise UsageError(
                "--item takes the whole item as JSON; drop TEXT, --file, --turn and --type"
            )
        raw = read_input(ctx, args.item, "--item PATH")
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
            raise InvalidRequestError(f"the item is not valid JSON: {exc}") from None
        return StoreItem.from_json(value)
    kind = _item_type(args)
    meta = meta_from(args)
    if kind == "conversation":
        if args.text or args.file:
            raise UsageError("a conversation is given with --turn ROLE:TEXT, not TEXT or --file")
        if not args.turns:
            raise UsageError("a conversation needs at least one --turn ROLE:TEXT")
        return Conversation(tuple(_turn(t) for t in args.turns), meta)
    if args.turns:
        raise UsageError(f"--turn is for conversations, not a {kind}")
    if args.text and args.file is not None:
        raise UsageError("give the text as words or with --file, not both")
    text = " ".join(args.text) if args.text else read_input(ctx, args.file, "TEXT")
    if kind == "learning":
        if args.title is not None or args.mime is not None:
            raise UsageError("--title and --mime are for documents, not learnings")
        confidence = _DEFAULT_CONFIDENCE if args.confidence is None else args.confidence
        learning_kind = LearningKind(args.kind) if args.kind is not None else LearningKind.FACT
        return Learning(text, learning_kind, confidence, args.evidence, meta)
    if args.kind is not None or args.confidence is not None or args.evidence is not None:
        raise UsageError("--kind, --confidence and --evidence are for learnings")
    return Document(TextBody(text), args.title, args.mime, meta)


def run_store(ctx: Context) -> int:
    item = _item_from_args(ctx)
    with ctx.open_engine() as engine:
        receipt = engine.store(item, wait=WaitFor(ctx.args.wait))
    if ctx.console.json_mode:
        ctx.console.json(receipt.to_json())
    else:
        ctx.console.out(
            receipt_line(item.item_kind.value, receipt.id, receipt.replayed, item.render_text())
        )
    return 0
