// Drives the memory-wiki plugin's own search and get (the code behind OpenClaw 2026.9's
// memory corpus supplement: local backend, corpus "wiki") over one vault, for the wiki
// cases of tests/openclaw_parity.rs. Reads to learn, runs as is: nothing of OpenClaw's code
// is copied here.
//
//   OPENCLAW_STATE_DIR=… HOME=… node wiki.mjs <dist> <vault> <cases.json>
//
// <cases.json>: a JSON array of {query, maxResults?} or {lookup, fromLine?, lineCount?}.
// Prints one JSON line per case: {i, results} / {i, page} or {i, error}.
import fs from "node:fs";
import { loadExport } from "./exports.mjs";

const [dist, vault, casesPath] = process.argv.slice(2);

const load = (name) => loadExport(dist, name);
const resolveConfig = await load("resolveMemoryWikiConfig");
const searchMemoryWiki = await load("searchMemoryWiki");
const getMemoryWikiPage = await load("getMemoryWikiPage");
// No compiled digest (the plugin keeps it in OpenClaw's state store): every page is
// scanned, as the supplement does before the first compile.
(await load("configureMemoryWikiCompiledCacheStore"))(new Proxy({}, { get: () => async () => null }));

const config = resolveConfig({ vault: { path: vault } });
const local = { config, searchBackend: "local", searchCorpus: "wiki" };
const cases = JSON.parse(fs.readFileSync(casesPath, "utf8"));
for (const [i, c] of cases.entries()) {
  try {
    if (c.query !== undefined) {
      const max = c.maxResults ?? 10;
      const found = await searchMemoryWiki({ ...local, query: c.query, maxResults: max });
      // memory-core's memory_search re-sorts the supplements' hits by score, then path (its
      // searchMemoryCorpusSupplements), where wiki_search breaks ties by title.
      const results = found.toSorted((a, b) => b.score - a.score || a.path.localeCompare(b.path)).slice(0, Math.max(1, max));
      console.log(JSON.stringify({ i, results }));
    } else {
      const page = await getMemoryWikiPage({ ...local, lookup: c.lookup, fromLine: c.fromLine, lineCount: c.lineCount });
      console.log(JSON.stringify({ i, page }));
    }
  } catch (e) {
    console.log(JSON.stringify({ i, error: String(e?.stack ?? e) }));
  }
}
process.exit(0);
