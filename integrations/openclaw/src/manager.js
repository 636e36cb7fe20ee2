// The memory capability's runtime: OpenClaw's MemorySearchManager contract
// (packages/memory-host-sdk/src/host/types.ts) answered by memoria, and the
// MemoryPluginRuntime (src/plugins/registry-contribution-types.ts) that hands it out.
//
// Host paths that use it: `openclaw status --json --all` (purpose "status": probe, then
// the synchronous status()), active-memory / recall lanes (search with lexicalOnly,
// activeProjectKeys), memory-core's dreaming sidecar (search, readFile).

import fs from "node:fs/promises";
import path from "node:path";
import { errorText, mapGetPayload, payloadOf } from "./tools.js";
import { normalizeAgentId } from "./config.js";

/**
 * memoria's `status --json` → OpenClaw's MemoryProviderStatus. `backend` may only be
 * "builtin" in the host's type; memoria's own fields go under `custom`.
 * @param {any} s memoria status (src/status.rs Status), or null
 * @param {{ error?: string, client?: any, agentId: string }} extra
 */
export function mapStatus(s, extra) {
  if (!s || typeof s !== "object") {
    return {
      backend: "builtin",
      provider: "memoria",
      custom: {
        engine: "memoria",
        agentId: extra.agentId,
        available: false,
        error: extra.error ?? "memoria status unavailable",
        ...(extra.client ? { process: extra.client } : {}),
      },
    };
  }
  const keywordOnly = s.mode === "fts-only" || s.provider === "none";
  const live = s.live ?? null;
  const hasIndex = s.generation !== null && s.generation !== undefined;
  return {
    backend: "builtin",
    provider: s.provider ?? "none",
    ...(s.model ? { model: s.model } : {}),
    files: s.files ?? 0,
    chunks: s.chunks ?? 0,
    dirty: Boolean(s.dirty),
    ...(live?.lastSyncError ? { lastSyncError: String(live.lastSyncError) } : {}),
    ...(s.workspace ? { workspaceDir: s.workspace } : {}),
    ...(s.agentDir ? { dbPath: s.agentDir } : {}),
    ...(Array.isArray(s.extraPaths) && s.extraPaths.length ? { extraPaths: s.extraPaths } : {}),
    fts: { enabled: true, available: hasIndex },
    vector: {
      enabled: !keywordOnly,
      available: !keywordOnly && (s.vectors ?? 0) > 0,
      // `openclaw memory status` prints "index incomplete" while chunks wait for vectors
      // (a first index still embedding: memoria's warnings say how far it is).
      ...(!keywordOnly && hasIndex
        ? { index: { state: (s.vectors ?? 0) < (s.chunks ?? 0) ? "incomplete" : "complete" } }
        : {}),
      ...(s.embedding?.dims ? { dims: s.embedding.dims } : {}),
      ...(s.embedding?.lastError ? { loadError: String(s.embedding.lastError) } : {}),
    },
    ...(s.fallback ? { fallback: { from: String(s.fallback.from ?? s.provider ?? ""), reason: s.fallback.reason } } : {}),
    custom: {
      engine: "memoria",
      agentId: s.agentId ?? extra.agentId,
      mode: s.mode,
      backend: s.backend,
      generation: s.generation ?? null,
      identity: s.identity ?? null,
      bytes: s.bytes ?? 0,
      vectors: s.vectors ?? null,
      syncedAt: s.syncedAt ?? null,
      live,
      warnings: s.warnings ?? [],
      ...(s.qmd ? { qmd: s.qmd } : {}),
      ...(s.embedding ? { embedding: s.embedding } : {}),
      ...(extra.client ? { process: extra.client } : {}),
    },
  };
}

/**
 * memoria search hit → MemorySearchResult (same field names; snippet without the
 * citation footer memoria adds when citations are on).
 * @param {any} hit
 */
function mapHit(hit) {
  /** @type {any} */
  const out = {
    path: String(hit.path ?? ""),
    startLine: Number(hit.startLine ?? 1),
    endLine: Number(hit.endLine ?? hit.startLine ?? 1),
    score: Number(hit.score ?? 0),
    snippet: String(hit.snippet ?? ""),
    source: hit.source === "sessions" ? "sessions" : "memory",
  };
  for (const k of ["vectorScore", "textScore", "citation", "importance", "triggers", "projectKey"]) {
    if (hit[k] !== undefined) out[k] = hit[k];
  }
  return out;
}

/** One agent's MemorySearchManager over the shared memoria child. */
export class MemoriaSearchManager {
  /**
   * @param {import("./runtime.js").MemoriaRuntime} rt
   * @param {string} agentId
   * @param {any} [initialStatus] memoria status --json, if already fetched
   * @param {string} [initialError]
   */
  constructor(rt, agentId, initialStatus, initialError) {
    this.rt = rt;
    this.agentId = agentId;
    this.lastStatus = initialStatus ?? null;
    this.lastStatusError = initialError;
  }

  #agentArg() {
    return this.rt.servedAgents().includes(this.agentId) ? { agent: this.agentId } : {};
  }

  /**
   * @param {string} query
   * @param {{ maxResults?: number, minScore?: number, sessionKey?: string, lexicalOnly?: boolean, activeProjectKeys?: string[], sources?: ("memory"|"sessions")[], signal?: AbortSignal, onDebug?: (d: any) => void }} [opts]
   */
  async search(query, opts = {}) {
    /** @type {Record<string, unknown>} */
    const args = { query: String(query ?? ""), ...this.#agentArg() };
    if (opts.maxResults !== undefined) args.maxResults = opts.maxResults;
    if (opts.minScore !== undefined) args.minScore = Math.min(1, Math.max(0, Number(opts.minScore)));
    if (opts.sessionKey) args.sessionKey = opts.sessionKey;
    // sources → corpus: memoria takes one of memory | sessions | all.
    if (Array.isArray(opts.sources) && opts.sources.length > 0) {
      const m = opts.sources.includes("memory");
      const s = opts.sources.includes("sessions");
      args.corpus = m && s ? "all" : s ? "sessions" : "memory";
    }
    // OpenClaw's fast recall paths: keyword scoring, the query not embedded.
    if (opts.lexicalOnly) args.lexicalOnly = true;
    // The session's active projects: memoria ranks <!-- project: … --> entries by them
    // (OpenClaw 2026.9's semantics, i.e. a memory.search config).
    if (Array.isArray(opts.activeProjectKeys) && opts.activeProjectKeys.length > 0) {
      args.activeProjectKeys = opts.activeProjectKeys.map(String);
    }
    const out = await this.rt.call("memory_search", args, opts.signal);
    if (!out.ok) throw new Error(out.error);
    const { payload, isError } = payloadOf(out.result);
    if (isError || payload?.error) throw new Error(payload?.error ?? "memoria search failed");
    opts.onDebug?.({
      backend: "builtin",
      configuredMode: payload?.mode,
      effectiveMode: payload?.mode,
      ...(payload?.fallback ? { fallback: payload.fallback.reason ?? String(payload.fallback.from) } : {}),
    });
    return Array.isArray(payload?.results) ? payload.results.map(mapHit) : [];
  }

  /** @param {{ relPath: string, from?: number, lines?: number }} params */
  async readFile(params) {
    /** @type {Record<string, unknown>} */
    const args = { path: params.relPath, ...this.#agentArg() };
    if (params.from !== undefined) args.from = params.from;
    if (params.lines !== undefined) args.lines = params.lines;
    const out = await this.rt.call("memory_get", args);
    if (!out.ok) throw Object.assign(new Error(out.error), { code: out.code });
    const { payload, isError } = payloadOf(out.result);
    const mapped = mapGetPayload(params.relPath, payload, isError);
    if (mapped.status === "error") throw Object.assign(new Error(mapped.error), { code: mapped.code });
    if (mapped.status === "not_found") return { status: "not_found", text: "", path: mapped.path };
    const res = { status: "ok", text: mapped.text, path: mapped.path };
    for (const k of ["truncated", "from", "lines", "nextFrom"]) if (mapped[k] !== undefined) res[k] = mapped[k];
    return /** @type {any} */ (res);
  }

  /** Synchronous (host contract): the last status fetched by probe*() or at creation. */
  status() {
    return mapStatus(this.lastStatus, {
      agentId: this.agentId,
      error: this.lastStatusError,
      client: this.rt.client?.state(),
    });
  }

  async refreshStatus() {
    const r = await this.rt.statusJson(this.agentId);
    if (r.ok) {
      this.lastStatus = r.status;
      this.lastStatusError = undefined;
    } else {
      this.lastStatus = null;
      this.lastStatusError = r.error;
    }
    return r;
  }

  /**
   * memoria indexes on its own (watcher, interval, sync-on-search). The MCP server has no
   * sync tool, so an explicit sync runs `memoria index [--force]` as a one-shot process
   * (it waits for the writer lock the live sync may hold).
   * @param {{ force?: boolean, progress?: (u: any) => void }} [params]
   */
  async sync(params = {}) {
    const r = await this.rt.runOnce(params.force ? ["index", "--force"] : ["index"], this.agentId, 10 * 60_000);
    if (!r.ok) throw new Error(r.error);
    params.progress?.({ completed: 1, total: 1, label: "memoria index" });
  }

  async probeEmbeddingAvailability() {
    const r = await this.refreshStatus();
    if (!r.ok) return { ok: false, error: r.error, checked: true };
    const s = r.status;
    const keywordOnly = s.mode === "fts-only" || s.provider === "none";
    return keywordOnly
      ? { ok: false, error: s.fallback?.reason ?? `keyword-only (provider ${s.provider})`, checked: true }
      : { ok: true, checked: true };
  }

  async probeVectorAvailability() {
    const r = await this.refreshStatus();
    return r.ok && r.status.mode !== "fts-only" && r.status.provider !== "none";
  }

  async close() {
    // The child is shared by every manager and tool of the process; gateway stop closes it.
  }
}

/**
 * Provenance class of workspace memory paths, for OpenClaw's automatic bootstrap injection
 * (src/agents/bootstrap-files.ts: MEMORY.md / USER.md are injected at session start only
 * when the selected memory runtime classifies them `owner` or `agent`; a runtime without
 * this hook gets them excluded). Same rule as memory-core's
 * extensions/memory-core/src/memory-path-provenance.ts for files without a recorded
 * provenance (memoria keeps none): DREAMS.md and memory/dreaming|.dreams are `system`;
 * MEMORY.md, memory.md, USER.md, users/<id>/USER.md and memory/**.md inside the workspace
 * are `agent`; anything else (outside the workspace, symlinked out, not memory) is `untrusted`.
 * @param {{ workspaceDir: string, relativePaths: string[], readSources?: readonly { relativePath: string, canonicalRelativePath?: string }[] }} params
 */
export async function classifyWorkspaceMemoryPaths(params) {
  return Promise.all(
    params.relativePaths.map(async (relativePath) => ({
      relativePath,
      originClass: await classifyOne(params, relativePath),
    })),
  );
}

/** @returns {Promise<"agent" | "system" | "untrusted">} */
async function classifyOne(params, relativePath) {
  let rel;
  if (params.readSources !== undefined) {
    const src = params.readSources.find((s) => s.relativePath === relativePath)?.canonicalRelativePath;
    if (!src || src === "." || src === ".." || src.startsWith("../") || path.posix.isAbsolute(src) || path.win32.isAbsolute(src) || src.includes("\\") || src.includes("\0") || path.posix.normalize(src) !== src) {
      return "untrusted";
    }
    rel = src;
  } else {
    try {
      const [ws, file] = await Promise.all([fs.realpath(params.workspaceDir), fs.realpath(path.resolve(params.workspaceDir, relativePath))]);
      const r = path.relative(ws, file);
      if (!r || r.startsWith("..") || path.isAbsolute(r)) return "untrusted";
      rel = r.split(path.sep).join("/");
    } catch {
      return "untrusted";
    }
  }
  const seg = rel.split("/");
  const curatedRoot = seg.length === 1 && ["MEMORY.md", "memory.md", "USER.md"].includes(seg[0]);
  if ((seg.length === 1 && (seg[0] === "DREAMS.md" || seg[0] === "dreams.md")) || (seg[0] === "memory" && (seg[1] === "dreaming" || seg[1] === ".dreams"))) {
    return "system";
  }
  const workspaceMemory =
    curatedRoot || /^users\/[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}\/USER\.md$/.test(rel) || (seg[0] === "memory" && seg[seg.length - 1].endsWith(".md"));
  return workspaceMemory ? "agent" : "untrusted";
}

/**
 * MemoryPluginRuntime for registerMemoryCapability.
 * @param {() => import("./runtime.js").MemoriaRuntime} getRuntime
 */
export function createMemoryRuntime(getRuntime) {
  return {
    /** @param {{ cfg: any, agentId: string, purpose?: "default"|"status"|"cli" }} params */
    async getMemorySearchManager(params) {
      const started = Date.now();
      try {
        const rt = getRuntime();
        const agentId = normalizeAgentId(params.agentId);
        const manager = new MemoriaSearchManager(rt, agentId);
        if (params.purpose === "status" || params.purpose === "cli") await manager.refreshStatus();
        return {
          manager,
          debug: { backend: "builtin", purpose: params.purpose ?? "default", managerMs: Date.now() - started },
        };
      } catch (err) {
        return { manager: null, error: errorText(err) };
      }
    },
    resolveMemoryBackendConfig() {
      return { backend: "builtin" };
    },
    supportsWorkspaceMemoryReadSources: true,
    classifyWorkspaceMemoryPaths,
    async closeMemorySearchManager() {},
    async closeAllMemorySearchManagers() {},
  };
}
