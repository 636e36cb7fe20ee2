// `openclaw memoria uninstall`: the way back to memory-core in one command, while a
// gateway runs or not. It undoes what the install and the README's block did to
// openclaw.json and nothing else: the memory slot, memoria's entry, memory-core in
// tools.deny. The plugin stays linked but inactive (`openclaw plugins uninstall memoria
// --force` removes it for good, with the gateway stopped or its token set); memoria's
// index under the state dir is left as it is.

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
 * Runs the uninstall through OpenClaw's config API; resolves with the exit code.
 * @param {any} api OpenClawPluginApi (its runtime, in the CLI process)
 * @param {(line: string) => void} say
 */
export async function uninstall(api, say) {
  const mutateConfigFile = api?.runtime?.config?.mutateConfigFile;
  if (typeof mutateConfigFile !== "function") {
    say("openclaw memoria uninstall: this OpenClaw gives plugins no config API (runtime.config.mutateConfigFile); edit openclaw.json as the plugin README's \"Going back\" says");
    return 1;
  }
  let outcome = { changes: [], removedConfig: undefined };
  try {
    await mutateConfigFile({
      afterWrite: { mode: "auto" },
      mutate: (draft) => {
        outcome = giveBackMemorySlot(draft);
      },
    });
  } catch (err) {
    say(`openclaw memoria uninstall: the config was not changed: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  if (outcome.changes.length === 0) {
    say("openclaw memoria uninstall: nothing to do: memoria does not hold the memory slot, and memory-core is not denied");
    return 0;
  }
  for (const change of outcome.changes) say(`changed ${change}`);
  if (outcome.removedConfig !== undefined) {
    say(`memoria's plugin config was ${JSON.stringify(outcome.removedConfig)} (put it back under plugins.entries.memoria.config to return)`);
  }
  say("memory-core answers memory_search again once the gateway reloads its plugins (it does on this change; or restart it). memoria's index stays in the state dir; `openclaw plugins uninstall memoria --force` removes the plugin itself.");
  return 0;
}
