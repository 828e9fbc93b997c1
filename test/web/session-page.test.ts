import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PAGE_BYTES, PAGE_EVENTS, PATCH_SHOWN_BYTES } from "../../src/web/session-page.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";
import { launchChromium, runBrowserTests, warnIfSkipped } from "./chromium.ts";

/** How long the page may take to show a change the server already has. */
const LIVE_DEADLINE_MS = 10_000;

warnIfSkipped("session page browser tests");

let t: TestDispatch;

beforeAll(async () => {
  t = await startTestDispatch();
});

afterAll(async () => {
  await t?.stop();
});

/** Creates a run and returns its RunItem as GET returns it (with session_link). */
async function createRun(prompt: string) {
  const created = await t.api("POST", "/api/v1/agent/runs", { prompt });
  expect(created.status, created.text).toBe(200);
  const runId: string = created.body.run_id;
  expect(runId).toBeTruthy();
  const run = await t.api("GET", `/api/v1/agent/runs/${runId}`);
  expect(run.status).toBe(200);
  return run.body as { run_id: string; title: string; session_id: string; session_link: string };
}

async function fetchHtml(url: string): Promise<{ status: number; html: string; type: string | null }> {
  const res = await fetch(url);
  return { status: res.status, html: await res.text(), type: res.headers.get("content-type") };
}

/** The server-rendered transcript list, so assertions do not match the prompt section by accident. */
function transcriptOf(html: string): string {
  const match = /<ol id="transcript"[^>]*>([\s\S]*?)<\/ol>/.exec(html);
  expect(match, "the page has a transcript list").not.toBeNull();
  return match![1]!;
}

/** The rendered `<li>` entries of one kind (`tool`: a call with its result), each as its inner HTML. */
function entries(transcript: string, kind: string): string[] {
  const re = new RegExp(`<li class="ev ev-${kind}( failed)?"[^>]*>([\\s\\S]*?)</li>`, "g");
  return [...transcript.matchAll(re)].map((m) => m[2]!);
}

describe("session page HTML (no JavaScript)", () => {
  it("renders a finished run's state and transcript on the server", async () => {
    // The output (out-42) differs from the command text, so the output assertion cannot be met by the command.
    const run = await createRun("Hello from the transcript test\n$ printf 'out-%s' 42");
    const done = await waitForState(t, run.run_id, ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]);
    expect(done.state).toBe("SUCCEEDED");

    const { status, html, type } = await fetchHtml(run.session_link);
    expect(status).toBe(200);
    expect(type).toMatch(/^text\/html/);
    expect(html).toContain(`<h1>${run.title}</h1>`);
    expect(html).toMatch(/<span id="state" [^>]*data-state="SUCCEEDED">Succeeded<\/span>/);

    const transcript = transcriptOf(html);
    // The call and its result are one folded row: the command, how it went and how long it took.
    const tools = entries(transcript, "tool");
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatch(
      /^<details class="tool"><summary><span class="tool-name">shell<\/span> <code class="tool-input">printf &#39;out-%s&#39; 42<\/code> <span class="tool-status">ok · exit 0<\/span> <span class="took">\d+s<\/span><\/summary>/,
    );
    expect(tools[0]).toContain('<pre class="output">out-42</pre>');
    // The agent's message, rendered from Markdown.
    const replies = entries(transcript, "message").filter((e) =>
      e.startsWith('<span class="label">assistant</span>'),
    );
    expect(replies).toHaveLength(1);
    expect(replies[0]).toContain('<div class="md"><p>Hello from the transcript test</p>\n<p>Ran 1 command:');
    // Usage is the header's numbers, never a transcript entry.
    expect(transcript).not.toContain("ev-usage");
    const states = entries(transcript, "state").map((e) => /<pre>([^<]*)<\/pre>/.exec(e)?.[1]);
    expect(states).toEqual(["Queued", "In progress", "Succeeded"]);
  });

  it("escapes the prompt and tool output", async () => {
    const run = await createRun("<script>alert(1)</script>\n$ printf '<img src=x onerror=alert(2)>'");
    const done = await waitForState(t, run.run_id, ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]);
    expect(done.state).toBe("SUCCEEDED");

    const { status, html } = await fetchHtml(run.session_link);
    expect(status).toBe(200);
    expect(html).not.toMatch(/<script>alert/i);
    expect(html).not.toMatch(/<img/i);
    // Title, heading and prompt all carry the escaped script tag.
    expect(html).toContain("<title>&lt;script&gt;alert(1)&lt;/script&gt; · Dispatch</title>");
    expect(html).toContain("<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>");
    expect(html).toContain(
      `<pre class="prompt">&lt;script&gt;alert(1)&lt;/script&gt;\n$ printf &#39;&lt;img src=x onerror=alert(2)&gt;&#39;</pre>`,
    );
    // The command's output, in the transcript.
    const results = entries(transcriptOf(html), "tool");
    expect(results).toHaveLength(1);
    expect(results[0]).toContain('<pre class="output">&lt;img src=x onerror=alert(2)&gt;</pre>');
    // The only script element is the page's own, nonce-bound one.
    expect(html.match(/<script\b/g)).toHaveLength(1);
    expect(html).toMatch(/<script nonce="[A-Za-z0-9+/=]+">/);
  });

  it("pages a run with 75 MB of tool output, in bounded pages, while the server keeps answering", async () => {
    const run = await createRun("A run that printed a lot");
    await waitForState(t, run.run_id, ["SUCCEEDED"]);
    const before = (await t.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`)).body.next_after;
    // Straight through the store, as the executor appends them: 1,200 results of 64,000 characters.
    const store = t.dispatch.store;
    const output = (i: number) => `result ${i}\n${"x".repeat(64_000)}`;
    await Promise.all(
      Array.from({ length: 1200 }, (_, i) =>
        store.appendEvent(run.run_id, "tool_result", { tool: "shell", exit_code: 0, output: output(i) }),
      ),
    );
    // One more over the store's cap: cut, and shown as cut.
    await store.appendEvent(run.run_id, "tool_result", {
      tool: "shell",
      exit_code: 0,
      output: "y".repeat(200_000),
    });
    const total = before + 1201;

    // The page and a health check in flight together: both are answered.
    const [first, health] = await Promise.all([fetchHtml(run.session_link), fetch(`${t.url}/healthz`)]);
    expect(health.status).toBe(200);
    expect(first.status).toBe(200);
    expect(Buffer.byteLength(first.html)).toBeLessThan(2 * PAGE_BYTES);
    const seqs = (html: string) =>
      [...transcriptOf(html).matchAll(/data-seq="(\d+)"/g)].map((m) => Number(m[1]));
    const firstSeqs = seqs(first.html);
    expect(firstSeqs[0]).toBe(1);
    const lastShown = firstSeqs.at(-1)!;
    expect(lastShown).toBeLessThan(total);
    // Not the end: no live following, a link to what comes next instead (readable without JavaScript).
    expect(first.html).toContain('data-live="false"');
    expect(first.html).toContain(`<a id="later" href="?after=${lastShown}">Later events</a>`);
    expect(first.html).not.toContain("Earlier events");

    const second = await fetchHtml(`${run.session_link}?after=${lastShown}`);
    expect(Buffer.byteLength(second.html)).toBeLessThan(2 * PAGE_BYTES);
    expect(seqs(second.html)[0]).toBe(lastShown + 1);
    expect(second.html).toMatch(/<a href="\?after=\d+">Earlier events<\/a>/);

    const last = await fetchHtml(`${run.session_link}?after=${total - 2}`);
    expect(seqs(last.html)).toEqual([total - 1, total]);
    expect(last.html).toContain('data-live="true"');
    expect(last.html).toMatch(/<a id="later" href="[^"]*" hidden>/);
    const [cut] = entries(transcriptOf(last.html), "tool").slice(-1);
    expect(cut).toContain('<span class="tool-status">ok · exit 0 · truncated</span>');
    // A long output shows its start; the whole of it is one click further.
    expect(cut).toMatch(
      /<details class="full-output"><summary>Full output \(\d+ lines, \d+ characters\): show the rest<\/summary>/,
    );
    expect(cut).toMatch(/\[truncated by Dispatch: \d+ of 200000 characters cut\]/);

    const bad = await fetchHtml(`${run.session_link}?after=-1`);
    expect(bad.status).toBe(400);
  });

  it("answers 404 for an unknown session id", async () => {
    const unknown = `${t.url}/sessions/${"0".repeat(32)}`;
    const page = await fetchHtml(unknown);
    expect(page.status).toBe(404);
    expect(page.html).toContain("Session not found");
    const events = await fetch(`${unknown}/events`);
    expect(events.status).toBe(404);
    await events.body?.cancel();
  });
});

describe.runIf(runBrowserTests)("session page in headless Chromium", () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium();
  });

  afterAll(async () => {
    // Close the browser first: its open event streams would otherwise hold the server's stop.
    await browser?.close();
  });

  /** A fresh page that records every dialog (dismissing it) and every navigation of its main frame. */
  async function openPage(url: string, opts: { javaScriptEnabled?: boolean } = {}) {
    const context = await browser.newContext({ javaScriptEnabled: opts.javaScriptEnabled ?? true });
    const page = await context.newPage();
    const dialogs: string[] = [];
    const navigations: string[] = [];
    const consoleErrors: string[] = [];
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    page.on("framenavigated", (frame) => {
      if (frame === page.mainFrame()) navigations.push(frame.url());
    });
    page.on("console", (msg) => {
      if (msg.type() === "error") consoleErrors.push(msg.text());
    });
    const response = await page.goto(url);
    expect(response?.status()).toBe(200);
    return { page, context, dialogs, navigations, consoleErrors };
  }

  const stateText = (page: Page) => page.locator("#state").textContent();

  it("follows a run live: cancelling it updates the state and appends a transcript entry", async () => {
    const run = await createRun("$ sleep 30");
    await waitForState(t, run.run_id, ["INPROGRESS"]);
    const { page, context, navigations, consoleErrors } = await openPage(run.session_link);
    try {
      await page.screenshot({ path: "/tmp/session-page-inprogress.png", fullPage: true });
      expect(await page.locator("h1").textContent()).toBe(run.title);
      expect(await page.title()).toBe(`${run.title} · Dispatch`);
      expect(await stateText(page)).toBe("In progress");
      expect(await page.locator("#state").getAttribute("data-state")).toBe("INPROGRESS");
      const stateEntriesBefore = await page.locator("#transcript li.ev-state").count();
      const lastSeqBefore = Number(await page.locator("#transcript").getAttribute("data-last-seq"));
      expect(lastSeqBefore).toBeGreaterThan(0);
      // A marker that a reload would wipe out.
      await page.evaluate(() => {
        (window as unknown as { __sameDocument: boolean }).__sameDocument = true;
      });

      const cancelled = await t.api("POST", `/api/v1/agent/runs/${run.run_id}/cancel`);
      expect(cancelled.status, cancelled.text).toBeLessThan(300);

      await page.waitForFunction(
        () => document.getElementById("state")?.textContent === "Cancelled",
        undefined,
        {
          timeout: LIVE_DEADLINE_MS,
        },
      );
      expect(await page.locator("#state").getAttribute("data-state")).toBe("CANCELLED");
      await page
        .locator("#status-message", { hasText: /^Cancelled by / })
        .waitFor({ timeout: LIVE_DEADLINE_MS });

      const stateEntries = page.locator("#transcript li.ev-state");
      expect(await stateEntries.count()).toBe(stateEntriesBefore + 1);
      const appended = stateEntries.last();
      expect(Number(await appended.getAttribute("data-seq"))).toBeGreaterThan(lastSeqBefore);
      expect(await appended.locator("pre").textContent()).toMatch(/^Cancelled — Cancelled by /);
      await page.screenshot({ path: "/tmp/session-page-cancelled.png", fullPage: true });

      // Same document: no navigation after the first load, and the marker survived.
      expect(navigations).toHaveLength(1);
      expect(
        await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument),
      ).toBe(true);
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("shows hostile prompt and streamed tool output as text, and runs none of it", async () => {
    // The run waits at a gate so that the hostile output reaches the page over the live stream.
    // (A file in the run's workspace: the sandbox sees nothing else of the host's data directory.)
    const run = await createRun(
      `<script>alert(1)</script>\n$ until [ -e gate ]; do sleep 0.02; done\n$ printf '<img src=x onerror=alert(2)>'`,
    );
    const gate = join(t.dataDir, "workspaces", run.run_id, "gate");
    await waitForState(t, run.run_id, ["INPROGRESS"]);
    const { page, context, dialogs, consoleErrors } = await openPage(run.session_link);
    try {
      expect(await page.locator("h1").textContent()).toBe("<script>alert(1)</script>");
      expect(await page.title()).toBe("<script>alert(1)</script> · Dispatch");
      expect(await page.locator("pre.prompt").textContent()).toContain("<script>alert(1)</script>");

      await writeFile(gate, "");
      const output = page.locator("#transcript li.ev-tool pre.output", {
        hasText: "<img src=x onerror=alert(2)>",
      });
      await output.waitFor({ state: "attached", timeout: LIVE_DEADLINE_MS });
      expect(await output.textContent()).toBe("<img src=x onerror=alert(2)>");
      // Folded until the reader opens the row.
      expect(await output.isVisible()).toBe(false);
      await page
        .locator("#transcript > li.ev-tool", { hasText: "<img src=x onerror=alert(2)>" })
        .locator("details.tool > summary")
        .click();
      expect(await output.isVisible()).toBe(true);
      await page.waitForFunction(
        () => document.getElementById("state")?.textContent === "Succeeded",
        undefined,
        {
          timeout: LIVE_DEADLINE_MS,
        },
      );
      await assertNothingInjected(page);
      const streamed = await transcriptEntries(page);

      // The server-rendered path: the same run loaded afresh once finished.
      await page.reload();
      // The script renders streamed events exactly as the server renders stored ones.
      expect(await transcriptEntries(page)).toEqual(streamed);
      expect(await page.locator("#state").textContent()).toBe("Succeeded");
      expect(await page.locator("#transcript li.ev-tool pre.output").last().textContent()).toBe(
        "<img src=x onerror=alert(2)>",
      );
      await assertNothingInjected(page);

      expect(dialogs).toEqual([]);
      // No CSP refusal either (an unescaped onerror would be blocked by CSP and logged here).
      expect(consoleErrors).toEqual([]);
      // The detector itself works: a real alert is seen.
      await page.evaluate(() => alert("probe"));
      expect(dialogs).toEqual(["probe"]);
    } finally {
      await context.close();
    }
  });

  it("stops following once the page holds a page's worth of events, and links to the next page", async () => {
    const run = await createRun("$ until [ -e gate ]; do sleep 0.02; done");
    await waitForState(t, run.run_id, ["INPROGRESS"]);
    const { page, context } = await openPage(run.session_link);
    try {
      const store = t.dispatch.store;
      // Appended together, as a busy run does: one group commit.
      await Promise.all(
        Array.from({ length: PAGE_EVENTS + 10 }, (_, i) =>
          store.appendEvent(run.run_id, "log", { message: `line ${i}` }),
        ),
      );
      const later = page.locator("#later");
      await later.waitFor({ state: "visible", timeout: LIVE_DEADLINE_MS });
      expect(await page.locator("#transcript > li").count()).toBe(PAGE_EVENTS);
      const lastSeq = await page.locator("#transcript > li").last().getAttribute("data-seq");
      expect(await later.getAttribute("href")).toBe(`?after=${lastSeq}`);
      await later.click();
      await page.waitForURL(`**?after=${lastSeq}`);
      expect(await page.locator("#transcript > li").first().getAttribute("data-seq")).toBe(
        String(Number(lastSeq) + 1),
      );
    } finally {
      await context.close();
      await writeFile(join(t.dataDir, "workspaces", run.run_id, "gate"), "");
    }
  });

  it("reads without JavaScript", async () => {
    const run = await createRun("Read me without a script\n$ printf 'plain-%s' 7");
    await waitForState(t, run.run_id, ["SUCCEEDED"]);
    const { page, context } = await openPage(run.session_link, { javaScriptEnabled: false });
    try {
      expect(await page.locator("#state").textContent()).toBe("Succeeded");
      await expectVisibleText(page, "#transcript li.ev-tool code.tool-input", "printf 'plain-%s' 7");
      // A folded row opens without a script (<details>).
      await page.locator("#transcript li.ev-tool summary").click();
      await expectVisibleText(page, "#transcript li.ev-tool pre.output", "plain-7");
      await expectVisibleText(
        page,
        '#transcript li.ev-message:has(span.label:text-is("assistant")) .md',
        /^Read me without a script\s+Ran 1 command:/,
      );
    } finally {
      await context.close();
    }
  });
});

/** Every transcript entry as the reader sees it: seq, kind and text. */
function transcriptEntries(page: Page) {
  return page.locator("#transcript > li").evaluateAll((items) =>
    items.map((li) => ({
      seq: (li as HTMLElement).dataset.seq,
      type: li.className,
      // A tool row's duration is measured, its words are not.
      text: li.textContent?.replace(/\b\d+(ms|s)\b/g, "…"),
    })),
  );
}

async function assertNothingInjected(page: Page): Promise<void> {
  expect(await page.locator("img").count()).toBe(0);
  // Only the page's own script element exists.
  expect(await page.locator("script").count()).toBe(1);
}

async function expectVisibleText(page: Page, selector: string, text: string | RegExp): Promise<void> {
  const el = page.locator(selector);
  expect(await el.count()).toBe(1);
  expect(await el.isVisible()).toBe(true);
  const content = await el.textContent();
  if (typeof text === "string") expect(content).toBe(text);
  else expect(content).toMatch(text);
}

describe("session page of a run in a repository", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let d: TestDispatch;
  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/site", { "README.md": "# site\n", "index.html": "<p>old</p>\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    d = await startTestDispatch({
      ...deliveryEnv(remotes, github),
    });
  });
  afterAll(async () => {
    await d?.stop();
    await github?.stop();
    remotes?.remove();
  });

  /** The delivery section's text with tags removed and entities decoded, for what a reader sees. */
  const visible = (html: string) =>
    html
      .replace(/<[^>]+>/g, "")
      .replaceAll("&lt;", "<")
      .replaceAll("&gt;", ">")
      .replaceAll("&quot;", '"')
      .replaceAll("&#39;", "'")
      .replaceAll("&amp;", "&");
  const deliverySection = (html: string) => {
    const match = /<section id="delivery">([\s\S]*?)<\/section>/.exec(html);
    expect(match, "the page has a delivery section").not.toBeNull();
    return match![1]!;
  };

  it("shows repository@base, branch, the PR link, diff stat and the escaped patch, collapsed and capped", async () => {
    const created = await d.api("POST", "/api/v1/agent/runs", {
      title: "Rework the page",
      prompt: [
        "Rework it",
        `$ printf '<script>alert("x")</script>\\n' > index.html`,
        // About 300 KB of new lines: more than the page shows of a patch.
        "$ seq 1 50000 | sed 's/^/line /' > zz-big.txt",
      ].join("\n"),
      config: { repository: "acme/site" },
    });
    expect(created.status, created.text).toBe(200);
    const run = await waitForState(d, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const pr = github.pulls.find((p) => p.head === run.agent_config.branch)!;
    expect(pr).toBeDefined();
    const file = run.artifacts.find((a: { artifact_type: string }) => a.artifact_type === "FILE");

    const { status, html } = await fetchHtml(run.session_link);
    expect(status).toBe(200);
    const section = deliverySection(html);
    const text = visible(section.replace(/<details[\s\S]*<\/details>/, ""));
    expect(text).toContain("Repositoryacme/site@main");
    expect(text).toContain(`Branch${run.agent_config.branch}`);
    expect(text).toContain(`Pull requestPR #${pr.number} opened`);
    expect(text).toContain(`Diff${file.data.description}`);
    expect(file.data.description).toBe("+50001 −1 in 2 files");
    expect(section).toContain(`<a href="${pr.html_url}">PR #${pr.number} opened</a>`);

    // The patch: collapsed, escaped (the page's own script stays the only one), and only its start.
    const details = /<details id="patch"( open)?>([\s\S]*?)<\/details>/.exec(section);
    expect(details).not.toBeNull();
    expect(details![1]).toBeUndefined();
    const patch = /<pre class="patch">([\s\S]*?)<\/pre>/.exec(details![2]!)![1]!;
    // (Booleans: a failed toContain would print 200 KB.)
    expect(patch.includes("+&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"), "escaped new line").toBe(
      true,
    );
    expect(patch.includes("-&lt;p&gt;old&lt;/p&gt;"), "escaped old line").toBe(true);
    expect(html.match(/<script\b/g)).toHaveLength(1);
    const shown = visible(patch);
    expect(Buffer.byteLength(shown)).toBeLessThanOrEqual(PATCH_SHOWN_BYTES);
    expect(shown.endsWith("\n")).toBe(true);
    expect(shown.includes("+line 1\n"), "the patch's start").toBe(true);
    expect(shown.includes("+line 50000\n"), "the patch's end").toBe(false);
    expect(visible(details![2]!)).toMatch(/Showing the first \d+ KB of \d+ KB/);

    // A follow-up pushes again: the same pull request, now "updated", with the new diff stat.
    const followup = await d.api("POST", `/api/v1/agent/runs/${run.run_id}/followups`, {
      message: "$ rm zz-big.txt",
    });
    expect(followup.status).toBe(200);
    const updated = await waitFor(
      async () => {
        const r = (await d.api("GET", `/api/v1/agent/runs/${run.run_id}`)).body;
        const prArtifact = r.artifacts.find(
          (a: { artifact_type: string }) => a.artifact_type === "PULL_REQUEST",
        );
        return ["SUCCEEDED", "FAILED", "ERROR"].includes(r.state) && prArtifact?.data.updated_at
          ? r
          : undefined;
      },
      { timeoutMs: 30_000, what: "the follow-up to be delivered" },
    );
    expect(updated.state).toBe("SUCCEEDED");
    const page2 = deliverySection((await fetchHtml(run.session_link)).html);
    expect(page2).toContain(`<a href="${pr.html_url}">PR #${pr.number} updated</a>`);
    expect(visible(page2)).toContain("Diff+1 −1 in 1 file");
    expect(page2).not.toContain('id="patch-cut"');
  });

  it("shows the repository of a run without changes, and no patch", async () => {
    const created = await d.api("POST", "/api/v1/agent/runs", {
      prompt: "$ cat README.md",
      config: { repository: "acme/site" },
    });
    const run = await waitForState(d, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.status_message?.message).toBe("No changes");
    const section = deliverySection((await fetchHtml(run.session_link)).html);
    expect(visible(section)).toContain("Repositoryacme/site@main");
    expect(visible(section)).toContain("ChangesNo changes");
    expect(section).not.toContain("<details");
  });

  it("shows the start of a 30 MB patch, says it is cut, and serves many loads of it at once", async () => {
    const created = await d.api("POST", "/api/v1/agent/runs", {
      prompt: "$ cat README.md",
      config: { repository: "acme/site" },
    });
    const run = await waitForState(d, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state).toBe("SUCCEEDED");
    // The patch a large change leaves, recorded as delivery records it.
    const patch = Buffer.from(
      Array.from({ length: 2_500_000 }, (_, i) => `+generated line ${i}`).join("\n"),
      "utf8",
    );
    const uid = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a61";
    await d.dispatch.store.recordArtifact(
      run.run_id,
      {
        artifact_type: "FILE",
        created_at: new Date().toISOString(),
        data: { artifact_uid: uid, filename: "changes.patch", size_bytes: patch.length },
      },
      { uid, contentType: "text/x-diff", content: patch },
    );

    // Each load reads the patch's stored head, never the whole 30 MB.
    const wholeReads = vi.spyOn(d.dispatch.store, "readArtifactContent");
    const pages = await Promise.all(Array.from({ length: 30 }, () => fetchHtml(run.session_link)));
    for (const p of pages) expect(p.status).toBe(200);
    expect(wholeReads).not.toHaveBeenCalled();
    wholeReads.mockRestore();
    const section = deliverySection(pages[0]!.html);
    const shown = visible(/<pre class="patch">([\s\S]*?)<\/pre>/.exec(section)![1]!);
    expect(Buffer.byteLength(shown)).toBeLessThanOrEqual(PATCH_SHOWN_BYTES);
    expect(Buffer.byteLength(shown)).toBeGreaterThan(PATCH_SHOWN_BYTES - 100);
    expect(shown.startsWith("+generated line 0\n+generated line 1\n"), "the patch's start").toBe(true);
    expect(shown.endsWith("\n")).toBe(true);
    expect(visible(section)).toMatch(
      /Showing the first 200 KB of \d\d\.\d MB; the whole patch is an artifact of the run/,
    );

    // A run, a 30 MB artifact and 30 page loads: more than the default 30 s on a loaded machine.
  }, 120_000);

  it("has no delivery section for a run without a repository", async () => {
    const created = await d.api("POST", "/api/v1/agent/runs", { prompt: "$ echo hi" });
    const run = await waitForState(d, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect((await fetchHtml(run.session_link)).html).not.toContain('id="delivery"');
  });
});
