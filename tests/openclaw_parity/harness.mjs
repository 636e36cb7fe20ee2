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

const [dist, casesPath] = process.argv.slice(2);

// A minified export, found by the function's own name (file names carry build hashes).
function findExport(name) {
  for (const f of fs.readdirSync(dist)) {
    if (!f.endsWith(".mjs")) continue;
    const src = fs.readFileSync(path.join(dist, f), "utf8");
    if (!src.includes(`function ${name}(`)) continue;
    const m = src.match(new RegExp(`export \\{[^}]*\\b${name}( as (\\w+))?[,\\s}]`));
    if (m) return { file: path.join(dist, f), name: m[2] ?? name };
  }
  throw new Error(`export not found: ${name}`);
}

const store = findExport("createPluginStateKeyedStore");
const createStore = (await import(store.file))[store.name];
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
