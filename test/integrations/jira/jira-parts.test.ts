import { describe, expect, it } from "vitest";
import { parseSettings } from "../../../src/config-file.ts";
import { loadJiraConfig } from "../../../src/config-jira.ts";
import { type AdfNode, adfMentions, adfToMarkdown } from "../../../src/integrations/jira/adf-markdown.ts";
import {
  bold,
  code,
  link,
  mention,
  paragraph,
  t,
  toAdf,
  toWiki,
} from "../../../src/integrations/jira/comment-doc.ts";
import { parseTrigger } from "../../../src/integrations/jira/webhook-events.ts";
import { wikiMentions, wikiToMarkdown } from "../../../src/integrations/jira/wiki-markdown.ts";
import { scrubSecrets } from "../../../src/log.ts";

const text = (value: string, marks?: AdfNode["marks"]): AdfNode => ({
  type: "text",
  text: value,
  ...(marks ? { marks } : {}),
});
const p = (...content: AdfNode[]): AdfNode => ({ type: "paragraph", content });
const doc = (...content: AdfNode[]): AdfNode => ({ type: "doc", content });

describe("Atlassian Document Format as Markdown", () => {
  it("keeps what Jira's editor writes: headings, marks, links, mentions, lists, code, quotes, tables", () => {
    const markdown = adfToMarkdown(
      doc(
        { type: "heading", attrs: { level: 2 }, content: [text("Steps")] },
        p(
          text("Run "),
          text("make test", [{ type: "code" }]),
          text(" and read "),
          text("the guide", [{ type: "link", attrs: { href: "https://example.com/a_b" } }]),
          text(", "),
          text("carefully", [{ type: "strong" }]),
          text("."),
        ),
        p(
          { type: "mention", attrs: { id: "acc-1", text: "@Ada" } },
          text(" knows."),
          { type: "hardBreak" },
          text("Next line"),
        ),
        {
          type: "bulletList",
          content: [
            {
              type: "listItem",
              content: [
                p(text("one")),
                { type: "orderedList", content: [{ type: "listItem", content: [p(text("nested"))] }] },
              ],
            },
            { type: "listItem", content: [p(text("two"))] },
          ],
        },
        { type: "codeBlock", attrs: { language: "bash" }, content: [text("echo a_b_c *x*")] },
        { type: "blockquote", content: [p(text("quoted"))] },
        { type: "panel", attrs: { panelType: "warning" }, content: [p(text("careful"))] },
        {
          type: "table",
          content: [
            {
              type: "tableRow",
              content: [
                { type: "tableHeader", content: [p(text("a"))] },
                { type: "tableHeader", content: [p(text("b"))] },
              ],
            },
            {
              type: "tableRow",
              content: [
                { type: "tableCell", content: [p(text("1"))] },
                { type: "tableCell", content: [p(text("x|y"))] },
              ],
            },
          ],
        },
        { type: "mediaSingle", content: [{ type: "media", attrs: { alt: "screenshot.png" } }] },
        { type: "someFutureNode", content: [p(text("still here"))] },
      ),
    );
    expect(markdown).toBe(
      [
        "## Steps",
        "",
        "Run `make test` and read [the guide](https://example.com/a_b), **carefully**.",
        "",
        "@Ada knows.\nNext line",
        "",
        "- one\n  1. nested\n- two",
        "",
        "```bash\necho a_b_c *x*\n```",
        "",
        "> quoted",
        "",
        "> **Warning:** careful",
        "",
        "| a | b |\n| --- | --- |\n| 1 | x\\|y |",
        "",
        "[screenshot.png]",
        "",
        "still here",
      ].join("\n"),
    );
  });

  it("a mention can be dropped, and only mentions outside quotes count", () => {
    const comment = doc(p({ type: "mention", attrs: { id: "bot", text: "@Dispatch" } }, text(" fix it")), {
      type: "blockquote",
      content: [p({ type: "mention", attrs: { id: "other", text: "@Other" } })],
    });
    expect(adfMentions(comment)).toEqual(["bot"]);
    expect(adfToMarkdown(comment, { mention: (id, t) => (id === "bot" ? "" : t) })).toBe(
      " fix it\n\n> @Other".trim(),
    );
  });
});

describe("wiki markup as Markdown", () => {
  it("converts headings, emphasis, links, mentions, lists and tables, and leaves code alone", () => {
    const markdown = wikiToMarkdown(
      [
        "h2. Steps",
        "Run {{make test}} and *read* the _guide_ at [the guide|https://example.com/a_b_c] or https://example.com/x_y_z.",
        "[~ada] knows; -old- +new+ \\*not bold\\*",
        "* one",
        "** nested",
        "# first",
        "bq. quoted",
        "||a||b||",
        "|1|[x|https://e.com]|",
        "{code:bash}",
        "echo a_b_c *x* -y-",
        "{code}",
        "{quote}said before{quote}",
      ].join("\n"),
    );
    expect(markdown).toBe(
      [
        "## Steps",
        "Run `make test` and **read** the *guide* at [the guide](https://example.com/a_b_c) or https://example.com/x_y_z.",
        "@ada knows; ~~old~~ new *not bold*",
        "- one",
        "  - nested",
        "1. first",
        "> quoted",
        "| a | b |",
        "| --- | --- |",
        "| 1 | [x](https://e.com) |",
        "",
        "```bash",
        "echo a_b_c *x* -y-",
        "```",
        "",
        "> said before",
      ].join("\n"),
    );
  });

  it("mentions count outside code and quotes, Cloud's [~accountid:…] as well as Data Center's [~name]", () => {
    expect(
      wikiMentions("[~dispatch] go {code}[~x]{code} {quote}[~y]{quote}\nbq. [~z]\n[~accountid:5b10:ab]"),
    ).toEqual(["dispatch", "5b10:ab"]);
  });
});

describe("a comment in both flavours", () => {
  const comment = [
    paragraph(mention("acc-1", "Ada"), t(" "), bold("Failed"), t(" · PROJ-1 *a* [b|c] {x}")),
    paragraph(code("in acme/app"), t(" · "), link("PR #3 opened", "https://github.com/acme/app/pull/3")),
    { preformatted: "exit 1 {noformat} <b>" },
  ];

  it("is an ADF document on Cloud: text stays text, the mention a mention node", () => {
    const adf = toAdf(comment);
    expect(adf.type).toBe("doc");
    expect(adf.content![0]!.content![0]).toEqual({ type: "mention", attrs: { id: "acc-1", text: "@Ada" } });
    expect(adf.content![0]!.content![3]).toEqual({ type: "text", text: " · PROJ-1 *a* [b|c] {x}" });
    expect(adf.content![1]!.content![2]).toMatchObject({
      marks: [{ type: "link", attrs: { href: "https://github.com/acme/app/pull/3" } }],
    });
    expect(adf.content![2]).toEqual({
      type: "codeBlock",
      content: [{ type: "text", text: "exit 1 {noformat} <b>" }],
    });
  });

  it("is wiki markup on Data Center: every markup character in text is escaped", () => {
    expect(toWiki(comment)).toBe(
      [
        "[~acc-1] *Failed* · PROJ\\-1 \\*a\\* \\[b\\|c\\] \\{x\\}",
        "",
        "{{in acme/app}} · [PR \\#3 opened|https://github.com/acme/app/pull/3]",
        "",
        "{noformat}\nexit 1 { noformat} <b>\n{noformat}",
      ].join("\n"),
    );
  });
});

describe("what counts in a Jira webhook", () => {
  const settings = { botId: "712020:bot", label: "dispatch" };
  const issue = { id: "10001", key: "PROJ-1", fields: { project: { key: "PROJ" } } };
  const comment = (body: unknown, author = { accountId: "712020:ada", displayName: "Ada" }) => ({
    webhookEvent: "comment_created",
    issue,
    comment: { id: "20001", author, body },
  });

  it("Cloud's REST v2 payload (wiki markup, [~accountid:…]) mentions the service account; the command is what is left", () => {
    expect(parseTrigger(comment("[~accountid:712020:bot], cancel"), settings)).toMatchObject({
      kind: "comment",
      issue: { id: "10001", key: "PROJ-1", projectKey: "PROJ" },
      actor: { id: "712020:ada", name: "Ada" },
      comment: { id: "20001", command: "cancel" },
    });
    expect(parseTrigger(comment("{quote}[~accountid:712020:bot]{quote} hi"), settings)).toEqual({
      ignored: "no mention",
    });
    expect(
      parseTrigger(
        comment("[~accountid:712020:bot] hi", { accountId: "712020:bot", displayName: "D" }),
        settings,
      ),
    ).toEqual({
      ignored: "own comment",
    });
  });

  it("a changelog that adds the label (any case) or assigns the service account; other events are ignored", () => {
    const updated = (item: Record<string, unknown>) => ({
      webhookEvent: "jira:issue_updated",
      issue,
      user: { name: "ada", displayName: "Ada" },
      changelog: { id: "30001", items: [item] },
    });
    expect(
      parseTrigger(updated({ field: "labels", fromString: "docs", toString: "docs Dispatch" }), settings),
    ).toMatchObject({
      kind: "label",
      changelogId: "30001",
      actor: { id: "ada" },
    });
    expect(
      parseTrigger(updated({ field: "labels", fromString: "dispatch", toString: "dispatch docs" }), settings),
    ).toMatchObject({
      ignored: expect.any(String),
    });
    expect(parseTrigger(updated({ field: "assignee", to: "712020:bot" }), settings)).toMatchObject({
      kind: "assigned",
    });
    expect(parseTrigger({ webhookEvent: "jira:issue_deleted", issue }, settings)).toEqual({
      ignored: "event jira:issue_deleted",
    });
    expect(parseTrigger({ webhookEvent: "comment_created", issue: { id: 1 } }, settings)).toMatchObject({
      ignored: expect.any(String),
    });
  });
});

describe("Jira configuration", () => {
  const cloud = {
    JIRA_BASE_URL: "https://acme.atlassian.net/",
    JIRA_EMAIL: "bot@acme.com",
    JIRA_API_TOKEN: "token-123456",
    JIRA_BOT_ACCOUNT_ID: "712020:bot",
    JIRA_WEBHOOK_SECRET: "0123456789abcdef0123",
  };

  it("Cloud from an e-mail and API token, Data Center from a personal access token", () => {
    expect(loadJiraConfig(cloud)).toMatchObject({
      flavour: "cloud",
      baseUrl: "https://acme.atlassian.net",
      botId: "712020:bot",
    });
    expect(
      loadJiraConfig({
        JIRA_BASE_URL: "https://jira.example.com",
        JIRA_PAT: "pat-123456789",
        JIRA_BOT_USERNAME: "dispatch",
        JIRA_WEBHOOK_SECRET: "0123456789abcdef0123",
      }),
    ).toMatchObject({ flavour: "datacenter", auth: { kind: "pat" }, botId: "dispatch" });
    expect(loadJiraConfig({})).toBeUndefined();
  });

  it("a problem is named by its variable, with what to do", () => {
    expect(() => loadJiraConfig({ ...cloud, JIRA_PAT: "pat-123456789" })).toThrow(/JIRA_PAT: set either/);
    expect(() => loadJiraConfig({ ...cloud, JIRA_API_TOKEN: "" })).toThrow(
      /JIRA_API_TOKEN: required with JIRA_EMAIL/,
    );
    expect(() => loadJiraConfig({ ...cloud, JIRA_BOT_ACCOUNT_ID: "" })).toThrow(
      /JIRA_BOT_ACCOUNT_ID: required on Jira Cloud/,
    );
    expect(() => loadJiraConfig({ ...cloud, JIRA_WEBHOOK_SECRET: "" })).toThrow(
      /JIRA_WEBHOOK_SECRET: required to receive/,
    );
    expect(loadJiraConfig({ ...cloud, JIRA_WEBHOOK_SECRET: "" }, { receivesWebhooks: false })).toMatchObject({
      flavour: "cloud",
    });
    expect(() => loadJiraConfig({ JIRA_PAT: "pat-123456789" })).toThrow(
      /JIRA_BASE_URL: required to enable Jira; JIRA_PAT is set/,
    );
  });

  it("jira: settings have defaults; a project key that is not one is refused by name", () => {
    expect(parseSettings({}).jira).toEqual({
      label: "dispatch",
      followup: "anyone",
      cancel: "anyone",
      permission_cache_seconds: 60,
      projects: {},
    });
    expect(
      parseSettings({ jira: { projects: { PROJ: { transitions: { started: "In Progress" } } } } }).jira
        .projects.PROJ,
    ).toEqual({
      transitions: { started: "In Progress" },
    });
    expect(() => parseSettings({ jira: { projects: { proj: {} } } })).toThrow(
      /project keys are Jira project keys/,
    );
    expect(() => parseSettings({ jira: { allowed_projects: ["x y"] } })).toThrow(/jira\.allowed_projects/);
  });

  it("a Data Center webhook's URL secret never reaches the log", () => {
    expect(scrubSecrets("POST /jira/webhooks?secret=abc123&x=1 401")).toBe(
      "POST /jira/webhooks?secret=[redacted]&x=1 401",
    );
  });
});
