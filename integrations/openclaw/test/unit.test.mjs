// Unit tests of the plugin's MCP client and tools against test/fake-memoria.mjs
// (no memoria build and no OpenClaw needed): `node --test test/unit.test.mjs`.
import test from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { McpClient } from "../src/mcp-client.js";
import { createMemoryTools, mapGetPayload, searchArgs } from "../src/tools.js";
import { MemoriaRuntime } from "../src/runtime.js";
import { mapStatus } from "../src/manager.js";
import { chatTypeFromSessionKey, commandNotFound, resolveCommand } from "../src/config.js";
import entry from "../index.js";

const fake = path.join(path.dirname(fileURLToPath(import.meta.url)), "fake-memoria.mjs");
const quiet = {};
const client = (extra = {}) =>
  new McpClient({ command: process.execPath, args: [fake, "--agent", "main", "mcp"], logger: quiet, ...extra });

test("spawns lazily and answers a tool call", async () => {
  const c = client();
  assert.equal(c.child, null);
  const r = await c.callTool("memory_search", { query: "hello" });
  assert.equal(r.structuredContent.mode, "fts-only");
  assert.equal(c.state().running, true);
  await c.close();
  assert.equal(c.state().running, false);
});

test("a child that dies mid-call fails that call; the next call restarts it", async () => {
  const c = client();
  await c.callTool("memory_search", { query: "warm" });
  const pid = c.child.pid;
  await assert.rejects(c.callTool("memory_search", { query: "crash" }), (e) => e.code === "MEMORIA_EXITED" && /exited with code 3/.test(e.message));
  const r = await c.callTool("memory_search", { query: "again" });
  assert.equal(r.structuredContent.results.length, 1);
  assert.notEqual(c.child.pid, pid);
  await c.close();
});

test("repeated deaths back off: a call meanwhile fails at once, naming the cause", async () => {
  const c = client({ minBackoffMs: 5000 });
  await assert.rejects(c.callTool("memory_search", { query: "crash" }), (e) => e.code === "MEMORIA_EXITED");
  await assert.rejects(c.callTool("memory_search", { query: "crash" }), (e) => e.code === "MEMORIA_EXITED");
  const t0 = Date.now();
  await assert.rejects(c.callTool("memory_search", { query: "x" }), (e) => e.code === "MEMORIA_BACKOFF" && /exited with code 3/.test(e.message));
  assert.ok(Date.now() - t0 < 500, "no hang during backoff");
  await c.close();
});

test("a missing command is a clear error, every time, without throwing synchronously", async () => {
  const c = new McpClient({ command: "/nonexistent/memoria", args: ["mcp"], logger: quiet, minBackoffMs: 10 });
  for (let i = 0; i < 3; i++) {
    await assert.rejects(c.callTool("memory_search", { query: "x" }), (e) => /memoria command not found: "\/nonexistent\/memoria"/.test(e.message));
  }
  await c.close();
});

test("an aborted signal cancels the in-flight call quickly; the child keeps serving", async () => {
  const c = client();
  await c.callTool("memory_search", { query: "warm" });
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 100);
  const t0 = Date.now();
  await assert.rejects(c.callTool("memory_search", { query: "slow" }, { signal: ac.signal }), (e) => e.code === "MEMORIA_CANCELLED");
  assert.ok(Date.now() - t0 < 2000);
  const r = await c.callTool("memory_get", { path: "MEMORY.md" });
  assert.match(r.structuredContent.text, /Memory/);
  await c.close();
});

test("writing to a dead child's stdin (EPIPE) never throws in the host", async () => {
  const c = client();
  await c.callTool("memory_search", { query: "warm" });
  const child = c.child;
  child.kill("SIGKILL");
  // Write before the exit event is processed: the stream error must be swallowed.
  child.stdin.write("{}\n");
  await new Promise((r) => child.once("exit", r));
  const r = await c.callTool("memory_search", { query: "after" });
  assert.equal(r.structuredContent.mode, "fts-only");
  await c.close();
});

function runtime(command, args = []) {
  return new MemoriaRuntime({
    pluginConfig: { command, args, env: {}, callTimeoutMs: 10_000 },
    stateDir: "/tmp/fake-state",
    configPath: "/tmp/fake-state/openclaw.json",
    agents: ["main"],
    logger: quiet,
  });
}

test("tools: memoria's payloads, refused paths in memory-core's shape, never a throw", async () => {
  const rt = runtime(fake);
  const [search, get] = createMemoryTools({ runtime: () => rt }, { agentId: "main", sessionKey: "agent:main:telegram:group:42", messageChannel: "telegram" });
  const s = await search.execute("1", { query: "postgres" });
  assert.equal(s.details.provider, "none");
  assert.deepEqual(s.details.echo, { query: "postgres", sessionKey: "agent:main:telegram:group:42", chatType: "group", channel: "telegram", agent: "main" });
  assert.equal(JSON.parse(s.content[0].text).mode, "fts-only");
  const refused = await get.execute("2", { path: "../x.md" });
  assert.equal(refused.details.status, "error");
  assert.equal(refused.details.code, "MEMORY_PATH_NOT_ALLOWED");
  assert.equal(refused.details.text, "");
  assert.match(refused.details.error, /MEMORY\.md/);
  const missing = await get.execute("3", { path: "memory/missing.md" });
  assert.equal(missing.details.status, "not_found");
  const other = await search.execute("4", { query: "x" }, undefined);
  assert.ok(other.details.results);
  const unserved = createMemoryTools({ runtime: () => rt }, { agentId: "ops" })[0];
  assert.equal((await unserved.execute("5", { query: "x" })).details.code, "MEMORIA_AGENT_NOT_SERVED");
  await rt.close();
});

test("tools: a wrong command is an error payload naming it", async () => {
  const rt = runtime("/nonexistent/memoria");
  const [search, get] = createMemoryTools({ runtime: () => rt }, {});
  const s = await search.execute("1", { query: "x" });
  assert.equal(s.details.unavailable, true);
  assert.match(s.details.error, /not found: "\/nonexistent\/memoria"/);
  const g = await get.execute("2", { path: "MEMORY.md" });
  assert.equal(g.details.status, "error");
  assert.match(g.details.error, /not found|next start attempt/);
  await rt.close();
});

test("the memoria command: the config's, else the npm-installed binary, else PATH saying why", () => {
  const packaged = () => ({ path: "/plugin/node_modules/@memoria-search/linux-x64-gnu/bin/memoria" });
  const none = () => ({ error: "@memoria-search/linux-x64-gnu is not installed (…)" });
  assert.deepEqual(resolveCommand(" /opt/memoria-cuda ", packaged), {
    command: "/opt/memoria-cuda",
    source: "plugins.entries.memoria.config.command",
  });
  assert.deepEqual(resolveCommand(undefined, packaged), {
    command: "/plugin/node_modules/@memoria-search/linux-x64-gnu/bin/memoria",
    source: "npm package @memoria-search/memoria",
  });
  assert.deepEqual(resolveCommand("  ", none), {
    command: "memoria",
    source: "PATH (@memoria-search/linux-x64-gnu is not installed (…))",
  });
  // This checkout has no node_modules: PATH, and the reason.
  assert.equal(resolveCommand(undefined).source, "PATH (@memoria-search/memoria is not installed)");
  assert.match(commandNotFound("memoria", "PATH (x)"), /^memoria command not found: "memoria" \(from PATH \(x\)\): install the plugin from npm/);
});

test("mapGetPayload and mapStatus", () => {
  assert.deepEqual(mapGetPayload("a.md", { path: "a.md", text: "" }, false), { path: "a.md", text: "", status: "not_found" });
  assert.equal(mapGetPayload("a.md", { path: "a.md", text: "x" }, false).status, "ok");
  const st = mapStatus({ agentId: "main", provider: "none", mode: "fts-only", files: 2, chunks: 5, generation: 3, workspace: "/w", warnings: [] }, { agentId: "main" });
  assert.equal(st.backend, "builtin");
  assert.equal(st.custom.engine, "memoria");
  assert.equal(st.vector.enabled, false);
  assert.equal(st.vector.index, undefined);
  const embedding = { agentId: "main", provider: "local", mode: "hybrid", files: 2, chunks: 5, vectors: 2, generation: 1, warnings: [] };
  assert.equal(mapStatus(embedding, { agentId: "main" }).vector.index.state, "incomplete");
  assert.equal(mapStatus({ ...embedding, vectors: 5 }, { agentId: "main" }).vector.index.state, "complete");
  assert.equal(mapStatus(null, { agentId: "main", error: "boom" }).custom.error, "boom");
});

test("session keys → chat types", () => {
  assert.equal(chatTypeFromSessionKey("agent:main:main"), "direct");
  assert.equal(chatTypeFromSessionKey("agent:main:discord:channel:123"), "channel");
  assert.equal(chatTypeFromSessionKey("agent:main:whatsapp:group:1@g.us"), "group");
  assert.equal(chatTypeFromSessionKey(undefined), "direct");
});

test("the default export has the definePluginEntry shape", () => {
  assert.equal(entry.id, "memoria");
  assert.equal(entry.kind, "memory");
  assert.equal(typeof entry.register, "function");
  assert.equal(entry.configSchema.safeParse({ command: "memoria", args: ["--provider", "none"] }).success, true);
  assert.equal(entry.configSchema.safeParse({ nope: 1 }).success, false);
  assert.equal(entry.configSchema.safeParse({ passages: false }).success, true);
  assert.equal(entry.configSchema.safeParse({ passages: "no" }).success, false);
  assert.equal(entry.configSchema.safeParse({ ranking: "openclaw" }).success, true);
  assert.equal(entry.configSchema.safeParse({ ranking: "memoria" }).success, true);
  assert.equal(entry.configSchema.safeParse({ ranking: "lucene" }).success, false);
  assert.equal(entry.configSchema.safeParse({ store: { backend: "lancedb", uri: "s3://b/p", storageOptions: { aws_region: "x" } } }).success, true);
  assert.equal(entry.configSchema.safeParse({ store: { backend: "sqlite" } }).success, false);
  assert.equal(entry.configSchema.safeParse({ store: { url: "s3://b" } }).success, false);
});

test("the manifest declares the same config schema as the code", async () => {
  const fs = await import("node:fs");
  const manifest = JSON.parse(fs.readFileSync(new URL("../openclaw.plugin.json", import.meta.url), "utf8"));
  assert.deepEqual(manifest.configSchema, entry.configSchema.jsonSchema);
  assert.deepEqual(Object.keys(manifest.uiHints).sort(), Object.keys(manifest.configSchema.properties).sort());
});

test("workspace memory paths are classified like memory-core's unrecorded files", async () => {
  const { classifyWorkspaceMemoryPaths } = await import("../src/manager.js");
  const fs = await import("node:fs");
  const os = await import("node:os");
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), "memoria-ws-"));
  fs.mkdirSync(path.join(ws, "memory", "dreaming"), { recursive: true });
  for (const f of ["MEMORY.md", "USER.md", "DREAMS.md", "notes.md", "memory/2026-01-01.md", "memory/dreaming/x.md"]) fs.writeFileSync(path.join(ws, f), "x\n");
  const out = await classifyWorkspaceMemoryPaths({ workspaceDir: ws, relativePaths: ["MEMORY.md", "USER.md", "DREAMS.md", "notes.md", "memory/2026-01-01.md", "memory/dreaming/x.md", "../etc.md", "missing.md"] });
  assert.deepEqual(out.map((o) => o.originClass), ["agent", "agent", "system", "untrusted", "agent", "system", "untrusted", "untrusted"]);
  const viaSources = await classifyWorkspaceMemoryPaths({ workspaceDir: ws, relativePaths: ["MEMORY.md", "USER.md"], readSources: [{ relativePath: "MEMORY.md", canonicalRelativePath: "MEMORY.md" }, { relativePath: "USER.md", canonicalRelativePath: "../USER.md" }] });
  assert.deepEqual(viaSources.map((o) => o.originClass), ["agent", "untrusted"]);
  fs.rmSync(ws, { recursive: true, force: true });
});

test("searchArgs: the tool context's session, chat and active projects reach memoria", () => {
  const args = searchArgs(
    { query: "deploy", maxResults: 3, corpus: "wiki" },
    { sessionKey: "agent:main:telegram:group:42", activeProjectKeys: ["github.com/acme/api", 7] },
    ["main"],
  );
  assert.deepEqual(args, {
    query: "deploy",
    maxResults: 3,
    corpus: "wiki",
    sessionKey: "agent:main:telegram:group:42",
    chatType: "group",
    activeProjectKeys: ["github.com/acme/api", "7"],
    agent: "main",
  });
  assert.equal(searchArgs({ query: "x" }, { activeProjectKeys: [] }, null).activeProjectKeys, undefined);
  assert.equal(searchArgs({ query: "x", corpus: "mail" }, {}, null).corpus, undefined);
});

test("mapGetPayload: a wiki page memoria could not find is not_found, not an error", () => {
  const out = mapGetPayload("nobody", { path: "nobody", text: "", status: "not_found", error: "no page is named \"nobody\"" }, false);
  assert.equal(out.status, "not_found");
  assert.equal(out.code, undefined);
});

test("uninstall gives the memory slot back and undoes only what the install and the README did", async () => {
  const { giveBackMemorySlot } = await import("../src/slot.js");
  const cases = [
    {
      config: {
        plugins: { slots: { memory: "memoria" }, entries: { memoria: { enabled: true, config: { command: "memoria" } }, other: { enabled: true } }, load: { paths: ["/x"] } },
        tools: { deny: ["memory-core"] },
        agents: { defaults: {} },
      },
      want: { plugins: { entries: { memoria: { enabled: false }, other: { enabled: true } }, load: { paths: ["/x"] } }, agents: { defaults: {} } },
      changes: 3,
      removed: { command: "memoria" },
    },
    {
      config: { plugins: { slots: { memory: "memoria", other: "x" } }, tools: { deny: ["memory-core", "exec"], allow: ["a"] } },
      want: { plugins: { slots: { other: "x" } }, tools: { deny: ["exec"], allow: ["a"] } },
      changes: 2,
      removed: undefined,
    },
    // Already given back: nothing to do.
    { config: { plugins: { entries: { memoria: { enabled: false } } } }, want: { plugins: { entries: { memoria: { enabled: false } } } }, changes: 0, removed: undefined },
    { config: {}, want: {}, changes: 0, removed: undefined },
  ];
  for (const { config, want, changes, removed } of cases) {
    const got = giveBackMemorySlot(config);
    assert.deepEqual(config, want);
    assert.equal(got.changes.length, changes, got.changes.join("; "));
    assert.deepEqual(got.removedConfig, removed);
  }
});

test("setup takes the slot, keeps the entry's config and other denials, and is idempotent", async () => {
  const { takeMemorySlot, giveBackMemorySlot } = await import("../src/slot.js");
  const config = { plugins: { entries: { memoria: { enabled: false, config: { args: ["-v"] } } } }, tools: { deny: ["exec"] } };
  assert.equal(takeMemorySlot(config).changes.length, 3);
  assert.deepEqual(config, {
    plugins: { slots: { memory: "memoria" }, entries: { memoria: { enabled: true, config: { args: ["-v"] } } } },
    tools: { deny: ["exec", "memory-core"] },
  });
  assert.equal(takeMemorySlot(config).changes.length, 0);
  // The way back and in again.
  giveBackMemorySlot(config);
  assert.deepEqual(config, { plugins: { entries: { memoria: { enabled: false } } }, tools: { deny: ["exec"] } });
  takeMemorySlot(config);
  assert.deepEqual(config.plugins.slots, { memory: "memoria" });
});

test("setup and uninstall without a config API say how to do it by hand", async () => {
  const { editSlot } = await import("../src/slot.js");
  const lines = [];
  assert.equal(await editSlot({}, "uninstall", (l) => lines.push(l)), 1);
  assert.match(lines.join("\n"), /edit openclaw\.json/);
  let written = null;
  const api = { runtime: { config: { mutateConfigFile: async ({ mutate }) => { written = { plugins: { slots: { memory: "memoria" } } }; mutate(written); } } } };
  lines.length = 0;
  assert.equal(await editSlot(api, "uninstall", (l) => lines.push(l)), 0);
  assert.deepEqual(written, { plugins: {} });
  assert.match(lines.join("\n"), /plugins\.slots\.memory/);
  lines.length = 0;
  assert.equal(await editSlot(api, "setup", (l) => lines.push(l)), 0);
  assert.deepEqual(written.tools, { deny: ["memory-core"] });
});
