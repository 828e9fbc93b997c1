import type { SurfaceDefinition } from "./surface.ts";

/**
 * Every surface Dispatch has, in one place: a new one (Linear, Jira, …) is a folder under src/integrations
 * and one line here. Each folder is loaded only when its surface is configured: Bolt and Octokit are
 * megabytes a server without them would hold for nothing.
 */
export const SURFACES: readonly SurfaceDefinition[] = [
  {
    platform: "slack",
    configured: (config) => config.slack !== undefined,
    load: () => import("../integrations/slack/surface.ts"),
  },
  {
    platform: "github",
    configured: (config) => config.github !== undefined,
    load: () => import("../integrations/github/surface.ts"),
  },
];
