// `openclaw memoria status|index|search`: thin pass-throughs to the memoria CLI with
// OpenClaw's config file and state dir (and the plugin's extra args), output inherited.

import { spawn } from "node:child_process";
import { commandNotFound, normalizeAgentId } from "./config.js";
import { editSlot } from "./slot.js";

/**
 * Runs memoria with inherited stdio; resolves with its exit code (127 when not found).
 * @param {import("./runtime.js").MemoriaRuntime} rt
 * @param {string[]} sub
 * @param {string} agent
 */
function runInherited(rt, sub, agent) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(rt.pluginConfig.command, rt.args(sub, [agent]), { env: rt.env(), stdio: "inherit" });
    } catch (err) {
      process.stderr.write(`openclaw memoria: ${err instanceof Error ? err.message : String(err)}\n`);
      resolve(127);
      return;
    }
    child.once("error", (err) => {
      const code = /** @type {any} */ (err).code;
      process.stderr.write(
        code === "ENOENT"
          ? `openclaw memoria: ${commandNotFound(rt.pluginConfig.command, rt.pluginConfig.commandSource)}\n`
          : `openclaw memoria: ${err.message}\n`,
      );
      resolve(127);
    });
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

/**
 * @param {any} program commander Command (the root `openclaw` program)
 * @param {() => import("./runtime.js").MemoriaRuntime} getRuntime
 * @param {any} [api] OpenClawPluginApi, for `uninstall`'s config write
 */
export function registerMemoriaCli(program, getRuntime, api) {
  const root = program
    .command("memoria")
    .description("memoria memory engine: status, index and search (the active memory plugin)");

  const agentOf = (opts) => normalizeAgentId(opts.agent ?? getRuntime().servedAgents()[0]);
  const finish = (code) => {
    process.exitCode = code;
  };

  root
    .command("status")
    .description("Show memoria's index, mode, provider and live sync for an agent")
    .option("--agent <id>", "agent id (default: the default agent)")
    .option("--json", "print JSON")
    .action(async (opts) => {
      const rt = getRuntime();
      // Which binary answers, and why that one (on stderr: stdout stays memoria's).
      process.stderr.write(`memoria binary: ${rt.pluginConfig.command} (${rt.pluginConfig.commandSource})\n`);
      finish(await runInherited(rt, ["status", ...(opts.json ? ["--json"] : [])], agentOf(opts)));
    });

  root
    .command("index")
    .description("Bring memoria's index up to date with the workspace")
    .option("--agent <id>", "agent id (default: the default agent)")
    .option("--force", "rebuild everything into a new generation")
    .action(async (opts) => {
      finish(await runInherited(getRuntime(), ["index", ...(opts.force ? ["--force"] : [])], agentOf(opts)));
    });

  root
    .command("search")
    .description("Search memory with memoria (the memory_search payload with --json)")
    .argument("<query...>", "the query")
    .option("--agent <id>", "agent id (default: the default agent)")
    .option("-n, --max-results <n>", "results to return")
    .option("--min-score <x>", "lowest score returned, 0 to 1")
    .option("--corpus <corpus>", "memory, sessions, wiki or all")
    .option("--json", "print the memory_search payload")
    .action(async (queryWords, opts) => {
      const query = Array.isArray(queryWords) ? queryWords.join(" ") : String(queryWords);
      const sub = ["search"];
      if (opts.maxResults) sub.push("--max-results", String(opts.maxResults));
      if (opts.minScore) sub.push("--min-score", String(opts.minScore));
      if (opts.corpus) sub.push("--corpus", String(opts.corpus));
      if (opts.json) sub.push("--json");
      sub.push("--", query);
      finish(await runInherited(getRuntime(), sub, agentOf(opts)));
    });

  const say = (line) => process.stdout.write(`${line}\n`);
  root
    .command("setup")
    .description("Take the memory slot for memoria: the slot, memoria's entry enabled, memory-core's tools denied")
    .action(async () => {
      finish(await editSlot(api, "setup", say));
    });

  root
    .command("uninstall")
    .description("Give the memory slot back to memory-core: unset the slot, disable memoria's entry, take memory-core out of tools.deny")
    .action(async () => {
      finish(await editSlot(api, "uninstall", say));
    });
}
