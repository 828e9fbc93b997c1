"""Runs through the official Oz Python SDK: agent.run, runs.retrieve, runs.list with every filter Dispatch
honours, runs.submit_followup, runs.cancel (the SDK sends an empty JSON body) and the create fields
(team, interactive, conversation_id, parent_run_id, mode), sync and async, all strictly validated."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import get_args

import pytest
from oz_agent_sdk import AsyncOzAPI, BadRequestError, NotFoundError, OzAPI
from oz_agent_sdk.types.agent import RunItem
from oz_agent_sdk.types.error_code import ErrorCode

from .support import DispatchServer, async_wait_until, unique, wait_until

TERMINAL = ("SUCCEEDED", "FAILED", "ERROR", "CANCELLED")
OZ_ERROR_CODES = set(get_args(ErrorCode))


def finished(client: OzAPI, run_id: str) -> RunItem:
    def check() -> RunItem | None:
        run = client.agent.runs.retrieve(run_id)
        return run if run.state in TERMINAL else None

    return wait_until(check, what=f"run {run_id} to finish")


def test_run_and_retrieve(client: OzAPI) -> None:
    name = unique("sdk")
    created = client.agent.run(
        prompt="$ echo hello from python",
        title="Python SDK run",
        team=True,
        interactive=False,
        metadata={"suite": "oz-sdk-python"},
        config={"name": name, "environment_id": "bare", "harness": {"type": "oz"}},
    )
    assert created.state == "QUEUED" and created.task_id == created.run_id
    run = finished(client, created.run_id)
    assert run.state == "SUCCEEDED"
    assert run.title == "Python SDK run"
    assert run.metadata == {"suite": "oz-sdk-python"}
    assert run.agent_config is not None and run.agent_config.name == name
    assert run.agent_config.harness is not None and run.agent_config.harness.type == "oz"
    assert run.conversation_id == run.run_id
    assert run.execution_location == "REMOTE"
    assert run.scope is not None and run.scope.type == "Team"
    assert run.source == "API"
    assert run.session_link and run.session_link.endswith(f"/sessions/{run.session_id}")


def test_failed_run_status_message(client: OzAPI) -> None:
    run = finished(client, client.agent.run(prompt="$ exit 5").run_id)
    assert run.state == "FAILED"
    assert run.status_message is not None
    assert "exit 5" in run.status_message.message
    assert run.status_message.error_code is None or run.status_message.error_code in OZ_ERROR_CODES
    # Dispatch's finer reason rides along as an extra field the SDK keeps.
    assert getattr(run.status_message, "reason", None) == "command_failed"


def test_list_with_every_filter(client: OzAPI, server: DispatchServer) -> None:
    name = unique("filtered")
    tag = unique("tag")
    since = datetime.now(timezone.utc) - timedelta(minutes=1)
    parent = client.agent.run(prompt="$ true", config={"name": name, "environment_id": "bare"}, metadata={"tag": tag})
    child = client.agent.run(prompt="$ true", parent_run_id=parent.run_id, metadata={"tag": tag})
    skilled = client.agent.run(skill="greeter", prompt="$ echo hi", metadata={"tag": tag})
    for run_id in (parent.run_id, child.run_id, skilled.run_id):
        finished(client, run_id)

    def ids(**filters: object) -> list[str]:
        query: dict[str, object] = {"sort_by": "created_at", "sort_order": "asc", **filters}
        page = client.agent.runs.list(metadata={"tag": tag}, **query)
        return [r.run_id for r in page.runs]

    everything = [parent.run_id, child.run_id, skilled.run_id]
    assert ids() == everything
    assert ids(name=name) == [parent.run_id]
    assert ids(environment_id="bare") == [parent.run_id]
    assert ids(skill="greeter") == [skilled.run_id]
    assert ids(skill_spec="greeter") == [skilled.run_id]
    assert ids(ancestor_run_id=parent.run_id) == [child.run_id]
    assert ids(state=["SUCCEEDED", "FAILED"]) == everything
    assert ids(state=["QUEUED"]) == []
    assert ids(source="API") == everything
    assert ids(creator="admin") == everything
    assert ids(executor="admin") == everything
    assert ids(execution_location="REMOTE") == everything
    assert ids(execution_location="LOCAL") == []
    assert ids(created_after=since, updated_after=since) == everything
    assert ids(created_before=since) == []
    assert ids(q="echo hi") == [skilled.run_id]
    assert ids(artifact_type="PULL_REQUEST") == []
    assert ids(schedule_id="no-such-schedule") == []
    # By agent name ("filtered-…" before the skill's "greeter"), runs without one last.
    assert ids(sort_by="agent") == [parent.run_id, skilled.run_id, child.run_id]

    first = client.agent.runs.list(metadata={"tag": tag}, limit=2)
    assert len(first.runs) == 2 and first.page_info.has_next_page and first.page_info.next_cursor
    rest = client.agent.runs.list(metadata={"tag": tag}, limit=2, cursor=first.page_info.next_cursor)
    assert len(rest.runs) == 1 and not rest.page_info.has_next_page

    # A filter of the SDK that Dispatch does not offer is refused by name, never silently ignored.
    with pytest.raises(BadRequestError) as refused:
        client.agent.runs.list(factory_uid="f1")
    assert "factory_uid" in str(refused.value)


def test_followup_and_conversation(client: OzAPI) -> None:
    created = client.agent.run(prompt="$ echo one > one.txt")
    finished(client, created.run_id)
    client.agent.runs.submit_followup(created.run_id, message="$ cat one.txt", mode="normal")
    wait_until(lambda: client.agent.runs.retrieve(created.run_id).state == "SUCCEEDED", what="the follow-up")
    again = client.agent.run(prompt="$ echo two", conversation_id=created.run_id)
    assert again.run_id == created.run_id
    run = finished(client, created.run_id)
    assert run.state == "SUCCEEDED"
    with pytest.raises(BadRequestError) as refused:
        client.agent.runs.submit_followup(created.run_id, message="x", mode="orchestrate")
    assert "mode" in str(refused.value)


def test_plan_mode(client: OzAPI) -> None:
    # The plan waits for approval: BLOCKED, as the SDK's RunState names it, with the SDK's PlanArtifact.
    created = client.agent.run(prompt="$ echo planned > p.txt", mode="plan")
    run = wait_until(
        lambda: r if (r := client.agent.runs.retrieve(created.run_id)).state == "BLOCKED" else None,
        what="the plan to wait for approval",
    )
    assert run.status_message is not None and getattr(run.status_message, "reason", None) == "awaiting_approval"
    assert [a.artifact_type for a in run.artifacts or []] == ["PLAN"]
    assert created.run_id in [r.run_id for r in client.agent.runs.list(state=["BLOCKED"]).runs]


def test_cancel_sends_an_empty_json_body(client: OzAPI) -> None:
    created = client.agent.run(prompt="$ sleep 30")
    wait_until(lambda: client.agent.runs.retrieve(created.run_id).state == "INPROGRESS", what="the run to start")
    # docs/api.md: the body is the run id as a JSON string; this SDK hands back the body's text as it is.
    assert json.loads(client.agent.runs.cancel(created.run_id)) == created.run_id
    run = client.agent.runs.retrieve(created.run_id)
    assert run.state == "CANCELLED"
    assert run.status_message is not None and getattr(run.status_message, "reason", None) == "cancelled"
    with pytest.raises(BadRequestError):
        client.agent.runs.cancel(created.run_id)


def test_errors_are_the_sdk_errors(client: OzAPI, other_team_key: str, server: DispatchServer) -> None:
    with pytest.raises(NotFoundError):
        client.agent.runs.retrieve("no-such-run")
    with pytest.raises(BadRequestError):
        client.agent.run(prompt="x", team=False)
    mine = client.agent.run(prompt="$ true")
    with OzAPI(
        api_key=other_team_key, base_url=server.base_url, max_retries=0, _strict_response_validation=True
    ) as other:
        with pytest.raises(NotFoundError):
            other.agent.runs.retrieve(mine.run_id)


@pytest.mark.anyio
async def test_async_lifecycle(async_client: AsyncOzAPI) -> None:
    created = await async_client.agent.run(prompt="$ echo async", metadata={"via": "async"})

    async def done() -> RunItem | None:
        run = await async_client.agent.runs.retrieve(created.run_id)
        return run if run.state in TERMINAL else None

    run: RunItem = await async_wait_until(done, what="the async run")
    assert run.state == "SUCCEEDED"
    page = await async_client.agent.runs.list(metadata={"via": "async"}, state=["SUCCEEDED"])
    assert [r.run_id for r in page.runs] == [created.run_id]
    await async_client.agent.runs.submit_followup(created.run_id, message="$ sleep 30")

    async def running() -> bool:
        return (await async_client.agent.runs.retrieve(created.run_id)).state == "INPROGRESS"

    await async_wait_until(running, what="the follow-up to run")
    assert json.loads(await async_client.agent.runs.cancel(created.run_id)) == created.run_id
    assert (await async_client.agent.runs.retrieve(created.run_id)).state == "CANCELLED"
