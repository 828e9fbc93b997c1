import type { SurfaceDefinition } from "./surface.ts";

/**
 * Every surface Dispatch has, in one place: a new one is a folder under src/integrations
 * and one line here. Each folder is loaded only when its surface is configured: Bolt, Octokit and the Linear SDK are
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
  {
    platform: "linear",
    configured: (config) => config.linear !== undefined,
    load: () => import("../integrations/linear/surface.ts"),
  },
  {
    platform: "jira",
    configured: (config) => config.jira !== undefined,
    load: () => import("../integrations/jira/surface.ts"),
  },
];
