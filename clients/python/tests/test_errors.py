"""Every error class for its status: live where the server can be made to answer it, mocked otherwise."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from agent_dispatch import (
    APIConnectionError,
    APIConnectionTimeoutError,
    APIStatusError,
    AsyncDispatch,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Dispatch,
    DispatchError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)

from .support import DispatchServer, random_key, record_sleeps, unique

live = pytest.mark.live


def assert_problem(err: APIStatusError, status: int, error_code: str) -> None:
    assert err.status_code == status
    assert err.error_code == error_code
    assert err.problem is not None and err.problem.status == status
    assert err.body == err.problem.model_dump(exclude_none=True)  # body: the problem+json itself
    assert err.headers["content-type"].startswith("application/problem+json")
    assert error_code in str(err)


# --- live server ---


@live
def test_401_authentication_error(server: DispatchServer) -> None:
    with Dispatch(api_key=random_key(), base_url=server.base_url) as client:
        with pytest.raises(AuthenticationError) as caught:
            client.runs.list()
    assert_problem(caught.value, 401, "authentication_required")
    assert "bearer" in caught.value.headers["www-authenticate"].lower()


@live
def test_403_permission_denied_error(server: DispatchServer, read_only_key: str) -> None:
    with Dispatch(api_key=read_only_key, base_url=server.base_url) as client:
        client.runs.list(limit=1)  # reading is allowed
        with pytest.raises(PermissionDeniedError) as caught:
            client.runs.create(prompt="$ echo no")
    assert_problem(caught.value, 403, "not_authorized")


@live
def test_404_not_found_error(client: Dispatch) -> None:
    with pytest.raises(NotFoundError) as caught:
        client.runs.retrieve("0190aaaa-0000-7000-8000-000000000000")
    assert_problem(caught.value, 404, "resource_not_found")
    assert caught.value.problem is not None
    assert caught.value.problem.instance == "/api/v1/agent/runs/0190aaaa-0000-7000-8000-000000000000"


@live
def test_400_bad_request_error_names_the_field(client: Dispatch) -> None:
    with pytest.raises(BadRequestError) as caught:
        client.runs.create(prompt="$ echo hi", title="t" * 301)
    assert_problem(caught.value, 400, "invalid_request")
    assert "title" in (caught.value.detail or "")
    assert caught.value.retryable is False


@live
def test_422_idempotency_key_reused(client: Dispatch) -> None:
    key = unique("idem")
    first = client.runs.create(prompt="$ echo one", idempotency_key=key)
    again = client.runs.create(prompt="$ echo one", idempotency_key=key)
    assert again.run_id == first.run_id  # same key, same body: the original answer
    with pytest.raises(UnprocessableEntityError) as caught:
        client.runs.create(prompt="$ echo two", idempotency_key=key)
    assert_problem(caught.value, 422, "idempotency_key_reused")


@live
def test_429_rate_limit_error(rate_limited_server: DispatchServer) -> None:
    with Dispatch(api_key=rate_limited_server.admin_key, base_url=rate_limited_server.base_url, max_retries=0) as c:
        with pytest.raises(RateLimitError) as caught:
            for _ in range(3):  # a burst of 2: at the latest the third request is refused
                c.runs.list(limit=1)
    assert_problem(caught.value, 429, "rate_limited")
    assert int(caught.value.headers["retry-after"]) >= 1
    assert caught.value.retryable is True


@live
def test_connection_error_when_nothing_listens() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and has no listener now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with Dispatch(api_key=random_key(), base_url=f"http://127.0.0.1:{port}/api/v1", max_retries=1) as client:
        sleeps = record_sleeps(client)
        with pytest.raises(APIConnectionError) as caught:
            client.runs.list()
    assert not isinstance(caught.value, APIConnectionTimeoutError)
    assert len(sleeps.delays) == 1  # retried once, then gave up


@live
@pytest.mark.anyio
async def test_error_classes_async(server: DispatchServer, read_only_key: str) -> None:
    async with AsyncDispatch(api_key=random_key(), base_url=server.base_url) as bad:
        with pytest.raises(AuthenticationError):
            await bad.runs.retrieve("x")
    async with AsyncDispatch(api_key=read_only_key, base_url=server.base_url) as reader:
        with pytest.raises(PermissionDeniedError):
            await reader.runs.create(prompt="$ echo no")
    async with AsyncDispatch(api_key=server.admin_key, base_url=server.base_url) as client:
        with pytest.raises(NotFoundError):
            await client.runs.retrieve("no-such-run")
        with pytest.raises(BadRequestError):
            await client.runs.followup("no-such-run-either", message="")
        key = unique("idem")
        await client.runs.create(prompt="$ echo one", idempotency_key=key)
        with pytest.raises(UnprocessableEntityError):
            await client.runs.create(prompt="$ echo two", idempotency_key=key)


@live
@pytest.mark.anyio
async def test_429_rate_limit_error_async(rate_limited_server: DispatchServer) -> None:
    key = rate_limited_server.create_key()  # its own bucket, whatever the sync test used
    async with AsyncDispatch(api_key=key, base_url=rate_limited_server.base_url, max_retries=0) as client:
        with pytest.raises(RateLimitError) as caught:
            for _ in range(3):
                await client.runs.list(limit=1)
    assert caught.value.status_code == 429


# --- mocked: statuses a healthy server does not produce on demand ---

STATUS_CLASSES: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    500: InternalServerError,
    503: InternalServerError,
}


def problem_response(status: int, code: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {
        "type": f"https://dispatch.dev/problems/{code}",
        "title": code,
        "status": status,
        "error": code,
        "error_code": code,
        "retryable": status in (409, 429, 500, 503),
        "instance": "/api/v1/agent/runs",
    }
    return httpx.Response(
        status, headers={"content-type": "application/problem+json", **(headers or {})}, content=json.dumps(body)
    )


@pytest.mark.parametrize("status", sorted(STATUS_CLASSES))
def test_status_maps_to_its_class(status: int) -> None:
    transport = httpx.MockTransport(lambda request: problem_response(status, f"code_{status}"))
    with Dispatch(
        api_key="k",
        base_url="http://dispatch.test/api/v1",
        max_retries=0,
        http_client=httpx.Client(transport=transport),
    ) as client:
        with pytest.raises(APIStatusError) as caught:
            client.runs.list()
    assert type(caught.value) is STATUS_CLASSES[status]
    assert_problem(caught.value, status, f"code_{status}")


def test_other_status_is_a_plain_api_status_error() -> None:
    transport = httpx.MockTransport(lambda request: problem_response(405, "method_not_allowed", {"allow": "GET"}))
    with Dispatch(
        api_key="k", base_url="http://dispatch.test/api/v1", http_client=httpx.Client(transport=transport)
    ) as client:
        with pytest.raises(APIStatusError) as caught:
            client.get("agent/runs")
    assert type(caught.value) is APIStatusError
    assert caught.value.status_code == 405 and caught.value.headers["allow"] == "GET"


def test_non_problem_error_body_is_kept_as_text() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(502, text="bad gateway from the proxy"))
    with Dispatch(
        api_key="k",
        base_url="http://dispatch.test/api/v1",
        max_retries=0,
        http_client=httpx.Client(transport=transport),
    ) as client:
        with pytest.raises(InternalServerError) as caught:
            client.runs.list()
    assert caught.value.body == "bad gateway from the proxy"
    assert caught.value.problem is None and caught.value.error_code is None
    assert "502" in str(caught.value)


def test_every_error_is_a_dispatch_error() -> None:
    for cls in [*STATUS_CLASSES.values(), APIConnectionError, APIConnectionTimeoutError]:
        assert issubclass(cls, DispatchError)
    assert issubclass(APIConnectionTimeoutError, APIConnectionError)
