"""``/agent/models``: the models a run can name in ``config.model_id``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .._base_client import RequestOptions, model_parser
from .._response import async_to_raw_response_wrapper, to_raw_response_wrapper
from .._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ..types import ListModelsResponse

if TYPE_CHECKING:
    from .._client import AsyncDispatch, Dispatch

__all__ = ["Models", "AsyncModels", "ModelsWithRawResponse", "AsyncModelsWithRawResponse"]

_MODELS = "agent/models"

_parse_list = model_parser(ListModelsResponse.model_validate)


class Models:
    """``client.models``: the typed surface of ``/agent/models``."""

    def __init__(self, client: Dispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> ModelsWithRawResponse:
        return ModelsWithRawResponse(self)

    def list(
        self,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListModelsResponse:
        """The configured models and the default one (``GET /agent/models``)."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_MODELS,
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )


class AsyncModels:
    """``client.models`` of :class:`AsyncDispatch`: the same methods as :class:`Models`, awaited."""

    def __init__(self, client: AsyncDispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> AsyncModelsWithRawResponse:
        return AsyncModelsWithRawResponse(self)

    async def list(
        self,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListModelsResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_MODELS,
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )


class ModelsWithRawResponse:
    """``client.with_raw_response.models``: the same methods, returning :class:`APIResponse`."""

    def __init__(self, models: Models) -> None:
        self.list = to_raw_response_wrapper(models.list)


class AsyncModelsWithRawResponse:
    def __init__(self, models: AsyncModels) -> None:
        self.list = async_to_raw_response_wrapper(models.list)
