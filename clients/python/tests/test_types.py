"""The models against the committed openapi.json (drift fails here) and their tolerance of newer servers."""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from agent_dispatch import Dispatch
from agent_dispatch.types import (
    AgentConfig,
    AgentConfigParam,
    AgentSkill,
    Artifact,
    CreateRunResponse,
    Creator,
    FollowupOutcome,
    FollowupResponse,
    ListRunsResponse,
    MCPServerConfig,
    PageInfo,
    Problem,
    RequestUsage,
    RunEvent,
    RunEventsResponse,
    RunItem,
    RunState,
    Scope,
    StatusMessage,
)

from .support import REPO_ROOT, RUN

OPENAPI = REPO_ROOT / "openapi.json"


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    if not OPENAPI.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{OPENAPI} is missing")
        pytest.skip("openapi.json not found (the library is tested outside its repository)")
    document: dict[str, Any] = json.loads(Path(OPENAPI).read_text())
    return document


def schema(openapi: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = openapi["components"]["schemas"][name]
    return found


def assert_matches(model: type[BaseModel], schema_: dict[str, Any]) -> None:
    fields = set(model.model_fields)
    required = {name for name, info in model.model_fields.items() if info.is_required()}
    assert fields == set(schema_["properties"]), f"{model.__name__} fields differ from openapi.json"
    assert required == set(schema_.get("required", [])), f"{model.__name__} required fields differ"


@pytest.mark.parametrize(
    "model",
    [
        RunItem,
        CreateRunResponse,
        ListRunsResponse,
        FollowupResponse,
        RunEvent,
        RunEventsResponse,
        Problem,
        AgentConfig,
        MCPServerConfig,
    ],
)
def test_component_schemas_match(openapi: dict[str, Any], model: type[BaseModel]) -> None:
    assert_matches(model, schema(openapi, model.__name__))


def test_nested_objects_match(openapi: dict[str, Any]) -> None:
    run = schema(openapi, "RunItem")["properties"]
    assert_matches(Creator, run["creator"])
    assert_matches(AgentSkill, run["agent_skill"])
    assert_matches(StatusMessage, run["status_message"])
    assert_matches(Artifact, run["artifacts"]["items"])
    assert_matches(RequestUsage, run["request_usage"])
    assert_matches(Scope, run["scope"])
    assert_matches(PageInfo, schema(openapi, "ListRunsResponse")["properties"]["page_info"])


def test_enums_match(openapi: dict[str, Any]) -> None:
    assert set(get_args(RunState)) == set(schema(openapi, "RunState")["enum"])
    assert set(get_args(FollowupOutcome)) == set(schema(openapi, "FollowupResponse")["properties"]["outcome"]["enum"])


def keyword_parameters(method: Any) -> set[str]:
    return {p.name for p in inspect.signature(method).parameters.values() if p.kind is p.KEYWORD_ONLY}


def test_request_parameters_cover_the_api(openapi: dict[str, Any]) -> None:
    runs = Dispatch(api_key="k").runs
    assert set(schema(openapi, "CreateRunRequest")["properties"]) <= keyword_parameters(runs.create)
    assert set(schema(openapi, "FollowupRequest")["properties"]) <= keyword_parameters(runs.followup)
    assert set(AgentConfigParam.__annotations__) == set(schema(openapi, "AgentConfig")["properties"])
    query = {p["name"] for p in openapi["paths"]["/agent/runs"]["get"]["parameters"] if p["in"] == "query"}
    assert query - {"config_name"} <= keyword_parameters(runs.list)  # config_name: an alias of name
    events = {
        p["name"] for p in openapi["paths"]["/agent/runs/{runId}/events"]["get"]["parameters"] if p["in"] == "query"
    }
    assert events <= keyword_parameters(runs.list_events)


def test_unknown_fields_and_enum_values_are_tolerated() -> None:
    newer = {
        **RUN,
        "state": "BLOCKED",
        "brand_new_field": {"x": 1},
        "creator": {**RUN["creator"], "type": "robot", "avatar": "a.png"},
        "agent_config": {"harness": {"type": "quantum", "qubits": 3}},
    }
    run = RunItem.model_validate(newer)
    assert run.state == "BLOCKED" and not run.is_terminal
    assert run.model_extra == {"brand_new_field": {"x": 1}}
    assert run.creator.type == "robot"
    assert run.agent_config.harness is not None and run.agent_config.harness.type == "quantum"
    assert FollowupResponse.model_validate({"followup_id": "f", "outcome": "teleported"}).outcome == "teleported"
    assert RunEvent.model_validate({"seq": 1, "at": RUN["created_at"], "type": "novel", "data": {}}).type == "novel"


def test_terminal_states() -> None:
    for state, terminal in [
        ("SUCCEEDED", True),
        ("FAILED", True),
        ("ERROR", True),
        ("CANCELLED", True),
        ("QUEUED", False),
        ("INPROGRESS", False),
        ("PENDING", False),
    ]:
        assert RunItem.model_validate({**RUN, "state": state}).is_terminal is terminal
