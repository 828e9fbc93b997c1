"""Agent identities (service accounts of the team) through the official Oz Python SDK: agent.agent.create,
list, get, update and delete, strictly validated; admin keys only."""

from __future__ import annotations

import pytest
from oz_agent_sdk import AsyncOzAPI, NotFoundError, OzAPI, PermissionDeniedError

from .support import DispatchServer, unique


def test_identity_lifecycle(client: OzAPI) -> None:
    name = unique("release-bot")
    created = client.agent.agent.create(name=name, description="Cuts releases", skills=["acme/app:release"])
    assert created.name == name and created.available is True
    assert created.description == "Cuts releases"
    assert created.skills == ["acme/app:release"]
    assert created.secrets == []
    assert name in [a.name for a in client.agent.agent.list().agents]
    assert client.agent.agent.get(created.uid).uid == created.uid
    updated = client.agent.agent.update(created.uid, description="Cuts and tags releases")
    assert updated.description == "Cuts and tags releases" and updated.name == name
    client.agent.agent.delete(created.uid)
    with pytest.raises(NotFoundError):
        client.agent.agent.get(created.uid)


def test_identities_need_an_admin_key(server: DispatchServer) -> None:
    member = server.create_key(role="member")
    with OzAPI(api_key=member, base_url=server.base_url, max_retries=0, _strict_response_validation=True) as oz:
        with pytest.raises(PermissionDeniedError):
            oz.agent.agent.list()


@pytest.mark.anyio
async def test_async_identities(async_client: AsyncOzAPI) -> None:
    created = await async_client.agent.agent.create(name=unique("async-bot"))
    assert (await async_client.agent.agent.get(created.uid)).name == created.name
    await async_client.agent.agent.delete(created.uid)
