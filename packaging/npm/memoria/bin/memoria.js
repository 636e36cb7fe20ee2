#!/usr/bin/env node
// `memoria` from npm: runs this platform's binary with the same arguments, standard streams
// and environment, and exits as it does (`npx @memoria-search/memoria mcp`).

import { spawn } from "node:child_process";
import { binaryPath } from "../index.js";

const found = binaryPath();
if ("error" in found) {
  process.stderr.write(`memoria: ${found.error}\n`);
  process.exit(1);
}
const child = spawn(found.path, process.argv.slice(2), { stdio: "inherit" });
// Ctrl-C reaches the binary through the terminal's process group; a SIGTERM sent to this
// process alone (an MCP client stopping its server) is passed on.
for (const signal of ["SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
process.on("SIGINT", () => {});
child.on("error", (err) => {
  process.stderr.write(`memoria: could not start ${found.path}: ${err.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, as a shell reports it.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
