"""Retries, backoff, idempotency keys and timeouts, with mocked transports (and the live server where
the point is what the server does with a retried request)."""

from __future__ import annotations

import email.utils
import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from agent_dispatch import (
    APIConnectionError,
    APIConnectionTimeoutError,
    AsyncDispatch,
    BadRequestError,
    Dispatch,
    InternalServerError,
    RateLimitError,
)

from .support import AsyncSleepRecorder, DispatchServer, SleepRecorder, record_async_sleeps, record_sleeps, unique

BASE = "http://dispatch.test/api/v1"

CREATED = {"run_id": "r1", "task_id": "r1", "state": "QUEUED", "at_capacity": False}


def problem(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    code = {400: "invalid_request", 409: "conflict", 429: "rate_limited", 500: "internal_error"}.get(status, "x")
    body = {
        "type": "t",
        "title": code,
        "status": status,
        "error": code,
        "error_code": code,
        "retryable": status in (409, 429, 500, 503),
        "instance": "/api/v1/agent/runs",
    }
    return httpx.Response(status, headers={"content-type": "application/problem+json", **(headers or {})}, json=body)


class Script:
    """A MockTransport handler answering requests with a list of responses (or exceptions), in order."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def sync_client(script: Script, max_retries: int = 2) -> tuple[Dispatch, SleepRecorder]:
    client = Dispatch(
        api_key="dsp_test",
        base_url=BASE,
        max_retries=max_retries,
        http_client=httpx.Client(transport=httpx.MockTransport(script)),
    )
    return client, record_sleeps(client)


def async_client(script: Script, max_retries: int = 2) -> tuple[AsyncDispatch, AsyncSleepRecorder]:
    client = AsyncDispatch(
        api_key="dsp_test",
        base_url=BASE,
        max_retries=max_retries,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(script)),
    )
    return client, record_async_sleeps(client)


def test_429_honours_retry_after() -> None:
    script = Script(problem(429, {"retry-after": "3"}), httpx.Response(200, json=CREATED))
    client, sleeps = sync_client(script)
    raw = client.with_raw_response.runs.create(prompt="p")
    assert raw.parse().run_id == "r1"
    assert sleeps.delays == [3.0]  # exactly what the server asked, no jitter
    assert raw.retries_taken == 1 and len(script.requests) == 2


def test_retry_after_ms_and_http_date() -> None:
    script = Script(problem(429, {"retry-after-ms": "1500", "retry-after": "9"}), httpx.Response(200, json=CREATED))
    client, sleeps = sync_client(script)
    client.runs.create(prompt="p")
    assert sleeps.delays == [1.5]  # retry-after-ms is the more precise of the two

    in_20s = email.utils.formatdate(time.time() + 20, usegmt=True)
    script = Script(problem(503, {"retry-after": in_20s}), httpx.Response(200, json=CREATED))
    client, sleeps = sync_client(script)
    client.runs.create(prompt="p")
    assert len(sleeps.delays) == 1 and 17 < sleeps.delays[0] <= 20


def test_retry_after_beyond_a_minute_falls_back_to_backoff() -> None:
    script = Script(problem(429, {"retry-after": "3600"}), httpx.Response(200, json=CREATED))
    client, sleeps = sync_client(script)
    client.runs.create(prompt="p")
    assert len(sleeps.delays) == 1 and 0.375 <= sleeps.delays[0] <= 0.5


def test_500_then_success_with_exponential_backoff_and_jitter() -> None:
    script = Script(problem(500), problem(500), httpx.Response(200, json=CREATED))
    client, sleeps = sync_client(script, max_retries=2)
    assert client.runs.create(prompt="p").run_id == "r1"
    assert len(sleeps.delays) == 2
    assert 0.375 <= sleeps.delays[0] <= 0.5  # 0.5 s less up to 25 % jitter
    assert 0.75 <= sleeps.delays[1] <= 1.0  # doubled


def test_gives_up_after_max_retries() -> None:
    script = Script(problem(500), problem(500), problem(500))
    client, sleeps = sync_client(script, max_retries=2)
    with pytest.raises(InternalServerError):
        client.runs.list()
    assert len(script.requests) == 3 and len(sleeps.delays) == 2


def test_no_retry_on_400() -> None:
    script = Script(problem(400), httpx.Response(200, json=CREATED))
    client, sleeps = sync_client(script)
    with pytest.raises(BadRequestError):
        client.runs.create(prompt="p")
    assert len(script.requests) == 1 and sleeps.delays == []


def test_x_should_retry_overrides_the_status_rule() -> None:
    script = Script(problem(400, {"x-should-retry": "true"}), httpx.Response(200, json=CREATED))
    client, _ = sync_client(script)
    client.runs.create(prompt="p")
    assert len(script.requests) == 2

    script = Script(problem(429, {"x-should-retry": "false"}))
    client, _ = sync_client(script)
    with pytest.raises(RateLimitError):
        client.runs.create(prompt="p")
    assert len(script.requests) == 1


def test_408_and_409_are_retried() -> None:
    script = Script(problem(408), problem(409), httpx.Response(200, json=CREATED))
    client, _ = sync_client(script)
    client.runs.create(prompt="p")
    assert len(script.requests) == 3


def test_connection_errors_are_retried() -> None:
    script = Script(httpx.ConnectError("refused"), httpx.ReadError("reset"), httpx.Response(200, json=CREATED))
    client, sleeps = sync_client(script)
    assert client.runs.create(prompt="p").run_id == "r1"
    assert len(sleeps.delays) == 2


def test_per_request_max_retries_overrides_the_client() -> None:
    script = Script(problem(500), httpx.Response(200, json=CREATED))
    client, _ = sync_client(script, max_retries=5)
    with pytest.raises(InternalServerError):
        client.runs.create(prompt="p", max_retries=0)
    assert len(script.requests) == 1


def test_one_idempotency_key_per_logical_post() -> None:
    script = Script(
        problem(500),
        httpx.ReadError("lost"),
        problem(409),
        httpx.Response(200, json=CREATED),
        httpx.Response(200, json=CREATED),
    )
    client, _ = sync_client(script, max_retries=3)
    client.runs.create(prompt="p")
    keys = [r.headers.get("idempotency-key") for r in script.requests[:4]]
    assert keys[0] and keys[0].startswith("dispatch-py-")
    assert keys == [keys[0]] * 4  # identical across the retries of one call
    bodies = {r.content for r in script.requests[:4]}
    assert len(bodies) == 1 and json.loads(bodies.pop()) == {"prompt": "p"}

    client.runs.create(prompt="p")  # another logical create: another key
    assert script.requests[4].headers["idempotency-key"] != keys[0]


def test_explicit_idempotency_key_and_followup() -> None:
    followup = {"followup_id": "f1", "outcome": "live_session"}
    script = Script(problem(503), httpx.Response(200, json=followup))
    client, _ = sync_client(script)
    assert client.runs.followup("r1", message="m", idempotency_key="mine").outcome == "live_session"
    assert [r.headers["idempotency-key"] for r in script.requests] == ["mine", "mine"]
    assert script.requests[0].url.path == "/api/v1/agent/runs/r1/followups"


def test_get_requests_carry_no_idempotency_key() -> None:
    script = Script(httpx.Response(200, json={"runs": [], "page_info": {"has_next_page": False}}))
    client, _ = sync_client(script)
    client.runs.list()
    assert "idempotency-key" not in script.requests[0].headers


@pytest.mark.anyio
async def test_async_retries() -> None:
    script = Script(problem(429, {"retry-after": "2"}), problem(500), httpx.Response(200, json=CREATED))
    client, sleeps = async_client(script)
    async with client:
        assert (await client.runs.create(prompt="p")).run_id == "r1"
    assert sleeps.delays[0] == 2.0 and 0.75 <= sleeps.delays[1] <= 1.0
    assert len({r.headers["idempotency-key"] for r in script.requests}) == 1

    script = Script(problem(400))
    client, sleeps = async_client(script)
    with pytest.raises(BadRequestError):
        await client.runs.create(prompt="p")
    assert len(script.requests) == 1 and sleeps.delays == []


# --- a retried create against the live server makes one run ---


class ForwardThenDrop(httpx.BaseTransport):
    """Forwards to the real server; the first create's response is lost on the way back."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.creates: list[httpx.Request] = []
        self.first_run_id: str | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST" and request.url.path.endswith("/agent/runs"):
            self.creates.append(request)
            if len(self.creates) == 1:
                response.read()
                self.first_run_id = json.loads(response.content)["run_id"]
                response.close()
                raise httpx.ReadError("connection reset after the server answered")
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncForwardThenDrop(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.creates: list[httpx.Request] = []
        self.first_run_id: str | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.method == "POST" and request.url.path.endswith("/agent/runs"):
            self.creates.append(request)
            if len(self.creates) == 1:
                await response.aread()
                self.first_run_id = json.loads(response.content)["run_id"]
                await response.aclose()
                raise httpx.ReadError("connection reset after the server answered")
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.live
def test_retried_create_makes_one_run(server: DispatchServer) -> None:
    transport = ForwardThenDrop()
    name = unique("retried")
    with Dispatch(
        api_key=server.admin_key, base_url=server.base_url, http_client=httpx.Client(transport=transport)
    ) as c:
        record_sleeps(c)
        created = c.runs.create(prompt="$ echo once", config={"name": name})
        assert len(transport.creates) == 2
        assert transport.creates[0].headers["idempotency-key"] == transport.creates[1].headers["idempotency-key"]
        assert created.run_id == transport.first_run_id  # the retry got the original answer
        assert [run.run_id for run in c.runs.list(name=name)] == [created.run_id]


@pytest.mark.live
@pytest.mark.anyio
async def test_retried_create_makes_one_run_async(server: DispatchServer) -> None:
    transport = AsyncForwardThenDrop()
    name = unique("retried")
    async with AsyncDispatch(
        api_key=server.admin_key, base_url=server.base_url, http_client=httpx.AsyncClient(transport=transport)
    ) as c:
        record_async_sleeps(c)
        created = await c.runs.create(prompt="$ echo once", config={"name": name})
        assert len(transport.creates) == 2
        assert created.run_id == transport.first_run_id
        assert [run.run_id async for run in c.runs.list(name=name)] == [created.run_id]


# --- timeouts: a server that accepts connections and never answers ---


@pytest.fixture
def silent_port() -> Iterator[int]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                held.append(conn)  # kept open, never answered
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def silent_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/api/v1"


def test_timeout_raises_timeout_error(silent_port: int) -> None:
    with Dispatch(api_key="dsp_x", base_url=silent_url(silent_port), timeout=0.2, max_retries=0) as client:
        started = time.monotonic()
        with pytest.raises(APIConnectionTimeoutError) as caught:
            client.runs.list()
    assert isinstance(caught.value, APIConnectionError)
    assert time.monotonic() - started < 5


def test_per_request_timeout_overrides_and_is_retried(silent_port: int) -> None:
    with Dispatch(api_key="dsp_x", base_url=silent_url(silent_port), timeout=60, max_retries=0) as client:
        sleeps = record_sleeps(client)
        with pytest.raises(APIConnectionTimeoutError):
            client.runs.retrieve("r1", timeout=0.2, max_retries=1)
    assert len(sleeps.delays) == 1  # one retry after the first timeout


@pytest.mark.anyio
async def test_timeout_raises_timeout_error_async(silent_port: int) -> None:
    async with AsyncDispatch(api_key="dsp_x", base_url=silent_url(silent_port), max_retries=0) as client:
        with pytest.raises(APIConnectionTimeoutError):
            await client.runs.retrieve("r1", timeout=httpx.Timeout(0.2))


def test_idempotency_key_given_as_a_header_is_used_once() -> None:
    script = Script(problem(500), httpx.Response(200, json=CREATED))
    client, _ = sync_client(script)
    client.runs.create(prompt="p", extra_headers={"idempotency-key": "from-header"})
    for request in script.requests:
        assert request.headers.get_list("idempotency-key") == ["from-header"]
