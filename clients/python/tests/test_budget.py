"""Answers to a run that waits for budget, through ``runs.budget``: the wire round trip against a live
server. A run that reaches its budget needs a model that reports a cost, which this server has not: the
whole pause, extend and stop are the server's tests (test/executor/budgets.test.ts); here the route's
validation and its answer for a run that does not wait for budget."""

from __future__ import annotations

import anyio
import pytest

from agent_dispatch import AsyncDispatch, BadRequestError, ConflictError, Dispatch, RunItem

from .support import wait_until

pytestmark = pytest.mark.live

WAIT_S = 30.0


def test_budget_of_a_run_not_waiting_for_budget(client: Dispatch) -> None:
    created = client.runs.create(prompt="$ echo planned", mode="plan")

    def blocked() -> RunItem | None:
        run = client.runs.retrieve(created.run_id)
        return run if run.state == "BLOCKED" else None

    waiting = wait_until(blocked, timeout=WAIT_S, what="the plan to wait")
    assert waiting.budget is None

    with pytest.raises(BadRequestError, match="amount_usd"):
        client.runs.budget(created.run_id, action="extend")
    with pytest.raises(BadRequestError, match="more than 0"):
        client.runs.budget(created.run_id, action="extend", amount_usd=0)
    with pytest.raises(ConflictError, match="not waiting for budget"):
        client.runs.budget(created.run_id, action="extend", amount_usd=5, max_retries=0)
    with pytest.raises(ConflictError, match="not waiting for budget"):
        client.runs.with_raw_response.budget(created.run_id, action="stop", max_retries=0)
    assert client.runs.retrieve(created.run_id).state == "BLOCKED"
    client.runs.cancel(created.run_id)


@pytest.mark.anyio
async def test_async_budget(async_client: AsyncDispatch) -> None:
    created = await async_client.runs.create(prompt="$ echo async planned", mode="plan")
    with anyio.fail_after(WAIT_S):
        while (await async_client.runs.retrieve(created.run_id)).state != "BLOCKED":
            await anyio.sleep(0.05)
    with pytest.raises(ConflictError, match="not waiting for budget"):
        await async_client.runs.budget(created.run_id, action="stop", max_retries=0)
    await async_client.runs.cancel(created.run_id)
