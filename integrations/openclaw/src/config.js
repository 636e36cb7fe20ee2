// Plugin configuration (plugins.entries.memoria.config) and the paths memoria is given.

import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";

/** The npm package that brings memoria's binary (through its platform packages). */
export const BINARY_PACKAGE = "@memoria-search/memoria";

/**
 * @typedef {object} MemoriaPluginConfig
 * @property {string} command         the memoria executable ({@link resolveCommand})
 * @property {string} commandSource   where it came from, for messages and status
 * @property {string[]} args          extra global options, before `mcp` (e.g. ["--provider", "none"])
 * @property {Record<string, string>} env  extra environment for the child
 * @property {number} callTimeoutMs   one tool call's time limit
 */

/** JSON schema of plugins.entries.memoria.config (the manifest carries the same). */
export const CONFIG_JSON_SCHEMA = {
  type: "object",
  additionalProperties: false,
  properties: {
    command: { type: "string", minLength: 1 },
    args: { type: "array", items: { type: "string" } },
    env: { type: "object", additionalProperties: { type: "string" } },
    callTimeoutMs: { type: "integer", minimum: 1000 },
    // Read by memoria itself from OpenClaw's config file (the plugin only declares them).
    passages: { type: "boolean" },
    ranking: { type: "string", enum: ["memoria", "openclaw"] },
    temporalDecay: {
      type: "object",
      additionalProperties: false,
      properties: { enabled: { type: "boolean" }, halfLifeDays: { type: "integer", minimum: 1 } },
    },
    // Fleet mode: where memoria keeps the index (docs/fleet.md).
    store: {
      type: "object",
      additionalProperties: false,
      properties: {
        backend: { type: "string", enum: ["local", "lancedb"] },
        uri: { type: "string", minLength: 1 },
        storageOptions: { type: "object", additionalProperties: { type: "string" } },
      },
    },
  },
};

/**
 * Reads the plugin config leniently: a bad field falls back to its default (OpenClaw
 * already validated it against the manifest's configSchema).
 * @param {Record<string, unknown> | undefined} raw
 * @returns {MemoriaPluginConfig}
 */
export function resolvePluginConfig(raw) {
  const cfg = raw && typeof raw === "object" ? raw : {};
  const { command, source: commandSource } = resolveCommand(typeof cfg.command === "string" ? cfg.command : undefined);
  const args = Array.isArray(cfg.args) ? cfg.args.filter((a) => typeof a === "string") : [];
  /** @type {Record<string, string>} */
  const env = {};
  if (cfg.env && typeof cfg.env === "object") {
    for (const [k, v] of Object.entries(cfg.env)) if (typeof v === "string") env[k] = v;
  }
  const callTimeoutMs =
    typeof cfg.callTimeoutMs === "number" && Number.isFinite(cfg.callTimeoutMs) && cfg.callTimeoutMs >= 1000
      ? cfg.callTimeoutMs
      : 120_000;
  return { command, commandSource, args, env, callTimeoutMs };
}

/**
 * Where the memoria executable comes from: the config's `command` when set (an explicit
 * choice always wins, e.g. a GPU build); else the binary npm installed with the plugin
 * (its dependency {@link BINARY_PACKAGE} brings the package built for this platform);
 * else `memoria` on PATH, with the reason the package gave none.
 * @param {string | undefined} configured
 * @param {() => { path?: string, error?: string }} [packaged] the package's answer
 * @returns {{ command: string, source: string }}
 */
export function resolveCommand(configured, packaged = packagedBinary) {
  const explicit = configured?.trim();
  if (explicit) return { command: explicit, source: "plugins.entries.memoria.config.command" };
  const found = packaged();
  if (found.path) return { command: found.path, source: `npm package ${BINARY_PACKAGE}` };
  return { command: "memoria", source: `PATH (${found.error ?? "no packaged binary"})` };
}

/**
 * The error for a memoria command that does not exist, and what to do.
 * @param {string} command
 * @param {string} [source] where it came from ({@link resolveCommand})
 */
export function commandNotFound(command, source) {
  const from = source ? ` (from ${source})` : "";
  return `memoria command not found: ${JSON.stringify(command)}${from}: install the plugin from npm (it brings the binary), install memoria on PATH, or set plugins.entries.memoria.config.command to its path`;
}

/** @type {{ path?: string, error?: string } | undefined} */
let packaged;

/**
 * The binary of {@link BINARY_PACKAGE}, or why there is none: looked up once per process
 * (the plugin config is resolved on every tool call; a new package means a new gateway).
 */
function packagedBinary() {
  packaged ??= findPackagedBinary();
  return packaged;
}

function findPackagedBinary() {
  let binaryPath;
  try {
    ({ binaryPath } = createRequire(import.meta.url)(BINARY_PACKAGE));
  } catch {
    return { error: `${BINARY_PACKAGE} is not installed` };
  }
  try {
    return binaryPath();
  } catch (err) {
    return { error: `${BINARY_PACKAGE}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** `~/x` → absolute. */
function expandHome(p) {
  if (p === "~") return os.homedir();
  if (p.startsWith("~/")) return path.join(os.homedir(), p.slice(2));
  return p;
}

/**
 * OpenClaw's state directory, as the host resolves it (api.runtime.state.resolveStateDir,
 * else $OPENCLAW_STATE_DIR, else ~/.openclaw).
 * @param {any} api
 */
export function resolveStateDir(api) {
  try {
    const dir = api?.runtime?.state?.resolveStateDir?.();
    if (typeof dir === "string" && dir) return dir;
  } catch {
    /* fall through */
  }
  const env = process.env.OPENCLAW_STATE_DIR?.trim();
  return env ? path.resolve(expandHome(env)) : path.join(os.homedir(), ".openclaw");
}

/**
 * OpenClaw's config file, resolved like the host's src/config/paths.ts resolveConfigPath:
 * $OPENCLAW_CONFIG_PATH, else the first existing <stateDir>/openclaw.json or
 * <stateDir>/clawdbot.json (legacy name), else <stateDir>/openclaw.json.
 * @param {string} stateDir
 */
export function resolveConfigPath(stateDir) {
  const override = process.env.OPENCLAW_CONFIG_PATH?.trim();
  if (override) return path.resolve(expandHome(override));
  for (const name of ["openclaw.json", "clawdbot.json"]) {
    const candidate = path.join(stateDir, name);
    try {
      if (fs.existsSync(candidate)) return candidate;
    } catch {
      /* ignore */
    }
  }
  return path.join(stateDir, "openclaw.json");
}

/**
 * The memoria argument list for a subcommand: `--config C --state-dir S <extra args…> <sub…>`.
 * @param {{ configPath: string, stateDir: string, pluginConfig: MemoriaPluginConfig, agents?: string[] }} p
 * @param {string[]} sub
 */
export function memoriaArgs(p, sub) {
  const agentArgs = (p.agents ?? []).flatMap((id) => ["--agent", id]);
  return ["--config", p.configPath, "--state-dir", p.stateDir, ...agentArgs, ...p.pluginConfig.args, ...sub];
}

/**
 * The agent ids OpenClaw's config declares (agents.list[].id, default first), or ["main"].
 * @param {any} cfg OpenClawConfig
 */
export function configuredAgentIds(cfg) {
  const list = Array.isArray(cfg?.agents?.list) ? cfg.agents.list : [];
  /** @type {string[]} */
  const ids = [];
  const def = list.find((a) => a && a.default === true && typeof a.id === "string");
  if (def) ids.push(normalizeAgentId(def.id));
  for (const a of list) {
    if (a && typeof a.id === "string") {
      const id = normalizeAgentId(a.id);
      if (!ids.includes(id)) ids.push(id);
    }
  }
  return ids.length ? ids : ["main"];
}

/** OpenClaw agent ids are lower-case. */
export function normalizeAgentId(id) {
  return String(id ?? "").trim().toLowerCase() || "main";
}

/**
 * The agent a session key belongs to (`agent:<id>:…`), if it names one.
 * @param {string | undefined} sessionKey
 */
export function agentFromSessionKey(sessionKey) {
  const m = /^agent:([^:]+):/i.exec(sessionKey ?? "");
  return m ? normalizeAgentId(m[1]) : undefined;
}

/**
 * The chat type a session serves, from its key (best effort, like the host's
 * session-chat-type-shared.ts): `…:group:…` → group, `…:channel:…` → channel, else direct.
 * @param {string | undefined} sessionKey
 * @returns {"direct" | "group" | "channel"}
 */
export function chatTypeFromSessionKey(sessionKey) {
  const raw = String(sessionKey ?? "").toLowerCase();
  const rest = raw.replace(/^agent:[^:]+:/, "");
  const parts = rest.split(":");
  for (let i = 0; i < Math.min(parts.length - 1, 3); i++) {
    if (parts[i] === "group") return "group";
    if (parts[i] === "channel") return "channel";
    if (parts[i] === "direct" || parts[i] === "dm") return "direct";
  }
  if (/@g\.us$/.test(rest)) return "group";
  if (/^discord:(?:[^:]+:)?guild-[^:]+:channel-[^:]+$/.test(rest)) return "channel";
  return "direct";
}
