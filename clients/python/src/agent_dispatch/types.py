"""Request and response types of the Dispatch HTTP API v1 (docs/API.md, openapi.json).

Response models accept fields they do not know (kept in ``model_extra``) and enum values they do not
know (``RunState`` is an open set: the literals are the values this version knows, any other string is
kept as-is), so that a newer server never breaks an older client.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from typing_extensions import Required, TypedDict

__all__ = [
    "RunState",
    "TERMINAL_STATES",
    "FollowupOutcome",
    "RunEventType",
    "DispatchModel",
    "MCPServerConfig",
    "Harness",
    "AgentConfig",
    "Creator",
    "AgentSkill",
    "StatusMessage",
    "Artifact",
    "RequestUsage",
    "Scope",
    "RunItem",
    "CreateRunResponse",
    "PageInfo",
    "ListRunsResponse",
    "FollowupResponse",
    "RunEvent",
    "RunEventsResponse",
    "Problem",
    "AgentConfigParam",
    "MCPServerConfigParam",
    "HarnessParam",
    "ModelProvider",
    "ModelInfo",
    "ListModelsResponse",
    "GitHubRepo",
    "EnvironmentConfig",
    "LastTaskCreated",
    "CloudEnvironment",
    "ListEnvironmentsResponse",
    "SkillVariantSource",
    "SkillVariantEnvironment",
    "SkillVariant",
    "SkillAgent",
    "ListAgentsResponse",
    "IdentitySecret",
    "AgentIdentity",
    "ListAgentIdentitiesResponse",
]

RunState = Literal["QUEUED", "INPROGRESS", "SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]
"""The states this version knows. Fields typed ``RunState | str`` may carry others (the Oz API also
names PENDING, CLAIMED and BLOCKED)."""

TERMINAL_STATES: frozenset[str] = frozenset({"SUCCEEDED", "FAILED", "ERROR", "CANCELLED"})
"""States in which no execution is running (a follow-up can still start a new one)."""

FollowupOutcome = Literal["queued_prompt", "live_session", "handoff_execution"]

RunEventType = Literal["state", "message", "tool_call", "tool_result", "followup", "artifact", "usage", "error", "log"]

DeliveryMode = Literal["pull_request", "branch", "none"]
"""How a run with a repository delivers: a pull request, a pushed branch only, or nothing."""

SortBy = Literal["updated_at", "created_at", "title", "agent"]
SortOrder = Literal["asc", "desc"]


class DispatchModel(BaseModel):
    """Base of every response model: unknown fields are kept, not rejected."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, protected_namespaces=())


class MCPServerConfig(DispatchModel):
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    url: str | None = None
    headers: dict[str, str] | None = None


class Harness(DispatchModel):
    type: str
    """``builtin``, ``scripted`` or another harness the server offers."""


class AgentConfig(DispatchModel):
    name: str | None = None
    model_id: str | None = None
    base_prompt: str | None = None
    environment_id: str | None = None
    skill_spec: str | None = None
    mcp_servers: dict[str, MCPServerConfig] | None = None
    harness: Harness | None = None
    idle_timeout_minutes: int | None = None
    max_run_minutes: int | None = None
    repository: str | None = None
    """Where the run's changes are delivered: ``owner/repo``, ``owner/repo@base`` or a git URL."""
    base_branch: str | None = None
    branch: str | None = None
    """The branch Dispatch pushes to (``dispatch/…``)."""
    delivery: DeliveryMode | str | None = None


class Creator(DispatchModel):
    type: Literal["user", "service_account"] | str
    uid: str
    display_name: str
    email: str | None = None


class AgentSkill(DispatchModel):
    name: str
    description: str | None = None
    full_path: str


class StatusMessage(DispatchModel):
    message: str
    error_code: str | None = None
    retryable: bool | None = None


class Artifact(DispatchModel):
    artifact_type: Literal["PULL_REQUEST", "FILE"] | str
    created_at: datetime
    data: dict[str, Any]


class RequestUsage(DispatchModel):
    input_tokens: int | float
    output_tokens: int | float
    total_tokens: int | float
    inference_cost: float | None = None


class Scope(DispatchModel):
    type: Literal["Team"] | str
    uid: str


class RunItem(DispatchModel):
    """A run as GET /agent/runs/{id} and GET /agent/runs return it."""

    run_id: str
    task_id: str
    """Deprecated alias of ``run_id``."""
    title: str
    prompt: str
    """The full prompt on retrieve; list items may cut it to 2,000 characters."""
    state: RunState | str
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    run_time: str
    """ISO-8601 duration of all executions so far, e.g. ``PT2M30S``."""
    session_id: str
    session_link: str
    trigger_url: str | None = None
    source: str
    creator: Creator
    agent_config: AgentConfig
    agent_skill: AgentSkill | None = None
    status_message: StatusMessage | None = None
    artifacts: list[Artifact]
    request_usage: RequestUsage
    is_sandbox_running: bool
    scope: Scope
    metadata: dict[str, str]

    @property
    def is_terminal(self) -> bool:
        """True when no execution is running (SUCCEEDED, FAILED, ERROR or CANCELLED)."""
        return self.state in TERMINAL_STATES


class CreateRunResponse(DispatchModel):
    run_id: str
    task_id: str
    state: RunState | str
    at_capacity: bool


class PageInfo(DispatchModel):
    has_next_page: bool
    next_cursor: str | None = None


class ListRunsResponse(DispatchModel):
    runs: list[RunItem]
    page_info: PageInfo


class FollowupResponse(DispatchModel):
    followup_id: str
    outcome: FollowupOutcome | str


class RunEvent(DispatchModel):
    """One entry of a run's transcript (``state``, ``message``, ``tool_call``, ``tool_result``, ...)."""

    seq: int
    at: datetime
    type: RunEventType | str
    data: dict[str, Any]


class RunEventsResponse(DispatchModel):
    events: list[RunEvent]
    next_after: int


class Problem(DispatchModel):
    """The application/problem+json body of every non-2xx response."""

    type: str
    title: str
    status: int
    detail: str | None = None
    error: str
    error_code: str
    retryable: bool
    instance: str
    trace_id: str | None = None


# --- models, environments, skills, identities (the rest of the Oz surface) ---

ModelProvider = Literal["OPENAI", "ANTHROPIC", "GOOGLE", "UNKNOWN"]
"""The providers this version knows; ``ModelInfo.provider`` may carry others."""


class ModelInfo(DispatchModel):
    """One configured model, as ``GET /agent/models`` lists it."""

    id: str
    """What ``config.model_id`` of a run takes."""
    display_name: str
    provider: ModelProvider | str
    vision_supported: bool
    """Whether the model takes image attachments as input."""
    description: str | None = None


class ListModelsResponse(DispatchModel):
    default_model_id: str
    """The model a run gets when it names none (``scripted`` when the server has no model configured)."""
    models: list[ModelInfo]


class GitHubRepo(DispatchModel):
    owner: str
    repo: str


class EnvironmentConfig(DispatchModel):
    name: str
    description: str | None
    github_repos: list[GitHubRepo]
    """The repositories cloned into a run's workspace, as owner and name."""
    setup_commands: list[str]


class LastTaskCreated(DispatchModel):
    """The environment's most recently created run."""

    id: str
    title: str
    state: RunState | str
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None


class CloudEnvironment(DispatchModel):
    """One configured environment, as ``GET /agent/environments`` lists it."""

    uid: str
    """What ``config.environment_id`` of a run takes."""
    config: EnvironmentConfig
    last_updated: datetime
    setup_failed: bool
    """Whether the latest run in it failed while setting the environment up."""
    last_task_run_timestamp: datetime | None
    last_task_created: LastTaskCreated | None


class ListEnvironmentsResponse(DispatchModel):
    environments: list[CloudEnvironment]


class SkillVariantSource(DispatchModel):
    owner: str
    name: str
    """The repository's name."""
    skill_path: str


class SkillVariantEnvironment(DispatchModel):
    uid: str
    name: str


class SkillVariant(DispatchModel):
    id: str
    """The skill spec, ``owner/repo:skill_path``: what ``skill=`` of ``runs.create`` takes."""
    description: str
    base_prompt: str
    source: SkillVariantSource
    environments: list[SkillVariantEnvironment]
    last_run_timestamp: datetime | None
    error: str | None = None
    """Set when the skill file exists but cannot be parsed."""


class SkillAgent(DispatchModel):
    """A skill, by name, with the variants (repository copies) that provide it."""

    name: str
    variants: list[SkillVariant]


class ListAgentsResponse(DispatchModel):
    agents: list[SkillAgent]


class IdentitySecret(DispatchModel):
    name: str


class AgentIdentity(DispatchModel):
    """A service account of the team (``/agent/identities``): who runs act as."""

    uid: str
    name: str
    available: bool
    """Whether runs may use this identity."""
    created_at: datetime
    description: str | None = None
    prompt: str | None = None
    """Base prompt of runs executed as this identity."""
    base_model: str | None = None
    """Model of runs executed as this identity that name none."""
    skills: list[str]
    """Skill specs attached to the identity, in order."""
    secrets: list[IdentitySecret]


class ListAgentIdentitiesResponse(DispatchModel):
    agents: list[AgentIdentity]


class FileArtifactData(DispatchModel):
    download_url: str
    """Signed link to the bytes: works without an API key until ``expires_at`` (15 minutes)."""
    expires_at: datetime
    content_type: str
    filepath: str
    filename: str
    size_bytes: int
    description: str | None = None
    """The diff stat of a patch, e.g. ``+2 −1 in 2 files``."""


class FileArtifactResponse(DispatchModel):
    """A FILE artifact of a run (``/agent/artifacts/{uid}``), such as the delivered ``changes.patch``."""

    artifact_uid: str
    artifact_type: Literal["FILE"]
    created_at: datetime
    data: FileArtifactData


# --- request parameters (plain dicts; the models above are accepted too) ---


class MCPServerConfigParam(TypedDict, total=False):
    command: str
    args: list[str]
    env: Mapping[str, str]
    url: str
    headers: Mapping[str, str]


class HarnessParam(TypedDict, total=False):
    type: Required[str]


class AgentConfigParam(TypedDict, total=False):
    name: str
    model_id: str
    base_prompt: str
    environment_id: str
    skill_spec: str
    mcp_servers: Mapping[str, MCPServerConfigParam]
    harness: HarnessParam
    idle_timeout_minutes: int
    max_run_minutes: int
    repository: str
    base_branch: str
    branch: str
    delivery: DeliveryMode
