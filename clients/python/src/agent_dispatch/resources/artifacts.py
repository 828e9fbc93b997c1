"""``/agent/artifacts``: a run's FILE artifacts (the delivered ``changes.patch``) by their ``artifact_uid``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx

from .._base_client import RequestOptions, model_parser
from .._response import async_to_raw_response_wrapper, to_raw_response_wrapper
from .._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ..types import FileArtifactResponse

if TYPE_CHECKING:
    from .._client import AsyncDispatch, Dispatch

__all__ = ["Artifacts", "AsyncArtifacts", "ArtifactsWithRawResponse", "AsyncArtifactsWithRawResponse"]

_parse_artifact = model_parser(FileArtifactResponse.model_validate)


def _parse_bytes(response: httpx.Response) -> bytes:
    return response.content


def _artifact_path(uid: str) -> str:
    if not uid:
        raise ValueError("uid must be a non-empty string")
    return f"agent/artifacts/{quote(uid, safe='')}"


def _get_options(
    uid: str,
    extra_headers: Mapping[str, str] | None,
    extra_query: Mapping[str, object] | None,
    timeout: TimeoutTypes | NotGiven,
    max_retries: int | NotGiven,
) -> RequestOptions:
    return RequestOptions(
        method="GET",
        path=_artifact_path(uid),
        params=extra_query,
        headers=extra_headers,
        timeout=timeout,
        max_retries=max_retries,
    )


def _download_options(
    uid: str,
    extra_headers: Mapping[str, str] | None,
    timeout: TimeoutTypes | NotGiven,
    max_retries: int | NotGiven,
) -> RequestOptions:
    # The route answers 302 to a signed link on the server, which serves the bytes.
    return RequestOptions(
        method="GET",
        path=f"{_artifact_path(uid)}/download",
        headers={"Accept": "*/*", **(extra_headers or {})},
        timeout=timeout,
        max_retries=max_retries,
        follow_redirects=True,
    )


class Artifacts:
    """``client.artifacts``: the typed surface of ``/agent/artifacts``."""

    def __init__(self, client: Dispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> ArtifactsWithRawResponse:
        return ArtifactsWithRawResponse(self)

    def get(
        self,
        uid: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> FileArtifactResponse:
        """The artifact with ``data.download_url``, a signed link valid until ``data.expires_at``
        (``GET /agent/artifacts/{uid}``)."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            _get_options(uid, extra_headers, extra_query, timeout, max_retries), _parse_artifact
        )

    retrieve = get
    """The same as :meth:`get` (the name the Oz SDKs use)."""

    def download(
        self,
        uid: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> bytes:
        """The artifact's bytes (``GET /agent/artifacts/{uid}/download``, following its redirect)."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            _download_options(uid, extra_headers, timeout, max_retries), _parse_bytes
        )


class AsyncArtifacts:
    """``client.artifacts`` of :class:`AsyncDispatch`: the same methods as :class:`Artifacts`, awaited."""

    def __init__(self, client: AsyncDispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> AsyncArtifactsWithRawResponse:
        return AsyncArtifactsWithRawResponse(self)

    async def get(
        self,
        uid: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> FileArtifactResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            _get_options(uid, extra_headers, extra_query, timeout, max_retries), _parse_artifact
        )

    retrieve = get

    async def download(
        self,
        uid: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> bytes:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            _download_options(uid, extra_headers, timeout, max_retries), _parse_bytes
        )


class ArtifactsWithRawResponse:
    """``client.with_raw_response.artifacts``: the same methods, returning :class:`APIResponse`."""

    def __init__(self, artifacts: Artifacts) -> None:
        self.get = to_raw_response_wrapper(artifacts.get)
        self.retrieve = to_raw_response_wrapper(artifacts.get)
        self.download = to_raw_response_wrapper(artifacts.download)


class AsyncArtifactsWithRawResponse:
    def __init__(self, artifacts: AsyncArtifacts) -> None:
        self.get = async_to_raw_response_wrapper(artifacts.get)
        self.retrieve = async_to_raw_response_wrapper(artifacts.get)
        self.download = async_to_raw_response_wrapper(artifacts.download)
