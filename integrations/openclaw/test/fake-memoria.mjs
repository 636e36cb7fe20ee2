#!/usr/bin/env node
// A stand-in for the memoria binary, for the plugin's unit tests (no Rust build needed):
// `fake-memoria.mjs [global options] mcp` speaks MCP over stdio with memoria's payload
// shapes; `status --json` prints a memoria-like status. FAKE_MEMORIA_* env vars steer it.
import { createInterface } from "node:readline";

const argv = process.argv.slice(2);
const sub = argv.filter((a, i) => !a.startsWith("--") && !(i > 0 && ["--config", "--state-dir", "--agent", "--provider", "--workspace", "--model"].includes(argv[i - 1])));
const agents = argv.flatMap((a, i) => (a === "--agent" ? [argv[i + 1]] : []));
const cmd = sub[0];

if (process.env.FAKE_MEMORIA_LOG) {
  const fs = await import("node:fs");
  fs.appendFileSync(process.env.FAKE_MEMORIA_LOG, `${JSON.stringify({ pid: process.pid, argv })}\n`);
}

if (cmd === "status") {
  process.stdout.write(
    JSON.stringify({
      agentId: agents[0] ?? "main",
      agentDir: "/tmp/fake/memory/main",
      workspace: "/tmp/fake/ws",
      extraPaths: [],
      generation: 1,
      identity: {},
      files: 3,
      chunks: 7,
      bytes: 100,
      vectors: null,
      backend: "builtin",
      mode: "fts-only",
      provider: "none",
      model: null,
      fallback: null,
      dirty: false,
      syncedAt: 1,
      live: null,
      warnings: [],
    }) + "\n",
  );
  process.exit(0);
}
if (cmd !== "mcp") {
  process.stderr.write(`fake-memoria: unsupported command ${cmd}\n`);
  process.exit(2);
}

process.stderr.write("INFO fake memoria mcp starting\n");
const send = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
const rl = createInterface({ input: process.stdin });
rl.on("line", async (line) => {
  const msg = JSON.parse(line);
  if (msg.method === "initialize") {
    send({ jsonrpc: "2.0", id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "memoria", version: "fake" } } });
  } else if (msg.method === "tools/list") {
    send({ jsonrpc: "2.0", id: msg.id, result: { tools: [{ name: "memory_search" }, { name: "memory_get" }] } });
  } else if (msg.method === "tools/call") {
    const { name, arguments: args } = msg.params;
    if (args.query === "crash") process.exit(3);
    if (args.query === "slow") await new Promise((r) => setTimeout(r, 5000));
    let payload;
    let isError = false;
    if (name === "memory_search") {
      payload = { results: [{ path: "MEMORY.md", startLine: 1, endLine: 2, score: 0.5, snippet: `hit for ${args.query}`, source: "memory" }], provider: "none", mode: "fts-only", citations: "auto", echo: args };
    } else if (name === "memory_get") {
      if (!/^(MEMORY\.md|memory\/.*\.md)$/.test(args.path)) {
        payload = { path: args.path, text: "", disabled: true, error: "path must be MEMORY.md or memory/**/*.md" };
        isError = true;
      } else payload = { path: args.path, text: args.path === "memory/missing.md" ? "" : "# Memory\nline 2\n" };
    }
    send({ jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: JSON.stringify(payload) }], structuredContent: payload, isError } });
  }
});
rl.on("close", () => process.exit(0));
