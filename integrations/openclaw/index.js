// memoria as OpenClaw's memory plugin (plugins.slots.memory = "memoria").
//
// Plain ESM with JSDoc types, no build step and no runtime dependencies: OpenClaw never
// runs `npm install` for a linked local plugin, and a plugin outside OpenClaw's package
// cannot resolve `openclaw/plugin-sdk/*` (no node_modules/openclaw above it). The default
// export is therefore the object `definePluginEntry(...)` would return
// (src/plugin-sdk/plugin-entry.ts: {id, name, description, kind, configSchema, register});
// the loader (resolvePluginModuleExport) only needs an object with `register`.
//
// What it registers:
// - the agent tools memory_search / memory_get (answered by a long-lived
//   `memoria --config <OpenClaw config> --state-dir <OpenClaw state dir> … mcp` child);
// - the memory capability: runtime (MemorySearchManager per agent) and a prompt section;
// - `openclaw memoria status|index|search`;
// - a service whose stop() closes the child with the gateway.

import { CONFIG_JSON_SCHEMA } from "./src/config.js";
import { createMemoryTools } from "./src/tools.js";
import { createMemoryRuntime } from "./src/manager.js";
import { registerMemoriaCli } from "./src/cli.js";
import { closeAllRuntimes, runtimeFor } from "./src/runtime.js";

/**
 * Validates plugins.entries.memoria.config (OpenClaw also validates it against the
 * manifest's configSchema before the plugin loads).
 * @param {unknown} value
 */
function safeParse(value) {
  if (value === undefined) return { success: true, data: undefined };
  /** @type {{ path: (string|number)[], message: string }[]} */
  const issues = [];
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    return { success: false, error: { issues: [{ path: [], message: "expected config object" }] } };
  }
  const v = /** @type {Record<string, unknown>} */ (value);
  for (const key of Object.keys(v)) {
    if (!(key in CONFIG_JSON_SCHEMA.properties)) issues.push({ path: [key], message: "unknown key" });
  }
  if (v.command !== undefined && (typeof v.command !== "string" || !v.command.trim())) {
    issues.push({ path: ["command"], message: "expected a non-empty string" });
  }
  if (v.args !== undefined && (!Array.isArray(v.args) || v.args.some((a) => typeof a !== "string"))) {
    issues.push({ path: ["args"], message: "expected an array of strings" });
  }
  if (v.env !== undefined) {
    if (!v.env || typeof v.env !== "object" || Array.isArray(v.env)) issues.push({ path: ["env"], message: "expected an object" });
    else for (const [k, s] of Object.entries(v.env)) if (typeof s !== "string") issues.push({ path: ["env", k], message: "expected a string" });
  }
  if (v.callTimeoutMs !== undefined && !(Number.isInteger(v.callTimeoutMs) && /** @type {number} */ (v.callTimeoutMs) >= 1000)) {
    issues.push({ path: ["callTimeoutMs"], message: "expected an integer >= 1000" });
  }
  if (v.passages !== undefined && typeof v.passages !== "boolean") {
    issues.push({ path: ["passages"], message: "expected a boolean" });
  }
  if (v.ranking !== undefined && !CONFIG_JSON_SCHEMA.properties.ranking.enum.includes(/** @type {string} */ (v.ranking))) {
    issues.push({ path: ["ranking"], message: `expected one of ${CONFIG_JSON_SCHEMA.properties.ranking.enum.join(", ")}` });
  }
  if (v.store !== undefined) {
    const store = /** @type {Record<string, unknown>} */ (v.store);
    const props = CONFIG_JSON_SCHEMA.properties.store.properties;
    if (!store || typeof store !== "object" || Array.isArray(store)) issues.push({ path: ["store"], message: "expected an object" });
    else {
      for (const key of Object.keys(store)) if (!(key in props)) issues.push({ path: ["store", key], message: "unknown key" });
      if (store.backend !== undefined && !props.backend.enum.includes(/** @type {string} */ (store.backend))) {
        issues.push({ path: ["store", "backend"], message: `expected one of ${props.backend.enum.join(", ")}` });
      }
      if (store.uri !== undefined && (typeof store.uri !== "string" || !store.uri.trim())) {
        issues.push({ path: ["store", "uri"], message: "expected a non-empty string" });
      }
      const options = store.storageOptions;
      if (options !== undefined && (!options || typeof options !== "object" || Array.isArray(options) || Object.values(options).some((s) => typeof s !== "string"))) {
        issues.push({ path: ["store", "storageOptions"], message: "expected an object of strings" });
      }
    }
  }
  return issues.length ? { success: false, error: { issues } } : { success: true, data: value };
}

/** @param {{ availableTools: Set<string> }} params */
function promptBuilder(params) {
  const hasSearch = params.availableTools.has("memory_search");
  const hasGet = params.availableTools.has("memory_get");
  if (!hasSearch && !hasGet) return [];
  return [
    "## Memory Recall",
    hasSearch
      ? `Before answering anything about prior work, decisions, dates, people, preferences, or todos: run memory_search${hasGet ? "; for memory-file hits, use memory_get to pull only the needed lines" : ""}. If low confidence after search, say you checked.`
      : "Before answering anything about prior work, decisions, dates, people, preferences, or todos that point to a specific memory file: run memory_get to pull only the needed lines.",
    "Report partial, unavailable, keyword-only (mode fts-only) or stale recall to the user, including returned warning and action guidance.",
    "Citations: include Source: <path#line> when it helps the user verify memory snippets.",
    "",
  ];
}

const entry = {
  id: "memoria",
  name: "memoria",
  description: "Agent memory served by memoria (hybrid BM25 + embedding search over the Markdown workspace)",
  kind: "memory",
  configSchema: { safeParse, jsonSchema: CONFIG_JSON_SCHEMA },
  /** @param {any} api OpenClawPluginApi (src/plugins/plugin-api.types.ts) */
  register(api) {
    const getRuntime = () => runtimeFor(api);

    // Tools first: always registered, even when memoria cannot start (the tools then
    // answer with an error payload naming the cause).
    api.registerTool((ctx) => createMemoryTools({ runtime: getRuntime, logger: api.logger }, ctx), {
      names: ["memory_search", "memory_get"],
    });

    try {
      api.registerMemoryCapability?.({
        deterministicRecallToolName: "memory_search",
        promptBuilder,
        runtime: createMemoryRuntime(getRuntime),
      });
    } catch (err) {
      api.logger?.warn?.(`memoria: memory capability not registered: ${err instanceof Error ? err.message : err}`);
    }

    try {
      api.registerCli?.(({ program }) => registerMemoriaCli(program, getRuntime, api), {
        descriptors: [
          { name: "memoria", description: "memoria memory engine: status, index, search, setup and uninstall", hasSubcommands: true },
        ],
      });
    } catch (err) {
      api.logger?.warn?.(`memoria: CLI not registered: ${err instanceof Error ? err.message : err}`);
    }

    try {
      api.registerService?.({
        id: "memoria-mcp",
        // The child starts with the gateway, so its model loads and its first index is
        // built before the agent's first memory_search instead of during it.
        start() {
          getRuntime()
            .mcp()
            .ensureStarted()
            .catch((err) => api.logger?.warn?.(`memoria: not started with the gateway: ${err instanceof Error ? err.message : err}`));
        },
        async stop() {
          await closeAllRuntimes();
        },
      });
    } catch (err) {
      api.logger?.warn?.(`memoria: service not registered: ${err instanceof Error ? err.message : err}`);
    }
  },
};

export default entry;
