import type { AgentConfig } from "../model/run.ts";
import type { Harness, HarnessContext, HarnessOutcome } from "./harness.ts";

/**
 * A harness whose implementation is loaded when a run first needs it: the builtin agent's module graph
 * (the AI SDK, MCP, its tools) is megabytes that a server running only other harnesses, or idle, never
 * uses. `availability`, asked at create, must not need the implementation.
 */
export class LazyHarness implements Harness {
  readonly type: string;
  readonly #load: () => Promise<Harness>;
  readonly #availability: ((config: AgentConfig) => string | undefined) | undefined;
  #loaded: Promise<Harness> | undefined;

  constructor(
    type: string,
    load: () => Promise<Harness>,
    availability?: (config: AgentConfig) => string | undefined,
  ) {
    this.type = type;
    this.#load = load;
    this.#availability = availability;
  }

  async run(ctx: HarnessContext): Promise<HarnessOutcome> {
    this.#loaded ??= this.#load().catch((err: unknown) => {
      // A failed load is tried again by the next run rather than remembered.
      this.#loaded = undefined;
      throw err;
    });
    return (await this.#loaded).run(ctx);
  }

  availability(config: AgentConfig): string | undefined {
    return this.#availability?.(config);
  }
}
