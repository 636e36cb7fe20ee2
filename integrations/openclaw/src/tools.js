// The agent tools memory_search and memory_get, answered by memoria.
//
// Schemas follow memory-core's contract (extensions/memory-core/src/memory-tool-contract.ts
// in OpenClaw 2026.9.6: MemorySearchSchema, MemoryGetSchema) so a model sees the same
// tool whichever memory plugin is active. Results are memoria's payloads (SPEC §6:
// `results`, `provider`, `mode`, …) as OpenClaw's jsonResult shape
// `{content: [{type: "text", text: JSON}], details: payload}`.
//
// A tool never throws: OpenClaw turns a thrown error into a bare HTTP 500 / a failed
// turn. Every failure is a payload with `error` (and memory-core's fields).

import { chatTypeFromSessionKey, agentFromSessionKey, normalizeAgentId } from "./config.js";

export const MEMORY_SEARCH_SCHEMA = {
  type: "object",
  properties: {
    query: { type: "string" },
    maxResults: { type: "integer", minimum: 1 },
    minScore: { type: "number" },
    corpus: { type: "string", enum: ["memory", "wiki", "all", "sessions"] },
  },
  required: ["query"],
  additionalProperties: false,
};

export const MEMORY_GET_SCHEMA = {
  type: "object",
  properties: {
    path: { type: "string" },
    from: { type: "integer", minimum: 1 },
    lines: { type: "integer", minimum: 1 },
    corpus: { type: "string", enum: ["memory", "wiki", "all"] },
  },
  required: ["path"],
  additionalProperties: false,
};

const SEARCH_DESCRIPTION =
  "Mandatory recall step: search the agent's memory (MEMORY.md, memory/*.md, configured extra paths and, when enabled, session transcripts) before answering questions about prior work, decisions, dates, people, preferences, or todos. Hybrid semantic + keyword search by memoria. Returns path, line range, score and snippet per hit; read more with memory_get. Session results are transcript search references, not readable memory-file paths. `corpus=memory` restricts hits to memory files; `corpus=sessions` searches indexed session transcripts; `corpus=wiki` searches the memory-wiki vault's pages (read them with memory_get corpus=wiki); `corpus=all` (the default) covers them all. The payload's `mode` says how it was served (hybrid or fts-only); if the response has disabled=true, unavailable=true, a `fallback` or a `warning`, tell the user.";

const GET_DESCRIPTION =
  "Safe exact excerpt read from MEMORY.md, memory/*.md or configured extra paths (as memory_search cites them). Session transcript paths are unsupported. Reads the whole file, or `lines` lines from line `from` (1-based). status=ok means the excerpt was read; status=not_found means the allowed file does not exist; status=error means the read was refused or failed (see `code` and `error`), not that memory is disabled.";

/**
 * @typedef {object} ToolDeps
 * @property {() => import("./runtime.js").MemoriaRuntime} runtime
 * @property {any} [logger]
 */

/** jsonResult: what OpenClaw's own tools return. */
export function jsonResult(payload) {
  return { content: [{ type: "text", text: JSON.stringify(payload, null, 2) }], details: payload };
}

/**
 * The agent a tool call serves: the context's agent, else the session key's, else the default.
 * @param {any} ctx OpenClawPluginToolContext
 */
export function agentForContext(ctx) {
  if (ctx?.agentId) return normalizeAgentId(ctx.agentId);
  return agentFromSessionKey(ctx?.sessionKey) ?? undefined;
}

/** The unavailable search payload (memory-core's buildMemorySearchUnavailableResult shape). */
export function searchUnavailable(error, code, extra = {}) {
  const warning = "Memory search is unavailable: memoria could not answer.";
  const action =
    code === "MEMORIA_NOT_FOUND"
      ? "Install memoria or set plugins.entries.memoria.config.command, then retry memory_search."
      : "Retry memory_search; if it keeps failing run `openclaw memoria status` and check the gateway log.";
  return {
    results: [],
    disabled: true,
    unavailable: true,
    error,
    code,
    warning,
    action,
    backend: "memoria",
    ...extra,
  };
}

/** A failed read (memory-core's executeMemoryReadResult error shape). */
export function readError(relPath, error, code, extra = {}) {
  return { path: relPath, text: "", status: "error", code, error, backend: "memoria", ...extra };
}

/**
 * memoria's payload out of an MCP CallToolResult.
 * @param {any} result
 * @returns {{ payload: any, isError: boolean }}
 */
export function payloadOf(result) {
  let payload = result?.structuredContent;
  if (payload === undefined) {
    const text = result?.content?.find?.((c) => c?.type === "text")?.text;
    try {
      payload = text ? JSON.parse(text) : {};
    } catch {
      payload = { error: String(text) };
    }
  }
  return { payload, isError: result?.isError === true };
}

/**
 * memoria's memory_get payload → memory-core's read result: `status` ok / not_found /
 * error (with `code`; a refused path is MEMORY_PATH_NOT_ALLOWED, memoria's reason in `error`).
 * @param {string} relPath
 * @param {any} payload
 * @param {boolean} isError
 */
export function mapGetPayload(relPath, payload, isError) {
  const p = payload && typeof payload === "object" ? payload : {};
  if (p.status === "not_found") return { ...p, path: p.path ?? relPath, text: "" };
  if (isError || p.error) {
    const refused = p.disabled === true;
    return {
      ...p,
      path: p.path ?? relPath,
      text: "",
      status: "error",
      code: refused ? "MEMORY_PATH_NOT_ALLOWED" : "MEMORY_READ_FAILED",
      error: p.error ?? "memoria could not read the file",
    };
  }
  const text = typeof p.text === "string" ? p.text : "";
  if (text === "" && p.status === undefined) {
    // memoria answers a missing allowed file with {path, text: ""} (SPEC §6).
    return { ...p, path: p.path ?? relPath, text: "", status: "not_found" };
  }
  return { status: "ok", ...p, path: p.path ?? relPath, text };
}

/**
 * Arguments for memoria's memory_search from the OpenClaw tool call and its context.
 * @param {any} params
 * @param {any} ctx
 * @param {string[] | null} servedAgents
 */
export function searchArgs(params, ctx, servedAgents) {
  /** @type {Record<string, unknown>} */
  const args = { query: String(params.query ?? "") };
  if (params.maxResults !== undefined) args.maxResults = params.maxResults;
  if (params.minScore !== undefined) args.minScore = clamp01(params.minScore);
  if (["memory", "sessions", "wiki", "all"].includes(params.corpus)) args.corpus = params.corpus;
  if (ctx?.sessionKey) {
    args.sessionKey = String(ctx.sessionKey);
    args.chatType = chatTypeFromSessionKey(ctx.sessionKey);
  }
  const channel = ctx?.messageChannel ?? ctx?.deliveryContext?.channel;
  if (typeof channel === "string" && channel) args.channel = channel;
  // The session's active projects (OpenClaw puts them in the tool context).
  if (Array.isArray(ctx?.activeProjectKeys) && ctx.activeProjectKeys.length > 0) {
    args.activeProjectKeys = ctx.activeProjectKeys.map(String);
  }
  const agent = agentForContext(ctx);
  if (agent && servedAgents && servedAgents.includes(agent)) args.agent = agent;
  return args;
}

function clamp01(n) {
  const x = Number(n);
  return Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : undefined;
}

/**
 * Refuses a call for an agent this memoria process does not serve (it would otherwise
 * silently answer from the default agent's memory).
 * @param {any} ctx
 * @param {string[] | null} servedAgents
 */
export function unservedAgent(ctx, servedAgents) {
  const agent = agentForContext(ctx);
  if (!agent || !servedAgents || servedAgents.includes(agent)) return null;
  return `memoria serves agents ${servedAgents.join(", ")}, not ${JSON.stringify(agent)}: add it to agents.list in the OpenClaw config and restart the gateway`;
}

/**
 * Builds the two tools for one tool context.
 * @param {ToolDeps} deps
 * @param {any} ctx
 */
export function createMemoryTools(deps, ctx) {
  const search = {
    label: "Memory Search",
    name: "memory_search",
    description: SEARCH_DESCRIPTION,
    parameters: MEMORY_SEARCH_SCHEMA,
    /** @param {string} _id @param {any} params @param {AbortSignal} [signal] */
    async execute(_id, params, signal) {
      try {
        params = params && typeof params === "object" ? params : {};
        if (typeof params.query !== "string" || !params.query.trim()) {
          return jsonResult(searchUnavailable("`query` is required", "MEMORIA_BAD_ARGUMENT"));
        }
        const rt = deps.runtime();
        const served = rt.servedAgents();
        const refusal = unservedAgent(ctx, served);
        if (refusal) return jsonResult(searchUnavailable(refusal, "MEMORIA_AGENT_NOT_SERVED"));
        const out = await rt.call("memory_search", searchArgs(params, ctx, served), signal);
        if (!out.ok) return jsonResult(searchUnavailable(out.error, out.code));
        const { payload, isError } = payloadOf(out.result);
        if (isError && payload && typeof payload === "object" && !Array.isArray(payload.results)) {
          return jsonResult({ ...searchUnavailable(payload.error ?? "memoria search failed", "MEMORIA_SEARCH_FAILED"), ...payload });
        }
        return jsonResult(payload);
      } catch (err) {
        return jsonResult(searchUnavailable(errorText(err), "MEMORIA_PLUGIN_ERROR"));
      }
    },
  };
  const get = {
    label: "Memory Get",
    name: "memory_get",
    description: GET_DESCRIPTION,
    parameters: MEMORY_GET_SCHEMA,
    /** @param {string} _id @param {any} params @param {AbortSignal} [signal] */
    async execute(_id, params, signal) {
      const relPath = typeof params?.path === "string" ? params.path : "";
      try {
        if (!relPath) return jsonResult(readError(relPath, "`path` is required", "MEMORIA_BAD_ARGUMENT"));
        const rt = deps.runtime();
        const served = rt.servedAgents();
        const refusal = unservedAgent(ctx, served);
        if (refusal) return jsonResult(readError(relPath, refusal, "MEMORIA_AGENT_NOT_SERVED"));
        /** @type {Record<string, unknown>} */
        const args = { path: relPath };
        if (params.from !== undefined) args.from = params.from;
        if (params.lines !== undefined) args.lines = params.lines;
        if (["memory", "wiki", "all"].includes(params.corpus)) args.corpus = params.corpus;
        const agent = agentForContext(ctx);
        if (agent && served && served.includes(agent)) args.agent = agent;
        const out = await rt.call("memory_get", args, signal);
        if (!out.ok) return jsonResult(readError(relPath, out.error, out.code));
        const { payload, isError } = payloadOf(out.result);
        return jsonResult(mapGetPayload(relPath, payload, isError));
      } catch (err) {
        return jsonResult(readError(relPath, errorText(err), "MEMORIA_PLUGIN_ERROR"));
      }
    },
  };
  return [search, get];
}

export function errorText(err) {
  return err instanceof Error ? err.message : String(err);
}
