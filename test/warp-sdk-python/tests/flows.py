"""What several tests do with a run: wait for a state, find its FILE artifact."""

from __future__ import annotations

from typing import Any

import pytest
from warp_platform_sdk.types.agent import RunItem

from .conftest import Warp, call
from .support import async_wait_until, unique

TERMINAL = ("SUCCEEDED", "FAILED", "ERROR", "CANCELLED")


async def in_state(warp: Warp, run_id: str, states: tuple[str, ...], timeout: float = 30.0) -> RunItem:
    async def check() -> RunItem | None:
        run: RunItem = await call(warp.agent.runs.retrieve(run_id))
        return run if run.state in states else None

    return await async_wait_until(check, timeout=timeout, what=f"run {run_id} to be {' or '.join(states)}")


async def finished(warp: Warp, run_id: str, timeout: float = 30.0) -> RunItem:
    return await in_state(warp, run_id, TERMINAL, timeout)


async def started(warp: Warp, prompt: str) -> RunItem:
    """A run whose agent is at work: its transcript shows the command running."""
    created = await call(warp.agent.run(prompt=prompt))

    async def running() -> RunItem | None:
        run: RunItem = await call(warp.agent.runs.retrieve(created.run_id))
        timeline = await call(warp.agent.runs.get_timeline(created.run_id))
        return run if any(e.event_type == "agent_started" for e in timeline.events) else None

    return await async_wait_until(running, what=f"the agent of {created.run_id} to start")


async def delivered_patch(warp: Warp) -> str:
    """The uid of the FILE artifact (the patch) of a run delivered to the local acme/app."""
    # A title of its own: its branch's name is made of it (and the run id's first characters, shared by
    # runs created within a minute of each other).
    created = await call(
        warp.agent.run(
            prompt="$ sed -i 's/RETRIES = 1/RETRIES = 3/' login.py",
            title=unique("Raise the retries"),
            config={"repository": "acme/app"},
        )
    )
    run = await finished(warp, created.run_id, timeout=60)
    assert run.state == "SUCCEEDED", run.status_message
    files: list[Any] = [a for a in run.artifacts or [] if a.artifact_type == "FILE"]
    if not files:
        pytest.fail(f"no FILE artifact on the delivered run: {run.artifacts}")
    return str(files[0].data.artifact_uid)
