"""Request and response types of the Dispatch HTTP API v1 (docs/api.md, openapi.json).

Response models accept fields they do not know (kept in ``model_extra``) and enum values they do not
know (``RunState`` is an open set: the literals are the values this version knows, any other string is
kept as-is), so that a newer server never breaks an older client.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
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
    "OzErrorCode",
    "StatusMessage",
    "Artifact",
    "ModelTokenUsage",
    "RequestUsage",
    "Scope",
    "RunItem",
    "CreateRunResponse",
    "PageInfo",
    "ListRunsResponse",
    "FollowupResponse",
    "RunBudgetLimit",
    "RunBudget",
    "BudgetResponse",
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
    "HandoffAttachment",
    "ListAttachmentsResponse",
    "AttachmentParam",
    "IdentityMemory",
    "IdentityAutoMemory",
    "IdentityMemoryStore",
    "AgentIdentity",
    "ListAgentIdentitiesResponse",
    "RunSchedule",
    "ScheduleHistory",
    "ScheduledAgentItem",
    "ListSchedulesResponse",
    "DeleteScheduleResponse",
    "WebhookEventType",
    "WebhookDeliveryState",
    "Webhook",
    "CreatedWebhook",
    "ListWebhooksResponse",
    "WebhookDelivery",
    "ListWebhookDeliveriesResponse",
    "UsageGroup",
    "UsageTotals",
    "UsageRow",
    "UsagePeriod",
    "UsageReport",
]

RunState = Literal["QUEUED", "INPROGRESS", "BLOCKED", "SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]
"""The states this version knows; BLOCKED waits for a person (``status_message.reason`` says for what:
``awaiting_approval``, ``awaiting_budget``, ``awaiting_input``). Fields typed ``RunState | str`` may
carry others (the Oz API also names PENDING and CLAIMED)."""

TERMINAL_STATES: frozenset[str] = frozenset({"SUCCEEDED", "FAILED", "ERROR", "CANCELLED"})
"""States in which no execution is running (a follow-up can still start a new one)."""

FollowupOutcome = Literal["queued_prompt", "live_session", "queue_pending", "handoff_execution"]

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
    type: Literal["oz", "claude", "codex", "gemini"] | str
    """Oz's harness type: ``oz`` for Dispatch's own harnesses (told apart by ``name``), or ``claude``,
    ``codex``, ``gemini``. Requests may also say ``builtin`` or ``scripted`` (legacy spellings)."""
    name: str | None = None
    """Dispatch extension: ``builtin`` or ``scripted`` with ``type="oz"``."""


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
    max_cost_usd: float | None = None
    """The most the run's model calls may cost, in US dollars (then it FAILS with ``budget_exceeded``)."""
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


OzErrorCode = Literal[
    "insufficient_credits",
    "feature_not_available",
    "external_authentication_required",
    "not_authorized",
    "invalid_request",
    "resource_not_found",
    "budget_exceeded",
    "integration_disabled",
    "integration_not_configured",
    "operation_not_supported",
    "environment_setup_failed",
    "content_policy_violation",
    "conflict",
    "authentication_required",
    "resource_unavailable",
    "internal_error",
]
"""Oz's ``ErrorCode`` values, which ``StatusMessage.error_code`` is one of."""


class StatusMessage(DispatchModel):
    message: str
    error_code: OzErrorCode | str | None = None
    """Oz's error code when one fits (e.g. ``budget_exceeded`` for a time limit), else absent."""
    reason: str | None = None
    """Dispatch extension: the finer reason, e.g. ``time_limit``, ``command_failed``, ``delivery_failed``,
    ``worker_lost``, ``cancelled``; for a BLOCKED run what it waits for (``awaiting_approval``, ...)."""
    retryable: bool | None = None


class Artifact(DispatchModel):
    artifact_type: Literal["PULL_REQUEST", "FILE"] | str
    created_at: datetime
    data: dict[str, Any]


class ModelTokenUsage(DispatchModel):
    model_id: str
    total_tokens: int
    usage_type: Literal["byok", "custom_endpoint"] | str
    tokens_by_category: dict[str, int] | None = None


class RequestUsage(DispatchModel):
    input_tokens: int | float
    output_tokens: int | float
    total_tokens: int | float
    inference_cost: float | None = None
    """US dollars, when every model the run called has a price."""
    inference_cost_usd: float | None = None
    """The same as ``inference_cost``."""
    model_token_usage: list[ModelTokenUsage] | None = None
    """Tokens per model, as the run's cost meter counted its calls."""
    usage_by_category: dict[str, dict[str, Any]] | None = None
    """Costs in cents by category and model, when every cost is known (builtin harness runs)."""


class RunBudgetLimit(DispatchModel):
    scope: Literal["run", "server", "person", "repository", "channel", "schedule", "team"] | str
    """``run``: its ``config.max_cost_usd``; ``server``: the default for every run; the others: a monthly budget."""
    name: str
    used_usd: float
    """Spent against it: this run, and for a monthly one the month's other runs."""
    limit_usd: float
    """The limit, with the run's extensions."""


class RunBudget(DispatchModel):
    """A run's budget (a Dispatch extension): what it spent, the tightest limit it works under and, while it
    waits for budget (``awaiting_budget``), about how much more it needs."""

    extended_usd: float | None = None
    """What people allowed the run beyond its limits."""
    limit: RunBudgetLimit | None = None
    spent_usd: float | None = None
    """What the run has cost so far, current while it works."""
    needs_usd: float | None = None
    """While it waits for budget: about how much more it estimates it needs."""


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
    submitted_prompt: str | None = None
    """The prompt with the follow-ups added to it before the run started, separated by blank lines."""
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
    executor: Creator
    """Who the agent ran for: the creator."""
    agent_config: AgentConfig
    agent_skill: AgentSkill | None = None
    status_message: StatusMessage | None = None
    artifacts: list[Artifact]
    request_usage: RequestUsage
    is_sandbox_running: bool
    is_run_type_cancellable: bool
    scope: Scope
    metadata: dict[str, str]
    conversation_id: str
    """The run's conversation: its own id (a create with ``conversation_id`` continues the run)."""
    parent_run_id: str | None = None
    """The run that spawned this one, when one did."""
    root_run_id: str
    """The top of the run's tree of parents: the run itself when it has none."""
    schedule: RunSchedule | None = None
    """The schedule that fired this run (``source`` ``SCHEDULED_AGENT``)."""
    budget: RunBudget | None = None
    """Its budget, when it works under a cost limit (a Dispatch extension)."""
    execution_location: Literal["REMOTE"] | str

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


class BudgetResponse(DispatchModel):
    """The answer of ``POST /agent/runs/{run_id}/budget``: the run, INPROGRESS again, and its budget."""

    run_id: str
    state: RunState | str
    budget: RunBudget


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
    harnesses: list[str] = []
    """Dispatch extension: the harnesses (``config.harness.type``) that can run it: oz, claude, codex, gemini."""


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


class IdentityMemoryStore(DispatchModel):
    uid: str


class IdentityAutoMemory(DispatchModel):
    enabled: bool


class IdentityMemory(DispatchModel):
    attached_stores: list[IdentityMemoryStore]
    auto_memory: IdentityAutoMemory


class AgentIdentity(DispatchModel):
    """A service account of the team (``/agent/identities``): who runs act as."""

    uid: str
    name: str
    available: bool
    """Whether runs may use this identity."""
    created_at: datetime
    updated_at: datetime
    """The last change; ``created_at`` until the first one."""
    default_runner_uid: str
    """Always empty: Dispatch has no runners (Oz's field)."""
    memory: IdentityMemory
    """Always empty and disabled: Dispatch has no memory stores (Oz's field)."""
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


# --- schedules ---


class RunSchedule(DispatchModel):
    """The schedule a run was fired by (``RunItem.schedule``), as it was at that firing."""

    schedule_id: str
    schedule_name: str
    cron_schedule: str
    fire_time: datetime
    """Dispatch extension: the cron slot this run is for."""


class ScheduleHistory(DispatchModel):
    last_ran: datetime | None
    """When the schedule last created a run."""
    next_run: datetime | None
    """Its next fire time; None while paused."""


class ScheduledAgentItem(DispatchModel):
    """A cron-driven agent of the team (``/agent/schedules``): each firing creates one run."""

    id: str
    name: str
    """Unique in the team."""
    cron_schedule: str
    """Five fields: minute hour day-of-month month day-of-week."""
    timezone: str
    """Dispatch extension: the IANA time zone the cron is read in (``UTC`` by default)."""
    enabled: bool
    prompt: str
    created_at: datetime
    updated_at: datetime
    last_spawn_error: str | None
    """Why the latest firing could not create its run; cleared by the next one that does."""
    agent_config: AgentConfig
    metadata: dict[str, str]
    created_by: Creator
    updated_by: Creator
    history: ScheduleHistory
    scope: Scope


class ListSchedulesResponse(DispatchModel):
    schedules: list[ScheduledAgentItem]
    """Sorted by name."""


class DeleteScheduleResponse(DispatchModel):
    success: bool


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


class HandoffAttachment(DispatchModel):
    """An image attached to a run's create or one of its follow-ups."""

    attachment_id: str
    download_url: str
    """Signed link to the bytes: works without an API key until ``expires_at``."""
    filename: str
    mime_type: str | None = None
    """``image/jpeg``, ``image/png``, ``image/gif`` or ``image/webp`` (sniffed from the bytes)."""
    expires_at: datetime
    """Dispatch extension: when ``download_url`` stops working."""
    size_bytes: int
    """Dispatch extension."""
    followup_id: str | None
    """Dispatch extension: the follow-up the image came with; ``None`` for the run's create."""
    created_at: datetime
    """Dispatch extension."""


class ListAttachmentsResponse(DispatchModel):
    """``GET /agent/runs/{run_id}/handoff/attachments``."""

    attachments: list[HandoffAttachment]


# --- request parameters (plain dicts; the models above are accepted too) ---


# --- webhooks ---

WebhookEventType = Literal["run.created", "run.state_changed", "run.followup", "run.delivered"]
WebhookDeliveryState = Literal["pending", "sending", "succeeded", "failed"]


class Webhook(DispatchModel):
    """A URL the team's run events are sent to, signed as Standard Webhooks says (``/webhooks``)."""

    id: str
    url: str
    events: list[WebhookEventType | str]
    description: str | None = None
    created_at: datetime
    created_by: str


class CreatedWebhook(Webhook):
    """The answer to ``webhooks.create``: the only time ``secret`` is shown."""

    secret: str
    """``whsec_`` and the base64 of the signing key: verify ``webhook-signature`` with it."""


class ListWebhooksResponse(DispatchModel):
    webhooks: list[Webhook]


class WebhookDelivery(DispatchModel):
    """One event on its way to one webhook, and how its attempts went."""

    id: int
    message_id: str
    """The ``webhook-id`` header: the same on every attempt (receivers deduplicate on it)."""
    event_type: WebhookEventType | str
    run_id: str
    state: WebhookDeliveryState | str
    attempts: int
    next_attempt_at: datetime | None = None
    last_attempt_at: datetime | None = None
    last_status: int | None = None
    """The HTTP status of the last answer; absent when there was none."""
    last_error: str | None = None
    response_excerpt: str | None = None
    """The start of the last answer's body."""
    created_at: datetime
    finished_at: datetime | None = None


class ListWebhookDeliveriesResponse(DispatchModel):
    deliveries: list[WebhookDelivery]
    page_info: PageInfo


# --- usage ---

UsageGroup = Literal["person", "repository", "channel", "schedule", "model"]
"""What ``usage.retrieve`` can group by."""


class UsageTotals(DispatchModel):
    """Runs, tokens and cost of a group (or of the whole period)."""

    runs: int
    """Runs created in the period (grouped by model: the runs that called it)."""
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    """What it cost in USD; ``None`` when ``unpriced_runs`` is not 0 (``known_cost_usd`` is the known part)."""
    known_cost_usd: float
    unpriced_runs: int
    """Runs that used tokens of a model without a price (grouped by model: of this model)."""


class UsageRow(UsageTotals):
    """One group: the keys it was grouped by (``None`` where runs have none), and its figures."""

    person: str | None = None
    """The requester's id (the runs' ``creator.uid``)."""
    person_name: str | None = None
    repository: str | None = None
    channel: str | None = None
    """``platform:workspace:channel`` of the thread the runs were asked in; ``None`` for the API's runs."""
    schedule: str | None = None
    schedule_name: str | None = None
    model: str | None = None


class UsagePeriod(DispatchModel):
    from_: datetime = Field(alias="from")
    """Inclusive."""
    to: datetime
    """Exclusive."""


class UsageReport(DispatchModel):
    """``GET /usage``: the spend of the runs the key may see, most known cost first."""

    period: UsagePeriod
    group_by: list[UsageGroup | str]
    rows: list[UsageRow]
    totals: UsageTotals
    """Each run once, whatever the grouping."""


class AttachmentParam(TypedDict):
    """An image sent with a create or a follow-up: at most 5 per request, each at most 5 MB decoded,
    JPEG, PNG, GIF or WebP (the server checks the bytes, and answers 400 naming the file otherwise)."""

    file_name: str
    mime_type: str
    data: str
    """The file's bytes, base64 (standard alphabet, padded): ``base64.b64encode(raw).decode()``."""


class MCPServerConfigParam(TypedDict, total=False):
    command: str
    args: list[str]
    env: Mapping[str, str]
    url: str
    headers: Mapping[str, str]


class HarnessParam(TypedDict, total=False):
    type: Required[str]
    """``oz`` (with ``name``), ``claude``, ``codex`` or ``gemini``; ``builtin``/``scripted`` are legacy spellings."""
    name: str
    """Dispatch extension: ``builtin`` or ``scripted`` with ``type="oz"``; the server's default when absent."""


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
    max_cost_usd: float
    repository: str
    base_branch: str
    branch: str
    delivery: DeliveryMode
