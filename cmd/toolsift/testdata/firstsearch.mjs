// A client of toolsift serve made with the official TypeScript SDK, run by
// firstsearch_unix_test.go: its first request, at once after serve
// listens, is either search_tools "add two numbers" or call_tool
// everything__get-sum. It prints one JSON object with the answer.
//
//   node firstsearch.mjs DIR URL search|call TOKEN [2026]
//
// DIR is the folder of @modelcontextprotocol/sdk (v1, MCP 2025-11-25 with
// a session), or with 2026 of @modelcontextprotocol/client (v2, pinned to
// MCP 2026-07-28: no session).
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [dir, url, first, token, wire] = process.argv.slice(2);
let Client, StreamableHTTPClientTransport, options;
if (wire === "2026") {
  ({ Client, StreamableHTTPClientTransport } = await import(pathToFileURL(join(dir, "dist/index.mjs")).href));
  options = { versionNegotiation: { mode: { pin: "2026-07-28" } } };
} else {
  const load = (p) => import(pathToFileURL(join(dir, "dist/esm", p)).href);
  ({ Client } = await load("client/index.js"));
  ({ StreamableHTTPClientTransport } = await load("client/streamableHttp.js"));
}

const client = new Client({ name: "toolsift-firstsearch", version: "1.0.0" }, options);
const t0 = performance.now();
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
const res =
  first === "search"
    ? await client.callTool({ name: "search_tools", arguments: { query: "add two numbers" } })
    : await client.callTool({ name: "call_tool", arguments: { name: "everything__get-sum", arguments: { a: 17, b: 25 } } });
const out = {
  ms: Math.round(performance.now() - t0),
  isError: !!res.isError,
  text: (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n"),
  structured: res.structuredContent ?? null,
};
await client.close();
console.log(JSON.stringify(out));
