import { serveBare } from "../support/bare-server.ts";

/**
 * The baseline of the API benchmark: the least a Node.js HTTP JSON endpoint can do. run.ts starts it with
 * startBareServer (bench/support/bare-server.ts).
 *
 * The body is a RunItem-shaped object of about the size GET /api/v1/agent/runs/{id} returns, serialised
 * on every request, as a real handler would.
 */
const RUN = {
  run_id: "0197a3c2-5a1e-7c3d-9f10-4b8e2d6a1c55",
  task_id: "0197a3c2-5a1e-7c3d-9f10-4b8e2d6a1c55",
  title: "Fix the flaky test in src/checkout/cart.ts; it fails about one run in ten on CI with a timeout.",
  prompt:
    "Fix the flaky test in src/checkout/cart.ts; it fails about one run in ten on CI with a timeout.\n\n" +
    "Keep the change small and open a pull request against main when the tests pass.",
  state: "SUCCEEDED",
  created_at: "2025-06-12T09:14:03.118Z",
  updated_at: "2025-06-12T09:31:47.902Z",
  started_at: "2025-06-12T09:14:05.377Z",
  finished_at: "2025-06-12T09:31:47.902Z",
  run_time: "PT17M42.525S",
  session_id: "q3Jm0kU8vYtR2xW9pLz7cN4bA1sD6fGh",
  session_link: "http://127.0.0.1:8080/sessions/q3Jm0kU8vYtR2xW9pLz7cN4bA1sD6fGh",
  source: "API",
  creator: { type: "service_account", uid: "admin", display_name: "Admin" },
  agent_config: { model_id: "claude-sonnet-4-5", harness: { type: "builtin" } },
  artifacts: [
    {
      artifact_type: "PULL_REQUEST",
      created_at: "2025-06-12T09:31:46.902Z",
      data: { url: "https://github.com/acme/web/pull/4821", branch: "dispatch/mbt1x2yz" },
    },
  ],
  request_usage: { input_tokens: 184233, output_tokens: 21907, total_tokens: 206140, inference_cost: 0.88 },
  is_sandbox_running: false,
  scope: { type: "Team", uid: "team_default" },
  metadata: { ci_job: "482913" },
};

serveBare((_req, res) => {
  const body = JSON.stringify(RUN);
  res.writeHead(200, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
});
