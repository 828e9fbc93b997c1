"""Client construction: environment variables, defaults, headers, context managers."""

from __future__ import annotations

import json

import httpx
import pytest

from agent_dispatch import DEFAULT_BASE_URL, AgentConfig, AsyncDispatch, Dispatch, DispatchError
from agent_dispatch.types import Harness


def test_reads_key_and_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISPATCH_API_KEY", "dsp_from_env")
    monkeypatch.setenv("DISPATCH_BASE_URL", "https://dispatch.example.com/api/v1/")
    client = Dispatch()
    assert client.api_key == "dsp_from_env"
    assert str(client.base_url) == "https://dispatch.example.com/api/v1/"
    explicit = AsyncDispatch(api_key="dsp_given", base_url="http://other:9/api/v1")
    assert explicit.api_key == "dsp_given" and str(explicit.base_url) == "http://other:9/api/v1/"


def test_defaults_and_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPATCH_API_KEY", raising=False)
    monkeypatch.delenv("DISPATCH_BASE_URL", raising=False)
    with pytest.raises(DispatchError, match="DISPATCH_API_KEY"):
        Dispatch()
    client = Dispatch(api_key="k")
    assert str(client.base_url) == DEFAULT_BASE_URL + "/"
    assert client.max_retries == 2


def test_context_manager_closes_only_its_own_pool() -> None:
    with Dispatch(api_key="k") as client:
        assert not client.is_closed
    assert client.is_closed
    shared = httpx.Client()
    with Dispatch(api_key="k", http_client=shared):
        pass
    assert not shared.is_closed
    shared.close()


@pytest.mark.anyio
async def test_async_context_manager() -> None:
    async with AsyncDispatch(api_key="k") as client:
        assert not client.is_closed
    assert client.is_closed


def test_headers_urls_and_bodies() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith("/cancel"):
            return httpx.Response(200, json="r/1")
        if request.method == "POST":
            return httpx.Response(200, json={"run_id": "r", "task_id": "r", "state": "QUEUED", "at_capacity": True})
        return httpx.Response(200, json={"status": "ok"})

    with Dispatch(
        api_key="dsp_abc",
        base_url="http://dispatch.test/api/v1/",
        default_headers={"X-Team": "a"},
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    ) as client:
        client.get("agent/x", extra_headers={"X-Request": "b"}, params={"n": 1, "skip": None})
        client.with_raw_response.post("/hooks/thing", body={"k": 1})
        created = client.runs.create(
            prompt="p",
            config=AgentConfig(name="n", harness=Harness(type="scripted")),
            metadata={"k": "v"},
            extra_body={"future": True},
        )
        assert created.at_capacity is True
        assert client.runs.cancel("r/1") == "r/1"
    first, second, create, cancel = seen
    assert first.headers["authorization"] == "Bearer dsp_abc"
    assert first.headers["user-agent"].startswith("agent-dispatch-python/")
    assert first.headers["x-team"] == "a" and first.headers["x-request"] == "b"
    assert str(first.url) == "http://dispatch.test/api/v1/agent/x?n=1"
    assert "x-dispatch-raw-response" not in second.headers  # the internal marker is never sent
    assert str(second.url) == "http://dispatch.test/hooks/thing"
    assert second.headers["idempotency-key"].startswith("dispatch-py-")
    assert json.loads(create.content) == {
        "prompt": "p",
        "config": {"name": "n", "harness": {"type": "scripted"}},
        "metadata": {"k": "v"},
        "future": True,
    }
    assert cancel.url.raw_path == b"/api/v1/agent/runs/r%2F1/cancel"  # ids are path-escaped
