import { hostname, userInfo } from "node:os";
import { parseArgs } from "node:util";
import { createApiKey } from "../auth/bootstrap.ts";
import { loadConfig } from "../config.ts";
import { openStore } from "../store/open-store.ts";
import { agoCell } from "./time-text.ts";

const USAGE = `Usage:
  dispatch keys create [--team T] [--principal UID] [--type user|service_account] [--display-name N]
                       [--email E] [--name LABEL] [--role member|read|admin]
  dispatch keys list
  dispatch keys revoke <key id or prefix>

Acts on the store of this machine (DISPATCH_DATA_DIR / DATABASE_URL). A new key is printed once.`;

export async function keys(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const config = loadConfig();
  const store = await openStore({ postgresUrl: config.postgresUrl, sqlitePath: config.databasePath });
  await store.migrate();
  try {
    switch (sub) {
      case "create": {
        const { values } = parseArgs({
          args: rest,
          options: {
            team: { type: "string" },
            principal: { type: "string" },
            type: { type: "string" },
            "display-name": { type: "string" },
            email: { type: "string" },
            name: { type: "string" },
            role: { type: "string" },
          },
        });
        if (values.type && values.type !== "user" && values.type !== "service_account") {
          throw new UsageError("--type must be user or service_account");
        }
        if (values.role && !["member", "read", "admin"].includes(values.role)) {
          throw new UsageError("--role must be member, read or admin");
        }
        const created = await createApiKey(store, {
          ...(values.team ? { team: values.team } : {}),
          ...(values.principal ? { principalUid: values.principal } : {}),
          ...(values.type ? { principalType: values.type as "user" | "service_account" } : {}),
          ...(values["display-name"] ? { displayName: values["display-name"] } : {}),
          ...(values.email ? { email: values.email } : {}),
          ...(values.name ? { name: values.name } : {}),
          ...(values.role ? { role: values.role as "member" | "read" | "admin" } : {}),
          by: operator(),
        });
        process.stdout.write(`${created.key}\n`);
        process.stderr.write(`Created key ${created.id} (${created.prefix}…). It is shown only this once.\n`);
        return 0;
      }
      case "list": {
        const all = await store.listApiKeys();
        const rows = all.map((k) =>
          [
            k.id,
            `${k.prefix}…`,
            k.role,
            k.principal.teamId,
            k.principal.id,
            k.name,
            k.revokedAt ? `revoked ${agoCell(k.revokedAt)}` : "active",
          ].join("\t"),
        );
        process.stdout.write(
          `${["id", "prefix", "role", "team", "principal", "name", "status"].join("\t")}\n${rows.join("\n")}\n`,
        );
        return 0;
      }
      case "revoke": {
        const target = rest[0];
        if (!target)
          throw new UsageError("name the key to revoke: its id or prefix (see dispatch keys list)");
        const revoked = await store.revokeApiKey(target, new Date().toISOString());
        if (!revoked) {
          process.stderr.write(`No single key matches ${target}; see dispatch keys list.\n`);
          return 1;
        }
        const owner = (await store.listApiKeys()).find((k) => k.id === revoked.id)?.principal;
        if (owner) {
          await store.appendAuditEvent({
            teamId: owner.teamId,
            at: revoked.revokedAt ?? new Date().toISOString(),
            ...operator(),
            action: "api_key.revoked",
            target: revoked.id,
            details: { principal: owner.id, prefix: revoked.prefix },
          });
        }
        process.stdout.write(`Revoked ${revoked.id} (${revoked.prefix}…).\n`);
        return 0;
      }
      default:
        throw new UsageError(sub ? `unknown keys command "${sub}"` : "");
    }
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      process.stderr.write(`${(err as Error).message ? `${(err as Error).message}\n\n` : ""}${USAGE}\n`);
      return 2;
    }
    throw err;
  } finally {
    await store.close();
  }
}

class UsageError extends Error {}

/** Whoever runs `dispatch keys` on this machine (it acts on the store directly, without a key). */
function operator() {
  return { actor: `local:${userInfo().username}`, actorName: `dispatch keys on ${hostname()}` };
}
