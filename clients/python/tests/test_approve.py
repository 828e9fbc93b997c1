"""Plans that wait for approval, through ``runs.approve``: the scripted harness's plan is its script."""

from __future__ import annotations

import anyio
import pytest

from agent_dispatch import AsyncDispatch, BadRequestError, ConflictError, Dispatch, RunItem

from .support import wait_until

pytestmark = pytest.mark.live

WAIT_S = 30.0


def settled(client: Dispatch, run_id: str) -> RunItem:
    def check() -> RunItem | None:
        run = client.runs.retrieve(run_id)
        return None if run.state in ("QUEUED", "INPROGRESS") else run

    return wait_until(check, timeout=WAIT_S, what=f"run {run_id} to wait or finish")


def blocked_count(client: Dispatch, run_id: str) -> int:
    events = client.runs.list_events(run_id, limit=1000).events
    return sum(1 for e in events if e.type == "state" and e.data.get("state") == "BLOCKED")


def test_revise_then_approve_a_waiting_plan(client: Dispatch) -> None:
    created = client.runs.create(prompt="$ echo first > first.txt", mode="plan")
    waiting = settled(client, created.run_id)
    assert waiting.state == "BLOCKED"
    assert waiting.status_message is not None and waiting.status_message.reason == "awaiting_approval"
    assert any(a.artifact_type == "PLAN" for a in waiting.artifacts)

    with pytest.raises(BadRequestError):
        client.runs.approve(created.run_id, action="revise")
    revised = client.runs.approve(created.run_id, action="revise", message="$ echo second > second.txt")
    assert revised.outcome == "live_session"
    wait_until(lambda: blocked_count(client, created.run_id) == 2, timeout=WAIT_S, what="the revised plan")

    client.runs.approve(created.run_id, action="approve", message="Go.")
    done = settled(client, created.run_id)
    assert done.state == "SUCCEEDED"
    events = client.runs.list_events(created.run_id, limit=1000).events
    calls = [e.data["command"] for e in events if e.type == "tool_call"]
    assert calls == ["echo second > second.txt"]

    with pytest.raises(ConflictError, match="no plan waiting for approval"):
        client.runs.approve(created.run_id, action="approve", max_retries=0)


@pytest.mark.anyio
async def test_async_approve(async_client: AsyncDispatch) -> None:
    created = await async_client.runs.create(prompt="$ echo async > async.txt", mode="plan")
    with anyio.fail_after(WAIT_S):
        while (await async_client.runs.retrieve(created.run_id)).state != "BLOCKED":
            await anyio.sleep(0.05)
    raw = await async_client.runs.with_raw_response.approve(created.run_id, action="approve")
    assert raw.status_code == 200
    with anyio.fail_after(WAIT_S):
        while (run := await async_client.runs.retrieve(created.run_id)).state != "SUCCEEDED":
            assert run.state in ("BLOCKED", "INPROGRESS"), run.status_message
            await anyio.sleep(0.05)
