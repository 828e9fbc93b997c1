"""agent.conversations through the official Warp Platform SDK: a Dispatch run is its own conversation, so
each route is its run's. One test per method, each with the sync and the async client."""

from __future__ import annotations

import pytest
from warp_platform_sdk import AuthenticationError, BadRequestError, NotFoundError

from .conftest import Warp, call
from .flows import finished, in_state, started
from .support import DispatchServer

pytestmark = pytest.mark.anyio


async def test_retrieve(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ echo hi"))
    await finished(warp, created.run_id)
    conversation = await call(warp.agent.conversations.retrieve(created.run_id))
    assert conversation.conversation_id == created.run_id
    same = await call(warp.agent.runs.get_conversation(created.run_id))
    assert conversation.model_dump() == same.model_dump()


async def test_submit_followup(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ echo one"))
    await finished(warp, created.run_id)
    sent = await call(warp.agent.conversations.submit_followup(created.run_id, message="$ echo two"))
    assert (sent.run_id, sent.outcome) == (created.run_id, "handoff_execution")
    steps = (await call(warp.agent.conversations.retrieve(created.run_id))).steps
    await finished(warp, created.run_id)
    assert [s.description for s in steps][-1] == "$ echo two"


async def test_interrupt(warp: Warp) -> None:
    run = await started(warp, "$ sleep 60")
    answer = await call(warp.agent.conversations.interrupt(run.run_id))
    assert answer.run_id == run.run_id
    await call(warp.agent.runs.cancel(run.run_id))
    done = await finished(warp, run.run_id)
    with pytest.raises(BadRequestError):
        await call(warp.agent.conversations.interrupt(done.run_id))


async def test_get_transcript(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ echo transcript"))
    await finished(warp, created.run_id)
    response = await call(warp.agent.conversations.get_transcript(created.run_id))
    assert b'"state":"SUCCEEDED"' in await call(response.read())


async def test_check_redirect(warp: Warp, server: DispatchServer) -> None:
    created = await call(warp.agent.run(prompt="$ sleep 30"))
    run = await in_state(warp, created.run_id, ("INPROGRESS",))
    # Dispatch needs a key for it (the answer is the session's capability); this SDK sends none unless told.
    key = {"Authorization": f"Bearer {server.admin_key}"}
    assert (
        await call(warp.agent.conversations.check_redirect(run.run_id, extra_headers=key))
    ).session_id == run.session_id
    with pytest.raises(AuthenticationError):
        await call(warp.agent.conversations.check_redirect(run.run_id))
    await call(warp.agent.runs.cancel(run.run_id))
    assert (await call(warp.agent.conversations.check_redirect(run.run_id, extra_headers=key))).session_id is None


async def test_download_screenshot(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ true"))
    # Dispatch's agents take no screenshots: every one is unknown.
    with pytest.raises(NotFoundError):
        await call(warp.agent.conversations.download_screenshot("shot-1", conversation_id=created.run_id))
