"""The session and conversation resolvers through the official Oz Python SDK. The session resolver needs
no key (the session id is the capability); the conversation resolver answers a session id, so Dispatch
needs a key of the run's team for it, which this SDK must be given as an extra header."""

from __future__ import annotations

import pytest
from oz_agent_sdk import AuthenticationError, NotFoundError, OzAPI

from .support import DispatchServer, wait_until


def test_session_and_conversation_redirects(client: OzAPI, server: DispatchServer) -> None:
    created = client.agent.run(prompt="$ sleep 30")
    run = wait_until(
        lambda: (r := client.agent.runs.retrieve(created.run_id)).state == "INPROGRESS" and r, what="the run to start"
    )
    assert run.session_id
    key = {"Authorization": f"Bearer {server.admin_key}"}
    assert client.agent.sessions.check_redirect(run.session_id).conversation_id is None
    live = client.agent.conversations.check_redirect(created.run_id, extra_headers=key)
    assert live.session_id == run.session_id
    with pytest.raises(AuthenticationError):
        client.agent.conversations.check_redirect(created.run_id)

    client.agent.runs.cancel(created.run_id)
    assert client.agent.sessions.check_redirect(run.session_id).conversation_id == created.run_id
    assert client.agent.conversations.check_redirect(created.run_id, extra_headers=key).session_id is None
    with pytest.raises(NotFoundError):
        client.agent.sessions.check_redirect("no-such-session")
