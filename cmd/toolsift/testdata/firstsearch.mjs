// A client of toolsift serve made with the official TypeScript SDK, run by
// firstsearch_unix_test.go: its first request, at once after serve
// listens, is either search_tools "add two numbers" or call_tool
// everything__get-sum. It prints one JSON object with the answer.
//
//   node firstsearch.mjs SDK_DIR URL search|call TOKEN
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, url, first, token] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(join(sdkDir, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const client = new Client({ name: "toolsift-firstsearch", version: "1.0.0" });
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
