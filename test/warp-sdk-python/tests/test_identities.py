"""Agent identities (the team's service accounts) through the official Warp Platform SDK: agent.agent create,
get, list, update and delete, sync and async; and runs an identity's key creates on behalf of a user
(``on_behalf_of`` as a user id or email)."""

from __future__ import annotations

import pytest
from warp_platform_sdk import NotFoundError, WarpClient

from .conftest import Warp, call
from .support import DispatchServer, unique

pytestmark = pytest.mark.anyio


async def test_create(warp: Warp, server: DispatchServer) -> None:
    name = unique("release-bot")
    created = await call(warp.agent.agent.create(name=name, description="Cuts releases"))
    assert created.name == name and created.available is True
    # The identity's key creates a run for a user of the team, named by email.
    email = f"{unique('dev')}@example.com"
    user_key = server.create_key(args=("--type", "user", "--email", email, "--display-name", "Dev"))
    agent_key = server.create_key(args=("--principal", created.uid))
    with WarpClient(api_key=user_key, base_url=server.base_url, _strict_response_validation=True) as dev:
        uid = dev.agent.runs.retrieve(dev.agent.run(prompt="$ true").run_id).creator.uid  # type: ignore[union-attr]
    with WarpClient(api_key=agent_key, base_url=server.base_url, _strict_response_validation=True) as agent:
        run = agent.agent.runs.retrieve(agent.agent.run(prompt="$ true", on_behalf_of=email).run_id)
    assert run.creator is not None and (run.creator.uid, run.creator.email) == (uid, email)


async def test_get(warp: Warp) -> None:
    created = await call(warp.agent.agent.create(name=unique("getter")))
    assert (await call(warp.agent.agent.get(created.uid))).name == created.name
    with pytest.raises(NotFoundError):
        await call(warp.agent.agent.get("no-such-identity"))


async def test_list(warp: Warp) -> None:
    created = await call(warp.agent.agent.create(name=unique("lister")))
    assert created.uid in [a.uid for a in (await call(warp.agent.agent.list())).agents]


async def test_update(warp: Warp) -> None:
    created = await call(warp.agent.agent.create(name=unique("updater")))
    updated = await call(warp.agent.agent.update(created.uid, description="Tags releases"))
    assert updated.description == "Tags releases" and updated.name == created.name


async def test_delete(warp: Warp) -> None:
    created = await call(warp.agent.agent.create(name=unique("deleted")))
    await call(warp.agent.agent.delete(created.uid))
    with pytest.raises(NotFoundError):
        await call(warp.agent.agent.get(created.uid))
