"""``/usage``: what the runs the key may see cost in a period, by person, repository, channel, schedule
and model (a Dispatch extension)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING

import httpx

from .._base_client import RequestOptions, model_parser
from .._response import async_to_raw_response_wrapper, to_raw_response_wrapper
from .._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ..types import UsageGroup, UsageReport

if TYPE_CHECKING:
    from .._client import AsyncDispatch, Dispatch

__all__ = ["Usage", "AsyncUsage", "UsageWithRawResponse", "AsyncUsageWithRawResponse"]

_USAGE = "usage"

_parse_report = model_parser(UsageReport.model_validate)


def _parse_text(response: httpx.Response) -> str:
    return response.text


def _bound(value: str | date | datetime | None) -> str | None:
    """A date as the day it names; a datetime as UTC (a naive one is taken to be UTC already)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return aware.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    return value.isoformat()


def _usage_query(
    from_: str | date | datetime | None,
    to: str | date | datetime | None,
    group_by: Sequence[UsageGroup | str] | None,
    extra_query: Mapping[str, object] | None,
) -> dict[str, object]:
    if isinstance(group_by, str):
        raise TypeError('group_by must be a list of keys such as ["person", "model"], not one string')
    query: dict[str, object] = {}
    for name, value in (("from", _bound(from_)), ("to", _bound(to))):
        if value is not None:
            query[name] = value
    if group_by:
        query["group_by"] = ",".join(group_by)
    query.update(extra_query or {})
    return query


class Usage:
    """``client.usage``: the typed surface of ``/usage``."""

    def __init__(self, client: Dispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> UsageWithRawResponse:
        return UsageWithRawResponse(self)

    def retrieve(
        self,
        *,
        from_: str | date | datetime | None = None,
        to: str | date | datetime | None = None,
        group_by: Sequence[UsageGroup | str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> UsageReport:
        """The period's spend grouped by ``group_by`` (``GET /usage``): from ``from_`` (inclusive; the first
        of ``to``'s month when not given) to ``to`` (exclusive; now when not given), at most 366 days. A
        group with runs whose model has no price has ``cost_usd=None`` and counts them in
        ``unpriced_runs``."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_USAGE,
                params=_usage_query(from_, to, group_by, extra_query),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_report,
        )

    def csv(
        self,
        *,
        from_: str | date | datetime | None = None,
        to: str | date | datetime | None = None,
        group_by: Sequence[UsageGroup | str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> str:
        """The same rows as CSV text with a header row (``GET /usage?format=csv``): the period on every row,
        no totals row."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_USAGE,
                params={**_usage_query(from_, to, group_by, extra_query), "format": "csv"},
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_text,
        )


class AsyncUsage:
    """``client.usage`` of :class:`AsyncDispatch`: the same methods as :class:`Usage`, awaited."""

    def __init__(self, client: AsyncDispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> AsyncUsageWithRawResponse:
        return AsyncUsageWithRawResponse(self)

    async def retrieve(
        self,
        *,
        from_: str | date | datetime | None = None,
        to: str | date | datetime | None = None,
        group_by: Sequence[UsageGroup | str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> UsageReport:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_USAGE,
                params=_usage_query(from_, to, group_by, extra_query),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_report,
        )

    async def csv(
        self,
        *,
        from_: str | date | datetime | None = None,
        to: str | date | datetime | None = None,
        group_by: Sequence[UsageGroup | str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> str:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_USAGE,
                params={**_usage_query(from_, to, group_by, extra_query), "format": "csv"},
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_text,
        )


class UsageWithRawResponse:
    """``client.with_raw_response.usage``: the same methods, returning :class:`APIResponse`."""

    def __init__(self, usage: Usage) -> None:
        self.retrieve = to_raw_response_wrapper(usage.retrieve)
        self.csv = to_raw_response_wrapper(usage.csv)


class AsyncUsageWithRawResponse:
    def __init__(self, usage: AsyncUsage) -> None:
        self.retrieve = async_to_raw_response_wrapper(usage.retrieve)
        self.csv = async_to_raw_response_wrapper(usage.csv)
