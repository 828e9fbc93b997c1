"""Fixtures: a live Dispatch server per session (see support.py) and clients bound to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from agent_dispatch import AsyncDispatch, Dispatch

from .support import DispatchServer, start_server


@pytest.fixture(scope="session")
def server() -> Iterator[DispatchServer]:
    started = start_server()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def rate_limited_server() -> Iterator[DispatchServer]:
    """A second server whose keys may make 2 requests, then 1 a minute."""
    started = start_server(DISPATCH_RATE_LIMIT_BURST="2", DISPATCH_RATE_LIMIT_PER_MINUTE="1")
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def read_only_key(server: DispatchServer) -> str:
    return server.create_key(role="read")


@pytest.fixture
def client(server: DispatchServer) -> Iterator[Dispatch]:
    with Dispatch(api_key=server.admin_key, base_url=server.base_url, timeout=20) as c:
        yield c


@pytest.fixture
async def async_client(server: DispatchServer) -> AsyncIterator[AsyncDispatch]:
    async with AsyncDispatch(api_key=server.admin_key, base_url=server.base_url, timeout=20) as c:
        yield c


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
