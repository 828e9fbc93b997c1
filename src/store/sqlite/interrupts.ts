import type { RunState } from "../../model/run-state.ts";
import { iso } from "../rows.ts";
import { interruptEvent } from "../run-steering.ts";
import type { InterruptResult } from "../store.ts";
import type { Database } from "./database.ts";
import { insertEvent } from "./events.ts";
import type { Row } from "./rows.ts";
import { announce, readRun } from "./runs.ts";

/** Interrupts: asking the executor to stop the agent's turn under way (the run goes on). */

export async function interruptRun(
  db: Database,
  teamId: string,
  runId: string,
  by: string,
): Promise<InterruptResult> {
  const result = await db.grouped((): InterruptResult => {
    const row = db
      .sql("SELECT state, agent_started FROM runs WHERE id = ? AND team_id = ?")
      .get(runId, teamId) as Row | undefined;
    if (!row) return undefined;
    const agentStarted = Number(row.agent_started) === 1;
    if (row.state !== "INPROGRESS" || !agentStarted) {
      return { kind: "refused", state: row.state as RunState, agentStarted };
    }
    db.sql("UPDATE runs SET interrupts = interrupts + 1 WHERE id = ?").run(runId);
    insertEvent(db, runId, "log", interruptEvent(by), iso(Date.now()));
    return { kind: "interrupted", run: readRun(db, runId)! };
  });
  if (result?.kind === "interrupted") announce(db, result.run);
  return result;
}
