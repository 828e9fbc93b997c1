/**
 * A browser as the web app's tests need one: a cookie jar over fetch, redirects not followed (the tests
 * look at each 303), and the hidden CSRF field of the page last read.
 */
export class Browser {
  readonly base: string;
  readonly cookies = new Map<string, string>();

  constructor(base: string) {
    this.base = base;
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
    const res = await fetch(url, {
      method,
      redirect: "manual",
      headers: {
        ...(cookie ? { cookie } : {}),
        ...(body !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body } : {}),
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
    const html = await res.text();
    return {
      status: res.status,
      location: res.headers.get("location"),
      setCookies,
      html,
      headers: res.headers,
    };
  }
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
