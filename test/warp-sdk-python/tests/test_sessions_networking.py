"""agent.sessions.check_redirect (no key: the session id is the capability) and
networking.get_egress_ranges through the official Warp Platform SDK, sync and async."""

from __future__ import annotations

import pytest
from warp_platform_sdk import NotFoundError

from .conftest import EGRESS_CIDRS, Warp, call
from .flows import in_state

pytestmark = pytest.mark.anyio


async def test_sessions_check_redirect(warp: Warp) -> None:
    created = await call(warp.agent.run(prompt="$ sleep 30"))
    run = await in_state(warp, created.run_id, ("INPROGRESS",))
    assert run.session_id
    assert (await call(warp.agent.sessions.check_redirect(run.session_id))).conversation_id is None
    await call(warp.agent.runs.cancel(run.run_id))
    assert (await call(warp.agent.sessions.check_redirect(run.session_id))).conversation_id == run.run_id
    with pytest.raises(NotFoundError):
        await call(warp.agent.sessions.check_redirect("no-such-session"))


async def test_networking_get_egress_ranges(warp: Warp) -> None:
    ranges = await call(warp.networking.get_egress_ranges())
    assert ranges.cidrs == EGRESS_CIDRS.split(",")
