"""Explore: count items by a facet (the request, the buckets and the page)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Tuple

from cortex_memory.contract._wire import BOOL, COUNT, TEXT, Shape, Wire, enum, nested, nested_list
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.limits import DEFAULT_SCAN_LIMIT, MAX_BUCKETS, MAX_SCAN_LIMIT
from cortex_memory.errors import InvalidRequestError

__all__ = ["Bucket", "ExplorePage", "ExploreRequest"]

_EMPTY_FILTER = MetaFilter()


@dataclass(frozen=True)
class ExploreRequest(Wire):
    """Facet counts ↔ ``{facet, filter, limit, scan_limit}``.

    ``from_json`` reads a missing ``filter`` as the empty filter and a missing
    ``scan_limit`` as 5000.
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "explore request",
        order=("facet", "filter", "limit", "scan_limit"),
        facet=enum(Facet),
        limit=COUNT,
        filter=nested(MetaFilter).or_missing(_EMPTY_FILTER),
        scan_limit=COUNT.or_missing(DEFAULT_SCAN_LIMIT),
    )

    facet: Facet
    limit: int
    filter: MetaFilter = _EMPTY_FILTER
    scan_limit: int = DEFAULT_SCAN_LIMIT

    @classmethod
    def new(cls, facet: Facet, limit: int) -> ExploreRequest:
        """Count ``facet`` over everything, scanning at most 5000 items."""
        return cls(facet, limit)

    def with_filter(self, flt: MetaFilter) -> ExploreRequest:
        """A copy with ``filter``."""
        return replace(self, filter=flt)

    def with_scan_limit(self, scan_limit: int) -> ExploreRequest:
        """A copy scanning at most ``scan_limit`` items."""
        return replace(self, scan_limit=scan_limit)

    def validate(self) -> None:
        """Refuse a limit outside 1..=500 and a scan_limit outside 1..=50 000."""
        if not 1 <= self.limit <= MAX_BUCKETS:
            raise InvalidRequestError(f"explore limit must be between 1 and {MAX_BUCKETS}")
        if not 1 <= self.scan_limit <= MAX_SCAN_LIMIT:
            raise InvalidRequestError(
                f"explore scan_limit must be between 1 and {MAX_SCAN_LIMIT}"
            )


@dataclass(frozen=True)
class Bucket(Wire):
    """One facet value and how many items carry it ↔ ``{value, count}``."""

    _SHAPE: ClassVar[Shape] = Shape.of("bucket", value=TEXT, count=COUNT)

    value: str
    count: int


@dataclass(frozen=True)
class ExplorePage(Wire):
    """Facet counts ↔ ``{facet, buckets, total, missing, more_buckets, truncated}``.

    ``total`` items were scanned, ``missing`` of them had no value,
    ``more_buckets`` were cut by the limit, and ``truncated`` means the scan
    stopped at ``scan_limit`` before the end.
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "explore page",
        facet=enum(Facet),
        buckets=nested_list(Bucket, required=True),
        total=COUNT,
        missing=COUNT,
        more_buckets=COUNT,
        truncated=BOOL,
    )

    facet: Facet
    buckets: Tuple[Bucket, ...]
    total: int
    missing: int
    more_buckets: int
    truncated: bool
