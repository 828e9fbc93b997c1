"""Schedules through the official Warp Platform SDK: agent.schedules create, retrieve, update, list, pause,
resume and delete, one test per method, sync and async. The cron never fires during the tests."""

from __future__ import annotations

import pytest
from warp_platform_sdk import NotFoundError
from warp_platform_sdk.types.agent import ScheduledAgentItem

from .conftest import Warp, call
from .support import unique

pytestmark = pytest.mark.anyio

NEVER_DURING_TESTS = "0 0 1 1 *"


async def schedule(warp: Warp, name: str | None = None) -> ScheduledAgentItem:
    created: ScheduledAgentItem = await call(
        warp.agent.schedules.create(
            name=name or unique("sched"), cron_schedule=NEVER_DURING_TESTS, prompt="$ echo scheduled"
        )
    )
    return created


async def test_create(warp: Warp) -> None:
    created = await schedule(warp)
    assert created.enabled is True and created.cron_schedule == NEVER_DURING_TESTS
    assert created.history is not None and created.history.next_run is not None


async def test_retrieve(warp: Warp) -> None:
    created = await schedule(warp)
    assert (await call(warp.agent.schedules.retrieve(created.id))).name == created.name
    with pytest.raises(NotFoundError):
        await call(warp.agent.schedules.retrieve("no-such-schedule"))


async def test_update(warp: Warp) -> None:
    created = await schedule(warp)
    updated = await call(
        warp.agent.schedules.update(
            created.id, name=created.name, cron_schedule="30 6 1 1 *", enabled=False, prompt="$ echo replaced"
        )
    )
    assert (updated.cron_schedule, updated.enabled, updated.prompt) == ("30 6 1 1 *", False, "$ echo replaced")


async def test_list(warp: Warp) -> None:
    prefix = unique("listed")
    await schedule(warp, f"{prefix}-b")
    await schedule(warp, f"{prefix}-a")
    names = [s.name for s in (await call(warp.agent.schedules.list())).schedules if s.name.startswith(prefix)]
    assert names == [f"{prefix}-a", f"{prefix}-b"]


async def test_pause(warp: Warp) -> None:
    created = await schedule(warp)
    assert (await call(warp.agent.schedules.pause(created.id))).enabled is False


async def test_resume(warp: Warp) -> None:
    created = await schedule(warp)
    await call(warp.agent.schedules.pause(created.id))
    assert (await call(warp.agent.schedules.resume(created.id))).enabled is True


async def test_delete(warp: Warp) -> None:
    created = await schedule(warp)
    assert (await call(warp.agent.schedules.delete(created.id))).success is True
    with pytest.raises(NotFoundError):
        await call(warp.agent.schedules.retrieve(created.id))
