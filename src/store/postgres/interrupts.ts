import type { RunState } from "../../model/run-state.ts";
import { iso } from "../rows.ts";
import { interruptEvent } from "../run-steering.ts";
import type { InterruptResult } from "../store.ts";
import type { Database } from "./database.ts";
import { insertEvent } from "./events.ts";
import { announce, readRun } from "./runs.ts";

/** Interrupts: asking the executor to stop the agent's turn under way (the run goes on). */

export async function interruptRun(
  db: Database,
  teamId: string,
  runId: string,
  by: string,
): Promise<InterruptResult> {
  return db.tx(async (tx): Promise<InterruptResult> => {
    const row = await tx.row(
      "SELECT state, agent_started FROM runs WHERE id = $1 AND team_id = $2 FOR UPDATE",
      [runId, teamId],
    );
    if (!row) return undefined;
    const agentStarted = Number(row.agent_started) === 1;
    if (row.state !== "INPROGRESS" || !agentStarted) {
      return { kind: "refused", state: row.state as RunState, agentStarted };
    }
    await tx.changes("UPDATE runs SET interrupts = interrupts + 1 WHERE id = $1", [runId]);
    await insertEvent(tx, runId, "log", interruptEvent(by), iso(Date.now()));
    const run = (await readRun(tx, runId))!;
    announce(tx, run);
    return { kind: "interrupted", run };
  });
}
