"""The two entry points: :class:`Dispatch` (sync) and :class:`AsyncDispatch` (async)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar, overload

import httpx
from pydantic import BaseModel

from ._base_client import (
    DEFAULT_MAX_RETRIES,
    AsyncAPIClient,
    RequestOptions,
    SyncAPIClient,
    model_parser,
    untyped_parser,
)
from ._response import APIResponse, async_to_raw_response_wrapper, to_raw_response_wrapper
from ._types import NOT_GIVEN, NotGiven, TimeoutTypes
from .resources.agents import Agents, AgentsWithRawResponse, AsyncAgents, AsyncAgentsWithRawResponse
from .resources.artifacts import (
    Artifacts,
    ArtifactsWithRawResponse,
    AsyncArtifacts,
    AsyncArtifactsWithRawResponse,
)
from .resources.environments import (
    AsyncEnvironments,
    AsyncEnvironmentsWithRawResponse,
    Environments,
    EnvironmentsWithRawResponse,
)
from .resources.identities import (
    AsyncIdentities,
    AsyncIdentitiesWithRawResponse,
    Identities,
    IdentitiesWithRawResponse,
)
from .resources.models import AsyncModels, AsyncModelsWithRawResponse, Models, ModelsWithRawResponse
from .resources.runs import AsyncRuns, AsyncRunsWithRawResponse, Runs, RunsWithRawResponse
from .resources.schedules import (
    AsyncSchedules,
    AsyncSchedulesWithRawResponse,
    Schedules,
    SchedulesWithRawResponse,
)
from .resources.usage import AsyncUsage, AsyncUsageWithRawResponse, Usage, UsageWithRawResponse
from .resources.webhooks import (
    AsyncWebhooks,
    AsyncWebhooksWithRawResponse,
    Webhooks,
    WebhooksWithRawResponse,
)

__all__ = ["Dispatch", "AsyncDispatch"]

M = TypeVar("M", bound=BaseModel)


def _parser_for(cast_to: type[M] | None) -> Callable[[httpx.Response], Any]:
    return model_parser(cast_to.model_validate) if cast_to is not None else untyped_parser


def _options(
    method: str,
    path: str,
    *,
    params: Mapping[str, object] | None,
    body: object,
    extra_headers: Mapping[str, str] | None,
    timeout: TimeoutTypes | NotGiven,
    max_retries: int | NotGiven,
    idempotency_key: str | None,
) -> RequestOptions:
    return RequestOptions(
        method=method,
        path=path,
        params=params,
        json_data=NOT_GIVEN if body is None else body,  # None: no body, like a bare POST
        headers=extra_headers,
        timeout=timeout,
        max_retries=max_retries,
        idempotency_key=idempotency_key,
    )


class Dispatch(SyncAPIClient):
    """Synchronous client of the Dispatch API v1.

    ``api_key`` and ``base_url`` default to ``DISPATCH_API_KEY`` and ``DISPATCH_BASE_URL``; the base
    URL includes ``/api/v1`` (default ``http://127.0.0.1:8080/api/v1``). Requests that fail with a
    connection error, a timeout, 408, 409, 429 or a 5xx are retried ``max_retries`` times with
    exponential backoff and jitter, honouring ``Retry-After``.
    """

    runs: Runs
    models: Models
    environments: Environments
    agents: Agents
    identities: Identities
    artifacts: Artifacts
    schedules: Schedules
    webhooks: Webhooks
    usage: Usage
    with_raw_response: DispatchWithRawResponse

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | httpx.URL | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            http_client=http_client,
        )
        self.runs = Runs(self)
        self.models = Models(self)
        self.environments = Environments(self)
        self.agents = Agents(self)
        self.identities = Identities(self)
        self.artifacts = Artifacts(self)
        self.schedules = Schedules(self)
        self.webhooks = Webhooks(self)
        self.usage = Usage(self)
        self.with_raw_response = DispatchWithRawResponse(self)

    def with_options(
        self,
        *,
        api_key: str | None = None,
        base_url: str | httpx.URL | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | None = None,
        default_headers: Mapping[str, str] | None = None,
    ) -> Dispatch:
        """A client with some settings changed, sharing this one's connection pool."""
        return Dispatch(
            api_key=api_key or self.api_key,
            base_url=base_url or self.base_url,
            timeout=self.timeout if isinstance(timeout, NotGiven) else timeout,
            max_retries=self.max_retries if max_retries is None else max_retries,
            default_headers={**self._custom_headers, **(default_headers or {})},
            http_client=self._client,
        )

    @overload
    def get(
        self,
        path: str,
        *,
        cast_to: type[M],
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> M: ...
    @overload
    def get(
        self,
        path: str,
        *,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> Any: ...
    def get(
        self,
        path: str,
        *,
        cast_to: type[M] | None = None,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> Any:
        """GET a route outside the typed surface, with the same auth, retries and errors.

        ``path`` relative (``agent/runs``) is under the base URL; absolute (``/healthz``) is from the
        server root; a full URL is used as is. Returns the decoded JSON (or text), or ``cast_to``.
        """
        return self._request(
            _options(
                "GET",
                path,
                params=params,
                body=NOT_GIVEN,
                extra_headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=None,
            ),
            _parser_for(cast_to),
        )

    @overload
    def post(
        self,
        path: str,
        *,
        cast_to: type[M],
        body: object = NOT_GIVEN,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
    ) -> M: ...
    @overload
    def post(
        self,
        path: str,
        *,
        body: object = NOT_GIVEN,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
    ) -> Any: ...
    def post(
        self,
        path: str,
        *,
        cast_to: type[M] | None = None,
        body: object = NOT_GIVEN,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
    ) -> Any:
        """POST ``body`` as JSON to a route outside the typed surface (paths as in :meth:`get`).

        Carries an Idempotency-Key like every POST of this client (``idempotency_key`` or generated).
        """
        return self._request(
            _options(
                "POST",
                path,
                params=params,
                body=body,
                extra_headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parser_for(cast_to),
        )

    def __enter__(self) -> Dispatch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Dispatch base_url={str(self.base_url)!r}>"


class AsyncDispatch(AsyncAPIClient):
    """Asynchronous client of the Dispatch API v1: the surface of :class:`Dispatch`, awaited."""

    runs: AsyncRuns
    models: AsyncModels
    environments: AsyncEnvironments
    agents: AsyncAgents
    identities: AsyncIdentities
    schedules: AsyncSchedules
    artifacts: AsyncArtifacts
    webhooks: AsyncWebhooks
    usage: AsyncUsage
    with_raw_response: AsyncDispatchWithRawResponse

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | httpx.URL | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            http_client=http_client,
        )
        self.runs = AsyncRuns(self)
        self.models = AsyncModels(self)
        self.environments = AsyncEnvironments(self)
        self.agents = AsyncAgents(self)
        self.identities = AsyncIdentities(self)
        self.artifacts = AsyncArtifacts(self)
        self.schedules = AsyncSchedules(self)
        self.webhooks = AsyncWebhooks(self)
        self.usage = AsyncUsage(self)
        self.with_raw_response = AsyncDispatchWithRawResponse(self)

    def with_options(
        self,
        *,
        api_key: str | None = None,
        base_url: str | httpx.URL | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | None = None,
        default_headers: Mapping[str, str] | None = None,
    ) -> AsyncDispatch:
        return AsyncDispatch(
            api_key=api_key or self.api_key,
            base_url=base_url or self.base_url,
            timeout=self.timeout if isinstance(timeout, NotGiven) else timeout,
            max_retries=self.max_retries if max_retries is None else max_retries,
            default_headers={**self._custom_headers, **(default_headers or {})},
            http_client=self._client,
        )

    @overload
    async def get(
        self,
        path: str,
        *,
        cast_to: type[M],
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> M: ...
    @overload
    async def get(
        self,
        path: str,
        *,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> Any: ...
    async def get(
        self,
        path: str,
        *,
        cast_to: type[M] | None = None,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> Any:
        return await self._request(
            _options(
                "GET",
                path,
                params=params,
                body=NOT_GIVEN,
                extra_headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=None,
            ),
            _parser_for(cast_to),
        )

    @overload
    async def post(
        self,
        path: str,
        *,
        cast_to: type[M],
        body: object = NOT_GIVEN,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
    ) -> M: ...
    @overload
    async def post(
        self,
        path: str,
        *,
        body: object = NOT_GIVEN,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
    ) -> Any: ...
    async def post(
        self,
        path: str,
        *,
        cast_to: type[M] | None = None,
        body: object = NOT_GIVEN,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
    ) -> Any:
        return await self._request(
            _options(
                "POST",
                path,
                params=params,
                body=body,
                extra_headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parser_for(cast_to),
        )

    async def __aenter__(self) -> AsyncDispatch:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<AsyncDispatch base_url={str(self.base_url)!r}>"


class DispatchWithRawResponse:
    """``client.with_raw_response``: every call returns an :class:`APIResponse` (headers, status,
    ``parse()``) instead of the parsed result."""

    def __init__(self, client: Dispatch) -> None:
        self._client = client
        self.runs = RunsWithRawResponse(client.runs)
        self.models = ModelsWithRawResponse(client.models)
        self.environments = EnvironmentsWithRawResponse(client.environments)
        self.agents = AgentsWithRawResponse(client.agents)
        self.identities = IdentitiesWithRawResponse(client.identities)
        self.artifacts = ArtifactsWithRawResponse(client.artifacts)
        self.schedules = SchedulesWithRawResponse(client.schedules)
        self.webhooks = WebhooksWithRawResponse(client.webhooks)
        self.usage = UsageWithRawResponse(client.usage)

    def get(
        self,
        path: str,
        *,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> APIResponse[Any]:
        get: Callable[..., Any] = self._client.get
        return to_raw_response_wrapper(get)(
            path, params=params, extra_headers=extra_headers, timeout=timeout, max_retries=max_retries
        )

    def post(
        self,
        path: str,
        *,
        body: object = NOT_GIVEN,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
    ) -> APIResponse[Any]:
        post: Callable[..., Any] = self._client.post
        return to_raw_response_wrapper(post)(
            path,
            body=body,
            params=params,
            extra_headers=extra_headers,
            timeout=timeout,
            max_retries=max_retries,
            idempotency_key=idempotency_key,
        )


class AsyncDispatchWithRawResponse:
    def __init__(self, client: AsyncDispatch) -> None:
        self._client = client
        self.runs = AsyncRunsWithRawResponse(client.runs)
        self.models = AsyncModelsWithRawResponse(client.models)
        self.environments = AsyncEnvironmentsWithRawResponse(client.environments)
        self.agents = AsyncAgentsWithRawResponse(client.agents)
        self.identities = AsyncIdentitiesWithRawResponse(client.identities)
        self.artifacts = AsyncArtifactsWithRawResponse(client.artifacts)
        self.schedules = AsyncSchedulesWithRawResponse(client.schedules)
        self.webhooks = AsyncWebhooksWithRawResponse(client.webhooks)
        self.usage = AsyncUsageWithRawResponse(client.usage)

    async def get(
        self,
        path: str,
        *,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> APIResponse[Any]:
        get: Callable[..., Any] = self._client.get
        return await async_to_raw_response_wrapper(get)(
            path, params=params, extra_headers=extra_headers, timeout=timeout, max_retries=max_retries
        )

    async def post(
        self,
        path: str,
        *,
        body: object = NOT_GIVEN,
        params: Mapping[str, object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
    ) -> APIResponse[Any]:
        post: Callable[..., Any] = self._client.post
        return await async_to_raw_response_wrapper(post)(
            path,
            body=body,
            params=params,
            extra_headers=extra_headers,
            timeout=timeout,
            max_retries=max_retries,
            idempotency_key=idempotency_key,
        )
