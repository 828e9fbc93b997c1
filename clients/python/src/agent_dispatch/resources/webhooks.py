"""``/webhooks``: the team's outbound webhooks and their deliveries. Admin keys only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx

from .._base_client import RequestOptions, model_parser
from .._response import async_to_raw_response_wrapper, to_raw_response_wrapper
from .._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ..types import (
    CreatedWebhook,
    ListWebhookDeliveriesResponse,
    ListWebhooksResponse,
    Webhook,
    WebhookDelivery,
    WebhookEventType,
)

if TYPE_CHECKING:
    from .._client import AsyncDispatch, Dispatch

__all__ = ["Webhooks", "AsyncWebhooks", "WebhooksWithRawResponse", "AsyncWebhooksWithRawResponse"]

_WEBHOOKS = "webhooks"

_parse_created = model_parser(CreatedWebhook.model_validate)
_parse_webhook = model_parser(Webhook.model_validate)
_parse_list = model_parser(ListWebhooksResponse.model_validate)
_parse_deliveries = model_parser(ListWebhookDeliveriesResponse.model_validate)
_parse_delivery = model_parser(WebhookDelivery.model_validate)


def _parse_no_content(response: httpx.Response) -> None:
    """DELETE answers 204 without a body."""
    return None


def _webhook_path(webhook_id: str) -> str:
    if not webhook_id:
        raise ValueError("webhook_id must be a non-empty string")
    return f"{_WEBHOOKS}/{quote(webhook_id, safe='')}"


def _redeliver_path(webhook_id: str, delivery_id: int) -> str:
    if isinstance(delivery_id, bool) or delivery_id < 1:
        raise ValueError("delivery_id must be a delivery's id (a positive int)")
    return f"{_webhook_path(webhook_id)}/deliveries/{delivery_id}/redeliver"


def _create_body(
    url: str,
    events: Sequence[WebhookEventType | str] | None,
    description: str | None,
    extra_body: Mapping[str, object] | None,
) -> dict[str, object]:
    if isinstance(events, str):
        raise TypeError("events must be a list of event types, not one string")
    body: dict[str, object] = {"url": url}
    if events is not None:
        body["events"] = list(events)
    if description is not None:
        body["description"] = description
    body.update(extra_body or {})
    return body


def _page_query(limit: int | None, cursor: str | None, extra_query: Mapping[str, object] | None) -> dict[str, object]:
    query: dict[str, object] = {}
    if limit is not None:
        query["limit"] = limit
    if cursor is not None:
        query["cursor"] = cursor
    query.update(extra_query or {})
    return query


class Webhooks:
    """``client.webhooks``: the typed surface of ``/webhooks`` (admin keys only; other keys get
    PermissionDeniedError). Deliveries are signed as Standard Webhooks says: a receiver verifies them with
    the secret ``create`` answers, e.g. with the ``standardwebhooks`` package."""

    def __init__(self, client: Dispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> WebhooksWithRawResponse:
        return WebhooksWithRawResponse(self)

    def create(
        self,
        *,
        url: str,
        events: Sequence[WebhookEventType | str] | None = None,
        description: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> CreatedWebhook:
        """Sends the team's run events to ``url`` (``POST /webhooks``, 201); all event types unless
        ``events`` names some. The answer's ``secret`` is shown only here. A loopback, private, link-local
        or metadata address is refused (BadRequestError) unless the server allows private targets."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_WEBHOOKS,
                params=extra_query,
                json_data=_create_body(url, events, description, extra_body),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_created,
        )

    def list(
        self,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListWebhooksResponse:
        """The team's webhooks, oldest first (``GET /webhooks``), in ``.webhooks``."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_WEBHOOKS,
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )

    def retrieve(
        self,
        webhook_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> Webhook:
        """One webhook, without its secret (``GET /webhooks/{id}``); NotFoundError for an unknown id."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_webhook_path(webhook_id),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_webhook,
        )

    def delete(
        self,
        webhook_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> None:
        """Stops sending to a webhook and drops its deliveries (``DELETE /webhooks/{id}``, 204)."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="DELETE",
                path=_webhook_path(webhook_id),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_no_content,
        )

    def list_deliveries(
        self,
        webhook_id: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListWebhookDeliveriesResponse:
        """A page of the webhook's deliveries, newest first (``GET /webhooks/{id}/deliveries``); pass
        ``page_info.next_cursor`` as ``cursor`` for the next one."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=f"{_webhook_path(webhook_id)}/deliveries",
                params=_page_query(limit, cursor, extra_query),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_deliveries,
        )

    def redeliver(
        self,
        webhook_id: str,
        delivery_id: int,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> WebhookDelivery:
        """Sends a delivery again with fresh attempts, the same webhook-id (``POST …/redeliver``, 202);
        ConflictError while an attempt of it is under way."""
        return self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_redeliver_path(webhook_id, delivery_id),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_delivery,
        )


class AsyncWebhooks:
    """``client.webhooks`` of :class:`AsyncDispatch`: the same methods as :class:`Webhooks`, awaited."""

    def __init__(self, client: AsyncDispatch) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> AsyncWebhooksWithRawResponse:
        return AsyncWebhooksWithRawResponse(self)

    async def create(
        self,
        *,
        url: str,
        events: Sequence[WebhookEventType | str] | None = None,
        description: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> CreatedWebhook:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_WEBHOOKS,
                params=extra_query,
                json_data=_create_body(url, events, description, extra_body),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_created,
        )

    async def list(
        self,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListWebhooksResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_WEBHOOKS,
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_list,
        )

    async def retrieve(
        self,
        webhook_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> Webhook:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=_webhook_path(webhook_id),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_webhook,
        )

    async def delete(
        self,
        webhook_id: str,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> None:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="DELETE",
                path=_webhook_path(webhook_id),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_no_content,
        )

    async def list_deliveries(
        self,
        webhook_id: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> ListWebhookDeliveriesResponse:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="GET",
                path=f"{_webhook_path(webhook_id)}/deliveries",
                params=_page_query(limit, cursor, extra_query),
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_deliveries,
        )

    async def redeliver(
        self,
        webhook_id: str,
        delivery_id: int,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, object] | None = None,
        timeout: TimeoutTypes | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
    ) -> WebhookDelivery:
        return await self._client._request(  # pyright: ignore[reportPrivateUsage]
            RequestOptions(
                method="POST",
                path=_redeliver_path(webhook_id, delivery_id),
                params=extra_query,
                headers=extra_headers,
                timeout=timeout,
                max_retries=max_retries,
            ),
            _parse_delivery,
        )


class WebhooksWithRawResponse:
    """``client.with_raw_response.webhooks``: the same methods, returning :class:`APIResponse`."""

    def __init__(self, webhooks: Webhooks) -> None:
        self.create = to_raw_response_wrapper(webhooks.create)
        self.list = to_raw_response_wrapper(webhooks.list)
        self.retrieve = to_raw_response_wrapper(webhooks.retrieve)
        self.delete = to_raw_response_wrapper(webhooks.delete)
        self.list_deliveries = to_raw_response_wrapper(webhooks.list_deliveries)
        self.redeliver = to_raw_response_wrapper(webhooks.redeliver)


class AsyncWebhooksWithRawResponse:
    def __init__(self, webhooks: AsyncWebhooks) -> None:
        self.create = async_to_raw_response_wrapper(webhooks.create)
        self.list = async_to_raw_response_wrapper(webhooks.list)
        self.retrieve = async_to_raw_response_wrapper(webhooks.retrieve)
        self.delete = async_to_raw_response_wrapper(webhooks.delete)
        self.list_deliveries = async_to_raw_response_wrapper(webhooks.list_deliveries)
        self.redeliver = async_to_raw_response_wrapper(webhooks.redeliver)
