"""``/agent/environments``: the environments a run can name in ``config.environment_id``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from .._base_client import RequestOptions, model_parser
from .._response import async_to_raw_response_wrapper, to_raw_response_wrapper
from .._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ..types import ListEnvironmentsResponse

if TYPE_CHECKING:
    from .._client import AsyncDispatch, Dispatch

__all__ = ["Environments", "AsyncEnvironments", "EnvironmentsWithRawResponse", "AsyncEnvironmentsWithRawResponse"]

_ENVIRONMENTS = "agent/environments"

_parse_list = model_parser(ListEnvironmentsResponse.model_validate)


class Environments:
    """``client.environments``: the typed surface of ``/agent/environments``."""

    def __init__(self, client: Dispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> EnvironmentsWithRawResponse:
        return EnvironmentsWithRawResponse(self)

    def list(
        self,
        *,
        sort_by: Literal["name", "last_updated"] | str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListEnvironmentsResponse:
        """The configured environments (``GET /agent/environments``).

        ``sort_by``: ``name`` or ``last_updated`` (the server's default).
        """
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_ENVIRONMENTS,
                params={"sort_by": sort_by, **(extra_query or {})},
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )


class AsyncEnvironments:
    """``client.environments`` of :class:`AsyncDispatch`: the same methods as :class:`Environments`, awaited."""

    def __init__(self, client: AsyncDispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> AsyncEnvironmentsWithRawResponse:
        return AsyncEnvironmentsWithRawResponse(self)

    async def list(
        self,
        *,
        sort_by: Literal["name", "last_updated"] | str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListEnvironmentsResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_ENVIRONMENTS,
                params={"sort_by": sort_by, **(extra_query or {})},
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )


class EnvironmentsWithRawResponse:
    """``client.with_raw_response.environments``: the same methods, returning :class:`APIResponse`."""

    def __init__(self, environments: Environments) -> None:
        self.list = to_raw_response_wrapper(environments.list)


class AsyncEnvironmentsWithRawResponse:
    def __init__(self, environments: AsyncEnvironments) -> None:
        self.list = async_to_raw_response_wrapper(environments.list)
