"""``/agent/identities``: the team's service accounts (agent identities). Admin keys only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx

from .._base_client import RequestOptions, model_parser
from .._response import async_to_raw_response_wrapper, to_raw_response_wrapper
from .._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ..types import AgentIdentity, ListAgentIdentitiesResponse

if TYPE_CHECKING:
    from .._client import AsyncDispatch, Dispatch

__all__ = ["Identities", "AsyncIdentities", "IdentitiesWithRawResponse", "AsyncIdentitiesWithRawResponse"]

_IDENTITIES = "agent/identities"

_parse_identity = model_parser(AgentIdentity.model_validate)
_parse_list = model_parser(ListAgentIdentitiesResponse.model_validate)


def _parse_no_content(response: httpx.Response) -> None:
    """DELETE answers 204 without a body."""
    return None


def _identity_path(uid: str) -> str:
    if not uid:
        raise ValueError("uid must be a non-empty string")
    return f"{_IDENTITIES}/{quote(uid, safe='')}"


def _body(
    name: str | None,
    description: str | None,
    prompt: str | None,
    base_model: str | None,
    skills: Sequence[str] | None,
    extra_body: Mapping[str, object] | None,
) -> dict[str, object]:
    # None leaves a field out: on update, unchanged (an empty string or list clears it).
    fields: dict[str, object | None] = {
        "name": name,
        "description": description,
        "prompt": prompt,
        "base_model": base_model,
        "skills": None if skills is None else _skill_list(skills),
    }
    body: dict[str, object] = {k: v for k, v in fields.items() if v is not None}
    body.update(extra_body or {})
    return body


def _skill_list(skills: Sequence[str]) -> list[str]:
    if isinstance(skills, str):
        raise TypeError("skills must be a list of skill specs, not one string")
    return list(skills)


class Identities:
    """``client.identities``: the typed surface of ``/agent/identities`` (admin keys only; other keys
    get PermissionDeniedError)."""

    def __init__(self, client: Dispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> IdentitiesWithRawResponse:
        return IdentitiesWithRawResponse(self)

    def create(
        self,
        *,
        name: str,
        description: str | None = None,
        prompt: str | None = None,
        base_model: str | None = None,
        skills: Sequence[str] | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> AgentIdentity:
        """Creates a service account of the team (``POST /agent/identities``, 201). ``prompt``,
        ``base_model`` and ``skills`` (skill specs) are the defaults of runs executed as it.

        Every attempt of one call carries the same Idempotency-Key (``idempotency_key`` or a generated one).
        """
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_IDENTITIES,
                params=extra_query,
                json_data=_body(name, description, prompt, base_model, skills, extra_body),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parse_identity,
        )

    def list(
        self,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListAgentIdentitiesResponse:
        """The team's service accounts (``GET /agent/identities``), in ``.agents``."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_IDENTITIES,
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )

    def retrieve(
        self,
        uid: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> AgentIdentity:
        """One service account (``GET /agent/identities/{uid}``); NotFoundError for an unknown uid."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_identity_path(uid),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_identity,
        )

    def update(
        self,
        uid: str,
        *,
        name: str | None = None,
        description: str | None = None,
        prompt: str | None = None,
        base_model: str | None = None,
        skills: Sequence[str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> AgentIdentity:
        """Changes a service account (``PUT /agent/identities/{uid}``): fields left ``None`` are unchanged;
        an empty string or list clears one (``description=""``, ``skills=[]``)."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="PUT",
                path=_identity_path(uid),
                params=extra_query,
                json_data=_body(name, description, prompt, base_model, skills, extra_body),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_identity,
        )

    def delete(
        self,
        uid: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> None:
        """Deletes a service account and revokes its API keys (``DELETE /agent/identities/{uid}``, 204).
        The team's default identity cannot be deleted."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="DELETE",
                path=_identity_path(uid),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_no_content,
        )


class AsyncIdentities:
    """``client.identities`` of :class:`AsyncDispatch`: the same methods as :class:`Identities`, awaited."""

    def __init__(self, client: AsyncDispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> AsyncIdentitiesWithRawResponse:
        return AsyncIdentitiesWithRawResponse(self)

    async def create(
        self,
        *,
        name: str,
        description: str | None = None,
        prompt: str | None = None,
        base_model: str | None = None,
        skills: Sequence[str] | None = None,
        idempotency_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> AgentIdentity:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_IDENTITIES,
                params=extra_query,
                json_data=_body(name, description, prompt, base_model, skills, extra_body),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
                idempotency_key=idempotency_key,
            ),
            _parse_identity,
        )

    async def list(
        self,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListAgentIdentitiesResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_IDENTITIES,
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )

    async def retrieve(
        self,
        uid: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> AgentIdentity:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_identity_path(uid),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_identity,
        )

    async def update(
        self,
        uid: str,
        *,
        name: str | None = None,
        description: str | None = None,
        prompt: str | None = None,
        base_model: str | None = None,
        skills: Sequence[str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> AgentIdentity:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="PUT",
                path=_identity_path(uid),
                params=extra_query,
                json_data=_body(name, description, prompt, base_model, skills, extra_body),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_identity,
        )

    async def delete(
        self,
        uid: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> None:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="DELETE",
                path=_identity_path(uid),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_no_content,
        )


class IdentitiesWithRawResponse:
    """``client.with_raw_response.identities``: the same methods, returning :class:`APIResponse`."""

    def __init__(self, identities: Identities) -> None:
        self.create = to_raw_response_wrapper(identities.create)
        self.list = to_raw_response_wrapper(identities.list)
        self.retrieve = to_raw_response_wrapper(identities.retrieve)
        self.update = to_raw_response_wrapper(identities.update)
        self.delete = to_raw_response_wrapper(identities.delete)


class AsyncIdentitiesWithRawResponse:
    def __init__(self, identities: AsyncIdentities) -> None:
        self.create = async_to_raw_response_wrapper(identities.create)
        self.list = async_to_raw_response_wrapper(identities.list)
        self.retrieve = async_to_raw_response_wrapper(identities.retrieve)
        self.update = async_to_raw_response_wrapper(identities.update)
        self.delete = async_to_raw_response_wrapper(identities.delete)
