"""Read handlers shared by both wires: events listing, recall, answer, scope listing.

doubles.md §6.4 (the doubled listing), §6.7 (scope listing), §6.8 (recall, packs,
answer) and §7 (the hosted differences: grammar, repeated `labels=`, strict
answer schema).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from cortex_memory.testing._gate import check_grammar
from cortex_memory.testing._log import RECORDED_AT, scope_matches
from cortex_memory.testing._reply import RATE_LIMIT, UPSTREAM, Refusal, Reply, Request

if TYPE_CHECKING:
    from cortex_memory.testing._server import BaseDouble

__all__ = ["HOSTED_ANSWER_KEYS", "answer", "context_block", "events", "recall", "scopes"]

HOSTED_ANSWER_KEYS = frozenset(
    {
        "scope",
        "question",
        "question_type",
        "question_date",
        "temporal",
        "filters",
        "answer_max_tokens",
        "answer_instructions",
        "cite_sources",
        "include_context",
        "use_pack_id",
    }
)
_SCOPE_LIMIT_CLAMP = 1000


def decimal(text: Optional[str], default: int) -> int:
    """A decimal query parameter; missing or unparseable counts as `default`."""
    if text is None or not text.isdigit():
        return default
    try:
        return int(text)
    except ValueError:
        return default


def _pieces(raw: str) -> List[str]:
    return [piece.strip() for piece in raw.split(",") if piece.strip()]


# -- GET events (§6.4) --------------------------------------------------------------------


def events(double: BaseDouble, request: Request) -> Reply:
    """`GET /v1/events`, `GET /memory/events`: every event twice, newest first."""
    state = double.state
    params = request.params
    scope = params.get("scope", "")
    if double.hosted:
        check_grammar(scope)
        if sum(1 for pair in request.raw_pairs if pair.startswith("labels=")) > 1:
            raise Refusal(400, "VALIDATION_ERROR")
    pieces = _pieces(params.get("labels", ""))
    with state.lock:
        cap = state.max_labels
        if cap is not None and len(pieces) > cap:
            raise Refusal(422, "VALIDATION_ERROR", kind=UPSTREAM)
        if state.take_one("rate_limit_events"):
            raise Refusal(429, "RATE_LIMITED", kind=RATE_LIMIT)
        if state.take_one("state_change_events"):
            raise Refusal(503, "AUTHORIZATION_STATE_CHANGED")
        delay = state.listing_delay_ms
        in_flight = state.bump("listings_in_flight")
        if in_flight > state.counters["listings_peak"]:
            state.counters["listings_peak"] = in_flight
    try:
        if isinstance(delay, (int, float)) and delay > 0:
            double.sleep(delay / 1000.0)
        selected = state.log.listing(scope, pieces, state.clock())
    finally:
        # Released even when the client went away during the hold.
        state.bump("listings_in_flight", -1)
    total = 2 * len(selected)
    cursor = decimal(params.get("cursor"), 0)
    limit = decimal(params.get("limit"), 50)
    items = [selected[i // 2] for i in range(cursor, min(cursor + limit, total))]
    next_cursor = cursor + len(items)
    has_more = next_cursor < total
    if state.take_one("hide_listing_for"):
        items, has_more = [], False
    return Reply(200, {"items": items, "has_more": has_more, "next_cursor": str(next_cursor)})


# -- recall and answer (§6.8) -------------------------------------------------------------

_ENTRY_SEPARATOR = "\n---\n"
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


def _utc_stamp(value: Any) -> Optional[str]:
    """``YYYY-MM-DD HH:MM:SS`` in UTC for an RFC 3339 time (fraction dropped), else None."""
    found = _RFC3339.match(value) if isinstance(value, str) else None
    if found is None:
        return None
    year, month, day, hour, minute, second = (int(found.group(i)) for i in range(1, 7))
    offset = timedelta(0)
    if found.group(8):
        offset = timedelta(hours=int(found.group(9)), minutes=int(found.group(10)))
        offset = offset if found.group(8) == "+" else -offset
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
    except ValueError:
        return None
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _entry(event: Any) -> str:
    context = event.get("context") if isinstance(event, dict) else None
    context = context if isinstance(context, dict) else {}
    stamp = (
        _utc_stamp(context.get("observed_at"))
        or _utc_stamp(context.get("recorded_at"))
        or _utc_stamp(RECORDED_AT)
    )
    content = event.get("content") if isinstance(event, dict) else None
    content = content if isinstance(content, dict) else {}
    role = content.get("role")
    text = content.get("text")
    head = f"[{stamp} UTC] [{role if isinstance(role, str) and role else 'event'}]"
    return f"{head}\n{text if isinstance(text, str) else ''}"


def context_block(events: List[Any]) -> str:
    """The pack's ``context_block`` as the official clients parse it.

    One entry per returned event, in order, separated by a line ``---``; each
    entry is headed ``[<timestamp> UTC] [<role>]`` (the event's ``observed_at``,
    else its ``recorded_at``, in UTC to the second; ``event`` when the content
    names no role), then the event's text on the following lines.
    """
    return _ENTRY_SEPARATOR.join(_entry(event) for event in events)



def _select(double: BaseDouble, body: Dict[str, Any]) -> Tuple[List[Any], List[Any], str]:
    """The recall selection shared by recall and an answer's inline recall."""
    state = double.state
    with state.lock:
        if state.refers_refused and "temporal" in body:
            raise Refusal(422, "INVALID_BODY")
        if state.recall_down:
            raise Refusal(500, "INTERNAL")
    scope = body.get("scope")
    scope = scope if isinstance(scope, str) else ""
    filters = body.get("filters")
    metadata = filters.get("metadata") if isinstance(filters, dict) else None
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    if isinstance(labels, str):
        labels = [labels]
    labels = labels if isinstance(labels, list) else []
    pieces = [label for label in labels if isinstance(label, str)]
    budgets = body.get("budgets")
    found = budgets.get("per_layer_limits") if isinstance(budgets, dict) else None
    limits: Dict[str, Any] = found if isinstance(found, dict) else {}
    event_limit: Any = limits.get("events")
    belief_limit: Any = limits.get("beliefs")
    selected, beliefs = state.log.select(
        scope=scope,
        view=body.get("view"),
        pieces=pieces,
        event_limit=event_limit if _is_int(event_limit) else None,
        belief_limit=belief_limit if _is_int(belief_limit) else 0,
        query=body.get("query"),
        now=state.clock(),
    )
    return selected, beliefs, context_block(selected)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _scoped(double: BaseDouble, request: Request, into: List[Any]) -> Any:
    """The body of a read, recorded in `into`; on the hosted wire its scope must parse."""
    body = double.state.record(into, request.json)
    if double.hosted:
        check_grammar(body.get("scope"))
    return body


def _bad_answer_keys(body: Dict[str, Any]) -> bool:
    """A hosted answer body with a key it does not take, or null instructions."""
    return any(key not in HOSTED_ANSWER_KEYS for key in body) or (
        "answer_instructions" in body and body["answer_instructions"] is None
    )


def recall(double: BaseDouble, request: Request) -> Reply:
    """`POST /v1/recall`, `POST /memory/recall`: select, then issue a pack."""
    state = double.state
    body = _scoped(double, request, state.seen.recalls)
    selected, beliefs, block = _select(double, body)
    with state.lock:
        if state.real_packs:
            pack_id = state.log.issue_pack(
                {
                    "scope": body.get("scope"),
                    "view": body.get("view"),
                    "created_at": state.clock(),
                    "events": selected,
                    "beliefs": beliefs,
                    "context_block": block,
                }
            )
        else:
            pack_id = "pack_test"
        state.bump("packs_issued")
        with_block = state.context_block
    answer_body: Dict[str, Any] = {
        "pack_id": pack_id,
        "layers": {"events": selected, "beliefs": beliefs},
    }
    if with_block:
        answer_body["context_block"] = block
    return Reply(200, answer_body)


def answer(double: BaseDouble, request: Request) -> Reply:
    """`POST /v1/answer`, `POST /memory/answer`: from a live pack, or recall inline."""
    state = double.state
    body = _scoped(double, request, state.seen.answers)
    if double.hosted and _bad_answer_keys(body):
        raise Refusal(400, "VALIDATION_ERROR")
    pack_id = body.get("use_pack_id")
    if pack_id is not None:
        with state.lock:
            if state.real_packs:
                now = state.clock()
                if state.log.live_pack(pack_id, now, float(state.pack_ttl_seconds)) is None:
                    raise Refusal(404, "NOT_FOUND")
            elif pack_id != "pack_test":
                raise Refusal(400, "MISSING_PACK")
            if state.take_one("expire_packs"):
                raise Refusal(404, "NOT_FOUND")
    else:
        with state.lock:
            inline = state.answer_without_pack
        if not inline:
            raise Refusal(400, "MISSING_PACK")
        # Recall and answer in one call: no pack issued, nothing recorded in recalls.
        _select(double, body)
    question = body.get("question")
    return Reply(
        200,
        {
            "answer": f"grounded answer for {question}",
            "citations": [],
            "diagnostics": {"answer_model": "reasoning"},
        },
    )


# -- scope listing (§6.7) -----------------------------------------------------------------


def _padding(count: Any) -> List[str]:
    if not _is_int(count) or count <= 0:
        return []
    return [f"app:tinymemory/agent:pad-{i:04d}/app:learnings" for i in range(count)]


def scopes(double: BaseDouble, request: Request) -> Reply:
    """`GET /v1/scopes/list`, `GET /memory/scopes`: no cursor, limit clamped to 1000."""
    state = double.state
    params = request.params
    prefix = params.get("prefix")
    if double.hosted and prefix is not None:
        check_grammar(prefix)
    prefix = prefix or ""
    with state.lock:
        string_prefix = bool(state.string_prefix_scopes)
        found = state.log.scopes_matching(prefix, string_prefix=string_prefix)
        padding = _padding(state.padding_scopes)
        padded = [p for p in padding if scope_matches(p, prefix, string_prefix)]
    paths = sorted(set(found) | set(padded))
    limit = min(decimal(params.get("limit"), 50), _SCOPE_LIMIT_CLAMP)
    paths = paths[:limit]
    if double.hosted:
        return Reply(200, {"scopes": paths})
    return Reply(200, {"items": [{"path": path} for path in paths]})
