import { Agent, request as httpRequest } from "node:http";

/**
 * A browser as the web app's tests need one: a cookie jar over HTTP, redirects not followed (the tests
 * look at each 303), and the hidden CSRF field of the page last read. Each browser connects from a
 * loopback address of its own (127.1.0.1, 127.1.0.2, …, or `from`), as each person's browser is a client
 * of its own to the server's limits per address; `headers` go with every request.
 */
export class Browser {
  readonly base: string;
  readonly cookies = new Map<string, string>();
  /** The local address this browser connects from. */
  readonly from: string;
  private readonly headers: Record<string, string>;
  /** Keeps connections open between requests, as a browser does. */
  private readonly agent: Agent;

  constructor(base: string, opts: { from?: string; headers?: Record<string, string> } = {}) {
    this.base = base;
    this.from = opts.from ?? nextLoopbackAddress();
    this.headers = opts.headers ?? {};
    this.agent = new Agent({ keepAlive: true, localAddress: this.from });
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<Page> {
    return this.request("GET", path, undefined, headers);
  }

  /** A form post (application/x-www-form-urlencoded). */
  async post(path: string, form: Record<string, string>): Promise<Page> {
    return this.request("POST", path, new URLSearchParams(form).toString());
  }

  private async request(
    method: string,
    path: string,
    body: string | undefined,
    headers: Record<string, string> = {},
  ): Promise<Page> {
    const url = path.startsWith("http") ? path : this.base + path;
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const res = await send(url, {
      method,
      headers: {
        ...this.headers,
        ...(cookie ? { cookie } : {}),
        ...(body !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}),
        ...headers,
      },
      body,
      agent: this.agent,
    });
    const setCookies = res.headers.getSetCookie();
    for (const line of setCookies) {
      const [pair = ""] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      if (/max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const html = res.text;
    return {
      status: res.status,
      location: res.headers.get("location"),
      setCookies,
      html,
      headers: res.headers,
    };
  }
}

let browsers = 0;

/** 127.1.0.1, 127.1.0.2, …: Linux routes all of 127.0.0.0/8 to the loopback interface. */
function nextLoopbackAddress(): string {
  const n = ++browsers;
  return `127.1.${Math.floor(n / 254) % 256}.${(n % 254) + 1}`;
}

/** One HTTP/1.1 request through `agent` (which connects from the browser's address), its answer read whole. */
function send(
  url: string,
  opts: { method: string; headers: Record<string, string>; body: string | undefined; agent: Agent },
): Promise<{ status: number; headers: Headers; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: opts.method,
        headers: {
          ...opts.headers,
          ...(opts.body !== undefined ? { "content-length": String(Buffer.byteLength(opts.body)) } : {}),
        },
        agent: opts.agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const headers = new Headers();
          for (let i = 0; i < res.rawHeaders.length; i += 2) {
            headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
          }
          resolve({ status: res.statusCode ?? 0, headers, text: Buffer.concat(chunks).toString("utf8") });
        });
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

export interface Page {
  status: number;
  location: string | null;
  setCookies: string[];
  html: string;
  headers: Headers;
}

/** The value of the page's hidden `csrf` field. */
export function csrfOf(page: Page): string {
  const match = /name="csrf" value="([^"]+)"/.exec(page.html);
  if (!match) throw new Error(`no CSRF field on the page:\n${page.html.slice(0, 500)}`);
  return match[1]!;
}

/** Signs `browser` in through the admin key form, as a person would: read the form, post it. */
export async function signInWithKey(browser: Browser, key: string): Promise<Page> {
  const form = await browser.get("/");
  return browser.post("/login", { csrf: csrfOf(form), api_key: key });
}

/** The run ids listed on a dashboard page, in order. */
export function runIdsOf(page: Page): string[] {
  return [...page.html.matchAll(/<tr data-run-id="([^"]+)"/g)].map((m) => m[1]!);
}

/** Presses the button of the page's first POST form, as a person would: its action, its hidden fields. */
export async function submitFirstForm(browser: Browser, page: Page): Promise<Page> {
  const form = /<form method="post" action="([^"]+)"/.exec(page.html);
  if (!form) throw new Error(`no form on the page:\n${page.html.slice(0, 500)}`);
  const fields = Object.fromEntries(
    [...page.html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [
      m[1]!,
      m[2]!,
    ]),
  );
  return browser.post(form[1]!.replaceAll("&amp;", "&"), fields);
}
