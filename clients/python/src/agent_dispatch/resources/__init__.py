from .agents import Agents, AgentsWithRawResponse, AsyncAgents, AsyncAgentsWithRawResponse
from .artifacts import Artifacts, ArtifactsWithRawResponse, AsyncArtifacts, AsyncArtifactsWithRawResponse
from .environments import AsyncEnvironments, AsyncEnvironmentsWithRawResponse, Environments, EnvironmentsWithRawResponse
from .identities import AsyncIdentities, AsyncIdentitiesWithRawResponse, Identities, IdentitiesWithRawResponse
from .models import AsyncModels, AsyncModelsWithRawResponse, Models, ModelsWithRawResponse
from .runs import AsyncRuns, AsyncRunsWithRawResponse, Runs, RunsWithRawResponse
from .schedules import AsyncSchedules, AsyncSchedulesWithRawResponse, Schedules, SchedulesWithRawResponse
from .usage import AsyncUsage, AsyncUsageWithRawResponse, Usage, UsageWithRawResponse
from .webhooks import AsyncWebhooks, AsyncWebhooksWithRawResponse, Webhooks, WebhooksWithRawResponse

__all__ = [
    "Runs",
    "AsyncRuns",
    "RunsWithRawResponse",
    "AsyncRunsWithRawResponse",
    "Models",
    "AsyncModels",
    "ModelsWithRawResponse",
    "AsyncModelsWithRawResponse",
    "Environments",
    "AsyncEnvironments",
    "EnvironmentsWithRawResponse",
    "AsyncEnvironmentsWithRawResponse",
    "Agents",
    "AsyncAgents",
    "AgentsWithRawResponse",
    "AsyncAgentsWithRawResponse",
    "Identities",
    "AsyncIdentities",
    "IdentitiesWithRawResponse",
    "AsyncIdentitiesWithRawResponse",
    "Artifacts",
    "AsyncArtifacts",
    "ArtifactsWithRawResponse",
    "AsyncArtifactsWithRawResponse",
    "Schedules",
    "AsyncSchedules",
    "SchedulesWithRawResponse",
    "AsyncSchedulesWithRawResponse",
    "Webhooks",
    "AsyncWebhooks",
    "WebhooksWithRawResponse",
    "AsyncWebhooksWithRawResponse",
    "Usage",
    "AsyncUsage",
    "UsageWithRawResponse",
    "AsyncUsageWithRawResponse",
]
