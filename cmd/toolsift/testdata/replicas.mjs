// A client of toolsift serve's replicas made with the official TypeScript
// SDK v2 (@modelcontextprotocol/client, pinned in upstream/testdata/npm), on MCP
// 2026-07-28 (no session: any replica answers any request). Driven by
// replicas_test.go one command per stdin line, it answers each with one
// JSON line on stdout:
//
//   node replicas.mjs CLIENT_DIR URL TOKEN
//
//   {"op": "list"}                          → {"tools": [names]}
//   {"op": "search", "query": "…"}          → {"isError": bool, "found": [names]}
//   {"op": "call", "name": "…", "args": {}} → {"isError": bool, "text": "…"}
//   a command that failed                   → {"error": "…"}
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { createInterface } from "node:readline";

const [clientDir, url, token] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(join(clientDir, "dist/index.mjs")).href);

function text(res) {
  return (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

const client = new Client({ name: "toolsift-replicas-test", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
await client.connect(transport);
process.stdout.write(JSON.stringify({ protocolVersion: client.getNegotiatedProtocolVersion() ?? null, sessionId: transport.sessionId ?? null }) + "\n");

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  let out;
  try {
    switch (cmd.op) {
      case "list":
        out = { tools: (await client.listTools()).tools.map((t) => t.name) };
        break;
      case "search": {
        const res = await client.callTool({ name: "search_tools", arguments: { query: cmd.query } });
        const answer = res.isError ? { tools: [] } : JSON.parse(text(res));
        out = { isError: !!res.isError, found: answer.tools.map((t) => t.name), text: res.isError ? text(res) : "" };
        break;
      }
      case "call": {
        const res = await client.callTool({ name: cmd.name, arguments: cmd.args ?? {} });
        out = { isError: !!res.isError, text: text(res) };
        break;
      }
      default:
        out = { error: `unknown op ${cmd.op}` };
    }
  } catch (e) {
    out = { error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
await client.close();
