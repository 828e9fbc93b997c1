// Writes the committed openapi.json (`npm run openapi`); a test fails when it drifts from the server.
import { writeFileSync } from "node:fs";
import { buildOpenApiDocument } from "./openapi.ts";

const target = new URL("../../openapi.json", import.meta.url);
writeFileSync(target, `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
console.log(`wrote ${target.pathname}`);
