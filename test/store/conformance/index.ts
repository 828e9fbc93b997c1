import { afterEach, beforeEach, describe } from "vitest";
import type { Store } from "../../../src/store/store.ts";
import { artifactsConformance } from "./artifacts.ts";
import { attachmentsConformance } from "./attachments.ts";
import { audienceConformance } from "./audience.ts";
import { auditConformance } from "./audit.ts";
import { channelSettingsConformance } from "./channel-settings.ts";
import { checkpointsConformance } from "./checkpoints.ts";
import { dashboardConformance } from "./dashboard.ts";
import { databaseConformance } from "./database.ts";
import { eventsConformance } from "./events.ts";
import { executionWritesConformance } from "./execution-writes.ts";
import { followupsConformance } from "./followups.ts";
import { githubSignInsConformance } from "./github-sign-ins.ts";
import { idempotencyConformance } from "./idempotency.ts";
import { identitiesConformance } from "./identities.ts";
import { inboundConformance } from "./inbound.ts";
import { leasesConformance } from "./leases.ts";
import { outboxConformance } from "./outbox.ts";
import { progressConformance } from "./progress.ts";
import { runTracesConformance } from "./run-traces.ts";
import { runsConformance } from "./runs.ts";
import { schedulesConformance } from "./schedules.ts";
import { storeSuite } from "./suite.ts";
import { usageReportConformance } from "./usage-report.ts";
import { webSessionsConformance } from "./web-sessions.ts";
import { webhooksConformance } from "./webhooks.ts";

/**
 * The Store contract, written once and run against every backend (the way River tests every driver):
 * a new backend is done when this suite passes on it. One file per area, as in src/store/sqlite/.
 */
export function storeConformance(
  name: string,
  open: () => Promise<{ store: Store; cleanup: () => Promise<void> }>,
) {
  describe(`Store conformance: ${name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await open());
      await store.migrate();
      await store.ensureTeam({ id: "t1", name: "Team one" });
      await store.ensureTeam({ id: "t2", name: "Team two" });
    });
    afterEach(async () => {
      await store.close();
      await cleanup();
    });

    const suite = storeSuite(() => store);
    databaseConformance(suite);
    runsConformance(suite);
    leasesConformance(suite);
    executionWritesConformance(suite);
    followupsConformance(suite);
    idempotencyConformance(suite);
    identitiesConformance(suite);
    inboundConformance(suite);
    outboxConformance(suite);
    eventsConformance(suite);
    progressConformance(suite);
    channelSettingsConformance(suite);
    schedulesConformance(suite);
    artifactsConformance(suite);
    attachmentsConformance(suite);
    webSessionsConformance(suite);
    githubSignInsConformance(suite);
    dashboardConformance(suite);
    usageReportConformance(suite);
    audienceConformance(suite);
    webhooksConformance(suite);
    auditConformance(suite);
    runTracesConformance(suite);
    checkpointsConformance(suite);
  });
}
