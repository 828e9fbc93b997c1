import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type * as Api from "../../clients/typescript/src/api-types.ts";
import openapi from "../../openapi.json" with { type: "json" };
import { readOpenApi, renderApiTypes, TYPES_PATH } from "./support/openapi-codegen.ts";

// Type level: the client's declared field names are the committed document's, for every schema.
// A field added to or removed from openapi.json fails `tsc --noEmit` until the types are regenerated.
type Schemas = typeof openapi.components.schemas;
type FieldsOf<S> = S extends { properties: infer P } ? keyof P : never;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const fieldNamesMatch: {
  [K in keyof ApiTypes]: K extends keyof Schemas ? Same<keyof ApiTypes[K], FieldsOf<Schemas[K]>> : false;
} = {
  MCPServerConfig: true,
  AgentConfig: true,
  RunAgentConfig: true,
  SessionRedirectResponse: true,
  ConversationRedirectResponse: true,
  CreateRunRequest: true,
  CancelRunRequest: true,
  CreateRunResponse: true,
  RunItem: true,
  RequestUsage: true,
  ListRunsResponse: true,
  FollowupRequest: true,
  FollowupResponse: true,
  RunEvent: true,
  RunEventsResponse: true,
  Problem: true,
  Model: true,
  ListModelsResponse: true,
  CloudEnvironment: true,
  ListEnvironmentsResponse: true,
  AgentSkill: true,
  ListAgentsResponse: true,
  CreateAgentIdentityRequest: true,
  UpdateAgentIdentityRequest: true,
  AgentIdentity: true,
  ListAgentIdentitiesResponse: true,
  FileArtifactResponse: true,
  CreateScheduleRequest: true,
  UpdateScheduleRequest: true,
  ScheduledAgentItem: true,
  ListSchedulesResponse: true,
  DeleteScheduleResponse: true,
  Attachment: true,
  ListAttachmentsResponse: true,
  ConversationStep: true,
  ConversationResponse: true,
  TimelineResponse: true,
  HarnessUsageResponse: true,
  InterruptResponse: true,
  RunReferenceResponse: true,
  ConversationFollowupResponse: true,
  EgressRangesResponse: true,
  CreateWebhookRequest: true,
  Webhook: true,
  CreatedWebhook: true,
  ListWebhooksResponse: true,
  WebhookDelivery: true,
  ListWebhookDeliveriesResponse: true,
  UsageReport: true,
  UsageRow: true,
  UsageTotals: true,
  AuditEvent: true,
  ListAuditEventsResponse: true,
  ApproveRunRequest: true,
  RunBudget: true,
  BudgetRequest: true,
  BudgetResponse: true,
};
type ApiTypes = {
  MCPServerConfig: Api.MCPServerConfig;
  AgentConfig: Api.AgentConfig;
  RunAgentConfig: Api.RunAgentConfig;
  SessionRedirectResponse: Api.SessionRedirectResponse;
  ConversationRedirectResponse: Api.ConversationRedirectResponse;
  CreateRunRequest: Api.CreateRunRequest;
  CancelRunRequest: Api.CancelRunRequest;
  CreateRunResponse: Api.CreateRunResponse;
  RunItem: Api.RunItem;
  RequestUsage: Api.RequestUsage;
  ListRunsResponse: Api.ListRunsResponse;
  FollowupRequest: Api.FollowupRequest;
  FollowupResponse: Api.FollowupResponse;
  RunEvent: Api.RunEvent;
  RunEventsResponse: Api.RunEventsResponse;
  Problem: Api.Problem;
  Model: Api.Model;
  ListModelsResponse: Api.ListModelsResponse;
  CloudEnvironment: Api.CloudEnvironment;
  ListEnvironmentsResponse: Api.ListEnvironmentsResponse;
  AgentSkill: Api.AgentSkill;
  ListAgentsResponse: Api.ListAgentsResponse;
  CreateAgentIdentityRequest: Api.CreateAgentIdentityRequest;
  UpdateAgentIdentityRequest: Api.UpdateAgentIdentityRequest;
  AgentIdentity: Api.AgentIdentity;
  ListAgentIdentitiesResponse: Api.ListAgentIdentitiesResponse;
  FileArtifactResponse: Api.FileArtifactResponse;
  CreateScheduleRequest: Api.CreateScheduleRequest;
  UpdateScheduleRequest: Api.UpdateScheduleRequest;
  ScheduledAgentItem: Api.ScheduledAgentItem;
  ListSchedulesResponse: Api.ListSchedulesResponse;
  DeleteScheduleResponse: Api.DeleteScheduleResponse;
  Attachment: Api.Attachment;
  ListAttachmentsResponse: Api.ListAttachmentsResponse;
  ConversationStep: Api.ConversationStep;
  ConversationResponse: Api.ConversationResponse;
  TimelineResponse: Api.TimelineResponse;
  HarnessUsageResponse: Api.HarnessUsageResponse;
  InterruptResponse: Api.InterruptResponse;
  RunReferenceResponse: Api.RunReferenceResponse;
  ConversationFollowupResponse: Api.ConversationFollowupResponse;
  EgressRangesResponse: Api.EgressRangesResponse;
  CreateWebhookRequest: Api.CreateWebhookRequest;
  Webhook: Api.Webhook;
  CreatedWebhook: Api.CreatedWebhook;
  ListWebhooksResponse: Api.ListWebhooksResponse;
  WebhookDelivery: Api.WebhookDelivery;
  ListWebhookDeliveriesResponse: Api.ListWebhookDeliveriesResponse;
  UsageReport: Api.UsageReport;
  UsageRow: Api.UsageRow;
  UsageTotals: Api.UsageTotals;
  AuditEvent: Api.AuditEvent;
  ListAuditEventsResponse: Api.ListAuditEventsResponse;
  ApproveRunRequest: Api.ApproveRunRequest;
  RunBudget: Api.RunBudget;
  BudgetRequest: Api.BudgetRequest;
  BudgetResponse: Api.BudgetResponse;
};

describe("client wire types", () => {
  it("are what openapi.json generates (regenerate: node test/client/support/openapi-codegen.ts --write)", () => {
    expect(readFileSync(TYPES_PATH, "utf8")).toBe(renderApiTypes(readOpenApi()));
  });

  it("name every field of every schema in the document", () => {
    expect(Object.keys(fieldNamesMatch).sort()).toEqual(
      Object.entries(openapi.components.schemas)
        .filter(([, s]) => "properties" in s)
        .map(([name]) => name)
        .sort(),
    );
  });
});
