"""A scripted run's whole life against a live server: create, follow, retrieve, follow up, cancel."""

from __future__ import annotations

import time
import uuid

import pytest

from agent_dispatch import AsyncDispatch, BadRequestError, Dispatch, PermissionDeniedError, RunEvent

from .support import DispatchServer

pytestmark = pytest.mark.live

FOLLOW_DEADLINE_S = 30.0


def states(events: list[RunEvent]) -> list[str]:
    return [str(e.data["state"]) for e in events if e.type == "state"]


def tool_outputs(events: list[RunEvent]) -> list[str]:
    return [str(e.data["output"]) for e in events if e.type == "tool_result"]


def follow(client: Dispatch, run_id: str, after: int | None = None) -> list[RunEvent]:
    deadline = time.monotonic() + FOLLOW_DEADLINE_S
    events: list[RunEvent] = []
    with client.runs.events(run_id, after=after) as stream:
        for event in stream:
            events.append(event)
            assert time.monotonic() < deadline, f"run {run_id} did not finish: {events}"
    return events


async def afollow(client: AsyncDispatch, run_id: str, after: int | None = None) -> list[RunEvent]:
    deadline = time.monotonic() + FOLLOW_DEADLINE_S
    events: list[RunEvent] = []
    async with client.runs.events(run_id, after=after) as stream:
        async for event in stream:
            events.append(event)
            assert time.monotonic() < deadline, f"run {run_id} did not finish: {events}"
    return events


def test_scripted_run_lifecycle(client: Dispatch) -> None:
    created = client.runs.create(prompt="$ echo hi")
    assert created.state == "QUEUED"
    assert created.task_id == created.run_id

    events = follow(client, created.run_id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # each once, in order
    assert states(events) == ["QUEUED", "INPROGRESS", "SUCCEEDED"]
    assert events[-1].type == "state"  # iteration ended by itself at the terminal state
    assert [o.strip() for o in tool_outputs(events)] == ["hi"]
    assert any(e.type == "message" and e.data.get("role") == "user" for e in events)

    run = client.runs.retrieve(created.run_id)
    assert run.state == "SUCCEEDED" and run.is_terminal
    assert run.prompt == "$ echo hi" and run.title == "$ echo hi"
    assert run.started_at is not None and run.finished_at is not None
    assert run.finished_at >= run.started_at
    assert run.session_link.endswith(run.session_id)
    assert run.source == "API" and run.scope.type == "Team"

    # Following from past the final state of a finished run ends at once instead of waiting.
    assert follow(client, created.run_id, after=events[-1].seq) == []

    # A follow-up to a finished run hands off to a new execution of the same run.
    followup = client.runs.followup(created.run_id, message="$ echo again")
    assert followup.outcome == "handoff_execution"
    more = follow(client, created.run_id, after=events[-1].seq)
    assert more[0].seq == events[-1].seq + 1
    assert states(more) == ["QUEUED", "INPROGRESS", "SUCCEEDED"]
    assert [o.strip() for o in tool_outputs(more)] == ["again"]

    # Following from the start now runs through both executions, not stopping at the first SUCCEEDED.
    everything = follow(client, created.run_id)
    assert [e.seq for e in everything] == [e.seq for e in events + more]


def test_cancel_running_run(client: Dispatch) -> None:
    created = client.runs.create(prompt="$ sleep 60")
    with client.runs.events(created.run_id) as stream:
        seen: list[str] = []
        for event in stream:
            seen.append(event.type)
            if event.type == "tool_call":  # the command is running: cancel it
                assert client.runs.cancel(created.run_id) == created.run_id
            if event.type == "state" and event.data["state"] == "CANCELLED":
                break
    assert "tool_call" in seen
    run = client.runs.retrieve(created.run_id)
    assert run.state == "CANCELLED"
    assert run.status_message is not None and run.status_message.message
    with pytest.raises(BadRequestError) as caught:
        client.runs.cancel(created.run_id)
    assert "CANCELLED" in (caught.value.detail or "")


def test_list_events_page(client: Dispatch) -> None:
    created = client.runs.create(prompt="$ echo page")
    follow(client, created.run_id)
    page = client.runs.list_events(created.run_id, after=2, limit=2)
    assert [e.seq for e in page.events] == [3, 4]
    assert page.next_after == 4


@pytest.mark.anyio
async def test_scripted_run_lifecycle_async(async_client: AsyncDispatch) -> None:
    created = await async_client.runs.create(prompt="$ echo hi")
    assert created.state == "QUEUED"

    events = await afollow(async_client, created.run_id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert states(events) == ["QUEUED", "INPROGRESS", "SUCCEEDED"]
    assert [o.strip() for o in tool_outputs(events)] == ["hi"]

    run = await async_client.runs.retrieve(created.run_id)
    assert run.state == "SUCCEEDED" and run.finished_at is not None

    followup = await async_client.runs.followup(created.run_id, message="$ echo again")
    assert followup.outcome == "handoff_execution"
    more = await afollow(async_client, created.run_id, after=events[-1].seq)
    assert [o.strip() for o in tool_outputs(more)] == ["again"]


@pytest.mark.anyio
async def test_cancel_running_run_async(async_client: AsyncDispatch) -> None:
    created = await async_client.runs.create(prompt="$ sleep 60")
    async with async_client.runs.events(created.run_id) as stream:
        async for event in stream:
            if event.type == "tool_call":
                assert await async_client.runs.cancel(created.run_id) == created.run_id
    # The stream ended by itself at CANCELLED.
    assert stream.last_event_id is not None
    run = await async_client.runs.retrieve(created.run_id)
    assert run.state == "CANCELLED"
    with pytest.raises(BadRequestError):
        await async_client.runs.cancel(created.run_id)


def test_list_filters_by_metadata_and_several_sources(client: Dispatch) -> None:
    tag = uuid.uuid4().hex
    tagged = client.runs.create(prompt="tagged", metadata={"ticket": tag, "team": "web"})
    client.runs.create(prompt="other team", metadata={"ticket": tag, "team": "api"})
    found = client.runs.list(metadata={"ticket": tag, "team": "web"}, source=["API", "SLACK"])
    assert [r.run_id for r in found] == [tagged.run_id]
    assert list(client.runs.list(metadata={"ticket": tag}, source=["SLACK"])) == []
    assert len(list(client.runs.list(metadata={"ticket": tag}, execution_location="REMOTE"))) == 2


def test_on_behalf_of_a_user_id_or_email_or_dispatchs_object(client: Dispatch, server: DispatchServer) -> None:
    email = f"ann-{uuid.uuid4().hex[:8]}@example.com"
    user_key = server.create_key(args=("--type", "user", "--email", email, "--display-name", "Ann"))
    with Dispatch(api_key=user_key, base_url=server.base_url) as ann:
        uid = ann.runs.retrieve(ann.runs.create(prompt="$ true").run_id).creator.uid
        # A member key may not name someone else.
        with pytest.raises(PermissionDeniedError):
            ann.runs.create(prompt="$ true", on_behalf_of=uid)
    # The Warp Platform API's form: the user's id or email; the run is that user's.
    for who in (uid, email.upper()):
        run = client.runs.retrieve(client.runs.create(prompt="$ true", on_behalf_of=who).run_id)
        assert (run.creator.uid, run.creator.display_name, run.creator.email) == (uid, "Ann", email)
    # Dispatch's object form, as integrations send it.
    someone = {"type": "user", "uid": "slack:T1:U9", "display_name": "Someone"}
    created = client.runs.create(prompt="$ true", on_behalf_of={"creator": someone, "source": "SLACK"})
    run = client.runs.retrieve(created.run_id)
    assert run.creator.uid == "slack:T1:U9" and run.source == "SLACK"
    with pytest.raises(BadRequestError):
        client.runs.create(prompt="$ true", on_behalf_of="nobody@example.com")
