"""Explore: count items by a facet (the request, the buckets and the page)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Tuple

from cortex_memory.contract._coerce import (
    enum_member,
    req_bool,
    req_int,
    req_str,
    req_type,
    set_attr,
    tuple_of,
)
from cortex_memory.contract._read import get_bool, get_enum, get_int, get_list, get_str, obj
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.limits import DEFAULT_SCAN_LIMIT, MAX_BUCKETS, MAX_SCAN_LIMIT
from cortex_memory.errors import InvalidRequestError

__all__ = ["Bucket", "ExplorePage", "ExploreRequest"]

_EMPTY_FILTER = MetaFilter()


def _filter_of(o: Dict[str, Any]) -> MetaFilter:
    value = o.get("filter")
    return _EMPTY_FILTER if value is None else MetaFilter.from_json(value)


@dataclass(frozen=True)
class ExploreRequest:
    """Facet counts ↔ ``{facet, filter, limit, scan_limit}``."""

    facet: Facet
    limit: int
    filter: MetaFilter = _EMPTY_FILTER
    scan_limit: int = DEFAULT_SCAN_LIMIT

    def __post_init__(self) -> None:
        if type(self.facet) is not Facet:
            set_attr(self, "facet", enum_member(self, "facet", Facet, self.facet))
        req_int(self, "limit", self.limit)
        req_type(self, "filter", MetaFilter, self.filter)
        req_int(self, "scan_limit", self.scan_limit)

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

    def to_json(self) -> Dict[str, Any]:
        """``{facet, filter, limit, scan_limit}``."""
        return {
            "facet": self.facet.value,
            "filter": self.filter.to_json(),
            "limit": self.limit,
            "scan_limit": self.scan_limit,
        }

    @classmethod
    def from_json(cls, value: object) -> ExploreRequest:
        """Read the wire object (``scan_limit`` 5000 when absent)."""
        o = obj(value, "explore request")
        what = "explore request"
        return cls(
            get_enum(o, "facet", what, Facet),
            get_int(o, "limit", what),
            _filter_of(o),
            get_int(o, "scan_limit", what, DEFAULT_SCAN_LIMIT),
        )


@dataclass(frozen=True)
class Bucket:
    """One facet value and how many items carry it ↔ ``{value, count}``."""

    value: str
    count: int

    def __post_init__(self) -> None:
        req_str(self, "value", self.value)
        req_int(self, "count", self.count)

    def to_json(self) -> Dict[str, Any]:
        """``{value, count}``."""
        return {"value": self.value, "count": self.count}

    @classmethod
    def from_json(cls, value: object) -> Bucket:
        """Read ``{value, count}``."""
        o = obj(value, "bucket")
        return cls(get_str(o, "value", "bucket"), get_int(o, "count", "bucket"))


@dataclass(frozen=True)
class ExplorePage:
    """Facet counts ↔ ``{facet, buckets, total, missing, more_buckets, truncated}``.

    ``total`` items were scanned, ``missing`` of them had no value,
    ``more_buckets`` were cut by the limit, and ``truncated`` means the scan
    stopped at ``scan_limit`` before the end.
    """

    facet: Facet
    buckets: Tuple[Bucket, ...]
    total: int
    missing: int
    more_buckets: int
    truncated: bool

    def __post_init__(self) -> None:
        if type(self.facet) is not Facet:
            set_attr(self, "facet", enum_member(self, "facet", Facet, self.facet))
        set_attr(self, "buckets", tuple_of(self, "buckets", Bucket, self.buckets))
        for name in ("total", "missing", "more_buckets"):
            req_int(self, name, getattr(self, name))
        req_bool(self, "truncated", self.truncated)

    def to_json(self) -> Dict[str, Any]:
        """``{facet, buckets, total, missing, more_buckets, truncated}``."""
        return {
            "facet": self.facet.value,
            "buckets": [b.to_json() for b in self.buckets],
            "total": self.total,
            "missing": self.missing,
            "more_buckets": self.more_buckets,
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, value: object) -> ExplorePage:
        """Read the wire object."""
        o = obj(value, "explore page")
        what = "explore page"
        return cls(
            get_enum(o, "facet", what, Facet),
            tuple(Bucket.from_json(b) for b in get_list(o, "buckets", what, required=True)),
            get_int(o, "total", what),
            get_int(o, "missing", what),
            get_int(o, "more_buckets", what),
            get_bool(o, "truncated", what),
        )
