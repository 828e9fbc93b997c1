"""client.webhooks: the team's outbound webhooks (/webhooks), admin keys only."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agent_dispatch import (
    AsyncDispatch,
    BadRequestError,
    CreatedWebhook,
    Dispatch,
    ListWebhookDeliveriesResponse,
    ListWebhooksResponse,
    NotFoundError,
    PermissionDeniedError,
    Webhook,
    WebhookDelivery,
)

from .support import REPO_ROOT, DispatchServer, require_route, start_server

live = pytest.mark.live


class Receiver:
    """A loopback receiver answering every delivery with ``status``; ``bodies`` keeps what arrived."""

    def __init__(self) -> None:
        self.status = 200
        self.bodies: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length", "0"))
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(receiver.status)
                self.end_headers()
                self.wfile.write(b"answered")

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def webhook_server() -> Iterator[DispatchServer]:
    """A server that may send to loopback addresses, with one attempt per delivery."""
    started = start_server(
        DISPATCH_WEBHOOK_ALLOW_PRIVATE="true",
        DISPATCH_WEBHOOK_MAX_ATTEMPTS="1",
        DISPATCH_WEBHOOK_RETRY_BASE_MS="50",
    )
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    try:
        yield made
    finally:
        made.server.shutdown()


def wait_for(check: Any, what: str, timeout_s: float = 30) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@live
def test_webhook_lifecycle(webhook_server: DispatchServer, receiver: Receiver) -> None:
    require_route(webhook_server, "webhooks")
    with Dispatch(api_key=webhook_server.admin_key, base_url=webhook_server.base_url, timeout=20) as client:
        created = client.webhooks.create(url=receiver.url, events=["run.created"], description="CI")
        assert isinstance(created, CreatedWebhook)
        assert created.secret.startswith("whsec_")
        assert created.events == ["run.created"]
        listed = client.webhooks.list()
        assert isinstance(listed, ListWebhooksResponse)
        assert [w.id for w in listed.webhooks] == [created.id]
        shown = client.webhooks.retrieve(created.id)
        assert isinstance(shown, Webhook) and not isinstance(shown, CreatedWebhook)
        assert "secret" not in (shown.model_extra or {})

        receiver.status = 500
        run = client.runs.create(prompt="$ echo python")

        def failed() -> WebhookDelivery | None:
            page = client.webhooks.list_deliveries(created.id, limit=5)
            assert isinstance(page, ListWebhookDeliveriesResponse)
            return next((d for d in page.deliveries if d.state == "failed"), None)

        delivery: WebhookDelivery = wait_for(failed, "the delivery to fail")
        assert delivery.run_id == run.run_id
        assert delivery.event_type == "run.created"
        assert delivery.last_status == 500
        assert delivery.response_excerpt == "answered"

        receiver.status = 200
        again = client.webhooks.redeliver(created.id, delivery.id)
        assert again.state == "pending" and again.attempts == 0
        wait_for(
            lambda: client.webhooks.list_deliveries(created.id).deliveries[0].state == "succeeded",
            "the redelivery",
        )
        assert [b["type"] for b in receiver.bodies] == ["run.created", "run.created"]
        assert receiver.bodies[-1]["data"]["run"]["run_id"] == run.run_id

        with pytest.raises(NotFoundError):
            client.webhooks.redeliver(created.id, 999_999)
        client.webhooks.delete(created.id)
        with pytest.raises(NotFoundError):
            client.webhooks.retrieve(created.id)


@live
@pytest.mark.anyio
async def test_webhooks_async(webhook_server: DispatchServer, receiver: Receiver) -> None:
    require_route(webhook_server, "webhooks")
    async with AsyncDispatch(api_key=webhook_server.admin_key, base_url=webhook_server.base_url) as client:
        created = await client.webhooks.create(url=receiver.url)
        assert len(created.events) == 4
        assert [w.id for w in (await client.webhooks.list()).webhooks] == [created.id]
        raw = await client.with_raw_response.webhooks.retrieve(created.id)
        assert raw.status_code == 200 and raw.parse().id == created.id
        assert (await client.webhooks.list_deliveries(created.id)).page_info.has_next_page is False
        await client.webhooks.delete(created.id)


@live
def test_refusals(client: Dispatch, server: DispatchServer, member_key: str) -> None:
    require_route(server, "webhooks")
    # This server keeps the default: private targets are refused.
    with pytest.raises(BadRequestError, match="loopback"):
        client.webhooks.create(url="http://127.0.0.1:9/hooks")
    with Dispatch(api_key=member_key, base_url=server.base_url) as member, pytest.raises(PermissionDeniedError):
        member.webhooks.list()
    with pytest.raises(ValueError, match="delivery_id"):
        client.webhooks.redeliver("wh_x", 0)
    with pytest.raises(TypeError, match="list of event types"):
        client.webhooks.create(url="https://example.com/", events="run.created")


def test_models_match_openapi() -> None:
    path = REPO_ROOT / "openapi.json"
    if not path.exists():
        pytest.skip("openapi.json not found (the library is tested outside its repository)")
    schemas: dict[str, Any] = json.loads(path.read_text())["components"]["schemas"]
    for model, name in [
        (Webhook, "Webhook"),
        (CreatedWebhook, "CreatedWebhook"),
        (ListWebhooksResponse, "ListWebhooksResponse"),
        (WebhookDelivery, "WebhookDelivery"),
        (ListWebhookDeliveriesResponse, "ListWebhookDeliveriesResponse"),
    ]:
        fields: dict[str, Any] = model.model_fields
        assert set(fields) == set(schemas[name]["properties"]), name
        required = {n for n, info in fields.items() if info.is_required()}
        assert required == set(schemas[name].get("required", [])), name
