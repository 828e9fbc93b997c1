import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Dispatch, NotFoundError } from "@agent-dispatch/client";
import OzAPI from "oz-agent-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ArtifactLinks, loadSigningKey, SIGNING_KEY_FILE } from "../../src/api/artifact-links.ts";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { scrubSecrets } from "../../src/log.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";

/**
 * The delivered patch as a FILE artifact: GET /agent/artifacts/{uid} with a signed download link, the
 * authenticated /download redirect, the link itself (no key; 403 once expired or altered), team
 * isolation, the TypeScript client, and the official Oz SDK reading the delivered run.
 */
let remotes: GitRemotes;
let github: FakeGitHub;
let t: TestDispatch;
// biome-ignore lint/suspicious/noExplicitAny: the run as the API returns it, asserted field by field
let run: any;
let uid: string;

beforeAll(async () => {
  remotes = new GitRemotes();
  remotes.create("acme/app", { "README.md": "# app\n", "src/login.ts": "export const retries = 1;\n" });
  github = await new FakeGitHub().start();
  github.gitRoot = remotes.root;
  t = await startTestDispatch({
    ...deliveryEnv(remotes, github),
  });
  const created = await t.api("POST", "/api/v1/agent/runs", {
    title: "Raise the login retries",
    prompt: "$ sed -i 's/retries = 1/retries = 3/' src/login.ts\n$ echo new > notes.txt",
    config: { repository: "acme/app" },
  });
  expect(created.status).toBe(200);
  run = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
  expect(run.state).toBe("SUCCEEDED");
  uid = run.artifacts.find((a: { artifact_type: string }) => a.artifact_type === "FILE").data.artifact_uid;
});
afterAll(async () => {
  await t?.stop();
  await github?.stop();
  remotes?.remove();
});

/** Applies `patch` to a fresh clone of acme/app's main and returns the file as it then reads. */
function applyToMain(patch: Buffer, file: string): string {
  const dir = mkdtempSync(join(tmpdir(), "dispatch-apply-"));
  try {
    execFileSync("git", ["clone", "--quiet", "--branch", "main", remotes.path("acme/app"), dir]);
    execFileSync("git", ["-C", dir, "apply", "-"], { input: patch });
    return readFileSync(join(dir, file), "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function withParam(url: string, name: string, value: string): string {
  const u = new URL(url);
  u.searchParams.set(name, value);
  return u.toString();
}

describe("GET /agent/artifacts/{artifactUid}", () => {
  it("answers the FILE artifact in Oz's FileArtifactResponse shape, with a signed link valid 15 minutes", async () => {
    const before = Date.now();
    const res = await t.api("GET", `/api/v1/agent/artifacts/${uid}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      artifact_uid: uid,
      artifact_type: "FILE",
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: {
        download_url: expect.stringMatching(
          new RegExp(`^${t.url}/api/v1/agent/artifacts/${uid}/content\\?team=.+&expires=\\d+&signature=`),
        ),
        expires_at: expect.any(String),
        content_type: "text/x-diff",
        filepath: "changes.patch",
        filename: "changes.patch",
        size_bytes: expect.any(Number),
        description: "+2 −1 in 2 files",
      },
    });
    const expiresIn = Date.parse(res.body.data.expires_at) - before;
    expect(expiresIn).toBeGreaterThan(14 * 60_000);
    expect(expiresIn).toBeLessThanOrEqual(15 * 60_000 + 1000);

    // The link needs no key, and its bytes are the patch that turns main into the delivered branch.
    const download = await fetch(res.body.data.download_url);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("text/x-diff");
    expect(download.headers.get("content-disposition")).toBe('attachment; filename="changes.patch"');
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(bytes.length).toBe(res.body.data.size_bytes);
    expect(bytes.toString("utf8")).toContain("+export const retries = 3;");
    expect(applyToMain(bytes, "src/login.ts")).toBe(
      remotes.show("acme/app", run.agent_config.branch, "src/login.ts"),
    );
  });

  it("is 404 problem+json for an unknown uid and for another team's artifact; read keys may read", async () => {
    const unknown = await t.api("GET", "/api/v1/agent/artifacts/no-such-artifact");
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(unknown.body).toMatchObject({ error_code: "resource_not_found", status: 404 });

    const stranger = { authorization: `Bearer ${await t.newKey("team_other")}` };
    for (const path of [`/api/v1/agent/artifacts/${uid}`, `/api/v1/agent/artifacts/${uid}/download`]) {
      const res = await t.api("GET", path, undefined, stranger);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ error_code: "resource_not_found" });
      expect(res.text).not.toContain("signature");
    }

    const reader = { authorization: `Bearer ${await t.newKey("team_default", { role: "read" })}` };
    const read = await t.api("GET", `/api/v1/agent/artifacts/${uid}`, undefined, reader);
    expect(read.status).toBe(200);
    expect(read.body.data.filename).toBe("changes.patch");

    const anonymous = await fetch(`${t.url}/api/v1/agent/artifacts/${uid}`);
    expect(anonymous.status).toBe(401);
    const unknownQuery = await t.api("GET", `/api/v1/agent/artifacts/${uid}?bogus=1`);
    expect(unknownQuery.status).toBe(400);
    expect(unknownQuery.body.detail).toContain("bogus");
  });
});

describe("GET /agent/artifacts/{artifactUid}/download", () => {
  it("redirects an authenticated caller to a signed link that serves the bytes", async () => {
    const res = await fetch(`${t.url}/api/v1/agent/artifacts/${uid}/download`, {
      headers: { authorization: `Bearer ${t.key}` },
      redirect: "manual",
    });
    expect(res.status).toBe(302);
    const location = res.headers.get("location")!;
    expect(location).toMatch(new RegExp(`^${t.url}/api/v1/agent/artifacts/${uid}/content\\?`));
    const followed = await fetch(location);
    expect(followed.status).toBe(200);
    expect(await followed.text()).toContain("+export const retries = 3;");

    const anonymous = await fetch(`${t.url}/api/v1/agent/artifacts/${uid}/download`, { redirect: "manual" });
    expect(anonymous.status).toBe(401);
  });
});

describe("signed download links", () => {
  const signedUrl = async () => (await t.api("GET", `/api/v1/agent/artifacts/${uid}`)).body.data.download_url;

  it("refuse an altered or incomplete link with 403 problem+json", async () => {
    const url = await signedUrl();
    const signature = new URL(url).searchParams.get("signature")!;
    const flipped = `${signature[0] === "A" ? "B" : "A"}${signature.slice(1)}`;
    const expires = Number(new URL(url).searchParams.get("expires"));
    const altered = [
      withParam(url, "signature", flipped),
      withParam(url, "expires", String(expires + 3600)),
      withParam(url, "team", "team_other"),
      url.replace(`/artifacts/${uid}/`, "/artifacts/other-uid/"),
      url.slice(0, url.indexOf("&signature=")),
      `${t.url}/api/v1/agent/artifacts/${uid}/content`,
    ];
    for (const link of altered) {
      const res = await fetch(link);
      expect(res.status, link).toBe(403);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      const body = await res.json();
      expect(body).toMatchObject({ error_code: "not_authorized", status: 403 });
      expect(body.detail).toMatch(/not valid/);
    }
    // The signature is a capability: logs never show it.
    expect(scrubSecrets(`GET ${url}`)).not.toContain(signature);
    expect(scrubSecrets(`GET ${url}`)).toContain("signature=[redacted]");
    // Sending an API key does not stand in for the signature.
    const withKey = await fetch(withParam(url, "signature", flipped), {
      headers: { authorization: `Bearer ${t.key}` },
    });
    expect(withKey.status).toBe(403);
  });

  it("refuse a link past its expiry with 403, and honour one signed with the data directory's key", async () => {
    const keyFile = join(t.dataDir, SIGNING_KEY_FILE);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const links = new ArtifactLinks(Buffer.from(readFileSync(keyFile, "utf8").trim()));

    const expired = links.sign(t.url, "team_default", uid, Date.now() - 16 * 60_000);
    expect(Date.parse(expired.expiresAt)).toBeLessThan(Date.now());
    const res = await fetch(expired.url);
    expect(res.status).toBe(403);
    const body = await res.json();
    expect(body).toMatchObject({ error_code: "not_authorized" });
    expect(body.detail).toMatch(/expired/);

    // A link signed by this key (as after a restart: the key lives in the data directory) still works.
    const fresh = links.sign(t.url, "team_default", uid);
    expect((await fetch(fresh.url)).status).toBe(200);
  });

  it("keep their key across starts: generated once in the data directory (0600), or DISPATCH_SIGNING_KEY", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dispatch-key-"));
    try {
      const first = await loadSigningKey(undefined, dir);
      expect(first.length).toBeGreaterThanOrEqual(32);
      expect(statSync(join(dir, SIGNING_KEY_FILE)).mode & 0o777).toBe(0o600);
      expect((await loadSigningKey(undefined, dir)).equals(first)).toBe(true);
      const configured = "k".repeat(32);
      expect((await loadSigningKey(configured, dir)).toString()).toBe(configured);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(() => loadConfig({ DISPATCH_SIGNING_KEY: "too-short" })).toThrow(ConfigError);
    expect(() => loadConfig({ DISPATCH_SIGNING_KEY: "too-short" })).toThrow(/DISPATCH_SIGNING_KEY: .*32/);
    expect(loadConfig({ DISPATCH_SIGNING_KEY: "s".repeat(40) }).signingKey).toBe("s".repeat(40));
  });
});

describe("clients", () => {
  it("the TypeScript client gets the artifact and downloads its bytes; another team's is NotFoundError", async () => {
    const client = new Dispatch({ apiKey: t.key, baseURL: `${t.url}/api/v1`, maxRetries: 0 });
    const artifact = await client.artifacts.get(uid);
    expect(artifact).toMatchObject({ artifact_uid: uid, artifact_type: "FILE" });
    expect(artifact.data.description).toBe("+2 −1 in 2 files");
    const bytes = await client.artifacts.download(uid);
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(bytes.length).toBe(artifact.data.size_bytes);
    expect(Buffer.from(bytes).toString("utf8")).toContain("+export const retries = 3;");
    expect((await client.artifacts.retrieve(uid)).artifact_uid).toBe(uid);

    const stranger = new Dispatch({
      apiKey: await t.newKey("team_other"),
      baseURL: `${t.url}/api/v1`,
      maxRetries: 0,
    });
    await expect(stranger.artifacts.get(uid)).rejects.toBeInstanceOf(NotFoundError);
    await expect(stranger.artifacts.download(uid)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("the official Oz SDK reads the delivered run and its PULL_REQUEST artifact", async () => {
    const oz = new OzAPI({ baseURL: `${t.url}/api/v1`, apiKey: t.key, maxRetries: 0 });
    const item = await oz.agent.runs.retrieve(run.run_id);
    expect(item.state).toBe("SUCCEEDED");
    const pr = item.artifacts?.find((a) => a.artifact_type === "PULL_REQUEST");
    expect(pr?.artifact_type).toBe("PULL_REQUEST");
    const pull = github.pulls.find((p) => p.head === run.agent_config.branch)!;
    expect(pr?.data).toMatchObject({ url: pull.html_url, branch: run.agent_config.branch });
  });
});
