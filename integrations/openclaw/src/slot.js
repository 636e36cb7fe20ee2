// The memory slot in openclaw.json: `openclaw memoria setup` takes it for memoria and
// `openclaw memoria uninstall` gives it back to memory-core, each in one command, while a
// gateway runs or not (through OpenClaw's config API, which needs no gateway token). They
// touch what the install and the way back need and nothing else. The plugin stays linked
// after the uninstall (`openclaw plugins uninstall memoria --force` removes it for good,
// with the gateway stopped or its token set); memoria's index under the state dir is left
// as it is.

/**
 * Takes the memory slot for memoria in `config` (mutated in place; pure): the slot, the
 * entry enabled (its `config` kept), and `"memory-core"` added to `tools.deny`: memory-core
 * stays loaded for dreaming and registers `memory_search` / `memory_get` too, and denying
 * its tools by plugin id leaves memoria's (NOTES.md).
 * @param {any} config
 * @returns {{ changes: string[] }}
 */
export function takeMemorySlot(config) {
  const changes = [];
  config.plugins ??= {};
  const plugins = config.plugins;
  if (plugins.slots?.memory !== "memoria") {
    plugins.slots = { ...(plugins.slots ?? {}), memory: "memoria" };
    changes.push('plugins.slots.memory: now "memoria"');
  }
  plugins.entries ??= {};
  if (plugins.entries.memoria?.enabled !== true) {
    plugins.entries.memoria = { ...(plugins.entries.memoria ?? {}), enabled: true };
    changes.push("plugins.entries.memoria.enabled: now true");
  }
  const deny = config.tools?.deny;
  if (!(Array.isArray(deny) && deny.includes("memory-core"))) {
    config.tools = { ...(config.tools ?? {}), deny: [...(Array.isArray(deny) ? deny : []), "memory-core"] };
    changes.push('tools.deny: "memory-core" added (its memory_search and memory_get would answer beside memoria\'s)');
  }
  return { changes };
}

/**
 * Gives the memory slot back to memory-core in `config` (mutated in place). Pure.
 * - `plugins.slots.memory: "memoria"` is removed, so the default (memory-core) applies;
 * - `plugins.entries.memoria` becomes exactly `{ enabled: false }`, the marker OpenClaw
 *   2026.9.6 accepts without a warning at start (a disabled entry that keeps `config` is
 *   warned about at every start); the config it held is returned so it can be restored;
 * - `"memory-core"` leaves `tools.deny` (and an emptied `deny` or `tools` goes), or
 *   memory-core's memory_search and memory_get stay blocked.
 * @param {any} config
 * @returns {{ changes: string[], removedConfig: unknown }}
 */
export function giveBackMemorySlot(config) {
  const changes = [];
  let removedConfig;
  const plugins = config.plugins;
  if (plugins?.slots?.memory === "memoria") {
    delete plugins.slots.memory;
    if (Object.keys(plugins.slots).length === 0) delete plugins.slots;
    changes.push('plugins.slots.memory: "memoria" removed (memory-core, the default, takes the slot)');
  }
  const entry = plugins?.entries?.memoria;
  if (entry && !(entry.enabled === false && Object.keys(entry).length === 1)) {
    removedConfig = entry.config;
    plugins.entries.memoria = { enabled: false };
    changes.push("plugins.entries.memoria: now { enabled: false }");
  }
  const deny = config.tools?.deny;
  if (Array.isArray(deny) && deny.includes("memory-core")) {
    const kept = deny.filter((id) => id !== "memory-core");
    if (kept.length) config.tools.deny = kept;
    else delete config.tools.deny;
    if (Object.keys(config.tools).length === 0) delete config.tools;
    changes.push('tools.deny: "memory-core" removed (its memory_search and memory_get answer again)');
  }
  return { changes, removedConfig };
}

/**
 * Writes one of the edits above through OpenClaw's config API; resolves with the exit code.
 * @param {any} api OpenClawPluginApi (its runtime, in the CLI process)
 * @param {"setup" | "uninstall"} what
 * @param {(line: string) => void} say
 */
export async function editSlot(api, what, say) {
  const mutateConfigFile = api?.runtime?.config?.mutateConfigFile;
  if (typeof mutateConfigFile !== "function") {
    say(`openclaw memoria ${what}: this OpenClaw gives plugins no config API (runtime.config.mutateConfigFile); edit openclaw.json as the plugin README says`);
    return 1;
  }
  /** @type {{ changes: string[], removedConfig?: unknown }} */
  let outcome = { changes: [] };
  try {
    await mutateConfigFile({
      afterWrite: { mode: "auto" },
      mutate: (draft) => {
        outcome = what === "setup" ? takeMemorySlot(draft) : giveBackMemorySlot(draft);
      },
    });
  } catch (err) {
    say(`openclaw memoria ${what}: the config was not changed: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  if (outcome.changes.length === 0) {
    say(
      what === "setup"
        ? "openclaw memoria setup: nothing to do: memoria holds the memory slot and memory-core's tools are denied"
        : "openclaw memoria uninstall: nothing to do: memoria does not hold the memory slot, and memory-core is not denied",
    );
    return 0;
  }
  for (const change of outcome.changes) say(`changed ${change}`);
  if (outcome.removedConfig !== undefined) {
    say(`memoria's plugin config was ${JSON.stringify(outcome.removedConfig)} (put it back under plugins.entries.memoria.config to return)`);
  }
  say(
    what === "setup"
      ? "a running gateway reloads its plugins on this change (or restart it); then memory_search is memoria's."
      : "memory-core answers memory_search again once the gateway reloads its plugins (it does on this change; or restart it). memoria's index stays in the state dir. To come back: `openclaw plugins enable memoria` and `openclaw memoria setup`; to remove the plugin itself: `openclaw plugins uninstall memoria --force`.",
  );
  return 0;
}
