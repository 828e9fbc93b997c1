"""The private machinery under both clients: URLs, headers, retries with backoff, timeouts, errors.

Everything that decides *whether* and *when* to retry lives here once; the sync and async clients
differ only in how they send and sleep.
"""

from __future__ import annotations

import email.utils
import os
import random
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import anyio
import httpx
from pydantic import ValidationError

from ._exceptions import (
    APIConnectionError,
    APIConnectionTimeoutError,
    APIResponseValidationError,
    DispatchError,
    make_status_error,
)
from ._response import RAW_RESPONSE_HEADER, APIResponse
from ._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ._version import __version__

T = TypeVar("T")

DEFAULT_BASE_URL = "http://127.0.0.1:8080/api/v1"
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=5.0)
"""A read timeout well above the event stream's 15 s keep-alive, so a silent stream is a dead one."""
DEFAULT_MAX_RETRIES = 2
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
"""A server-given delay longer than this is not waited for; the computed backoff is used instead."""


@dataclass
class RequestOptions:
    method: str
    path: str
    """Relative to the base URL (``agent/runs``), server-root absolute (``/healthz``) or a full URL."""
    params: Mapping[str, object] | None = None
    json_data: object = NOT_GIVEN
    headers: Mapping[str, str] | None = None
    timeout: TimeoutTypes | NotGiven = NOT_GIVEN
    max_retries: int | NotGiven = NOT_GIVEN
    idempotency_key: str | None = None
    follow_redirects: bool = False
    """Follow a redirect (an artifact's download); the API key is not sent to another origin."""


def new_idempotency_key() -> str:
    return f"dispatch-py-{uuid.uuid4()}"


def _retry_after_seconds(headers: httpx.Headers | None) -> float | None:
    """The server's requested delay: ``retry-after-ms``, else ``Retry-After`` (seconds or HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


def should_retry(response: httpx.Response) -> bool:
    # The server may say explicitly; otherwise the statuses the API documents as retryable, plus 408.
    explicit = response.headers.get("x-should-retry")
    if explicit == "true":
        return True
    if explicit == "false":
        return False
    status = response.status_code
    return status in (408, 409, 429) or status >= 500


def retry_delay(retries_taken: int, headers: httpx.Headers | None) -> float:
    """Seconds to wait before retry number ``retries_taken + 1``."""
    requested = _retry_after_seconds(headers)
    if requested is not None and 0 <= requested <= MAX_RETRY_AFTER:
        return requested
    backoff = min(INITIAL_RETRY_DELAY * 2.0**retries_taken, MAX_RETRY_DELAY)
    return backoff * (1 - 0.25 * random.random())  # jitter: spread clients that failed together


def _strip_none(mapping: Mapping[str, object] | None) -> dict[str, Any]:
    return {k: v for k, v in (mapping or {}).items() if v is not None}


class BaseClient:
    api_key: str
    base_url: httpx.URL
    timeout: TimeoutTypes
    max_retries: int

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | httpx.URL | None,
        timeout: TimeoutTypes | NotGiven,
        max_retries: int,
        default_headers: Mapping[str, str] | None,
    ) -> None:
        if api_key is None:
            api_key = os.environ.get("DISPATCH_API_KEY")
        if not api_key:
            raise DispatchError(
                "No API key: pass api_key= to the client or set the DISPATCH_API_KEY environment variable."
            )
        if base_url is None:
            base_url = os.environ.get("DISPATCH_BASE_URL") or DEFAULT_BASE_URL
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.api_key = api_key
        # A trailing slash makes relative paths join under it (RFC 3986), e.g. .../api/v1/ + agent/runs.
        self.base_url = httpx.URL(str(base_url).rstrip("/") + "/")
        self.timeout = DEFAULT_TIMEOUT if isinstance(timeout, NotGiven) else timeout
        self.max_retries = max_retries
        self._custom_headers: dict[str, str] = dict(default_headers or {})

    @property
    def default_headers(self) -> dict[str, str]:
        return {
            "Accept": "application/json",
            "User-Agent": f"agent-dispatch-python/{__version__}",
            "Authorization": f"Bearer {self.api_key}",
            **self._custom_headers,
        }

    def _url(self, path: str) -> httpx.URL:
        if path.startswith(("http://", "https://")):
            return httpx.URL(path)
        return self.base_url.join(path)

    def _max_retries(self, options: RequestOptions) -> int:
        return self.max_retries if isinstance(options.max_retries, NotGiven) else options.max_retries

    def _idempotency_key(self, options: RequestOptions) -> str | None:
        # One key per logical POST, chosen before the first attempt, so that every retry carries it and
        # the server creates at most one run / follow-up however many attempts reach it.
        if options.idempotency_key is not None:
            return options.idempotency_key
        given = [v for k, v in (options.headers or {}).items() if k.lower() == "idempotency-key"]
        if given:
            return given[0]
        return new_idempotency_key() if options.method.upper() == "POST" else None

    def _build_request(
        self,
        http_client: httpx.Client | httpx.AsyncClient,
        options: RequestOptions,
        idempotency_key: str | None,
    ) -> httpx.Request:
        internal = (RAW_RESPONSE_HEADER.lower(), "idempotency-key")
        headers = {
            **self.default_headers,
            **{k: v for k, v in (options.headers or {}).items() if k.lower() not in internal},
        }
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        timeout = self.timeout if isinstance(options.timeout, NotGiven) else options.timeout
        params = _strip_none(options.params)
        if isinstance(options.json_data, NotGiven):
            return http_client.build_request(
                options.method, self._url(options.path), params=params, headers=headers, timeout=timeout
            )
        return http_client.build_request(
            options.method,
            self._url(options.path),
            params=params,
            headers=headers,
            json=options.json_data,
            timeout=timeout,
        )

    @staticmethod
    def _wants_raw(options: RequestOptions) -> bool:
        return any(k.lower() == RAW_RESPONSE_HEADER.lower() for k in (options.headers or {}))

    @staticmethod
    def _finish(response: httpx.Response, parser: Callable[[httpx.Response], T], retries_taken: int, raw: bool) -> T:
        api_response = APIResponse(response, parser, retries_taken)
        if raw:
            # The with_raw_response wrapper casts this back to APIResponse[T].
            return cast(T, api_response)
        return api_response.parse()


def model_parser(parse_json: Callable[[Any], T]) -> Callable[[httpx.Response], T]:
    """A response parser that decodes JSON and validates it, raising APIResponseValidationError."""

    def parse(response: httpx.Response) -> T:
        try:
            body = response.json()
        except ValueError as err:
            raise APIResponseValidationError(response, response.text, f"The response is not JSON: {err}") from err
        try:
            return parse_json(body)
        except ValidationError as err:
            raise APIResponseValidationError(
                response, body, f"The response does not have the documented shape: {err}"
            ) from err

    return parse


def untyped_parser(response: httpx.Response) -> Any:
    """JSON when the response says so, else its text (``/metrics`` is Prometheus text)."""
    content_type = response.headers.get("content-type", "")
    if "json" in content_type:
        return response.json()
    return response.text


class SyncAPIClient(BaseClient):
    _client: httpx.Client

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | httpx.URL | None,
        timeout: TimeoutTypes | NotGiven,
        max_retries: int,
        default_headers: Mapping[str, str] | None,
        http_client: httpx.Client | None,
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
        )
        self._owns_client = http_client is None
        self._client = http_client if http_client is not None else httpx.Client()

    def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def _send(self, options: RequestOptions, *, stream: bool = False) -> tuple[httpx.Response, int]:
        """Sends with retries; returns a 2xx response (unread when ``stream``) and the retries taken."""
        max_retries = self._max_retries(options)
        idempotency_key = self._idempotency_key(options)
        retries_taken = 0
        while True:
            request = self._build_request(self._client, options, idempotency_key)
            try:
                response = self._client.send(request, stream=stream, follow_redirects=options.follow_redirects)
            except httpx.TimeoutException as err:
                if retries_taken < max_retries:
                    self._sleep(retry_delay(retries_taken, None))
                    retries_taken += 1
                    continue
                raise APIConnectionTimeoutError(request) from err
            except httpx.TransportError as err:
                if retries_taken < max_retries:
                    self._sleep(retry_delay(retries_taken, None))
                    retries_taken += 1
                    continue
                raise APIConnectionError(request, f"Connection error: {err}") from err

            if response.is_success:
                return response, retries_taken
            if retries_taken < max_retries and should_retry(response):
                response.close()
                self._sleep(retry_delay(retries_taken, response.headers))
                retries_taken += 1
                continue
            if stream:
                response.read()
            raise make_status_error(response)

    def _request(self, options: RequestOptions, parser: Callable[[httpx.Response], T]) -> T:
        raw = self._wants_raw(options)
        response, retries_taken = self._send(options)
        return self._finish(response, parser, retries_taken, raw)

    @property
    def is_closed(self) -> bool:
        return self._client.is_closed

    def close(self) -> None:
        """Closes the connection pool (only when the client created it)."""
        if self._owns_client:
            self._client.close()


class AsyncAPIClient(BaseClient):
    _client: httpx.AsyncClient

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | httpx.URL | None,
        timeout: TimeoutTypes | NotGiven,
        max_retries: int,
        default_headers: Mapping[str, str] | None,
        http_client: httpx.AsyncClient | None,
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
        )
        self._owns_client = http_client is None
        self._client = http_client if http_client is not None else httpx.AsyncClient()

    async def _sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)

    async def _send(self, options: RequestOptions, *, stream: bool = False) -> tuple[httpx.Response, int]:
        max_retries = self._max_retries(options)
        idempotency_key = self._idempotency_key(options)
        retries_taken = 0
        while True:
            request = self._build_request(self._client, options, idempotency_key)
            try:
                response = await self._client.send(request, stream=stream, follow_redirects=options.follow_redirects)
            except httpx.TimeoutException as err:
                if retries_taken < max_retries:
                    await self._sleep(retry_delay(retries_taken, None))
                    retries_taken += 1
                    continue
                raise APIConnectionTimeoutError(request) from err
            except httpx.TransportError as err:
                if retries_taken < max_retries:
                    await self._sleep(retry_delay(retries_taken, None))
                    retries_taken += 1
                    continue
                raise APIConnectionError(request, f"Connection error: {err}") from err

            if response.is_success:
                return response, retries_taken
            if retries_taken < max_retries and should_retry(response):
                await response.aclose()
                await self._sleep(retry_delay(retries_taken, response.headers))
                retries_taken += 1
                continue
            if stream:
                await response.aread()
            raise make_status_error(response)

    async def _request(self, options: RequestOptions, parser: Callable[[httpx.Response], T]) -> T:
        raw = self._wants_raw(options)
        response, retries_taken = await self._send(options)
        return self._finish(response, parser, retries_taken, raw)

    @property
    def is_closed(self) -> bool:
        return self._client.is_closed

    async def close(self) -> None:
        if self._owns_client:
            await self._client.aclose()
