"""The raw-response wrapper returned through ``client.with_raw_response``."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar, cast

import httpx
from typing_extensions import ParamSpec

__all__ = ["APIResponse", "to_raw_response_wrapper", "async_to_raw_response_wrapper"]

T = TypeVar("T")

_UNSET: Any = object()

RAW_RESPONSE_HEADER = "X-Dispatch-Raw-Response"
"""Internal marker set by ``with_raw_response`` wrappers; removed before the request is sent."""


class APIResponse(Generic[T]):
    """An HTTP response of a typed call, before (or without) parsing it.

    ``parse()`` returns what the call returns without ``with_raw_response``.
    """

    http_response: httpx.Response
    retries_taken: int
    """How many retries the call needed before this response (0 when the first attempt answered)."""

    def __init__(
        self, http_response: httpx.Response, parser: Callable[[httpx.Response], T], retries_taken: int
    ) -> None:
        self.http_response = http_response
        self.retries_taken = retries_taken
        self._parser = parser
        self._parsed: Any = _UNSET

    @property
    def status_code(self) -> int:
        return self.http_response.status_code

    @property
    def headers(self) -> httpx.Headers:
        return self.http_response.headers

    @property
    def url(self) -> httpx.URL:
        return self.http_response.url

    @property
    def method(self) -> str:
        return self.http_response.request.method

    @property
    def content(self) -> bytes:
        return self.http_response.content

    @property
    def text(self) -> str:
        return self.http_response.text

    def json(self) -> Any:
        return self.http_response.json()

    def parse(self) -> T:
        """The typed result (parsed once, then cached)."""
        if self._parsed is _UNSET:
            self._parsed = self._parser(self.http_response)
        parsed: T = self._parsed
        return parsed

    def __repr__(self) -> str:
        return f"<APIResponse [{self.status_code} {self.http_response.reason_phrase}] {self.method} {self.url}>"


P = ParamSpec("P")
R = TypeVar("R")


def _mark_raw(kwargs: dict[str, Any]) -> None:
    headers: dict[str, str] = dict(kwargs.get("extra_headers") or {})
    headers[RAW_RESPONSE_HEADER] = "true"
    kwargs["extra_headers"] = headers


def to_raw_response_wrapper(func: Callable[P, R]) -> Callable[P, APIResponse[R]]:
    """Turns a typed method into one returning the :class:`APIResponse` (it must take ``extra_headers``)."""

    @functools.wraps(func)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> APIResponse[R]:
        _mark_raw(kwargs)
        return cast("APIResponse[R]", func(*args, **kwargs))

    return wrapped


def async_to_raw_response_wrapper(func: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[APIResponse[R]]]:
    @functools.wraps(func)
    async def wrapped(*args: P.args, **kwargs: P.kwargs) -> APIResponse[R]:
        _mark_raw(kwargs)
        return cast("APIResponse[R]", await func(*args, **kwargs))

    return wrapped
