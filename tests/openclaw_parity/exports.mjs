// Loading a function from OpenClaw's compiled dist/ by its own name: minified modules export
// it under a short alias, and file names carry build hashes. Shared by the parity harnesses.
import fs from "node:fs";
import path from "node:path";

/** The function `name` exported by one of `dist`'s modules. */
export async function loadExport(dist, name) {
  for (const f of fs.readdirSync(dist)) {
    if (!f.endsWith(".mjs")) continue;
    const src = fs.readFileSync(path.join(dist, f), "utf8");
    if (!src.includes(`function ${name}(`)) continue;
    const m = src.match(new RegExp(`export \\{[^}]*\\b${name}( as (\\w+))?[,\\s}]`));
    if (m) return (await import(path.join(dist, f)))[m[2] ?? name];
  }
  throw new Error(`export not found: ${name}`);
}
