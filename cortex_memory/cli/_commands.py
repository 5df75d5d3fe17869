"""The everyday commands: store, list, get, fetch, recall, forget, health, engines."""

from __future__ import annotations

import argparse
import json
from typing import Optional

from cortex_memory import registry
from cortex_memory.cli._context import Command, Context
from cortex_memory.cli._ids import MIN_PREFIX, resolve_ids
from cortex_memory.cli._options import (
    add_filter_options,
    add_meta_options,
    add_reach_options,
    filter_from,
    meta_from,
    reach_from,
    split_values,
)
from cortex_memory.cli._render import (
    descriptor_lines,
    fetch_lines,
    health_line,
    hit_detail,
    list_lines,
    plural,
    recall_lines,
    receipt_line,
)
from cortex_memory.cli._select import UsageError
from cortex_memory.contract.descriptor import EngineHealth, HealthState
from cortex_memory.contract.engine import MemoryEngine
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
from cortex_memory.contract.requests import (
    FetchMode,
    FetchRequest,
    GetRequest,
    ListRequest,
    RecallRequest,
    WaitFor,
)
from cortex_memory.errors import InvalidRequestError, UnauthorizedError

__all__ = [
    "COMMANDS",
    "EXIT_DOWN",
    "EXIT_NOT_FOUND",
    "EXIT_UNAUTHORIZED",
    "EXIT_UNAVAILABLE",
    "health_status",
    "read_input",
]

#: ``health`` when the engine is down; ``get`` when an asked id is not held, and
#: ``forget`` when an id given matched no item.
EXIT_DOWN = 1
EXIT_NOT_FOUND = 6
#: ``health`` when the credential was rejected (the status of ``UnauthorizedError``).
EXIT_UNAUTHORIZED = 5
#: ``health`` when the engine is degraded: unreachable, timed out or answering 5xx
#: (the status of ``UnavailableError``: retry later).
EXIT_UNAVAILABLE = 8

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


def _configure_store(p: argparse.ArgumentParser) -> None:
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


def _run_store(ctx: Context) -> int:
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


# ------------------------------------------------------------- list / get


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _configure_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=_positive, default=20, help="items per page (default: 20)")
    p.add_argument("--cursor", help="continue a listing where the previous page ended")
    add_filter_options(p)


def _run_list(ctx: Context) -> int:
    request = ListRequest(filter_from(ctx.args), ctx.args.limit, ctx.args.cursor)
    with ctx.open_engine() as engine:
        page = engine.list(request)
    ctx.console.result(page.to_json, lambda: list_lines(page))
    return 0


_ID_HELP = (
    "item ids as printed by store and list, or a prefix of at least "
    f"{MIN_PREFIX} hex characters that names one item"
)


def _configure_get(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="+", metavar="ID", help=_ID_HELP)
    add_reach_options(p.add_argument_group("reach (default: every node but sandboxes)"))


def _run_get(ctx: Context) -> int:
    tokens = split_values(ctx.args.ids)
    reach = reach_from(ctx.args)
    with ctx.open_engine() as engine:
        ids = resolve_ids(engine, tokens, reach)
        hits = engine.get(GetRequest(tuple(ids), reach))
    if ctx.console.json_mode:
        ctx.console.json([hit.to_json() for hit in hits])
    else:
        for number, hit in enumerate(hits):
            if number:
                ctx.console.out()
            for line in hit_detail(hit):
                ctx.console.out(line)
    found = {hit.id for hit in hits}
    missing = [i for i in dict.fromkeys(ids) if i not in found]
    for item_id in missing:
        ctx.console.note(f"not found: {item_id[:80]}")
    return EXIT_NOT_FOUND if missing else 0


# ---------------------------------------------------------- fetch / recall


def _configure_fetch(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="+", help="what to look for")
    p.add_argument(
        "--mode", choices=[m.value for m in FetchMode], default=FetchMode.HYBRID.value,
        help=(
            "ranking: keyword (stemmed words), vector or hybrid (default; the one every "
            "engine offers). On the local engine, vector means character n-gram "
            "similarity (spelling, not meaning) unless engines.local.embedder in the "
            "config names another embedder, such as `semantic`"
        ),
    )
    p.add_argument("--limit", type=_positive, default=10, help="hits per page (default: 10)")
    p.add_argument("--cursor", help="continue where the previous page ended")
    p.add_argument(
        "--beliefs", type=int, default=0, metavar="N",
        help="also return up to N beliefs (engines that build them)",
    )
    add_filter_options(p)


def _run_fetch(ctx: Context) -> int:
    args = ctx.args
    request = FetchRequest(
        " ".join(args.query), FetchMode(args.mode), args.limit, filter_from(args),
        args.cursor, max(args.beliefs, 0),
    )
    with ctx.open_engine() as engine:
        page = engine.fetch(request)
    ctx.console.result(
        page.to_json, lambda: fetch_lines(page, "cortex-memory fetch <same query and flags>")
    )
    return 0


def _configure_recall(p: argparse.ArgumentParser) -> None:
    p.add_argument("question", nargs="+", help="the question to answer from memory")
    p.add_argument("--limit", type=_positive, default=5, help="most citations (default: 5)")
    p.add_argument("--instructions", help="how the answer should be written")
    add_filter_options(p)


def _run_recall(ctx: Context) -> int:
    args = ctx.args
    request = RecallRequest(
        " ".join(args.question), args.limit, filter_from(args), args.instructions
    )
    with ctx.open_engine() as engine:
        answer = engine.recall(request)
    ctx.console.result(answer.to_json, lambda: recall_lines(answer))
    return 0


# ------------------------------------------------------------------ forget


def _configure_forget(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "ids", nargs="*", metavar="ID",
        help=f"forget these ids, wherever they live ({_ID_HELP.replace('item ids ', '')})",
    )
    add_filter_options(p)


def _run_forget(ctx: Context) -> int:
    tokens = split_values(ctx.args.ids)
    flt = filter_from(ctx.args)
    if tokens and not flt.is_empty():
        raise UsageError("forget takes ids or filter options, not both")
    if not tokens and flt.is_empty():
        raise UsageError(
            "forget needs ids or filter options (--tag, --type, --namespace, ...); "
            "it never forgets everything"
        )
    asked = 0
    with ctx.open_engine() as engine:
        target: ForgetTarget
        if tokens:
            # Every prefix is resolved before anything is forgotten.
            ids = list(dict.fromkeys(resolve_ids(engine, tokens)))
            asked = len(ids)
            target = ForgetTarget.ids(ids)
        else:
            target = ForgetTarget.filter(flt)
        report = engine.forget(target)
    if ctx.console.json_mode:
        ctx.console.json(report.to_json())
    else:
        ctx.console.out(f"forgot {plural(report.forgotten, 'item')}")
    if report.forgotten < asked:
        # An id that names nothing is a mistake worth a status (a typo, an id
        # of another database); a filter that selects nothing is not.
        unmatched = asked - report.forgotten
        ctx.console.note(
            f"{unmatched} of the {plural(asked, 'id')} given matched no item"
            if asked > 1 else "the id given matched no item"
        )
        return EXIT_NOT_FOUND
    return 0


# --------------------------------------------------------- health / engines


def _configure_nothing(p: argparse.ArgumentParser) -> None:
    """No options of its own."""


def health_status(health: EngineHealth) -> int:
    """The exit status of ``health``: 0 ok; 8 degraded (unreachable, timed out, 5xx); down: 5
    when the credential was rejected (the reason starts ``unauthorized: ``), else 1."""
    if health.state is HealthState.OK:
        return 0
    if health.state is HealthState.DEGRADED:
        return EXIT_UNAVAILABLE
    if (health.reason or "").startswith(UnauthorizedError.prefix):
        return EXIT_UNAUTHORIZED
    return EXIT_DOWN


def _run_health(ctx: Context) -> int:
    engine: MemoryEngine
    with ctx.open_engine() as engine:
        health = engine.health()
        engine_id = engine.descriptor().id
    if ctx.console.json_mode:
        ctx.console.json(health.to_json())
    else:
        ctx.console.out(health_line(engine_id, health))
    return health_status(health)


def _run_engines(ctx: Context) -> int:
    descriptors = registry.list_engines()
    ctx.console.result(
        lambda: [d.to_json() for d in descriptors], lambda: descriptor_lines(descriptors)
    )
    return 0


COMMANDS = (
    Command("store", "store a document, a learning or a conversation", _configure_store,
            _run_store),
    Command("list", "list stored items, a page at a time (no query)", _configure_list,
            _run_list),
    Command("get", "show items in full by id", _configure_get, _run_get),
    Command("fetch", "ranked search: keyword, vector or hybrid", _configure_fetch, _run_fetch),
    Command("recall", "answer a question from memory, with citations", _configure_recall,
            _run_recall),
    Command("forget", "forget items by id or by filter", _configure_forget, _run_forget),
    Command("health", "check that the engine serves with this credential (exit 0 only when ok)",
            _configure_nothing,
            _run_health),
    Command("engines", "list the engines this build offers", _configure_nothing, _run_engines),
)
