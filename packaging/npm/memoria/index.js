// Where this platform's memoria binary is: in the npm package built for it, which npm
// installs beside this one through `optionalDependencies` (each platform package declares
// its `os`, `cpu` and `libc`, so npm fetches only the matching one; no install script).

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/**
 * The platform packages, by `${process.platform}-${process.arch}`: this package's optional
 * dependencies (the one list of them; `scripts/dist` sets their versions), named
 * `@memoria-search/<platform>-<arch>[-<libc>]`.
 */
export const PLATFORM_PACKAGES = Object.fromEntries(
  Object.keys(require("./package.json").optionalDependencies).map((name) => {
    const [platform, arch] = name.split("/")[1].split("-");
    return [`${platform}-${arch}`, name];
  }),
);

/**
 * The memoria binary of this platform's package.
 * @param {{platform?: string, arch?: string}} [where] defaults to this process's
 * @returns {{path: string} | {error: string}} its path, or why there is none
 */
export function binaryPath({ platform = process.platform, arch = process.arch } = {}) {
  const name = PLATFORM_PACKAGES[`${platform}-${arch}`];
  if (!name) {
    return { error: `no memoria package for ${platform}-${arch} (build it from source: cargo install memoria)` };
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    return {
      error: `${name} is not installed (npm skipped the optional dependency: another libc, --no-optional or --omit=optional?)`,
    };
  }
  const file = path.join(dir, "bin", platform === "win32" ? "memoria.exe" : "memoria");
  return fs.existsSync(file) ? { path: file } : { error: `${name} has no ${path.relative(dir, file)}` };
}
