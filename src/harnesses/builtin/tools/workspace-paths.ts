import { relative } from "node:path";
import type { Sandbox } from "../../../sandbox/sandbox.ts";
import { ToolError } from "./define-tool.ts";

/** Paths as the file tools take them (through the sandbox, confined to the workspace) and show them. */
export class WorkspacePaths {
  private readonly sandbox: Sandbox;

  constructor(sandbox: Sandbox) {
    this.sandbox = sandbox;
  }

  /** The absolute path of `path`; a path outside the workspace is the model's mistake, told as such. */
  async resolve(path: string): Promise<string> {
    try {
      return await this.sandbox.resolvePath(path);
    } catch (err) {
      throw new ToolError((err as Error).message);
    }
  }

  /** `abs` relative to the workspace, "." for the workspace itself. */
  display(abs: string): string {
    return relative(this.sandbox.workspace, abs) || ".";
  }
}
