// Drives OpenClaw's own memory engine (memory-core's search manager) from one Node process,
// for the differential suite tests/openclaw_parity.rs. Reads to learn, runs as is: nothing
// of OpenClaw's code is copied here.
//
//   OPENCLAW_STATE_DIR=… OPENCLAW_CONFIG_PATH=<config> HOME=… node harness.mjs <dist> <cases.json>
//
// <dist> is the openclaw package's dist/ directory. <cases.json> is a JSON array of
// {agent, query, maxResults?, minScore?, activeProjectKeys?}; the config at
// OPENCLAW_CONFIG_PATH lists the agents (each with its workspace, provider "none").
// Prints one JSON line per case: {i, results} or {i, error}.
import fs from "node:fs";
import path from "node:path";

import { loadExport } from "./exports.mjs";

const [dist, casesPath] = process.argv.slice(2);

const createStore = await loadExport(dist, "createPluginStateKeyedStore");
const runtime = await import(path.join(dist, "extensions/memory-core/runtime-api.js"));
// Without a state store every search answers [] ("dreaming SQLite state store is not
// configured").
runtime.configureMemoryCoreDreamingState((opts) => createStore("memory-core", opts));

const cfg = JSON.parse(fs.readFileSync(process.env.OPENCLAW_CONFIG_PATH, "utf8"));
const cases = JSON.parse(fs.readFileSync(casesPath, "utf8"));
const managers = new Map();
async function manager(agentId) {
  if (!managers.has(agentId)) {
    const { manager, error } = await runtime.getMemorySearchManager({ cfg, agentId, purpose: "cli" });
    if (!manager) throw new Error(error ?? `no memory manager for ${agentId}`);
    await manager.sync({ reason: "cli", force: true });
    managers.set(agentId, manager);
  }
  return managers.get(agentId);
}
for (const [i, c] of cases.entries()) {
  try {
    const m = await manager(c.agent);
    const opts = { maxResults: c.maxResults ?? 6 };
    if (c.minScore !== undefined) opts.minScore = c.minScore;
    if (c.activeProjectKeys) opts.activeProjectKeys = c.activeProjectKeys;
    const results = await m.search(c.query, opts);
    console.log(JSON.stringify({ i, results }));
  } catch (e) {
    console.log(JSON.stringify({ i, error: String(e?.stack ?? e) }));
  }
}
for (const m of managers.values()) await m.close?.();
process.exit(0);
