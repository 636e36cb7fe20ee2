// One long-lived `memoria … mcp` child, spoken to over stdio (newline-delimited
// JSON-RPC 2.0, the MCP stdio transport). No dependencies: node:child_process only.
//
// Life cycle:
// - spawned lazily, by the first call;
// - if it dies, the call in flight gets an error naming the cause (exit code or
//   signal, and the last lines of its stderr), and the next call starts a new one:
//   at once after the first death, then with a growing delay (backoff) while it
//   keeps dying; a call that arrives during the delay gets an error at once;
// - a call's AbortSignal sends `notifications/cancelled` and settles the call;
// - `close()` ends stdin (memoria exits on end of input), then SIGTERM, then SIGKILL.
// No method here ever throws past a rejected promise, and nothing the child does
// (EPIPE on stdin, garbage on stdout, an exit) can throw in the host process.

import { spawn } from "node:child_process";
import { commandNotFound } from "./config.js";

/** @typedef {{ info?: (msg: string) => void, warn?: (msg: string) => void, error?: (msg: string) => void, debug?: (msg: string) => void }} Logger */

/**
 * @typedef {object} McpClientOptions
 * @property {string} command          executable (PATH lookup like a shell)
 * @property {string} [commandSource]  where the command came from, for messages
 * @property {string[]} args           full argument list, ending with `mcp`
 * @property {Record<string, string | undefined>} [env]  environment of the child
 * @property {string} [cwd]
 * @property {Logger} [logger]
 * @property {number} [initTimeoutMs]  how long `initialize` may take (default 30 s)
 * @property {number} [callTimeoutMs]  how long one tool call may take (default 120 s)
 * @property {number} [minBackoffMs]   first delay after a second death in a row (default 500 ms)
 * @property {number} [maxBackoffMs]   largest delay (default 30 s)
 * @property {number} [stableAfterMs]  a child that lived this long resets the backoff (default 60 s)
 */

/** An error with a stable machine-readable `code` (for payloads). */
export class McpError extends Error {
  /**
   * @param {string} message
   * @param {string} code  e.g. MEMORIA_NOT_FOUND, MEMORIA_EXITED, MEMORIA_BACKOFF, MEMORIA_TIMEOUT, MEMORIA_CANCELLED, MEMORIA_RPC
   * @param {unknown} [data]
   */
  constructor(message, code, data) {
    super(message);
    this.name = "McpError";
    this.code = code;
    this.data = data;
  }
}

const PROTOCOL_VERSION = "2025-06-18";
const STDERR_TAIL_LINES = 8;

export class McpClient {
  /** @param {McpClientOptions} options */
  constructor(options) {
    this.options = {
      initTimeoutMs: 30_000,
      callTimeoutMs: 120_000,
      minBackoffMs: 500,
      maxBackoffMs: 30_000,
      stableAfterMs: 60_000,
      ...options,
    };
    this.logger = options.logger ?? {};
    /** @type {import("node:child_process").ChildProcess | null} */
    this.child = null;
    /** @type {Promise<void> | null} resolves when the current child is initialised */
    this.ready = null;
    this.nextId = 1;
    /** @type {Map<number, { resolve: (v: any) => void, reject: (e: Error) => void, timer?: NodeJS.Timeout, method: string }>} */
    this.pending = new Map();
    /** @type {string[]} */
    this.stderrTail = [];
    this.closed = false;
    /** consecutive deaths without a stable run in between */
    this.failures = 0;
    this.retryAt = 0;
    /** @type {string | null} why the last child died or could not start */
    this.lastError = null;
    /** @type {string | null} */
    this.lastErrorCode = null;
    this.startedAt = 0;
    this.starts = 0;
    /** @type {unknown} the child whose failure #fail already recorded */
    this.failRecordedFor = undefined;
    /** @type {any} the server's `initialize` result */
    this.serverInfo = null;
    /** @type {any[] | null} tools/list result */
    this.tools = null;
  }

  /** A snapshot for status output. */
  state() {
    return {
      running: Boolean(this.child && this.child.exitCode === null && this.child.signalCode === null),
      pid: this.child?.pid ?? null,
      starts: this.starts,
      consecutiveFailures: this.failures,
      lastError: this.lastError,
      retryInMs: this.retryAt > Date.now() ? this.retryAt - Date.now() : 0,
      server: this.serverInfo?.serverInfo ?? null,
      command: [this.options.command, ...this.options.args].join(" "),
    };
  }

  /** Starts the child if needed and waits for the MCP handshake. */
  async ensureStarted() {
    if (this.closed) throw new McpError("memoria client is closed (gateway stopping)", "MEMORIA_CLOSED");
    if (this.ready) return this.ready;
    const now = Date.now();
    if (this.retryAt > now) {
      const wait = this.retryAt - now;
      throw new McpError(
        `memoria is not running: ${this.lastError ?? "it exited"}; next start attempt in ${Math.ceil(wait / 1000)} s`,
        "MEMORIA_BACKOFF",
      );
    }
    const starting = this.#start();
    this.ready = starting;
    // A failed start clears `ready` so the next call retries (after the backoff).
    starting.catch(() => {
      if (this.ready === starting) this.ready = null;
    });
    return starting;
  }

  /**
   * Calls one MCP tool. Resolves with the raw `CallToolResult`; rejects with McpError.
   * @param {string} name
   * @param {Record<string, unknown>} args
   * @param {{ signal?: AbortSignal, timeoutMs?: number }} [opts]
   */
  async callTool(name, args, opts = {}) {
    if (opts.signal?.aborted) throw new McpError("cancelled before start", "MEMORIA_CANCELLED");
    await this.ensureStarted();
    return this.#request("tools/call", { name, arguments: args }, opts);
  }

  /** Stops the child: end of input first (memoria finishes its batch), then signals. */
  async close() {
    this.closed = true;
    const child = this.child;
    this.#rejectAll(new McpError("memoria client closed (gateway stopping)", "MEMORIA_CLOSED"));
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.logger.info?.(`memoria: stopping pid ${child.pid}`);
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      child.stdin?.end();
    } catch {
      /* already gone */
    }
    const timeout = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref());
    if (await Promise.race([exited.then(() => true), timeout(3000).then(() => false)])) return;
    child.kill("SIGTERM");
    if (await Promise.race([exited.then(() => true), timeout(2000).then(() => false)])) return;
    child.kill("SIGKILL");
  }

  /** Synchronous last resort for process exit: never leave an orphan. */
  killNow() {
    try {
      if (this.child && this.child.exitCode === null) this.child.kill("SIGTERM");
    } catch {
      /* ignore */
    }
  }

  async #start() {
    const { command, commandSource, args, env, cwd } = this.options;
    this.stderrTail = [];
    this.serverInfo = null;
    this.tools = null;
    let child;
    try {
      child = spawn(command, args, {
        cwd,
        env: /** @type {NodeJS.ProcessEnv} */ (env ?? process.env),
        stdio: ["pipe", "pipe", "pipe"],
        windowsHide: true,
      });
    } catch (err) {
      // spawn() throws synchronously for some argument errors (e.g. a non-string command).
      this.#fail(describeSpawnError(err, command, commandSource), "MEMORIA_NOT_FOUND");
      throw new McpError(this.lastError ?? "spawn failed", "MEMORIA_NOT_FOUND");
    }
    this.child = child;
    this.starts += 1;
    this.startedAt = Date.now();

    // Every stream error is handled: a dead child must never take the gateway down.
    child.stdin?.on("error", (err) => this.logger.debug?.(`memoria: stdin: ${err.message}`));
    child.stdout?.on("error", () => {});
    child.stderr?.on("error", () => {});

    let spawnError = /** @type {Error | null} */ (null);
    const spawned = new Promise((resolve) => {
      child.once("spawn", () => resolve(true));
      child.once("error", (err) => {
        spawnError = err;
        resolve(false);
      });
    });
    child.on("error", (err) => {
      if (err !== spawnError) this.logger.warn?.(`memoria: ${err.message}`);
    });

    let buffer = "";
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line) this.#onLine(line, child);
      }
    });
    let errBuffer = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk) => {
      errBuffer += chunk;
      let nl;
      while ((nl = errBuffer.indexOf("\n")) >= 0) {
        const line = errBuffer.slice(0, nl).trimEnd();
        errBuffer = errBuffer.slice(nl + 1);
        if (!line) continue;
        this.stderrTail.push(line);
        if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
        logStderrLine(this.logger, line);
      }
    });
    child.once("exit", (code, signal) => this.#onExit(child, code, signal));

    if (!(await spawned)) {
      const message = describeSpawnError(spawnError, command, commandSource);
      this.#fail(message, "MEMORIA_NOT_FOUND");
      this.child = null;
      throw new McpError(message, "MEMORIA_NOT_FOUND");
    }

    try {
      const init = await this.#request(
        "initialize",
        {
          protocolVersion: PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: "openclaw-memoria", version: "0.1.0" },
        },
        { timeoutMs: this.options.initTimeoutMs },
      );
      this.serverInfo = init;
      this.#notify("notifications/initialized", {});
      const listed = await this.#request("tools/list", {}, { timeoutMs: this.options.initTimeoutMs });
      this.tools = Array.isArray(listed?.tools) ? listed.tools : [];
      this.logger.info?.(
        `memoria: started pid ${child.pid} (${this.options.command} ${this.options.args.join(" ")})`,
      );
    } catch (err) {
      // The handshake failed or timed out: kill this child; the exit handler records why.
      const message = err instanceof Error ? err.message : String(err);
      if (child.exitCode === null && child.signalCode === null) {
        this.#fail(`memoria did not complete the MCP handshake: ${message}`, "MEMORIA_HANDSHAKE");
        child.kill("SIGKILL");
      }
      throw err instanceof McpError ? err : new McpError(message, "MEMORIA_HANDSHAKE");
    }
  }

  /** Records a start failure and arms the backoff. */
  #fail(message, code) {
    this.logger.warn?.(message);
    this.failRecordedFor = this.child;
    this.lastError = message;
    this.lastErrorCode = code;
    this.#armBackoff();
  }

  #armBackoff() {
    // First death after a stable run: restart at once. Then 0.5 s, 1 s, 2 s … 30 s.
    const { minBackoffMs, maxBackoffMs } = this.options;
    const delay = this.failures === 0 ? 0 : Math.min(maxBackoffMs, minBackoffMs * 2 ** (this.failures - 1));
    this.failures += 1;
    this.retryAt = Date.now() + delay;
  }

  #onExit(child, code, signal) {
    if (this.child !== child) return;
    const lived = Date.now() - this.startedAt;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const tail = this.stderrTail.length ? `; stderr: ${this.stderrTail.slice(-3).join(" | ")}` : "";
    const message = `memoria (pid ${child.pid}) ${how}${tail}`;
    this.child = null;
    this.ready = null;
    this.#rejectAll(new McpError(message, "MEMORIA_EXITED"));
    if (this.closed) return;
    if (lived >= this.options.stableAfterMs) this.failures = 0;
    if (this.failRecordedFor !== child) {
      this.lastError = message;
      this.lastErrorCode = "MEMORIA_EXITED";
      this.#armBackoff();
    }
    this.logger.warn?.(`${message}; it will be restarted by the next memory call`);
  }

  #onLine(line, child) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.logger.debug?.(`memoria: ignoring non-JSON stdout line: ${line.slice(0, 200)}`);
      return;
    }
    if (msg && typeof msg === "object" && "id" in msg && ("result" in msg || "error" in msg)) {
      const entry = this.pending.get(msg.id);
      if (!entry) return; // a cancelled call's late answer
      this.pending.delete(msg.id);
      if (entry.timer) clearTimeout(entry.timer);
      if (msg.error) {
        const e = msg.error;
        entry.reject(new McpError(`memoria ${entry.method}: ${e.message ?? "error"} (JSON-RPC ${e.code})`, "MEMORIA_RPC", e));
      } else {
        if (entry.method === "tools/call") {
          // An answered tool call ends a failure streak (a handshake alone does not: a
          // child that dies on every call must still back off).
          this.failures = 0;
          this.lastError = null;
          this.lastErrorCode = null;
        }
        entry.resolve(msg.result);
      }
      return;
    }
    if (msg && typeof msg === "object" && "id" in msg && "method" in msg) {
      // A server-to-client request (ping, roots/list…): answer so it never waits.
      const reply = msg.method === "ping" ? { jsonrpc: "2.0", id: msg.id, result: {} } : {
        jsonrpc: "2.0",
        id: msg.id,
        error: { code: -32601, message: `method not supported by this client: ${msg.method}` },
      };
      this.#write(child, reply);
    }
    // Notifications (logging, progress) are ignored.
  }

  #write(child, message) {
    if (!child?.stdin || child.stdin.destroyed || !child.stdin.writable) return false;
    try {
      child.stdin.write(`${JSON.stringify(message)}\n`);
      return true;
    } catch (err) {
      this.logger.debug?.(`memoria: write failed: ${err instanceof Error ? err.message : err}`);
      return false;
    }
  }

  #notify(method, params) {
    this.#write(this.child, { jsonrpc: "2.0", method, params });
  }

  /**
   * @param {string} method
   * @param {unknown} params
   * @param {{ signal?: AbortSignal, timeoutMs?: number }} opts
   */
  #request(method, params, opts = {}) {
    const child = this.child;
    if (!child) return Promise.reject(new McpError(this.lastError ?? "memoria is not running", "MEMORIA_EXITED"));
    const id = this.nextId++;
    const timeoutMs = opts.timeoutMs ?? this.options.callTimeoutMs;
    return new Promise((resolve, reject) => {
      const entry = { resolve, reject, method, timer: /** @type {NodeJS.Timeout | undefined} */ (undefined) };
      const cleanup = () => opts.signal?.removeEventListener("abort", onAbort);
      const onAbort = () => {
        if (!this.pending.has(id)) return;
        this.pending.delete(id);
        if (entry.timer) clearTimeout(entry.timer);
        this.#notify("notifications/cancelled", { requestId: id, reason: "cancelled by OpenClaw" });
        reject(new McpError(`memoria ${method} cancelled`, "MEMORIA_CANCELLED"));
      };
      entry.resolve = (v) => {
        cleanup();
        resolve(v);
      };
      entry.reject = (e) => {
        cleanup();
        reject(e);
      };
      entry.timer = setTimeout(() => {
        if (!this.pending.has(id)) return;
        this.pending.delete(id);
        this.#notify("notifications/cancelled", { requestId: id, reason: "timeout" });
        entry.reject(new McpError(`memoria ${method} did not answer within ${timeoutMs} ms`, "MEMORIA_TIMEOUT"));
      }, timeoutMs);
      entry.timer.unref?.();
      this.pending.set(id, entry);
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      if (!this.#write(child, { jsonrpc: "2.0", id, method, params })) {
        this.pending.delete(id);
        clearTimeout(entry.timer);
        entry.reject(new McpError(this.lastError ?? "memoria's stdin is closed", "MEMORIA_EXITED"));
      }
    });
  }

  #rejectAll(err) {
    const entries = [...this.pending.values()];
    this.pending.clear();
    for (const entry of entries) {
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(err);
    }
  }
}

/** memoria logs with tracing: `2026-… WARN memoria::x: msg`. Keep its level. */
function logStderrLine(logger, line) {
  const text = `memoria: ${line}`;
  if (/\bERROR\b/.test(line)) logger.error?.(text);
  else if (/\bWARN\b/.test(line)) logger.warn?.(text);
  else if (/\b(DEBUG|TRACE)\b/.test(line)) logger.debug?.(text);
  else logger.info?.(text);
}

/** A clear message for a command that cannot start. */
function describeSpawnError(err, command, source) {
  const code = /** @type {any} */ (err)?.code;
  if (code === "ENOENT") return commandNotFound(command, source);
  if (code === "EACCES") {
    return `memoria command is not executable: ${JSON.stringify(command)} (EACCES; check plugins.entries.memoria.config.command)`;
  }
  return `memoria command could not start: ${JSON.stringify(command)}: ${err instanceof Error ? err.message : String(err)}`;
}
