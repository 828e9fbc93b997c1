"""``/agent`` (GET): the skills a run can name in ``skill=``, as agents with variants."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from .._base_client import RequestOptions, model_parser
from .._response import async_to_raw_response_wrapper, to_raw_response_wrapper
from .._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ..types import ListAgentsResponse

if TYPE_CHECKING:
    from .._client import AsyncDispatch, Dispatch

__all__ = ["Agents", "AsyncAgents", "AgentsWithRawResponse", "AsyncAgentsWithRawResponse"]

_AGENTS = "agent"

_parse_list = model_parser(ListAgentsResponse.model_validate)


class Agents:
    """``client.agents``: the typed surface of ``GET /agent``."""

    def __init__(self, client: Dispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> AgentsWithRawResponse:
        return AgentsWithRawResponse(self)

    def list(
        self,
        *,
        repo: str | None = None,
        sort_by: Literal["name", "last_run"] | str | None = None,
        refresh: bool | None = None,
        include_malformed_skills: bool | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListAgentsResponse:
        """The skills the server can resolve: one agent per skill name, a variant per source (``GET /agent``).

        ``repo`` (``owner/repo``) keeps that repository's skills; ``sort_by``: ``name`` (default) or
        ``last_run``; ``include_malformed_skills`` also lists SKILL.md files that cannot be parsed (with
        ``error`` set); ``refresh`` asks the server to look for skills again.
        """
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_AGENTS,
                params={
                    "repo": repo,
                    "sort_by": sort_by,
                    "refresh": refresh,
                    "include_malformed_skills": include_malformed_skills,
                    **(extra_query or {}),
                },
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )


class AsyncAgents:
    """``client.agents`` of :class:`AsyncDispatch`: the same methods as :class:`Agents`, awaited."""

    def __init__(self, client: AsyncDispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> AsyncAgentsWithRawResponse:
        return AsyncAgentsWithRawResponse(self)

    async def list(
        self,
        *,
        repo: str | None = None,
        sort_by: Literal["name", "last_run"] | str | None = None,
        refresh: bool | None = None,
        include_malformed_skills: bool | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListAgentsResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_AGENTS,
                params={
                    "repo": repo,
                    "sort_by": sort_by,
                    "refresh": refresh,
                    "include_malformed_skills": include_malformed_skills,
                    **(extra_query or {}),
                },
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )


class AgentsWithRawResponse:
    """``client.with_raw_response.agents``: the same methods, returning :class:`APIResponse`."""

    def __init__(self, agents: Agents) -> None:
        self.list = to_raw_response_wrapper(agents.list)


class AsyncAgentsWithRawResponse:
    def __init__(self, agents: AsyncAgents) -> None:
        self.list = async_to_raw_response_wrapper(agents.list)
