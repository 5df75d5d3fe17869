"""Routing for the doubles: route tables, and the JSON body refusals made before any handler.

doubles.md §5.6: an unknown path is 404 and a known path with the wrong method
405, both with empty bodies; a JSON route refuses a body that is not
`application/json` (415), not JSON (400) or not an object (422), in plain
text, before anything is recorded.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Callable, Dict, List, NamedTuple, Optional, Pattern, Tuple, Union

from cortex_memory.testing._reply import RAW, Refusal, Reply, Request

if TYPE_CHECKING:
    from cortex_memory.testing._server import BaseDouble

__all__ = ["Handler", "Route", "RouteTable", "body_refusal", "framework_not_found"]

Handler = Callable[["BaseDouble", Request], Reply]


class Route(NamedTuple):
    """One route: its handler and how the server treats it before the handler runs."""

    handler: Handler
    gated: bool = True
    public: bool = False
    json_body: bool = False


class RouteTable:
    """Exact paths plus `{id}` patterns; unknown path → 404, known path wrong method → 405."""

    def __init__(
        self,
        exact: Dict[str, Dict[str, Route]],
        patterns: Optional[List[Tuple[str, Dict[str, Route]]]] = None,
    ) -> None:
        self._exact = exact
        self._patterns: List[Tuple[Pattern[str], Dict[str, Route]]] = [
            (re.compile(pattern), methods) for pattern, methods in (patterns or [])
        ]

    def match(self, method: str, path: str) -> Union[Route, int, Tuple[int, str]]:
        """The route, or 404, or `(405, allowed methods)`."""
        methods = self._exact.get(path)
        if methods is None:
            for pattern, candidate in self._patterns:
                if pattern.fullmatch(path):
                    methods = candidate
                    break
        if methods is None:
            return 404
        route = methods.get(method)
        if route is None:
            return 405, ", ".join(sorted(methods))
        return route


def body_refusal(request: Request) -> Optional[Tuple[int, str]]:
    """Refuse a JSON route's body before any handler logic; parse it into `request.json`."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        return 415, "Expected request with `Content-Type: application/json`"
    try:
        value = json.loads(request.body.decode("utf-8"))
    except (ValueError, RecursionError):  # RecursionError: nested past the parser's limit
        return 400, "Failed to parse the request body as JSON"
    if not isinstance(value, dict):
        return 422, "Failed to deserialize the JSON body into the target type: expected an object"
    request.json = value
    return None


def framework_not_found() -> Refusal:
    """The bare `{"message":"Not Found"}` 404 of the hosted backend's framework."""
    return Refusal(404, kind=RAW, body={"message": "Not Found"})
