"""Fixtures: one live Dispatch server per session and the official Warp Platform SDK's clients bound to it.

The server has what every resource's tests need: the scripted harness (no model is configured), an
environment ``bare``, a skill ``greeter`` in a skills directory, ``owner/repo`` remotes that are local bare
repositories (``acme/app`` holds ``login.py``, so runs with ``config.repository`` deliver a branch and a FILE
artifact) and published egress ranges.

``warp`` is each test's client, once the synchronous ``WarpClient`` and once the ``AsyncWarpClient``: every
test runs with both, through ``call`` (which awaits what the async client returns). Both validate every
response strictly against the SDK's own models (``_strict_response_validation=True``): a field or enum
value the SDK does not accept fails the test.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from warp_platform_sdk import AsyncWarpClient, WarpClient

from .support import DispatchServer, seed_bare_repository, start_server

SKILL_MD = "---\nname: greeter\ndescription: Greets people.\n---\nSay hello to whoever asks.\n"
EGRESS_CIDRS = "203.0.113.0/24,2001:db8::/32"

Warp = WarpClient | AsyncWarpClient


async def call(value: Any) -> Any:
    """The SDK's answer, whichever client gave it: the async client's coroutines are awaited."""
    return await value if inspect.isawaitable(value) else value


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DispatchServer]:
    root = tmp_path_factory.mktemp("warp-sdk")
    skills = root / "skills"
    (skills / "greeter").mkdir(parents=True)
    (skills / "greeter" / "SKILL.md").write_text(SKILL_MD)
    remotes = root / "remotes"
    seed_bare_repository(remotes, "acme/app", {"login.py": "RETRIES = 1\n"})
    started = start_server(
        {
            "environments": {"bare": {"description": "Nothing to set up", "setup": []}},
            "skills": {"dirs": [str(skills)], "github": False},
        },
        GITHUB_SERVER_URL=f"file://{remotes}",
        DISPATCH_ALLOW_FILE_REMOTES="true",
        DISPATCH_EGRESS_CIDRS=EGRESS_CIDRS,
    )
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(params=["sync", "async"])
async def warp(request: pytest.FixtureRequest, server: DispatchServer) -> AsyncIterator[Warp]:
    options = {"api_key": server.admin_key, "base_url": server.base_url, "max_retries": 0}
    if request.param == "sync":
        with WarpClient(**options, _strict_response_validation=True) as client:
            yield client
    else:
        async with AsyncWarpClient(**options, _strict_response_validation=True) as client:
            yield client


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"
