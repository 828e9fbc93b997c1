"""Raw responses (headers, status, parse) and calls to routes outside the typed surface."""

from __future__ import annotations

import pytest

from agent_dispatch import (
    APIResponse,
    AsyncDispatch,
    CreateRunResponse,
    Dispatch,
    NotFoundError,
    RunItem,
    RunsPage,
)

from .support import DispatchServer

pytestmark = pytest.mark.live


def test_raw_response_exposes_headers_and_status(client: Dispatch) -> None:
    created = client.runs.create(prompt="$ echo raw")
    raw = client.with_raw_response.runs.retrieve(created.run_id)
    assert isinstance(raw, APIResponse)
    assert raw.status_code == 200
    assert raw.headers["content-type"].startswith("application/json")
    assert raw.headers["x-request-id"]
    assert raw.retries_taken == 0
    assert raw.method == "GET" and raw.url.path == f"/api/v1/agent/runs/{created.run_id}"
    run = raw.parse()
    assert isinstance(run, RunItem) and run.run_id == created.run_id
    assert raw.parse() is run  # parsed once
    assert raw.json()["run_id"] == created.run_id


def test_raw_create_and_list(client: Dispatch) -> None:
    raw_created = client.with_raw_response.runs.create(prompt="$ echo raw")
    assert raw_created.status_code == 200
    assert isinstance(raw_created.parse(), CreateRunResponse)
    # The same as client.runs.with_raw_response.
    raw_page = client.runs.with_raw_response.list(limit=1)
    page = raw_page.parse()
    assert isinstance(page, RunsPage) and len(page.runs) == 1
    assert page.has_next_page()
    assert len(page.get_next_page().runs) == 1  # later pages come parsed


def test_raw_response_still_raises_errors(client: Dispatch) -> None:
    with pytest.raises(NotFoundError):
        client.with_raw_response.runs.retrieve("no-such-run")


def test_untyped_get_reaches_healthz_at_the_server_root(client: Dispatch, server: DispatchServer) -> None:
    assert client.get("/healthz") == {"status": "ok"}
    raw = client.with_raw_response.get("/healthz")
    assert raw.status_code == 200 and str(raw.url) == f"{server.root_url}/healthz"
    ready = client.get("/readyz")
    assert isinstance(ready, dict) and ready["status"] == "ready" and "api" in ready["roles"]
    assert "openapi" in client.get("openapi.json")  # relative: under /api/v1
    assert isinstance(client.get("/metrics"), str)  # not JSON: the text


def test_untyped_calls_to_api_routes(client: Dispatch) -> None:
    created = client.post("agent/run", body={"prompt": "$ echo untyped"}, cast_to=CreateRunResponse)
    assert created.state == "QUEUED"
    run = client.get(f"/api/v1/agent/runs/{created.run_id}", cast_to=RunItem)
    assert run.run_id == created.run_id
    page = client.get("agent/runs", params={"limit": 1})
    assert set(page) >= {"runs", "page_info"}
    with pytest.raises(NotFoundError):
        client.get("no/such/route")


def test_with_options_shares_the_pool(client: Dispatch, server: DispatchServer) -> None:
    other = client.with_options(max_retries=0, default_headers={"X-Trace": "t1"})
    assert other.max_retries == 0 and other.base_url == client.base_url
    assert other.get("/healthz") == {"status": "ok"}
    other.close()  # does not close the shared pool
    assert client.get("/healthz") == {"status": "ok"}


@pytest.mark.anyio
async def test_raw_and_untyped_async(async_client: AsyncDispatch) -> None:
    created = await async_client.runs.create(prompt="$ echo raw")
    raw = await async_client.with_raw_response.runs.retrieve(created.run_id)
    assert raw.status_code == 200 and raw.headers["x-request-id"]
    assert raw.parse().run_id == created.run_id

    raw_page = await async_client.with_raw_response.runs.list(limit=1)
    assert len(raw_page.parse().runs) == 1

    assert await async_client.get("/healthz") == {"status": "ok"}
    raw_health = await async_client.with_raw_response.get("/healthz")
    assert raw_health.status_code == 200
    posted = await async_client.post("agent/runs", body={"prompt": "$ echo p"}, cast_to=CreateRunResponse)
    assert posted.state == "QUEUED"
