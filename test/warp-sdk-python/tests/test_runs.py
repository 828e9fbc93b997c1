"""agent.run and agent.runs through the official Warp Platform SDK, one test per method, each with the sync
and the async client, every response strictly validated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warp_platform_sdk import BadRequestError, NotFoundError
from warp_platform_sdk.types.agent import RunItem

from .conftest import Warp, call
from .flows import finished, in_state, started
from .support import DispatchServer, async_wait_until, unique

pytestmark = pytest.mark.anyio


async def test_run(warp: Warp) -> None:
    name = unique("warp")
    created = await call(
        warp.agent.run(
            prompt="$ echo hello from warp",
            title="Warp SDK run",
            team=True,
            metadata={"suite": "warp-sdk-python"},
            config={"name": name, "environment_id": "bare", "harness": {"type": "oz"}},
        )
    )
    assert created.state == "QUEUED" and created.task_id == created.run_id


async def test_retrieve(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ echo fields", metadata={"suite": "warp-sdk-python"}))
    run = await finished(warp, created.run_id)
    assert isinstance(run, RunItem)
    assert run.state == "SUCCEEDED"
    assert run.root_run_id == run.run_id and run.conversation_id == run.run_id
    assert run.submitted_prompt == "$ echo fields"
    assert run.executor is not None and run.creator is not None and run.executor.uid == run.creator.uid
    assert run.is_run_type_cancellable is True
    assert run.execution_location == "REMOTE" and run.source == "API"
    assert run.request_usage is not None and run.request_usage.total_tokens == 0
    child = await call(warp.agent.run(prompt="$ true", parent_run_id=run.run_id))
    assert (await call(warp.agent.runs.retrieve(child.run_id))).root_run_id == run.run_id
    with pytest.raises(NotFoundError):
        await call(warp.agent.runs.retrieve("no-such-run"))


async def test_list(warp: Warp) -> None:
    tag = unique("tag")
    done = await call(warp.agent.run(prompt="$ true", metadata={"tag": tag}))
    await finished(warp, done.run_id)
    waiting = await call(warp.agent.run(prompt="$ sleep 30", metadata={"tag": tag}))
    await in_state(warp, waiting.run_id, ("INPROGRESS",))

    async def ids(**filters: object) -> list[str]:
        page = await call(
            warp.agent.runs.list(metadata={"tag": tag}, sort_by="created_at", sort_order="asc", **filters)
        )
        return [r.run_id for r in page.runs]

    assert await ids() == [done.run_id, waiting.run_id]
    assert await ids(task_status=["complete"]) == [done.run_id]
    assert await ids(task_status=["running"]) == [waiting.run_id]
    assert await ids(task_status=["failed", "blocked"]) == []
    assert await ids(q=done.run_id) == [done.run_id]
    run = await call(warp.agent.runs.retrieve(done.run_id))
    assert await ids(q=run.session_link) == [done.run_id]
    await call(warp.agent.runs.cancel(waiting.run_id))
    assert await ids(task_status=["cancelled"]) == [waiting.run_id]


async def test_cancel(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ sleep 30"))
    # The SDK sends an empty JSON body; the answer is the run id as a JSON string.
    assert json.loads(await call(warp.agent.runs.cancel(created.run_id))) == created.run_id
    run = await finished(warp, created.run_id)
    assert run.state == "CANCELLED" and run.status_message is not None
    with pytest.raises(BadRequestError):
        await call(warp.agent.runs.cancel(created.run_id))


async def test_submit_followup(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ echo one"))
    await finished(warp, created.run_id)
    sent = await call(warp.agent.runs.submit_followup(created.run_id, message="$ echo two", mode="normal"))
    assert sent.outcome == "handoff_execution" and sent.followup_id
    run = await finished(warp, created.run_id)
    assert run.state == "SUCCEEDED"


async def test_get_conversation(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ echo conversed"))
    await finished(warp, created.run_id)
    conversation = await call(warp.agent.runs.get_conversation(created.run_id))
    assert conversation.conversation_id == created.run_id
    [step] = conversation.steps
    assert step.description == "$ echo conversed"
    blocks = [block for message in step.messages for block in message.content]
    assert [b.type for b in blocks] == ["text", "action", "action_result", "text"]


async def test_get_timeline(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ true"))
    await finished(warp, created.run_id)
    timeline = await call(warp.agent.runs.get_timeline(created.run_id))
    assert [e.event_type for e in timeline.events] == [
        "oz_run_created",
        "oz_run_claimed",
        "agent_started",
        "oz_run_done",
    ]
    assert all(e.run_id == created.run_id and e.execution_id == 1 for e in timeline.events)


async def test_get_transcript(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ echo transcribed"))
    await finished(warp, created.run_id)
    # A 302 to a signed link, which the SDK follows.
    response = await call(warp.agent.runs.get_transcript(created.run_id))
    text = (await call(response.read())).decode()
    assert '"type":"tool_result"' in text and "transcribed" in text


async def test_get_harness_usage(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ true"))
    usage = await call(warp.agent.runs.get_harness_usage(created.run_id))
    # The scripted harness is neither Claude Code nor Codex: unavailable, not zeros.
    assert usage.available is False and usage.usage is None and usage.run_id == created.run_id


async def test_interrupt(warp: Warp, server: DispatchServer) -> None:
    run = await started(warp, "$ echo kept > kept.txt && sleep 60")
    kept = Path(server.data_dir, "workspaces", run.run_id, "kept.txt")

    async def under_way() -> bool:
        return kept.exists()

    await async_wait_until(under_way, what="the command to be under way")
    await call(warp.agent.runs.interrupt(run.run_id))

    async def stopped() -> bool:
        conversation = await call(warp.agent.runs.get_conversation(run.run_id))
        blocks = [b for s in conversation.steps for m in s.messages for b in m.content]
        # The executor says so once the agent's turn has stopped.
        return any(b.type == "event" and "turn was stopped" in str(b.data.get("message")) for b in blocks)

    await async_wait_until(stopped, what="the interrupted command to stop")
    assert (await call(warp.agent.runs.retrieve(run.run_id))).state == "INPROGRESS"
    sent = await call(warp.agent.runs.submit_followup(run.run_id, message="$ cat kept.txt"))
    assert sent.outcome == "live_session"
    assert (await finished(warp, run.run_id)).state == "SUCCEEDED"
    transcript = (await call((await call(warp.agent.runs.get_transcript(run.run_id))).read())).decode()
    assert '"output":"kept\\n"' in transcript


async def test_list_handoff_attachments(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ true"))
    listed = await call(warp.agent.runs.list_handoff_attachments(created.run_id))
    assert listed.attachments == []
