"""client.schedules: the team's scheduled agents (/agent/schedules), sync and async."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agent_dispatch import (
    AsyncDispatch,
    BadRequestError,
    ConflictError,
    DeleteScheduleResponse,
    Dispatch,
    ListSchedulesResponse,
    NotFoundError,
    RunItem,
    RunSchedule,
    ScheduledAgentItem,
    ScheduleHistory,
)

from .support import REPO_ROOT, DispatchServer, require_route, unique

live = pytest.mark.live

UNKNOWN_ID = "01900000-0000-7000-8000-000000000000"


@pytest.fixture
def has_route(server: DispatchServer) -> None:
    require_route(server, "agent/schedules")


@live
@pytest.mark.usefixtures("has_route")
def test_schedule_lifecycle(client: Dispatch) -> None:
    name = unique("nightly")
    raw_created = client.with_raw_response.schedules.create(
        name=name,
        cron_schedule="0 9 * * 1-5",
        timezone="Europe/Paris",
        prompt="Summarise open PRs",
        agent_config={"model_id": "scripted", "name": "reviewer"},
        metadata={"team": "web"},
    )
    assert raw_created.status_code == 201
    created = raw_created.parse()
    assert isinstance(created, ScheduledAgentItem)
    assert created.name == name and created.cron_schedule == "0 9 * * 1-5" and created.timezone == "Europe/Paris"
    assert created.enabled is True and created.prompt == "Summarise open PRs"
    assert created.agent_config.model_id == "scripted" and created.agent_config.name == "reviewer"
    assert created.metadata == {"team": "web"} and created.last_spawn_error is None
    assert created.history.last_ran is None
    assert created.history.next_run is not None and created.history.next_run.tzinfo is not None
    assert created.scope.type == "Team"

    assert client.schedules.retrieve(created.id) == created
    listed = client.schedules.list()
    assert isinstance(listed, ListSchedulesResponse)
    names = [s.name for s in listed.schedules]
    assert name in names and names == sorted(names)

    # PUT replaces: what is left out takes its default.
    replaced = client.schedules.update(
        created.id, name=f"{name}-2", cron_schedule="30 6 * * *", enabled=True, prompt="x"
    )
    assert replaced.name == f"{name}-2" and replaced.timezone == "UTC" and replaced.agent_config.model_id is None
    paused = client.schedules.pause(created.id)
    assert paused.enabled is False and paused.history.next_run is None
    resumed = client.with_raw_response.schedules.resume(created.id).parse()
    assert resumed.enabled is True and resumed.history.next_run is not None

    deleted = client.schedules.delete(created.id)
    assert isinstance(deleted, DeleteScheduleResponse) and deleted.success is True
    with pytest.raises(NotFoundError):
        client.schedules.retrieve(created.id)


@live
@pytest.mark.usefixtures("has_route")
def test_refusals_are_typed(client: Dispatch) -> None:
    with pytest.raises(BadRequestError) as caught:
        client.schedules.create(name=unique("bad"), cron_schedule="0 9 * *", prompt="p")
    assert "cron_schedule" in (caught.value.detail or "")
    with pytest.raises(BadRequestError) as caught:
        client.schedules.create(name=unique("noprompt"), cron_schedule="0 9 * * *")
    assert "prompt" in (caught.value.detail or "")
    name = unique("taken")
    kept = client.schedules.create(name=name, cron_schedule="0 1 * * *", prompt="p")
    with pytest.raises(ConflictError):
        client.with_options(max_retries=0).schedules.create(name=name, cron_schedule="0 2 * * *", prompt="q")
    for call in (client.schedules.retrieve, client.schedules.pause, client.schedules.resume, client.schedules.delete):
        with pytest.raises(NotFoundError):
            call(UNKNOWN_ID)
    client.schedules.delete(kept.id)


@live
@pytest.mark.anyio
@pytest.mark.usefixtures("has_route")
async def test_schedules_async(async_client: AsyncDispatch) -> None:
    name = unique("async")
    created = await async_client.schedules.create(
        name=name, cron_schedule="15 3 * * *", agent_config={"skill_spec": "acme/web:triage"}, enabled=False
    )
    assert created.enabled is False and created.prompt == "" and created.agent_config.skill_spec == "acme/web:triage"
    assert await async_client.schedules.retrieve(created.id) == created
    assert name in {s.name for s in (await async_client.schedules.list()).schedules}
    assert (await async_client.schedules.resume(created.id)).enabled is True
    assert (await async_client.schedules.pause(created.id)).enabled is False
    updated = await async_client.schedules.update(
        created.id, name=name, cron_schedule="0 4 * * *", enabled=False, prompt="now with a prompt"
    )
    assert updated.prompt == "now with a prompt" and updated.cron_schedule == "0 4 * * *"
    raw = await async_client.with_raw_response.schedules.delete(created.id)
    assert raw.status_code == 200 and raw.parse().success is True
    with pytest.raises(NotFoundError):
        await async_client.schedules.retrieve(created.id)


def test_requests_on_the_wire() -> None:
    seen: list[httpx.Request] = []
    schedule: dict[str, Any] = {
        "id": "s/1",
        "name": "n",
        "cron_schedule": "* * * * *",
        "timezone": "UTC",
        "enabled": True,
        "prompt": "p",
        "created_at": "2030-01-01T00:00:00Z",
        "updated_at": "2030-01-01T00:00:00Z",
        "last_spawn_error": None,
        "agent_config": {},
        "metadata": {},
        "created_by": {"type": "user", "uid": "u", "display_name": "U"},
        "updated_by": {"type": "user", "uid": "u", "display_name": "U"},
        "history": {"last_ran": None, "next_run": "2030-01-01T00:01:00Z"},
        "scope": {"type": "Team", "uid": "team_default"},
        "brand_new": 1,
    }

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "DELETE":
            return httpx.Response(200, json={"success": True})
        return httpx.Response(201 if request.url.path.endswith("/schedules") else 200, json=schedule)

    with Dispatch(
        api_key="k",
        base_url="http://dispatch.test/api/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    ) as client:
        made = client.schedules.create(name="n", cron_schedule="* * * * *", prompt="p", timezone=None)
        assert made.model_extra == {"brand_new": 1}  # unknown fields are kept
        client.schedules.pause("s/1")
        client.schedules.update("s/1", name="n", cron_schedule="0 1 * * *", enabled=False)
        assert client.schedules.delete("s/1").success is True
        with pytest.raises(ValueError):
            client.schedules.retrieve("")
    create, pause, update, delete = seen
    assert create.method == "POST" and create.url.path == "/api/v1/agent/schedules"
    assert json.loads(create.content) == {"name": "n", "cron_schedule": "* * * * *", "prompt": "p"}
    assert create.headers["idempotency-key"].startswith("dispatch-py-")
    assert pause.method == "POST" and pause.url.raw_path == b"/api/v1/agent/schedules/s%2F1/pause"
    assert pause.content == b""
    assert json.loads(update.content) == {"name": "n", "cron_schedule": "0 1 * * *", "enabled": False}
    assert delete.method == "DELETE" and delete.content == b""


def test_a_run_names_its_schedule() -> None:
    run = RunItem.model_validate(
        {
            "run_id": "r",
            "task_id": "r",
            "title": "nightly",
            "prompt": "p",
            "state": "QUEUED",
            "created_at": "2030-01-01T00:01:00Z",
            "updated_at": "2030-01-01T00:01:00Z",
            "started_at": None,
            "finished_at": None,
            "run_time": "PT0S",
            "session_id": "s",
            "session_link": "http://dispatch.test/sessions/s",
            "source": "SCHEDULED_AGENT",
            "creator": {"type": "user", "uid": "u", "display_name": "U"},
            "executor": {"type": "user", "uid": "u", "display_name": "U"},
            "agent_config": {},
            "artifacts": [],
            "request_usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
            "is_sandbox_running": False,
            "is_run_type_cancellable": True,
            "scope": {"type": "Team", "uid": "team_default"},
            "metadata": {},
            "conversation_id": "r",
            "root_run_id": "r",
            "execution_location": "REMOTE",
            "schedule": {
                "schedule_id": "s1",
                "schedule_name": "nightly",
                "cron_schedule": "* * * * *",
                "fire_time": "2030-01-01T00:01:00Z",
            },
        }
    )
    assert run.schedule is not None and run.schedule.schedule_name == "nightly"


def test_models_match_openapi() -> None:
    path = REPO_ROOT / "openapi.json"
    if not path.exists():
        pytest.skip("openapi.json not found (the library is tested outside its repository)")
    schemas: dict[str, Any] = json.loads(path.read_text())["components"]["schemas"]
    item = schemas["ScheduledAgentItem"]
    pairs: list[tuple[type[Any], dict[str, Any]]] = [
        (ScheduledAgentItem, item),
        (ScheduleHistory, item["properties"]["history"]),
        (ListSchedulesResponse, schemas["ListSchedulesResponse"]),
        (DeleteScheduleResponse, schemas["DeleteScheduleResponse"]),
        (RunSchedule, schemas["RunItem"]["properties"]["schedule"]),
    ]
    for model, schema in pairs:
        fields: dict[str, Any] = model.model_fields
        assert set(fields) == set(schema["properties"]), model.__name__
        required = {name for name, info in fields.items() if info.is_required()}
        assert required == set(schema.get("required", [])), model.__name__
