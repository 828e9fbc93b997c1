import { createHmac, timingSafeEqual } from "node:crypto";
import { serveBare } from "../support/bare-server.ts";

/**
 * The baseline of the Slack benchmark: verify the signature (v0, over the timestamp and the body) and
 * answer 200. Nothing less can be called an acknowledgement.
 */
const secret = process.env.BENCH_SIGNING_SECRET ?? "";

serveBare((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const ts = req.headers["x-slack-request-timestamp"];
    const expected = Buffer.from(
      `v0=${createHmac("sha256", secret).update(`v0:${ts}:`).update(body).digest("hex")}`,
    );
    const given = Buffer.from(String(req.headers["x-slack-signature"] ?? ""));
    const ok = given.length === expected.length && timingSafeEqual(given, expected);
    res.writeHead(ok ? 200 : 401).end();
  });
});
