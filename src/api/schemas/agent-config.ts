import { z } from "zod";
import { OZ_HARNESS_NAMES, WIRE_HARNESS_TYPES } from "../../model/harness-wire.ts";
import { DELIVERY_MODES } from "../../model/repository.ts";
import { boundedText, LIMITS, SkillSpecSchema } from "./common.ts";

/** A run's agent config (a run's or a schedule's), and MCP servers within it. */

export const McpServerConfigSchema = z
  .object({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    url: z.url().optional(),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .refine((s) => (s.command === undefined) !== (s.url === undefined), {
    message: "give exactly one of command (stdio) or url (HTTP)",
  })
  .meta({ id: "MCPServerConfig" });

export const AgentConfigSchema = z
  .object({
    name: z.string().min(1).max(200).nullish(),
    model_id: z.string().min(1).max(200).nullish(),
    base_prompt: boundedText(LIMITS.promptChars, "base_prompt").nullish(),
    environment_id: z.string().min(1).max(200).nullish(),
    skill_spec: SkillSpecSchema.nullish(),
    mcp_servers: z.record(z.string().min(1).max(100), McpServerConfigSchema).nullish(),
    harness: z
      .object({
        type: z.string().min(1).max(100).meta({
          description:
            'oz (Dispatch\'s own harnesses), claude, codex or gemini; "builtin" and "scripted" are accepted as legacy spellings of {type: "oz", name}.',
        }),
        name: z
          .string()
          .min(1)
          .max(100)
          .nullish()
          .meta({
            description: `Dispatch extension: which of Dispatch's own harnesses (${OZ_HARNESS_NAMES.join(", ")}) with type oz; the server's default (builtin when a model is configured) when absent.`,
          }),
      })
      .nullish(),
    idle_timeout_minutes: z.number().int().min(1).max(10_080).nullish(),
    max_run_minutes: z.number().int().min(1).max(10_080).nullish(),
    max_cost_usd: z.number().positive("must be more than 0 US dollars").max(100_000).nullish().meta({
      description:
        "Dispatch extension: the most the run's model calls may cost, in US dollars, over all its executions (follow-ups included); once its cost reaches it the agent's turn stops and the run waits BLOCKED (reason awaiting_budget) for someone to extend it or stop it there (a model without a price under a limit ends it FAILED, reason cost_limit). The server's default (DISPATCH_MAX_COST_USD, budgets.run_usd) when absent.",
    }),
    repository: z.string().min(1).max(500).nullish().meta({
      description:
        'Dispatch extension: the repository the run works in and delivers to: "owner/repo", "owner/repo@base-branch" or a git URL.',
    }),
    base_branch: z.string().min(1).max(200).nullish().meta({
      description:
        "Dispatch extension: the branch the work starts from; the repository's default branch otherwise.",
    }),
    branch: z.string().min(1).max(200).nullish().meta({
      description:
        "Dispatch extension: the branch Dispatch pushes to; dispatch/<run>-<title> unless the run works on an open pull request's branch.",
    }),
    delivery: z.enum(DELIVERY_MODES).nullish().meta({
      description:
        "Dispatch extension: pull_request (default with a GitHub repository), branch (push only) or none.",
    }),
  })
  .meta({ id: "AgentConfig" });

/** `agent_config` as runs show it: the harness in Oz's form, `{type: "oz", name}` for Dispatch's own. */
export const RunAgentConfigSchema = AgentConfigSchema.extend({
  harness: z
    .object({
      type: z.enum(WIRE_HARNESS_TYPES),
      name: z
        .string()
        .optional()
        .meta({ description: "Dispatch extension: builtin or scripted, with type oz." }),
    })
    .optional(),
}).meta({ id: "RunAgentConfig" });
