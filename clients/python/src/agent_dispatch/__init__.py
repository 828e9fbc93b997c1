"""Python client for the Dispatch agent-run HTTP API v1 (runs, models, environments, skills, identities,
artifacts, schedules).

from agent_dispatch import Dispatch

with Dispatch() as client:  # DISPATCH_API_KEY, DISPATCH_BASE_URL
    run = client.runs.create(prompt="$ echo hi")
    for event in client.runs.events(run.run_id):
        print(event.type, event.data)
"""

from . import types
from ._base_client import DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ._client import AsyncDispatch, AsyncDispatchWithRawResponse, Dispatch, DispatchWithRawResponse
from ._exceptions import (
    APIConnectionError,
    APIConnectionTimeoutError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    DispatchError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from ._pagination import AsyncRunsPage, AsyncRunsPager, RunsPage
from ._response import APIResponse
from ._streaming import AsyncEventStream, EventStream
from ._types import NOT_GIVEN, NotGiven, TimeoutTypes
from ._version import __version__
from .types import (
    TERMINAL_STATES,
    AgentConfig,
    AgentConfigParam,
    AgentIdentity,
    AttachmentParam,
    CloudEnvironment,
    CreateRunResponse,
    DeleteScheduleResponse,
    FileArtifactData,
    FileArtifactResponse,
    FollowupResponse,
    HandoffAttachment,
    ListAgentIdentitiesResponse,
    ListAgentsResponse,
    ListAttachmentsResponse,
    ListEnvironmentsResponse,
    ListModelsResponse,
    ListSchedulesResponse,
    ModelInfo,
    Problem,
    RunEvent,
    RunEventsResponse,
    RunItem,
    RunSchedule,
    RunState,
    ScheduledAgentItem,
    ScheduleHistory,
)

__all__ = [
    "__version__",
    "types",
    "Dispatch",
    "AsyncDispatch",
    "DispatchWithRawResponse",
    "AsyncDispatchWithRawResponse",
    "APIResponse",
    "RunsPage",
    "AsyncRunsPage",
    "AsyncRunsPager",
    "EventStream",
    "AsyncEventStream",
    "NOT_GIVEN",
    "NotGiven",
    "TimeoutTypes",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "DispatchError",
    "APIError",
    "APIStatusError",
    "APIConnectionError",
    "APIConnectionTimeoutError",
    "APIResponseValidationError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
    "TERMINAL_STATES",
    "AgentConfig",
    "AgentConfigParam",
    "CreateRunResponse",
    "FollowupResponse",
    "Problem",
    "RunEvent",
    "RunEventsResponse",
    "RunItem",
    "RunState",
    "ModelInfo",
    "ListModelsResponse",
    "CloudEnvironment",
    "ListEnvironmentsResponse",
    "ListAgentsResponse",
    "AgentIdentity",
    "ListAgentIdentitiesResponse",
    "FileArtifactResponse",
    "FileArtifactData",
    "HandoffAttachment",
    "ListAttachmentsResponse",
    "AttachmentParam",
    "ScheduledAgentItem",
    "ScheduleHistory",
    "ListSchedulesResponse",
    "DeleteScheduleResponse",
    "RunSchedule",
]
