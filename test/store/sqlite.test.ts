import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { storeConformance } from "./conformance.ts";

storeConformance("sqlite", async () => {
  const dir = await mkdtemp(join(tmpdir(), "dispatch-store-"));
  return {
    store: new SqliteStore(join(dir, "test.db")),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});
