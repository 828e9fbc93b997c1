import type { RunRecord } from "../model/run.ts";
import type { Store } from "../store/store.ts";
import { inRootSpan, tracing } from "../telemetry/spans.ts";

/**
 * One trace per execution (docs/runtime.md, "Traces"): its root span `execute run` holds the workspace,
 * model, tool and delivery spans, and links to the span of the request that created the run. When the
 * execution is over it says how the run stands: its state and its tokens.
 */
export async function traceExecution(
  run: RunRecord,
  store: Pick<Store, "getRunTrace" | "getRun">,
  work: () => Promise<void>,
): Promise<void> {
  if (!tracing.enabled) return work();
  const link = await store.getRunTrace(run.id).catch(() => undefined);
  const attributes = {
    "dispatch.run.id": run.id,
    "dispatch.run.execution": run.execution,
    "dispatch.run.harness": run.agentConfig.harness?.type ?? "scripted",
    ...(run.agentConfig.model_id ? { "gen_ai.request.model": run.agentConfig.model_id } : {}),
  };
  await inRootSpan("execute run", attributes, link, async (span) => {
    await work();
    const after = await store.getRun(run.teamId, run.id).catch(() => undefined);
    if (after) {
      span.setAttributes({
        "dispatch.run.state": after.state,
        "gen_ai.usage.input_tokens": after.requestUsage.input_tokens,
        "gen_ai.usage.output_tokens": after.requestUsage.output_tokens,
        ...(after.requestUsage.inference_cost !== undefined
          ? { "dispatch.cost_usd": after.requestUsage.inference_cost }
          : {}),
      });
    }
  });
}
