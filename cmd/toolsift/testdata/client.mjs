// A client of toolsift serve made with the official TypeScript SDK, run by
// serve_test.go (and by hand for the measurements in docs). It prints one
// JSON object with what it saw on stdout; the Go test judges it.
//
//   node client.mjs SDK_DIR stdio COMMAND [ARGS...]   (TOOLSIFT_* env passed on)
//   node client.mjs SDK_DIR http URL TOKEN CLIENTS
//
// SDK_DIR is the folder of @modelcontextprotocol/sdk (the pinned one in
// upstream/testdata/npm). Each client: initialize, tools/list, search_tools "add
// two numbers", call_tool get-sum, wait for tools/list_changed, tools/list
// again, call the found tool by its name. Over HTTP, client i adds 17+i and
// 25 so that each has its own result, and one more client sends a wrong token.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, mode, ...rest] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(join(sdkDir, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { ToolListChangedNotificationSchema, CreateMessageRequestSchema } = await load("types.js");

function text(res) {
  return (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function session(transport, i, beforeClose) {
  const out = { client: i };
  let changed;
  const listChanged = new Promise((resolve) => (changed = resolve));
  const client = new Client({ name: "toolsift-test", version: "1.0.0" }, { capabilities: { sampling: {} } });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
  // Sampling requests of upstream servers reach this client.
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => ({
    role: "assistant",
    content: { type: "text", text: `sampled for client ${i}: ${req.params.messages[0].content.text}` },
    model: "test-model",
    stopReason: "endTurn",
  }));
  const t0 = performance.now();
  await client.connect(transport);
  out.protocolVersion = transport.protocolVersion ?? null;
  const first = await client.listTools();
  out.listed = first.tools.map((t) => t.name);
  const search = await client.callTool({ name: "search_tools", arguments: { query: "add two numbers" } });
  out.firstSearchMs = performance.now() - t0;
  out.searchIsError = !!search.isError;
  const answer = JSON.parse(text(search));
  out.found = answer.tools.map((t) => ({ name: t.name, server: t.server, score: t.score }));
  out.searchTokens = answer.tokens;
  const a = 17 + i;
  const viaCallTool = await client.callTool({ name: "call_tool", arguments: { name: "everything__get-sum", arguments: { a, b: 25 } } });
  out.callTool = text(viaCallTool);
  out.callToolIsError = !!viaCallTool.isError;
  await Promise.race([listChanged, new Promise((_, reject) => setTimeout(() => reject(new Error("no tools/list_changed in 10 s")), 10000))]);
  out.listChanged = true;
  const second = await client.listTools();
  out.relisted = second.tools.map((t) => t.name);
  const byName = await client.callTool({ name: "everything__get-sum", arguments: { a, b: 25 } });
  out.byName = text(byName);
  const sum = second.tools.find((t) => t.name === "everything__get-sum");
  out.annotations = sum ? sum.annotations ?? null : null;
  // Passthrough: an image block and structured content as the server sent them.
  const image = await client.callTool({ name: "call_tool", arguments: { name: "everything__get-tiny-image", arguments: {} } });
  out.contentTypes = image.content.map((c) => c.type);
  out.imageBytes = (image.content.find((c) => c.type === "image") || { data: "" }).data.length;
  const progress = [];
  await client.callTool(
    { name: "call_tool", arguments: { name: "everything__trigger-long-running-operation", arguments: { duration: 1.2, steps: 3 } } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  out.progress = progress;
  const resources = await client.listResources();
  out.resources = resources.resources.length;
  // everything's resources, which need no account; in a big catalog others
  // may answer with their service's error, which is reported, not thrown.
  const pick = resources.resources.find((r) => r.name.startsWith("everything__")) ?? resources.resources[0];
  if (pick) {
    try {
      const read = await client.readResource({ uri: pick.uri });
      out.resourceContents = read.contents.length;
    } catch (err) {
      out.resourceError = String(err.message ?? err);
    }
  }
  const prompts = await client.listPrompts();
  out.prompts = prompts.prompts.map((p) => p.name);
  const prompt = await client.getPrompt({ name: "everything__simple-prompt" });
  out.promptMessages = prompt.messages.length;
  if (beforeClose) out.children = beforeClose();
  return { out, client };
}

// sample has the everything server ask the client for a sampling, through
// a call of this client: the answer must be the client's own. Over the
// initialize-era protocol the upstream server's request does not say which
// call it belongs to, so the Hub can place it only while that call is the
// one in flight to the server: the HTTP clients sample one at a time.
async function sample({ out, client }) {
  const sampled = await client.callTool({ name: "call_tool", arguments: { name: "everything__trigger-sampling-request", arguments: { prompt: "hello" } } });
  out.sampling = text(sampled);
  await client.close();
  return out;
}

if (mode === "stdio") {
  const { StdioClientTransport, getDefaultEnvironment } = await load("client/stdio.js");
  const env = { ...getDefaultEnvironment() };
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("TOOLSIFT_") || k === "XDG_CACHE_HOME" || k === "GOCOVERDIR") env[k] = v;
  }
  const [command, ...args] = rest;
  const transport = new StdioClientTransport({ command, args, env, stderr: "inherit" });
  // The processes toolsift serve started: upstream servers start only
  // when one of their tools is called (or the cache has no list for them).
  const { execFileSync } = await import("node:child_process");
  const children = () =>
    execFileSync("ps", ["-o", "comm=", "--ppid", String(transport.pid)], { encoding: "utf8" }).split("\n").filter(Boolean);
  console.log(JSON.stringify(await sample(await session(transport, 0, children))));
} else if (mode === "http") {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  const [url, token, n] = rest;
  const transport = (tok) =>
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${tok}` } } });
  let refused = null;
  try {
    const c = new Client({ name: "intruder", version: "1.0.0" });
    await c.connect(transport(token + "x"));
    refused = "connected";
  } catch (e) {
    refused = String(e.code ?? e.message);
  }
  const sessions = await Promise.all(Array.from({ length: Number(n) }, (_, i) => session(transport(token), i)));
  const clients = [];
  for (const s of sessions) clients.push(await sample(s));
  console.log(JSON.stringify({ refused, clients }));
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
