"""The everyday commands: store, list, get, fetch, recall, forget, health, engines.

``store`` lives in :mod:`cortex_memory.cli._store`.
"""

from __future__ import annotations

import argparse

from cortex_memory import registry
from cortex_memory.cli._context import Command, Context
from cortex_memory.cli._ids import MIN_PREFIX, resolve_ids
from cortex_memory.cli._options import (
    add_filter_options,
    add_reach_options,
    filter_from,
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
)
from cortex_memory.cli._select import UsageError
from cortex_memory.cli._store import configure_store, run_store
from cortex_memory.contract.descriptor import EngineHealth, HealthState
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.forget import ForgetTarget
from cortex_memory.contract.requests import (
    FetchMode,
    FetchRequest,
    GetRequest,
    ListRequest,
    RecallRequest,
)
from cortex_memory.errors import UnauthorizedError

__all__ = [
    "COMMANDS",
    "EXIT_DOWN",
    "EXIT_NOT_FOUND",
    "EXIT_UNAUTHORIZED",
    "EXIT_UNAVAILABLE",
    "health_status",
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
    Command("store", "store a document, a learning or a conversation", configure_store,
            run_store),
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
