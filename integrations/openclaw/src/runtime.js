// The plugin's process-wide state: one memoria MCP child per (command, args, config,
// state dir), shared by every registration of the plugin in this process (OpenClaw
// registers a plugin more than once: the gateway registry, tool discovery, the CLI).

import { execFile } from "node:child_process";
import { McpClient, McpError } from "./mcp-client.js";
import {
  commandNotFound,
  configuredAgentIds,
  memoriaArgs,
  resolveConfigPath,
  resolvePluginConfig,
  resolveStateDir,
} from "./config.js";

/** @type {Map<string, MemoriaRuntime>} */
const runtimes = new Map();
let exitHookInstalled = false;

/**
 * The runtime for this plugin registration (created on first use; no child yet).
 * @param {any} api OpenClawPluginApi
 * @returns {MemoriaRuntime}
 */
export function runtimeFor(api) {
  const pluginConfig = resolvePluginConfig(api?.pluginConfig);
  const stateDir = resolveStateDir(api);
  const configPath = resolveConfigPath(stateDir);
  const agents = configuredAgentIds(api?.config);
  const key = JSON.stringify([pluginConfig, stateDir, configPath, agents]);
  let rt = runtimes.get(key);
  if (!rt || rt.closed) {
    rt = new MemoriaRuntime({ pluginConfig, stateDir, configPath, agents, logger: api?.logger ?? console });
    runtimes.set(key, rt);
  }
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Last resort: never leave a child behind when the host process exits.
    process.once("exit", () => {
      for (const r of runtimes.values()) r.client?.killNow();
    });
  }
  return rt;
}

/** Closes every child this process started (gateway stop). */
export async function closeAllRuntimes() {
  const all = [...runtimes.values()];
  runtimes.clear();
  await Promise.all(all.map((r) => r.close().catch(() => {})));
}

export class MemoriaRuntime {
  /**
   * @param {{ pluginConfig: import("./config.js").MemoriaPluginConfig, stateDir: string, configPath: string, agents: string[], logger: any }} p
   */
  constructor(p) {
    this.pluginConfig = p.pluginConfig;
    this.stateDir = p.stateDir;
    this.configPath = p.configPath;
    this.agents = p.agents;
    this.logger = p.logger;
    /** @type {McpClient | null} */
    this.client = null;
    this.closed = false;
  }

  /** The agents the child serves (one `--agent` each). */
  servedAgents() {
    return this.agents;
  }

  /** The argument list for a memoria subcommand. */
  args(sub, agents = this.agents) {
    return memoriaArgs(
      { configPath: this.configPath, stateDir: this.stateDir, pluginConfig: this.pluginConfig, agents },
      sub,
    );
  }

  /**
   * The child's environment: the gateway's, the plugin's `env`, OpenClaw's paths, and the
   * mark that tells memoria it runs with the plugin's args and env (its `status` otherwise
   * says they are missing).
   */
  env() {
    return {
      ...process.env,
      OPENCLAW_STATE_DIR: this.stateDir,
      OPENCLAW_CONFIG_PATH: this.configPath,
      ...this.pluginConfig.env,
      MEMORIA_OPENCLAW_PLUGIN: "1",
    };
  }

  /** @returns {McpClient} */
  mcp() {
    if (!this.client) {
      this.client = new McpClient({
        command: this.pluginConfig.command,
        commandSource: this.pluginConfig.commandSource,
        args: this.args(["mcp"]),
        env: this.env(),
        logger: this.logger,
        callTimeoutMs: this.pluginConfig.callTimeoutMs,
      });
    }
    return this.client;
  }

  /**
   * Calls a memoria MCP tool. Never rejects.
   * @param {string} name
   * @param {Record<string, unknown>} args
   * @param {AbortSignal} [signal]
   * @returns {Promise<{ ok: true, result: any } | { ok: false, error: string, code: string }>}
   */
  async call(name, args, signal) {
    if (this.closed) return { ok: false, error: "memoria plugin is stopping", code: "MEMORIA_CLOSED" };
    try {
      const result = await this.mcp().callTool(name, args, { signal });
      return { ok: true, result };
    } catch (err) {
      const code = err instanceof McpError ? err.code : "MEMORIA_PLUGIN_ERROR";
      return { ok: false, error: err instanceof Error ? err.message : String(err), code };
    }
  }

  /**
   * Runs `memoria <global args> --agent <agent> <sub…>` once (not through the MCP child).
   * Never rejects.
   * @param {string[]} sub
   * @param {string} agent
   * @param {number} [timeoutMs]
   * @returns {Promise<{ ok: true, stdout: string, stderr: string } | { ok: false, error: string, code: string, stdout?: string }>}
   */
  runOnce(sub, agent, timeoutMs = 60_000) {
    return new Promise((resolve) => {
      let child;
      try {
        child = execFile(
          this.pluginConfig.command,
          this.args(sub, [agent]),
          { env: this.env(), timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
          (err, stdout, stderr) => {
            if (!err) return resolve({ ok: true, stdout: String(stdout), stderr: String(stderr) });
            const code = /** @type {any} */ (err).code;
            if (code === "ENOENT") {
              return resolve({
                ok: false,
                code: "MEMORIA_NOT_FOUND",
                error: commandNotFound(this.pluginConfig.command, this.pluginConfig.commandSource),
              });
            }
            const tail = String(stderr || "").trim().split("\n").slice(-3).join(" | ");
            resolve({
              ok: false,
              code: "MEMORIA_COMMAND_FAILED",
              error: `memoria ${sub[0]} failed: ${tail || err.message}`,
              stdout: String(stdout),
            });
          },
        );
      } catch (err) {
        resolve({ ok: false, code: "MEMORIA_NOT_FOUND", error: err instanceof Error ? err.message : String(err) });
        return;
      }
      child.stdin?.on("error", () => {});
      child.stdin?.end();
    });
  }

  /**
   * `memoria status --json` for one agent (the MCP server has no status tool). Never rejects.
   * @param {string} agent
   * @returns {Promise<{ ok: true, status: any } | { ok: false, error: string, code: string }>}
   */
  async statusJson(agent) {
    // The running child answers from its own process (its live sync included); otherwise a
    // one-shot `memoria status --json` (never starting the child just for a status look).
    if (this.client?.state().running && this.agents.includes(agent)) {
      const args = this.agents.length > 1 ? { agent } : {};
      const out = await this.call("memory_status", args);
      const status = out.ok ? out.result?.structuredContent : undefined;
      if (status && !out.result?.isError) return { ok: true, status };
    }
    const r = await this.runOnce(["status", "--json"], agent, 30_000);
    if (!r.ok) return r;
    try {
      return { ok: true, status: JSON.parse(r.stdout) };
    } catch {
      return { ok: false, code: "MEMORIA_STATUS_FAILED", error: `memoria status printed no JSON: ${r.stdout.slice(0, 200)}` };
    }
  }

  async close() {
    this.closed = true;
    const client = this.client;
    this.client = null;
    if (client) await client.close();
  }
}
