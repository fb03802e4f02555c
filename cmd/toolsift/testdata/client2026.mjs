// A client of toolsift serve made with the official TypeScript SDK v2
// (@modelcontextprotocol/client, pinned in upstream/testdata/npm), pinned to MCP
// 2026-07-28: no session, server/discover, its revision in each request.
// Run by serve_test.go beside client.mjs (SDK v1, 2025-11-25) on the same
// URL; it prints one JSON object with what it saw on stdout.
//
//   node client2026.mjs CLIENT_DIR URL TOKEN
//
// CLIENT_DIR is the folder of @modelcontextprotocol/client. It lists the
// tools, searches "add two numbers", calls the found tool by the name
// search_tools gave (its list is fixed: the tool does not join it) and
// through call_tool, and lists again.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [clientDir, url, token] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(join(clientDir, "dist/index.mjs")).href);

function text(res) {
  return (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

const out = {};
const client = new Client({ name: "toolsift-test-2026", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
await client.connect(transport);
out.protocolVersion = client.getNegotiatedProtocolVersion() ?? null;
out.sessionId = transport.sessionId ?? null;
out.listed = (await client.listTools()).tools.map((t) => t.name);
const search = await client.callTool({ name: "search_tools", arguments: { query: "add two numbers" } });
out.searchIsError = !!search.isError;
const answer = JSON.parse(text(search));
out.found = answer.tools.map((t) => ({ name: t.name, server: t.server }));
out.listedAfterSearch = answer.listed ?? null;
const byName = await client.callTool({ name: "everything__get-sum", arguments: { a: 40, b: 2 } });
out.byName = text(byName);
out.byNameIsError = !!byName.isError;
const viaCallTool = await client.callTool({ name: "call_tool", arguments: { name: "everything__get-sum", arguments: { a: 1, b: 2 } } });
out.callTool = text(viaCallTool);
out.relisted = (await client.listTools()).tools.map((t) => t.name);
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
