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
    AgentIdentity,
    AgentSkill,
    Artifact,
    CloudEnvironment,
    CreateRunResponse,
    Creator,
    EnvironmentConfig,
    FileArtifactData,
    FileArtifactResponse,
    FollowupOutcome,
    FollowupResponse,
    GitHubRepo,
    IdentitySecret,
    LastTaskCreated,
    ListAgentIdentitiesResponse,
    ListAgentsResponse,
    ListEnvironmentsResponse,
    ListModelsResponse,
    ListRunsResponse,
    MCPServerConfig,
    ModelInfo,
    ModelProvider,
    PageInfo,
    Problem,
    RequestUsage,
    RunBudget,
    RunBudgetLimit,
    RunEvent,
    RunEventsResponse,
    RunItem,
    RunState,
    Scope,
    SkillAgent,
    SkillVariant,
    SkillVariantEnvironment,
    SkillVariantSource,
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


def resolved(openapi: dict[str, Any], property_: dict[str, Any]) -> dict[str, Any]:
    """The schema a ``$ref`` names, or the schema itself."""
    ref = property_.get("$ref")
    return schema(openapi, ref.rsplit("/", 1)[-1]) if isinstance(ref, str) else property_


def test_nested_objects_match(openapi: dict[str, Any]) -> None:
    run = schema(openapi, "RunItem")["properties"]
    assert_matches(Creator, run["creator"])
    assert_matches(Creator, run["executor"])
    assert_matches(AgentSkill, run["agent_skill"])
    assert_matches(StatusMessage, run["status_message"])
    # One model for every artifact type: each variant has the same three fields.
    for variant in resolved(openapi, run["artifacts"]["items"])["oneOf"]:
        assert_matches(Artifact, variant)
    assert_matches(RequestUsage, resolved(openapi, run["request_usage"]))
    assert_matches(Scope, run["scope"])
    assert_matches(RunBudget, resolved(openapi, run["budget"]))
    assert_matches(RunBudgetLimit, resolved(openapi, run["budget"])["properties"]["limit"])
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
        "state": "PENDING",
        "brand_new_field": {"x": 1},
        "creator": {**RUN["creator"], "type": "robot", "avatar": "a.png"},
        "agent_config": {"harness": {"type": "quantum", "qubits": 3}},
    }
    run = RunItem.model_validate(newer)
    assert run.state == "PENDING" and not run.is_terminal
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


# --- models, environments, skills, identities ---


def documented(openapi: dict[str, Any], path: str) -> None:
    """Skips while openapi.json does not have the route yet (it comes with the server's routes)."""
    if path not in openapi["paths"]:
        pytest.skip(f"openapi.json has no {path} yet")


def nullable_object(property_: dict[str, Any]) -> dict[str, Any]:
    """The object schema of ``anyOf: [object, null]``."""
    (found,) = [s for s in property_.get("anyOf", [property_]) if s.get("type") == "object"]
    return found


def test_catalogue_schemas_match(openapi: dict[str, Any]) -> None:
    documented(openapi, "/agent/models")
    assert_matches(ModelInfo, schema(openapi, "Model"))
    assert_matches(ListModelsResponse, schema(openapi, "ListModelsResponse"))
    assert set(get_args(ModelProvider)) == set(schema(openapi, "Model")["properties"]["provider"]["enum"])

    documented(openapi, "/agent/environments")
    environment = schema(openapi, "CloudEnvironment")
    assert_matches(CloudEnvironment, environment)
    assert_matches(EnvironmentConfig, environment["properties"]["config"])
    assert_matches(GitHubRepo, environment["properties"]["config"]["properties"]["github_repos"]["items"])
    assert_matches(LastTaskCreated, nullable_object(environment["properties"]["last_task_created"]))
    assert_matches(ListEnvironmentsResponse, schema(openapi, "ListEnvironmentsResponse"))

    documented(openapi, "/agent")
    agent = schema(openapi, "AgentSkill")
    assert_matches(SkillAgent, agent)
    variant = agent["properties"]["variants"]["items"]
    assert_matches(SkillVariant, variant)
    assert_matches(SkillVariantSource, variant["properties"]["source"])
    assert_matches(SkillVariantEnvironment, variant["properties"]["environments"]["items"])
    assert_matches(ListAgentsResponse, schema(openapi, "ListAgentsResponse"))


def test_identity_schemas_match(openapi: dict[str, Any]) -> None:
    documented(openapi, "/agent/identities")
    identity = schema(openapi, "AgentIdentity")
    assert_matches(AgentIdentity, identity)
    assert_matches(IdentitySecret, identity["properties"]["secrets"]["items"])
    assert_matches(ListAgentIdentitiesResponse, schema(openapi, "ListAgentIdentitiesResponse"))


def test_artifact_schemas_match(openapi: dict[str, Any]) -> None:
    documented(openapi, "/agent/artifacts/{artifactUid}")
    artifact = schema(openapi, "FileArtifactResponse")
    assert_matches(FileArtifactResponse, artifact)
    assert_matches(FileArtifactData, artifact["properties"]["data"])


def query_parameters(openapi: dict[str, Any], path: str) -> set[str]:
    return {p["name"] for p in openapi["paths"][path]["get"].get("parameters", []) if p["in"] == "query"}


def test_catalogue_and_identity_parameters_cover_the_api(openapi: dict[str, Any]) -> None:
    client = Dispatch(api_key="k")
    documented(openapi, "/agent/models")
    assert query_parameters(openapi, "/agent/models") <= keyword_parameters(client.models.list)
    documented(openapi, "/agent/environments")
    assert query_parameters(openapi, "/agent/environments") <= keyword_parameters(client.environments.list)
    documented(openapi, "/agent")
    assert query_parameters(openapi, "/agent") <= keyword_parameters(client.agents.list)
    documented(openapi, "/agent/identities")
    # secrets: Dispatch has no managed secrets and accepts only an empty list (extra_body={"secrets": []}).
    create = set(schema(openapi, "CreateAgentIdentityRequest")["properties"]) - {"secrets"}
    assert create <= keyword_parameters(client.identities.create)
    update = set(schema(openapi, "UpdateAgentIdentityRequest")["properties"]) - {"secrets"}
    assert update <= keyword_parameters(client.identities.update)


def test_catalogue_models_tolerate_newer_servers() -> None:
    model = ModelInfo.model_validate(
        {"id": "m", "display_name": "M", "provider": "MISTRAL", "vision_supported": False, "context": 128000}
    )
    assert model.provider == "MISTRAL" and model.description is None and model.model_extra == {"context": 128000}
    environment = CloudEnvironment.model_validate(
        {
            "uid": "e",
            "config": {"name": "e", "description": None, "github_repos": [], "setup_commands": [], "docker": "x"},
            "last_updated": RUN["created_at"],
            "setup_failed": False,
            "last_task_run_timestamp": None,
            "last_task_created": {
                "id": "r",
                "title": "t",
                "state": "BLOCKED",
                "created_at": RUN["created_at"],
                "updated_at": RUN["created_at"],
                "started_at": None,
            },
            "scope": {"type": "Team", "uid": "t"},
        }
    )
    assert environment.last_task_created is not None and environment.last_task_created.state == "BLOCKED"
    assert environment.config.model_extra == {"docker": "x"} and environment.model_extra is not None
    identity = AgentIdentity.model_validate(
        {
            "uid": "sa_1",
            "name": "n",
            "available": True,
            "created_at": RUN["created_at"],
            "updated_at": RUN["created_at"],
            "default_runner_uid": "",
            "memory": {"attached_stores": [], "auto_memory": {"enabled": False}, "notes": "newer"},
            "skills": [],
            "secrets": [{"name": "s"}],
            "factory_uid": "f",
        }
    )
    assert identity.secrets == [IdentitySecret(name="s")] and identity.model_extra == {"factory_uid": "f"}
    assert identity.memory.model_extra == {"notes": "newer"}
