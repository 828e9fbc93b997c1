"""``/agent/schedules``: the team's scheduled agents. Each firing of a schedule creates one run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

from .._base_client import RequestOptions, model_parser
from .._response import async_to_raw_response_wrapper, to_raw_response_wrapper
from .._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ..types import AgentConfigParam, DeleteScheduleResponse, ListSchedulesResponse, ScheduledAgentItem

if TYPE_CHECKING:
    from .._client import AsyncDispatch, Dispatch

__all__ = ["Schedules", "AsyncSchedules", "SchedulesWithRawResponse", "AsyncSchedulesWithRawResponse"]

_SCHEDULES = "agent/schedules"

_parse_schedule = model_parser(ScheduledAgentItem.model_validate)
_parse_list = model_parser(ListSchedulesResponse.model_validate)
_parse_deleted = model_parser(DeleteScheduleResponse.model_validate)


def _schedule_path(schedule_id: str, action: str = "") -> str:
    if not schedule_id:
        raise ValueError("schedule_id must be a non-empty string")
    return f"{_SCHEDULES}/{quote(schedule_id, safe='')}{action}"


def _body(
    name: str,
    cron_schedule: str,
    *,
    prompt: str | None,
    timezone: str | None,
    agent_config: AgentConfigParam | None,
    metadata: Mapping[str, str] | None,
    enabled: bool | None,
    extra_body: Mapping[str, object] | None,
) -> dict[str, object]:
    fields: dict[str, object | None] = {
        "name": name,
        "cron_schedule": cron_schedule,
        "prompt": prompt,
        "timezone": timezone,
        "agent_config": None if agent_config is None else dict(agent_config),
        "metadata": None if metadata is None else dict(metadata),
        "enabled": enabled,
    }
    body: dict[str, object] = {k: v for k, v in fields.items() if v is not None}
    body.update(extra_body or {})
    return body


def _options(
    method: str,
    path: str,
    *,
    json_data: object = NOT_GIVEN,
    idempotency_key: str | None = None,
    extra_headers: Mapping[str, str] | None,
    extra_query: Mapping[str, object] | None,
    timeout: TimeoutTypes | NotGiven,
    max_retries: int | NotGiven,
) -> RequestOptions:
    return RequestOptions(
        method=method,
        path=path,
        params=extra_query,
        json_data=json_data,
        headers=extra_headers,
        timeout=timeout,
        max_retries=max_retries,
        idempotency_key=idempotency_key,
    )


class Schedules:
    """``client.schedules``: the typed surface of ``/agent/schedules``."""

    def __init__(self, client: Dispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> SchedulesWithRawResponse:
        return SchedulesWithRawResponse(self)

    def create(
        self,
        *,
        name: str,
        cron_schedule: str,
        prompt: str | None = None,
        timezone: str | None = None,
        agent_config: AgentConfigParam | None = None,
        metadata: Mapping[str, str] | None = None,
        enabled: bool | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ScheduledAgentItem:
        """Creates a schedule (``POST /agent/schedules``, 201). ``cron_schedule`` has 5 fields, read in UTC
        unless ``timezone`` (an IANA name); ``prompt`` is required unless ``agent_config`` names a
        ``skill_spec``; ``name`` is unique in the team (ConflictError otherwise).

        Every attempt of one call carries the same Idempotency-Key (``idempotency_key`` or a generated one).
        """
        body = _body(
            name,
            cron_schedule,
            prompt=prompt,
            timezone=timezone,
            agent_config=agent_config,
            metadata=metadata,
            enabled=enabled,
            extra_body=extra_body,
        )
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "POST",
                _SCHEDULES,
                json_data=body,
                idempotency_key=idempotency_key,
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_schedule,
        )

    def list(
        self,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListSchedulesResponse:
        """The team's schedules sorted by name (``GET /agent/schedules``), in ``.schedules``."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "GET",
                _SCHEDULES,
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )

    def retrieve(
        self,
        schedule_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ScheduledAgentItem:
        """One schedule (``GET /agent/schedules/{id}``); NotFoundError for an unknown id."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "GET",
                _schedule_path(schedule_id),
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_schedule,
        )

    def update(
        self,
        schedule_id: str,
        *,
        name: str,
        cron_schedule: str,
        enabled: bool,
        prompt: str | None = None,
        timezone: str | None = None,
        agent_config: AgentConfigParam | None = None,
        metadata: Mapping[str, str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ScheduledAgentItem:
        """Replaces a schedule (``PUT /agent/schedules/{id}``): what is left out takes its default (no
        ``timezone`` is UTC, no ``agent_config`` is none)."""
        body = _body(
            name,
            cron_schedule,
            prompt=prompt,
            timezone=timezone,
            agent_config=agent_config,
            metadata=metadata,
            enabled=enabled,
            extra_body=extra_body,
        )
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "PUT",
                _schedule_path(schedule_id),
                json_data=body,
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_schedule,
        )

    def delete(
        self,
        schedule_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> DeleteScheduleResponse:
        """Deletes a schedule (``DELETE /agent/schedules/{id}``); the runs it made are kept."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "DELETE",
                _schedule_path(schedule_id),
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_deleted,
        )

    def pause(
        self,
        schedule_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ScheduledAgentItem:
        """Stops the schedule firing (``POST /agent/schedules/{id}/pause``) until it is resumed."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "POST",
                _schedule_path(schedule_id, "/pause"),
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_schedule,
        )

    def resume(
        self,
        schedule_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ScheduledAgentItem:
        """Fires the schedule again from its next fire time (``POST /agent/schedules/{id}/resume``); the
        slots missed while paused do not fire."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "POST",
                _schedule_path(schedule_id, "/resume"),
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_schedule,
        )


class AsyncSchedules:
    """``client.schedules`` of :class:`AsyncDispatch`: the same methods as :class:`Schedules`, awaited."""

    def __init__(self, client: AsyncDispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> AsyncSchedulesWithRawResponse:
        return AsyncSchedulesWithRawResponse(self)

    async def create(
        self,
        *,
        name: str,
        cron_schedule: str,
        prompt: str | None = None,
        timezone: str | None = None,
        agent_config: AgentConfigParam | None = None,
        metadata: Mapping[str, str] | None = None,
        enabled: bool | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ScheduledAgentItem:
        body = _body(
            name,
            cron_schedule,
            prompt=prompt,
            timezone=timezone,
            agent_config=agent_config,
            metadata=metadata,
            enabled=enabled,
            extra_body=extra_body,
        )
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "POST",
                _SCHEDULES,
                json_data=body,
                idempotency_key=idempotency_key,
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_schedule,
        )

    async def list(
        self,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListSchedulesResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "GET",
                _SCHEDULES,
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )

    async def retrieve(
        self,
        schedule_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ScheduledAgentItem:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "GET",
                _schedule_path(schedule_id),
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_schedule,
        )

    async def update(
        self,
        schedule_id: str,
        *,
        name: str,
        cron_schedule: str,
        enabled: bool,
        prompt: str | None = None,
        timezone: str | None = None,
        agent_config: AgentConfigParam | None = None,
        metadata: Mapping[str, str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ScheduledAgentItem:
        body = _body(
            name,
            cron_schedule,
            prompt=prompt,
            timezone=timezone,
            agent_config=agent_config,
            metadata=metadata,
            enabled=enabled,
            extra_body=extra_body,
        )
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "PUT",
                _schedule_path(schedule_id),
                json_data=body,
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_schedule,
        )

    async def delete(
        self,
        schedule_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> DeleteScheduleResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "DELETE",
                _schedule_path(schedule_id),
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_deleted,
        )

    async def pause(
        self,
        schedule_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ScheduledAgentItem:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "POST",
                _schedule_path(schedule_id, "/pause"),
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_schedule,
        )

    async def resume(
        self,
        schedule_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ScheduledAgentItem:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            _options(
                "POST",
                _schedule_path(schedule_id, "/resume"),
                extra_headers=extra_headers,
                extra_query=extra_query,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_schedule,
        )


class SchedulesWithRawResponse:
    """``client.with_raw_response.schedules``: the same methods, returning :class:`APIResponse`."""

    def __init__(self, schedules: Schedules) -> None:
        self.create = to_raw_response_wrapper(schedules.create)
        self.list = to_raw_response_wrapper(schedules.list)
        self.retrieve = to_raw_response_wrapper(schedules.retrieve)
        self.update = to_raw_response_wrapper(schedules.update)
        self.delete = to_raw_response_wrapper(schedules.delete)
        self.pause = to_raw_response_wrapper(schedules.pause)
        self.resume = to_raw_response_wrapper(schedules.resume)


class AsyncSchedulesWithRawResponse:
    def __init__(self, schedules: AsyncSchedules) -> None:
        self.create = async_to_raw_response_wrapper(schedules.create)
        self.list = async_to_raw_response_wrapper(schedules.list)
        self.retrieve = async_to_raw_response_wrapper(schedules.retrieve)
        self.update = async_to_raw_response_wrapper(schedules.update)
        self.delete = async_to_raw_response_wrapper(schedules.delete)
        self.pause = async_to_raw_response_wrapper(schedules.pause)
        self.resume = async_to_raw_response_wrapper(schedules.resume)
