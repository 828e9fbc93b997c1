import type { ListRunsResponse, RunItem } from "./api-types.ts";
import { APIPromise } from "./core.ts";
import { DispatchError } from "./errors.ts";

/**
 * One page of GET /agent/runs. Iterating it (`for await (const run of page)`) yields every run from
 * this page on, fetching the following pages by `page_info.next_cursor` as it goes.
 */
export class RunsPage implements AsyncIterable<RunItem>, ListRunsResponse {
  readonly runs: RunItem[];
  readonly page_info: ListRunsResponse["page_info"];
  readonly #fetchPage: (cursor: string) => RunsPagePromise;

  constructor(body: ListRunsResponse, fetchPage: (cursor: string) => RunsPagePromise) {
    this.runs = body.runs;
    this.page_info = body.page_info;
    this.#fetchPage = fetchPage;
  }

  hasNextPage(): boolean {
    return this.page_info.has_next_page && typeof this.page_info.next_cursor === "string";
  }

  /** The next page; check `hasNextPage()` first. */
  async getNextPage(): Promise<RunsPage> {
    const cursor = this.page_info.next_cursor;
    if (!this.page_info.has_next_page || cursor === undefined) {
      throw new DispatchError("no next page: check hasNextPage() before calling getNextPage()");
    }
    return this.#fetchPage(cursor);
  }

  /** This page and every following one. */
  async *iterPages(): AsyncGenerator<RunsPage, void, undefined> {
    let page: RunsPage = this;
    yield page;
    while (page.hasNextPage()) {
      page = await page.getNextPage();
      yield page;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<RunItem, void, undefined> {
    for await (const page of this.iterPages()) yield* page.runs;
  }
}

/** `client.runs.list()`: await it for the first page, or iterate it directly for every run. */
export class RunsPagePromise extends APIPromise<RunsPage> implements AsyncIterable<RunItem> {
  async *[Symbol.asyncIterator](): AsyncGenerator<RunItem, void, undefined> {
    yield* await this;
  }
}
