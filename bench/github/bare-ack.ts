import { createHmac, timingSafeEqual } from "node:crypto";
import { serveBare } from "../support/bare-server.ts";

/**
 * The baseline of the GitHub benchmark: verify X-Hub-Signature-256 and answer 202. Nothing less can be
 * called an acknowledgement.
 */
const secret = process.env.BENCH_WEBHOOK_SECRET ?? "";

serveBare((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(body).digest("hex")}`);
    const given = Buffer.from(String(req.headers["x-hub-signature-256"] ?? ""));
    const ok = given.length === expected.length && timingSafeEqual(given, expected);
    res.writeHead(ok ? 202 : 401).end();
  });
});
