"""Fixtures: a live Dispatch server per session (see support.py) and clients bound to it."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

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


@pytest.fixture(scope="session")
def member_key(server: DispatchServer) -> str:
    """A key of the default team that is not an admin's."""
    return server.create_key(role="member")


SKILL_MD = """\
---
name: {name}
description: {description}
---
{body}
"""


@pytest.fixture(scope="session")
def catalog_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DispatchServer]:
    """A server with models, environments and skills configured in a dispatch.config.yaml: two model
    aliases (``fast`` the default), environments ``web`` (cloning acme/web) and ``bare``, the skill
    ``deploy`` of acme/web (a local checkout), ``review`` of a skills directory, and one SKILL.md whose
    frontmatter is broken."""
    root = tmp_path_factory.mktemp("catalog")
    checkout = root / "acme-web"
    write(
        checkout / ".agents/skills/deploy/SKILL.md",
        SKILL_MD.format(name="deploy", description="Deploys the web app", body="Deploy it carefully."),
    )
    write(checkout / "skills/broken/SKILL.md", "---\nname: [unclosed\n---\nBroken.\n")
    skills_dir = root / "skills"
    write(
        skills_dir / "review/SKILL.md",
        SKILL_MD.format(name="review", description="Reviews a change", body="Review the diff."),
    )
    config = root / "dispatch.config.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            models:
              aliases:
                fast: anthropic/claude-haiku-4-5
                local: openai-compatible/llama3
            environments:
              web:
                description: The web app
                repos:
                  - url: https://github.com/acme/web.git
                setup:
                  - npm ci
              bare: {{}}
            skills:
              github: false
              dirs: [{str(skills_dir)!r}]
              repos:
                acme/web: {str(checkout)!r}
            """
        )
    )
    started = start_server(DISPATCH_CONFIG_FILE=str(config), DISPATCH_DEFAULT_MODEL="fast")
    try:
        yield started
    finally:
        started.stop()


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


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
