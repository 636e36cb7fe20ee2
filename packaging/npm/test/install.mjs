// Installs memoria's npm packages as a user would, from a real npm registry on loopback:
// verdaccio, started here, with what `scripts/dist` packed published to it. Then, in a clean
// project with no memoria on PATH and no cargo:
//
//   1. `npm install @memoria-search/memoria`: npm picks this platform's binary package, and
//      `memoria --version` answers;
//   2. `npx @memoria-search/memoria … mcp`: an MCP session over stdio through the wrapper
//      (initialize, tools/list, memory_search);
//   3. (with OPENCLAW_ENTRY, run on OpenClaw's Node) `openclaw plugins install
//      npm:@memoria-search/openclaw` from the registry into a clean OpenClaw state, with no
//      `command` configured: the plugin finds the binary its dependency brought, and
//      `memory_search` through a gateway answers from memoria.
//
// usage: node install.mjs VERDACCIO_DIR NPM_DIR
//   VERDACCIO_DIR  where `verdaccio` is installed (node_modules/.bin/verdaccio)
//   NPM_DIR        scripts/dist's npm/ folder (the .tgz files)
// Prints PASS/FAIL lines; exits 1 on any FAIL.

import { spawn, execFile } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const [verdaccioDir, npmDir] = process.argv.slice(2).map((p) => path.resolve(p));
if (!verdaccioDir || !npmDir) {
  console.error("usage: node install.mjs VERDACCIO_DIR NPM_DIR");
  process.exit(2);
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "memoria-npm-"));
let failures = 0;
const check = (name, ok, detail = "") => {
  console.log(`${ok ? "PASS" : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
  return ok;
};

/** Runs a command to its end; never rejects. */
function run(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    execFile(cmd, args, { maxBuffer: 64 << 20, timeout: 300_000, ...opts }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) }),
    );
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = /** @type {net.AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

async function waitFor(url, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return true;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

// A PATH without memoria or cargo: node's and npm's directories only.
const npmBin = (await run("sh", ["-c", "command -v npm"])).stdout.trim();
const cleanPath = [...new Set([path.dirname(process.execPath), path.dirname(npmBin), "/usr/bin", "/bin"])].join(":");

const port = await freePort();
const registry = `http://127.0.0.1:${port}/`;
fs.writeFileSync(path.join(tmp, "htpasswd"), "");
fs.writeFileSync(
  path.join(tmp, "verdaccio.yaml"),
  [
    `storage: ${path.join(tmp, "storage")}`,
    "auth:",
    `  htpasswd: { file: ${path.join(tmp, "htpasswd")}, max_users: 10 }`,
    "uplinks: {}",
    "packages:",
    "  '**': { access: $all, publish: $authenticated }",
    `listen: 127.0.0.1:${port}`,
    "max_body_size: 200mb",
    "log: { type: stdout, format: pretty, level: warn }",
    "",
  ].join("\n"),
);
const verdaccio = spawn(process.execPath, [path.join(verdaccioDir, "node_modules/verdaccio/bin/verdaccio"), "--config", path.join(tmp, "verdaccio.yaml")], {
  stdio: ["ignore", "pipe", "pipe"],
});
let verdaccioLog = "";
verdaccio.stdout.on("data", (d) => (verdaccioLog += d));
verdaccio.stderr.on("data", (d) => (verdaccioLog += d));
const children = [verdaccio];
process.on("exit", () => children.forEach((c) => c.exitCode === null && c.kill("SIGKILL")));

try {
  if (!check("verdaccio answers on loopback", await waitFor(`${registry}-/ping`, 60_000), verdaccioLog.slice(-2000))) throw new Error("no registry");

  // A user, its token, and an npmrc naming the registry (no other registry is reachable).
  const user = await fetch(`${registry}-/user/org.couchdb.user:ci`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "ci", password: "ci-password" }),
  });
  const { token } = /** @type {any} */ (await user.json());
  check("a registry user is created", user.ok && typeof token === "string");
  const npmrc = path.join(tmp, "npmrc");
  fs.writeFileSync(npmrc, `registry=${registry}\n//127.0.0.1:${port}/:_authToken=${token}\naudit=false\nfund=false\nupdate-notifier=false\n`);
  const env = { ...process.env, PATH: cleanPath, npm_config_userconfig: npmrc, npm_config_cache: path.join(tmp, "npm-cache") };
  delete env.npm_config_registry;

  const tarballs = fs.readdirSync(npmDir).filter((f) => f.endsWith(".tgz"));
  for (const tgz of tarballs) {
    const r = await run("npm", ["publish", path.join(npmDir, tgz)], { env });
    check(`npm publish ${tgz}`, r.code === 0, r.stderr.slice(-1000));
  }

  // 1. The front package in a clean project.
  const project = path.join(tmp, "project");
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, "package.json"), '{ "private": true }\n');
  const inst = await run("npm", ["install", "@memoria-search/memoria"], { cwd: project, env });
  check("npm install @memoria-search/memoria", inst.code === 0, inst.stderr.slice(-1000));
  const platformDir = path.join(project, "node_modules/@memoria-search");
  const installed = fs.existsSync(platformDir) ? fs.readdirSync(platformDir).sort() : [];
  check("npm brought this platform's package and no other", installed.length === 2 && installed.includes("memoria"), JSON.stringify(installed));
  const version = await run(path.join(project, "node_modules/.bin/memoria"), ["--version"], { env });
  check("memoria --version through the npm bin", /^memoria \d+\.\d+\.\d+/.test(version.stdout), version.stdout + version.stderr);

  // 2. npx from an empty directory: an MCP session with a workspace of one note.
  const workspace = path.join(tmp, "workspace");
  fs.mkdirSync(path.join(workspace, "memory"), { recursive: true });
  fs.writeFileSync(path.join(workspace, "MEMORY.md"), "# Memory\n\nThe spare key is under the blue flowerpot.\n");
  const empty = path.join(tmp, "empty");
  fs.mkdirSync(empty);
  const answers = await mcpSession(
    "npx",
    ["--yes", "@memoria-search/memoria", "--provider", "none", "--workspace", workspace, "--state-dir", path.join(tmp, "state"), "mcp"],
    { cwd: empty, env },
    [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "npm-install-test", version: "1" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "memory_search", arguments: { query: "spare key" } } },
    ],
  );
  check("npx … mcp: initialize", answers[1]?.result?.serverInfo?.name !== undefined, JSON.stringify(answers[1] ?? answers.error));
  const tools = (answers[2]?.result?.tools ?? []).map((t) => t.name);
  check("npx … mcp: tools/list has memory_search", tools.includes("memory_search"), JSON.stringify(tools));
  const found = JSON.stringify(answers[3]?.result ?? {});
  check("npx … mcp: memory_search finds the note", found.includes("flowerpot"), found.slice(0, 500));

  // 3. The OpenClaw plugin from the registry.
  if (process.env.OPENCLAW_ENTRY) {
    await openclawPlugin(env);
  } else {
    console.log("NOTE OpenClaw not installed (OPENCLAW_ENTRY unset): the plugin install was not tried");
  }
} catch (err) {
  check("the run", false, err instanceof Error ? err.stack : String(err));
} finally {
  verdaccio.kill("SIGTERM");
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(failures ? 1 : 0);

/**
 * Sends JSON-RPC messages over a child's stdio, one at a time (each request waits for its
 * answer); returns the answers by id (and `error` when the child failed).
 */
async function mcpSession(cmd, args, opts, messages) {
  const child = spawn(cmd, args, { ...opts, stdio: ["pipe", "pipe", "pipe"] });
  children.push(child);
  const answers = /** @type {Record<string, any>} */ ({});
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  let buffer = "";
  const waiting = new Map();
  child.stdout.on("data", (d) => {
    buffer += d;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        const msg = JSON.parse(line);
        if (msg.id !== undefined) {
          answers[msg.id] = msg;
          waiting.get(msg.id)?.();
        }
      } catch {
        /* not JSON */
      }
    }
  });
  for (const message of messages) {
    child.stdin.write(JSON.stringify(message) + "\n");
    if (message.id === undefined) continue;
    const answered = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), 120_000);
      waiting.set(message.id, () => (clearTimeout(timer), resolve(true)));
      child.once("exit", () => resolve(false));
    });
    if (!answered) {
      answers.error = `no answer to ${message.method}: ${stderr.slice(-1500)}`;
      break;
    }
  }
  child.stdin.end();
  child.kill("SIGTERM");
  return answers;
}

/**
 * `openclaw plugins install` from the registry into a clean state, then a gateway: the plugin
 * runs the binary its dependency brought, and `memory_search` answers from memoria.
 */
async function openclawPlugin(env) {
  const state = path.join(tmp, "openclaw");
  fs.mkdirSync(state);
  const configPath = path.join(state, "openclaw.json");
  const ocEnv = { ...env, OPENCLAW_STATE_DIR: state, OPENCLAW_CONFIG_PATH: configPath, npm_config_registry: registry, NO_COLOR: "1" };
  delete ocEnv.OPENCLAW_GATEWAY_TOKEN;
  delete ocEnv.OPENCLAW_PROFILE;
  const openclaw = (args) => run(process.execPath, [process.env.OPENCLAW_ENTRY, ...args], { env: ocEnv, cwd: tmp });
  fs.writeFileSync(configPath, JSON.stringify({ agents: { defaults: { workspace: path.join(tmp, "workspace") } }, gateway: { mode: "local" } }));
  const inst = await openclaw(["plugins", "install", "npm:@memoria-search/openclaw", "--force", "--accept-capabilities"]);
  check("openclaw plugins install npm:@memoria-search/openclaw", inst.code === 0, (inst.stderr || inst.stdout).slice(-1500));
  const config = JSON.parse(fs.readFileSync(configPath, "utf8"));
  check("the install takes the memory slot", config?.plugins?.slots?.memory === "memoria", JSON.stringify(config?.plugins));
  // No `command`: the plugin must find the binary itself. Keyword search keeps the run short.
  config.plugins.entries = { ...config.plugins.entries, memoria: { ...config.plugins.entries?.memoria, enabled: true, config: { args: ["--provider", "none"] } } };
  fs.writeFileSync(configPath, JSON.stringify(config, null, 2));
  const setup = await openclaw(["memoria", "setup"]);
  check("openclaw memoria setup", setup.code === 0, (setup.stderr || setup.stdout).slice(-1500));
  const status = await openclaw(["memoria", "status", "--json"]);
  check(
    "openclaw memoria status runs the npm-installed binary, and says so",
    status.code === 0 && status.stdout.trim().startsWith("{") && /memoria binary: .*@memoria-search\/[a-z0-9-]+\/bin\/memoria(\.exe)? \(npm package @memoria-search\/memoria\)/.test(status.stderr),
    (status.stderr || status.stdout).slice(-1500),
  );

  const port = await freePort();
  const token = "npm-install-test-token";
  const logFile = path.join(tmp, "gateway.log");
  const out = fs.openSync(logFile, "w");
  const gateway = spawn(
    process.execPath,
    [process.env.OPENCLAW_ENTRY, "gateway", "run", "--allow-unconfigured", "--bind", "loopback", "--port", String(port), "--auth", "token", "--token", token],
    { env: ocEnv, cwd: tmp, stdio: ["ignore", out, out], detached: true },
  );
  fs.closeSync(out);
  children.push(gateway);
  const log = () => fs.readFileSync(logFile, "utf8").slice(-3000);
  try {
    if (!check("the gateway starts", await waitFor(`http://127.0.0.1:${port}/healthz`, 120_000), log())) return;
    const res = await fetch(`http://127.0.0.1:${port}/tools/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ tool: "memory_search", args: { query: "spare key" } }),
      signal: AbortSignal.timeout(120_000),
    });
    const body = /** @type {any} */ (await res.json().catch(() => ({})));
    const details = body?.result?.details;
    check(
      "memory_search through the gateway answers from memoria",
      res.status === 200 && JSON.stringify(details?.results ?? []).includes("flowerpot") && details?.provider === "none",
      JSON.stringify(body).slice(0, 1500) + log(),
    );
  } finally {
    gateway.kill("SIGTERM");
    await new Promise((r) => (gateway.exitCode !== null ? r() : (gateway.once("exit", r), setTimeout(r, 30_000))));
    try {
      process.kill(-gateway.pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
}
