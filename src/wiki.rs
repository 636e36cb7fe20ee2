//! The memory-wiki vault as a read-only corpus (`corpus: "wiki"`).
//!
//! OpenClaw's memory-wiki plugin keeps compiled knowledge pages in a vault:
//! `<vault>/{entities,concepts,sources,syntheses,reports}/**/*.md` (each folder's `index.md`
//! is a generated listing, not a page), each page a Markdown body under an optional YAML
//! front matter (`title`, `id`, `sourceIds`, …). OpenClaw 2026.9's `memory_search` reaches
//! it through the plugin's corpus supplement, which scans the pages lexically (no index, no
//! vectors) and scores each one with whole-number bonuses: the query in the title (+50
//! equal, +20 within), path (+10), id (+20) or source ids (+12); each query word in the
//! title (+8), path or id (+6), front matter (+4), body (+1); up to 10 for the query's
//! occurrences in the body; plus 1 for any match. memoria scores pages the same way
//! ([`score`], pure) and reads the vault on each search: vaults are small and this keeps
//! them exactly as fresh as OpenClaw's. Structured claims (`claims:` in the front matter,
//! with confidence and freshness) and the compiled digest are not read: a page's claims
//! count as front-matter text.
//!
//! memoria never writes to the vault and never creates it.

use std::fs;
use std::path::Path;

/// The vault's page folders, and the `kind` of a page in each.
pub const PAGE_DIRS: [(&str, &str); 5] = [
    ("entities", "entity"),
    ("concepts", "concept"),
    ("sources", "source"),
    ("syntheses", "synthesis"),
    ("reports", "report"),
];

/// Folder depth walked under a page folder (OpenClaw bounds its walk too).
const MAX_DEPTH: usize = 16;

/// One wiki page as read from the vault.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Vault-relative path with `/` separators (`entities/alice.md`).
    pub path: String,
    /// `entity`, `concept`, `source`, `synthesis` or `report`, by folder.
    pub kind: &'static str,
    /// The front matter's `title`, else the body's first `# ` heading, else the file stem.
    pub title: String,
    /// The front matter's `id`.
    pub id: Option<String>,
    /// The front matter's `sourceIds`.
    pub source_ids: Vec<String>,
    /// The front matter's other plain fields OpenClaw reports with a hit (`sourceType`,
    /// `provenanceMode`, `sourcePath`, `updatedAt`, `entityType`, `canonicalId`,
    /// `privacyTier`), and `provenanceLabel` for an imported page.
    pub fields: Vec<(&'static str, String)>,
    /// The front matter's `aliases`.
    pub aliases: Vec<String>,
    /// The front matter as written (searched as metadata).
    pub front_matter: String,
    /// The text after the front matter (what `memory_get` reads, line 1 first).
    pub body: String,
}

/// The fields OpenClaw reports with a wiki hit, in its order.
const REPORTED: [&str; 7] = [
    "sourceType",
    "provenanceMode",
    "sourcePath",
    "updatedAt",
    "entityType",
    "canonicalId",
    "privacyTier",
];

/// One page found by a query.
#[derive(Debug, Clone, PartialEq)]
pub struct WikiHit {
    /// The page.
    pub page: Page,
    /// Its score (a whole number ≥ 1; not on the 0–1 scale of memory hits).
    pub score: f64,
    /// The body line that best matches (trimmed).
    pub snippet: String,
    /// That line's number in the body (1-based, as `memory_get` counts).
    pub line: usize,
}

/// The pages of the vault at `vault` (`None`: the memory-wiki plugin is disabled), or why
/// there are none to read, in words for the user.
pub fn vault_pages(vault: Option<&Path>) -> Result<Vec<Page>, String> {
    let Some(vault) = vault else {
        return Err("the wiki corpus is off: plugins.entries.memory-wiki.enabled is false".into());
    };
    match pages(vault) {
        Ok(Some(pages)) => Ok(pages),
        Ok(None) => Err(format!(
            "there is no memory-wiki vault at {} (the memory-wiki plugin creates it; \
             plugins.entries.memory-wiki.config.vault sets where)",
            vault.display()
        )),
        Err(err) => Err(format!(
            "the memory-wiki vault at {} cannot be read: {err}",
            vault.display()
        )),
    }
}

/// Every page of the vault at `root`, sorted by path; `Ok(None)` when there is no vault.
/// Unreadable pages and symbolic links are skipped (OpenClaw skips them too).
pub fn pages(root: &Path) -> std::io::Result<Option<Vec<Page>>> {
    if !root.is_dir() {
        return Ok(None);
    }
    let mut files = Vec::new();
    for (dir, _) in PAGE_DIRS {
        walk(&root.join(dir), dir, 0, &mut files);
    }
    files.sort();
    Ok(Some(
        files
            .into_iter()
            .filter_map(|rel| {
                let text = fs::read_to_string(root.join(&rel)).ok()?;
                page(&rel, &text)
            })
            .collect(),
    ))
}

fn walk(dir: &Path, rel: &str, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let child = format!("{rel}/{name}");
        if kind.is_dir() && depth < MAX_DEPTH {
            walk(&entry.path(), &child, depth + 1, out);
        } else if kind.is_file() && name.ends_with(".md") && name != "index.md" {
            out.push(child);
        }
    }
}

/// A page from its vault-relative path and text; `None` outside the page folders.
pub fn page(path: &str, text: &str) -> Option<Page> {
    let kind = PAGE_DIRS
        .iter()
        .find(|(dir, _)| path.strip_prefix(dir).is_some_and(|r| r.starts_with('/')))?
        .1;
    let (front_matter, body) = split_front_matter(text);
    let scalar = |key: &str| front_matter_scalar(front_matter, key);
    let stem = stem(path);
    let title = scalar("title")
        .or_else(|| first_heading(body))
        .unwrap_or_else(|| stem.to_string());
    Some(Page {
        path: path.to_string(),
        kind,
        title,
        id: scalar("id"),
        source_ids: front_matter_list(front_matter, "sourceIds"),
        fields: reported(&scalar, path),
        aliases: front_matter_list(front_matter, "aliases"),
        front_matter: front_matter.to_string(),
        body: body.to_string(),
    })
}

/// The fields a hit reports: [`REPORTED`] as the front matter has them, with
/// `provenanceLabel` (after `provenanceMode`) for a page imported from memory or a local
/// path.
fn reported(scalar: &dyn Fn(&str) -> Option<String>, path: &str) -> Vec<(&'static str, String)> {
    let source_type = scalar("sourceType");
    let label = match source_type.as_deref() {
        Some("memory-bridge-events") => Some(("bridge events", "bridgeRelativePath")),
        Some("memory-bridge") => Some(("bridge", "bridgeRelativePath")),
        Some("memory-unsafe-local") => Some(("unsafe-local", "unsafeLocalRelativePath")),
        _ if scalar("provenanceMode").as_deref() == Some("unsafe-local") => {
            Some(("unsafe-local", "unsafeLocalRelativePath"))
        }
        _ => None,
    }
    .map(|(what, key)| format!("{what}: {}", scalar(key).as_deref().unwrap_or(path)));
    let mut out: Vec<(&'static str, String)> = REPORTED
        .iter()
        .filter_map(|&key| scalar(key).map(|v| (key, v)))
        .collect();
    if let Some(label) = label {
        out.push(("provenanceLabel", label));
    }
    out
}

/// A page's file name without `.md`.
fn stem(path: &str) -> &str {
    path.rsplit('/')
        .next()
        .unwrap_or(path)
        .trim_end_matches(".md")
}

/// `(front matter, body)`: a leading `---` line, the front matter, a closing `---` line.
fn split_front_matter(text: &str) -> (&str, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return ("", text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" && offset > 0 {
            let front = rest[..offset].trim_end_matches(['\r', '\n']);
            return (front, &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    ("", text)
}

/// A top-level `key: value` of the front matter, unquoted and trimmed; `None` when absent,
/// empty or not a plain scalar.
fn front_matter_scalar(front: &str, key: &str) -> Option<String> {
    let value = top_level(front, key)?.trim();
    let value = unquote(value);
    (!value.is_empty() && !value.starts_with(['[', '{', '|', '>'])).then(|| value.to_string())
}

/// A top-level list of the front matter: `key: [a, b]`, `key:` then `- a` lines, or one
/// scalar.
fn front_matter_list(front: &str, key: &str) -> Vec<String> {
    let Some(value) = top_level(front, key) else {
        return Vec::new();
    };
    let value = value.trim();
    let items: Vec<String> = if let Some(inner) = value.strip_prefix('[') {
        inner
            .trim_end_matches(']')
            .split(',')
            .map(|s| unquote(s.trim()).to_string())
            .collect()
    } else if value.is_empty() {
        let mut lines = front.lines().skip_while(|l| !is_key_line(l, key)).skip(1);
        let mut items = Vec::new();
        for line in lines.by_ref() {
            match line.trim_start().strip_prefix("- ") {
                Some(item) if line.starts_with([' ', '-']) => {
                    items.push(unquote(item.trim()).to_string())
                }
                _ => break,
            }
        }
        items
    } else {
        vec![unquote(value).to_string()]
    };
    items.into_iter().filter(|s| !s.is_empty()).collect()
}

fn is_key_line(line: &str, key: &str) -> bool {
    line.strip_prefix(key)
        .is_some_and(|rest| rest.trim_start().starts_with(':'))
}

/// The text after `key:` on its top-level line.
fn top_level<'a>(front: &'a str, key: &str) -> Option<&'a str> {
    front
        .lines()
        .find(|l| is_key_line(l, key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v)
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// The first `# ` heading's text.
fn first_heading(body: &str) -> Option<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix('#'))
        .find(|rest| rest.starts_with([' ', '\t']))
        .map(|rest| rest.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// The body's lines a search reads, with their body line numbers: without the generated
/// "related" block and the lines that are only an `openclaw:wiki:` / `openclaw:human:`
/// marker comment.
fn searchable_lines(body: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut in_related = false;
    for (index, line) in body.split('\n').enumerate() {
        let line = line.trim_end_matches('\r');
        let trimmed = line.trim();
        if trimmed.contains("<!-- openclaw:wiki:related:start -->") {
            in_related = !trimmed.contains("<!-- openclaw:wiki:related:end -->");
            continue;
        }
        if in_related {
            in_related = !trimmed.contains("<!-- openclaw:wiki:related:end -->");
            continue;
        }
        let marker = trimmed.starts_with("<!--")
            && trimmed.ends_with("-->")
            && trimmed[4..].trim_start().starts_with("openclaw:")
            && ["openclaw:wiki:", "openclaw:human:"]
                .iter()
                .any(|m| trimmed[4..].trim_start().starts_with(m));
        if !marker {
            out.push((index + 1, line));
        }
    }
    out
}

/// The query's words as OpenClaw splits them: runs of ASCII letters, digits and `@._-`, at
/// least two long, lower-cased, first occurrence kept.
fn words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query
        .split(|c: char| !(c.is_ascii_alphanumeric() || "@._-".contains(c)))
        .filter(|w| w.len() >= 2)
    {
        let word = word.to_lowercase();
        if !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// A page's score for `query` (0 when it does not match), as memory-wiki's `auto` mode
/// scores it (see the module docs).
pub fn score(page: &Page, query: &str) -> f64 {
    let q = query.trim().to_lowercase();
    let words = words(&q);
    let title = page.title.to_lowercase();
    let path = page.path.to_lowercase();
    let id = page.id.as_deref().unwrap_or("").to_lowercase();
    let meta = format!(
        "{}\n{}\n{}\n{}",
        page.title,
        page.path,
        page.id.as_deref().unwrap_or(""),
        page.front_matter
    )
    .to_lowercase();
    let body = searchable_lines(&page.body)
        .iter()
        .map(|(_, l)| *l)
        .collect::<Vec<_>>()
        .join("\n")
        .to_lowercase();
    let fields = [&title, &path, &id, &meta, &body];
    let exact = !q.is_empty() && fields.iter().any(|f| f.contains(&q));
    let all_words = !words.is_empty()
        && words
            .iter()
            .all(|w| fields.iter().any(|f| f.contains(w.as_str())));
    if !exact && !all_words {
        return 0.0;
    }
    let has = |f: &str| !q.is_empty() && f.contains(&q);
    let mut score = 1;
    score += if title == q {
        50
    } else if has(&title) {
        20
    } else {
        0
    };
    score += if has(&path) { 10 } else { 0 };
    score += if has(&id) { 20 } else { 0 };
    if page.source_ids.iter().any(|s| has(&s.to_lowercase())) {
        score += 12;
    }
    if !q.is_empty() {
        score += body.matches(q.as_str()).count().min(10);
    }
    for w in &words {
        let w = w.as_str();
        score += if title.contains(w) { 8 } else { 0 };
        score += if path.contains(w) || id.contains(w) {
            6
        } else {
            0
        };
        score += if meta.contains(w) { 4 } else { 0 };
        score += if body.contains(w) { 1 } else { 0 };
    }
    score as f64
}

/// The body line a hit shows: the first holding the query (or all its words), else the one
/// holding most of its words, else the first non-blank line; with its line number.
fn snippet(page: &Page, query: &str) -> (usize, String) {
    let q = query.trim().to_lowercase();
    let words = words(&q);
    let lines: Vec<(usize, &str)> = searchable_lines(&page.body)
        .into_iter()
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    let matches = |line: &str| {
        let line = line.to_lowercase();
        line.contains(&q) || (!words.is_empty() && words.iter().all(|w| line.contains(w.as_str())))
    };
    let best = lines.iter().find(|(_, l)| matches(l)).or_else(|| {
        let hits = |l: &str| {
            let l = l.to_lowercase();
            words.iter().filter(|w| l.contains(w.as_str())).count()
        };
        let mut best: Option<&(usize, &str)> = None;
        let mut most = 0;
        for line in &lines {
            let found = hits(line.1);
            if found > most {
                (most, best) = (found, Some(line));
            }
        }
        best
    });
    best.or_else(|| lines.iter().find(|(_, l)| l.trim() != "---"))
        .map_or((1, String::new()), |(n, l)| (*n, l.trim().to_string()))
}

/// The pages of `pages` matching `query`, best first (score, then path).
pub fn search(pages: Vec<Page>, query: &str) -> Vec<WikiHit> {
    let mut hits: Vec<WikiHit> = pages
        .into_iter()
        .filter_map(|page| {
            let score = score(&page, query);
            (score > 0.0).then(|| {
                let (line, snippet) = snippet(&page, query);
                WikiHit {
                    page,
                    score,
                    snippet,
                    line,
                }
            })
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.page.path.cmp(&b.page.path))
    });
    hits
}

/// The page a `memory_get` lookup names: its path (with or without `.md`), its file stem,
/// or its front matter's `id`, in that order of preference.
pub fn lookup(pages: &[Page], lookup: &str) -> Option<usize> {
    let key = lookup.trim().replace('\\', "/");
    let key = match key.ends_with(".md") {
        true => key,
        false => key.trim_end_matches('/').to_string(),
    };
    let with_md = match key.ends_with(".md") {
        true => key.clone(),
        false => format!("{key}.md"),
    };

    let tests: [&dyn Fn(&Page) -> bool; 5] = [
        &|p| p.path == key,
        &|p| p.path == with_md,
        &|p| p.path.strip_suffix(".md") == Some(key.as_str()),
        &|p| stem(&p.path) == key,
        &|p| p.id.as_deref() == Some(key.as_str()),
    ];
    tests.iter().find_map(|test| pages.iter().position(test))
}

#[cfg(test)]
mod tests;
