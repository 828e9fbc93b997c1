"""Fixtures: one live Dispatch server per session and the official Oz SDK clients bound to it.

The server has what every resource's tests need, so that later tests (schedules, attachments) reuse it:
the scripted harness (no model is configured), an environment ``bare``, a skill ``greeter`` in a skills
directory, and ``owner/repo`` remotes that are local bare repositories (``acme/app`` holds ``login.py``),
so runs with ``config.repository`` deliver a branch and a FILE artifact.

Both clients validate every response strictly against the SDK's own models
(``_strict_response_validation=True``): a field or enum value the SDK does not accept fails the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from oz_agent_sdk import AsyncOzAPI, OzAPI

from .support import DispatchServer, seed_bare_repository, start_server

SKILL_MD = "---\nname: greeter\ndescription: Greets people.\n---\nSay hello to whoever asks.\n"


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DispatchServer]:
    root = tmp_path_factory.mktemp("oz-sdk")
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
    )
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def other_team_key(server: DispatchServer) -> str:
    """A member key of another team: it must see none of the default team's resources."""
    return server.create_key(role="member", team="team_other")


@pytest.fixture()
def client(server: DispatchServer) -> Iterator[OzAPI]:
    with OzAPI(
        api_key=server.admin_key, base_url=server.base_url, max_retries=0, _strict_response_validation=True
    ) as oz:
        yield oz


@pytest.fixture()
async def async_client(server: DispatchServer) -> AsyncIterator[AsyncOzAPI]:
    async with AsyncOzAPI(
        api_key=server.admin_key, base_url=server.base_url, max_retries=0, _strict_response_validation=True
    ) as oz:
        yield oz


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"
