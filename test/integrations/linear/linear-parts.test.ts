import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.ts";
import { parseSettings } from "../../../src/config-file.ts";
import { LinearApi, sendErrorOf } from "../../../src/integrations/linear/linear-api.ts";
import { activityId } from "../../../src/integrations/linear/session-messages.ts";
import { chooseRepository } from "../../../src/integrations/repository-choice.ts";
import { FakeLinear } from "../../support/fake-linear.ts";

const parsing = { serverUrl: "https://github.com", allowFileRemotes: false, allowedHosts: [] };

describe("Linear configuration", () => {
  it("the token needs the webhook secret where webhooks are received, and the secret needs the token", () => {
    const base = { DISPATCH_DATA_DIR: "/tmp/dispatch-linear-config" };
    expect(() => loadConfig({ ...base, LINEAR_ACCESS_TOKEN: "lin_oauth_12345678" })).toThrow(
      /LINEAR_WEBHOOK_SECRET: required with LINEAR_ACCESS_TOKEN/,
    );
    expect(() => loadConfig({ ...base, LINEAR_WEBHOOK_SECRET: "secret-secret" })).toThrow(
      /LINEAR_ACCESS_TOKEN: required to enable the Linear agent/,
    );
    const worker = loadConfig({
      ...base,
      DISPATCH_ROLES: "worker",
      LINEAR_ACCESS_TOKEN: "lin_oauth_12345678",
    });
    expect(worker.linear).toMatchObject({
      accessToken: "lin_oauth_12345678",
      apiUrl: "https://api.linear.app/graphql",
    });
  });

  it("linear: settings have defaults, and a team key or policy that is not one is refused by name", () => {
    expect(parseSettings({}).linear).toEqual({
      followup: "anyone",
      cancel: "anyone",
      membership_cache_seconds: 30,
      teams: {},
    });
    expect(() => parseSettings({ linear: { cancel: "channel" } })).toThrow(/linear\.cancel/);
    expect(() => parseSettings({ linear: { teams: { "not a key": { repository: "a/b" } } } })).toThrow(
      /team keys are Linear team keys/,
    );
  });
});

describe("the repository of a Linear run", () => {
  const settings = parseSettings({ linear: { teams: { ENG: { repository: "acme/app" } } } }).linear;
  const choose = (texts: string[], links: string[] = [], teamKey = "ENG") =>
    chooseRepository({
      texts,
      links,
      fallback: {
        repository: settings.teams[teamKey]?.repository,
        setting: `linear.teams.${teamKey}.repository`,
      },
      parsing,
    });

  it("`in owner/repo[@base]` in the request comes first, then a GitHub link on the issue, then the team's default", () => {
    expect(
      choose(["please fix it in acme/web@develop."], ["https://github.com/acme/docs/pull/3"]),
    ).toMatchObject({
      kind: "chosen",
      spec: { repository: "acme/web", base: "develop" },
    });
    expect(
      choose(["fix it"], ["https://example.com/x", "https://github.com/acme/docs/issues/3"]),
    ).toMatchObject({
      spec: { repository: "acme/docs" },
      from: "a GitHub link on the issue",
    });
    expect(choose(["fix it"])).toMatchObject({
      spec: { repository: "acme/app" },
      from: "linear.teams.ENG.repository",
    });
  });

  it("a repository in code is an example, not a request; none at all says how to name one", () => {
    const none = choose(["see `in acme/web` in the docs"], [], "OPS");
    expect(none.kind).toBe("none");
    expect(none.kind === "none" && none.reason).toContain("linear.teams.OPS.repository");
  });

  it("a spec the server would refuse is answered with the reason", () => {
    const refused = choose(["do it in acme/web@bad..branch"]);
    expect(refused.kind === "none" && refused.reason).toContain("is not a valid git branch name");
  });
});

describe("Linear's GraphQL errors as the outbox sees them", () => {
  const fake = new FakeLinear();
  beforeAll(() => fake.start());
  afterAll(() => fake.stop());

  it("RATELIMITED pauses until X-RateLimit-Requests-Reset; a refused token is permanent; a 5xx is retried", async () => {
    const api = new LinearApi({ apiUrl: fake.url, accessToken: fake.token });
    fake.rateLimit("team", 1, 30_000);
    const limited = sendErrorOf(await api.teamMembers("t").catch((e: unknown) => e));
    expect(limited.kind).toBe("rate_limited");
    expect(limited.retryAfterMs).toBeGreaterThan(20_000);
    expect(limited.retryAfterMs).toBeLessThanOrEqual(30_000);

    fake.fail("team", 1, 503);
    expect(sendErrorOf(await api.teamMembers("t").catch((e: unknown) => e)).kind).toBe("retryable");

    const refused = new LinearApi({ apiUrl: fake.url, accessToken: "lin_oauth_wrong" });
    const denied = sendErrorOf(await refused.teamMembers("t").catch((e: unknown) => e));
    expect(denied.kind).toBe("permanent");
    expect(denied.message).toContain("LINEAR_ACCESS_TOKEN");
  });

  it("an activity's id is a UUID v4 that depends only on its message", () => {
    expect(activityId("final:r1:t")).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(activityId("final:r1:t")).toBe(activityId("final:r1:t"));
    expect(activityId("final:r1:t")).not.toBe(activityId("final:r1:u"));
  });
});
