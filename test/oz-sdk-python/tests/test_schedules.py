"""Schedules through the official Oz Python SDK: agent.schedules create, retrieve, list (sorted by name),
update (a PUT that replaces), pause, resume and delete, their errors, and runs.list(schedule_id=...), sync
and async, all strictly validated. The cron never fires during the tests (midnight on 1 January)."""

from __future__ import annotations

import pytest
from oz_agent_sdk import AsyncOzAPI, BadRequestError, NotFoundError, OzAPI
from oz_agent_sdk.types.agent import ScheduledAgentItem

from .support import unique

NEVER_DURING_TESTS = "0 0 1 1 *"


def test_schedule_lifecycle(client: OzAPI) -> None:
    prefix = unique("sched")
    created = client.agent.schedules.create(
        name=f"{prefix}-b",
        cron_schedule=NEVER_DURING_TESTS,
        prompt="$ echo scheduled",
        metadata={"suite": "oz-sdk-python"},
    )
    assert isinstance(created, ScheduledAgentItem)
    assert created.name == f"{prefix}-b"
    assert created.cron_schedule == NEVER_DURING_TESTS
    assert created.prompt == "$ echo scheduled"
    assert created.enabled is True
    assert created.metadata == {"suite": "oz-sdk-python"}
    assert created.scope is not None and created.scope.type == "Team"
    assert created.history is not None and created.history.next_run is not None
    assert created.history.last_ran is None

    fetched = client.agent.schedules.retrieve(created.id)
    assert fetched.id == created.id and fetched.name == created.name and fetched.created_at == created.created_at

    other = client.agent.schedules.create(name=f"{prefix}-a", cron_schedule=NEVER_DURING_TESTS, prompt="$ true")
    mine = [s.name for s in client.agent.schedules.list().schedules if s.name.startswith(prefix)]
    assert mine == [f"{prefix}-a", f"{prefix}-b"]

    # PUT replaces: what is left out (metadata) takes its default.
    updated = client.agent.schedules.update(
        created.id, name=f"{prefix}-c", cron_schedule="30 6 1 1 *", enabled=False, prompt="$ echo replaced"
    )
    assert updated.id == created.id
    assert (updated.name, updated.cron_schedule, updated.enabled) == (f"{prefix}-c", "30 6 1 1 *", False)
    assert updated.prompt == "$ echo replaced"
    assert not updated.metadata
    assert updated.updated_at >= created.updated_at
    assert client.agent.schedules.retrieve(created.id).name == f"{prefix}-c"

    resumed = client.agent.schedules.resume(created.id)
    assert resumed.enabled is True
    assert resumed.history is not None and resumed.history.next_run is not None
    paused = client.agent.schedules.pause(created.id)
    assert paused.enabled is False
    assert client.agent.schedules.retrieve(created.id).enabled is False

    assert client.agent.runs.list(schedule_id=created.id).runs == []

    assert client.agent.schedules.delete(created.id).success is True
    assert client.agent.schedules.delete(other.id).success is True
    with pytest.raises(NotFoundError):
        client.agent.schedules.retrieve(created.id)
    with pytest.raises(NotFoundError):
        client.agent.schedules.pause(created.id)
    with pytest.raises(NotFoundError):
        client.agent.schedules.delete(created.id)
    assert not [s for s in client.agent.schedules.list().schedules if s.name.startswith(prefix)]


def test_invalid_cron_is_a_bad_request(client: OzAPI) -> None:
    name = unique("bad-cron")
    with pytest.raises(BadRequestError) as refused:
        client.agent.schedules.create(name=name, cron_schedule="not a cron", prompt="$ true")
    assert "cron" in str(refused.value).lower()
    assert not [s for s in client.agent.schedules.list().schedules if s.name == name]
    kept = client.agent.schedules.create(name=name, cron_schedule=NEVER_DURING_TESTS, prompt="$ true")
    with pytest.raises(BadRequestError):
        client.agent.schedules.update(kept.id, name=name, cron_schedule="61 * * * *", enabled=True, prompt="$ true")
    assert client.agent.schedules.retrieve(kept.id).cron_schedule == NEVER_DURING_TESTS
    assert client.agent.schedules.delete(kept.id).success is True


@pytest.mark.anyio
async def test_async_schedule_lifecycle(async_client: AsyncOzAPI) -> None:
    schedules = async_client.agent.schedules
    prefix = unique("async-sched")
    created = await schedules.create(name=f"{prefix}-b", cron_schedule=NEVER_DURING_TESTS, prompt="$ echo async")
    assert created.enabled is True and created.prompt == "$ echo async"
    assert (await schedules.retrieve(created.id)).name == f"{prefix}-b"
    other = await schedules.create(name=f"{prefix}-a", cron_schedule=NEVER_DURING_TESTS, prompt="$ true")
    mine = [s.name for s in (await schedules.list()).schedules if s.name.startswith(prefix)]
    assert mine == [f"{prefix}-a", f"{prefix}-b"]

    updated = await schedules.update(
        created.id, name=f"{prefix}-c", cron_schedule="15 3 1 1 *", enabled=True, prompt="$ echo replaced"
    )
    assert (updated.name, updated.cron_schedule, updated.prompt) == (f"{prefix}-c", "15 3 1 1 *", "$ echo replaced")
    assert (await schedules.pause(created.id)).enabled is False
    assert (await schedules.resume(created.id)).enabled is True
    assert (await async_client.agent.runs.list(schedule_id=created.id)).runs == []

    with pytest.raises(BadRequestError):
        await schedules.create(name=f"{prefix}-x", cron_schedule="* * *", prompt="$ true")

    assert (await schedules.delete(created.id)).success is True
    assert (await schedules.delete(other.id)).success is True
    with pytest.raises(NotFoundError):
        await schedules.retrieve(created.id)
    with pytest.raises(NotFoundError):
        await schedules.resume(created.id)
