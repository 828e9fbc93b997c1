"""Environments and the skills catalog through the official Oz Python SDK (strictly validated)."""

from __future__ import annotations

import pytest
from oz_agent_sdk import AsyncOzAPI, BadRequestError, OzAPI


def test_list_environments(client: OzAPI) -> None:
    listed = client.agent.list_environments()
    bare = next(e for e in listed.environments if e.uid == "bare")
    assert bare.config.name == "bare"
    assert bare.config.description == "Nothing to set up"
    assert bare.config.setup_commands == []
    assert bare.setup_failed is False
    assert client.agent.list_environments(sort_by="name").environments[0].uid == "bare"


def test_list_agents(client: OzAPI) -> None:
    listed = client.agent.list(sort_by="name", refresh=True)
    greeter = next(a for a in listed.agents if a.name == "greeter")
    variant = greeter.variants[0]
    assert variant.description == "Greets people."
    assert variant.base_prompt == "Say hello to whoever asks."
    with pytest.raises(BadRequestError):
        client.agent.list(repo="not a repo")


@pytest.mark.anyio
async def test_async_catalog(async_client: AsyncOzAPI) -> None:
    environments = await async_client.agent.list_environments()
    assert "bare" in [e.uid for e in environments.environments]
    agents = await async_client.agent.list()
    assert "greeter" in [a.name for a in agents.agents]
