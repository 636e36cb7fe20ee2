//! The house rules of `docs/ARCHITECTURE.md`, checked against the source (as
//! rust-analyzer's tidy tests keep its docs true).
//!
//! The code map's table is the layering: its rows, top to bottom, go from the lowest layer
//! to the highest, and a module may import only modules of its own row or of rows above it.
//! Its last column names, per row, the lower modules that row must not import either. The
//! section "Imports that run up" lists the only exceptions (at most 6), each with its
//! reason. Beside the table:
//! - every top-level module under `src/` is in the table, and every module there exists;
//! - no circle of imports between files;
//! - the binary (`src/cli/`) reaches the library only through its public API;
//! - `src/lib.rs` stays a façade (≤ 400 lines), `src/cli/main.rs` a dispatcher (≤ 250),
//!   and no other file under `src/` passes 800 lines, test files excepted.
//!
//! An import is a `use` declaration or a path written in code (`crate::a::b`,
//! `super::x`); comments, doc comments and string literals are not code. A directory
//! module's `mod.rs` re-exporting its own children (`pub use child::Item`) names them for
//! the outside and is not counted as importing them, so children may use their parent's
//! items without that making a circle.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

const MAX_UPWARD: usize = 6;

/// A file's module path (`["search", "pipeline"]`; `[]` for `lib.rs`).
type ModPath = Vec<String>;

struct Source {
    path: PathBuf,
    module: ModPath,
    code: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a Rust file without comments and with string and char literals emptied.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                // A raw string: r"…", r#"…"#.
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                loop {
                    if j >= b.len() {
                        break;
                    }
                    if b[j] == b'"' && (0..hashes).all(|h| b.get(j + 1 + h) == Some(&b'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.push_str("\"\"");
                i = j;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
                let rest = &src[i + 1..];
                let close = if rest.starts_with('\\') {
                    rest.find('\'').map(|p| p.max(2))
                } else {
                    rest.chars()
                        .next()
                        .filter(|c| rest[c.len_utf8()..].starts_with('\''))
                        .map(|c| c.len_utf8())
                };
                match close {
                    Some(len) => {
                        i += len + 2;
                        out.push_str("' '");
                    }
                    None => {
                        out.push('\'');
                        i += 1;
                    }
                }
            }
            _ => {
                let c = src[i..].chars().next().unwrap();
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

fn sources() -> Vec<Source> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(&src).unwrap().with_extension("");
            let mut module: ModPath = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            let code = without_test_modules(&strip(&fs::read_to_string(&path).unwrap()));
            Source { path, module, code }
        })
        .collect()
}

/// `code` without its inline `#[cfg(test)] mod … { … }` blocks: tests, like `tests.rs`
/// files, may reach anywhere (and their `super` is the file, not its parent).
fn without_test_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(pos) = rest.find("#[cfg(test)]") {
        let after = rest[pos + "#[cfg(test)]".len()..].trim_start();
        let is_module = after.starts_with("mod ")
            && after
                .find('{')
                .is_some_and(|b| after.find(';').is_none_or(|s| b < s));
        if !is_module {
            out.push_str(&rest[..pos + 1]);
            rest = &rest[pos + 1..];
            continue;
        }
        out.push_str(&rest[..pos]);
        let open = rest.len() - after.len() + after.find('{').unwrap_or(0);
        let mut depth = 0;
        let mut end = rest.len();
        for (i, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The paths a `use` tree names (`a::{b, c::d}` → `a::b`, `a::c::d`).
fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let base = tree[..open].trim().trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let prefix = join(prefix, base);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&prefix, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&prefix, &inner[start..], out);
    } else {
        let tree = tree.split(" as ").next().unwrap_or(tree).trim();
        if !tree.is_empty() {
            out.push(join(prefix, tree));
        }
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}::{b}"),
    }
}

fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `(path, is a re-export)` for every `use` declaration, and every path written in code
/// that starts with `crate::`, `super::` or `self::`.
fn imports(code: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = code;
    let mut uses = Vec::new();
    while let Some(pos) = rest.find("use ") {
        let before = &rest[..pos];
        let at_word = before.chars().last().is_none_or(|c| !ident_char(c));
        let after = &rest[pos + 4..];
        if at_word {
            if let Some(end) = after.find(';') {
                let reexport = before
                    .trim_end()
                    .rsplit(['\n', ';', '{', '}'])
                    .next()
                    .is_some_and(|s| s.trim_start().starts_with("pub"));
                let mut paths = Vec::new();
                expand("", &after[..end], &mut paths);
                uses.extend(paths.into_iter().map(|p| (p, reexport)));
                rest = &after[end..];
                continue;
            }
        }
        rest = after;
    }
    out.extend(uses);
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(pos) = code[from..].find(start) {
            let at = from + pos;
            from = at + start.len();
            if code[..at].chars().last().is_some_and(ident_char) {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(ident_char(c) || c == ':'))
                .map_or(code.len(), |e| at + e);
            out.push((code[at..end].trim_end_matches(':').to_string(), false));
        }
    }
    out
}

/// The module path an import path points into, resolved against the file modules
/// `known`: the longest known prefix (`[]`, the crate root, when none is).
fn resolve(from: &ModPath, path: &str, known: &BTreeSet<ModPath>) -> Option<ModPath> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: ModPath = match segs.first().copied() {
        Some("crate") => {
            segs.remove(0);
            Vec::new()
        }
        Some("super") => {
            let mut base = from.clone();
            while segs.first() == Some(&"super") {
                base.pop();
                segs.remove(0);
            }
            base
        }
        Some("self") => {
            segs.remove(0);
            from.clone()
        }
        Some(first) => {
            // A child module named without `self::` (`use child::Item` in a `mod.rs`).
            let mut child = from.clone();
            child.push(first.to_string());
            if !known.contains(&child) {
                return None;
            }
            from.clone()
        }
        None => return None,
    };
    let mut best = base.clone();
    for seg in segs {
        base.push(seg.to_string());
        if known.contains(&base) {
            best = base.clone();
        } else {
            break;
        }
    }
    Some(best)
}

/// Every import edge between distinct files: (from, to).
fn edges(sources: &[Source]) -> BTreeSet<(ModPath, ModPath)> {
    let known: BTreeSet<ModPath> = sources.iter().map(|s| s.module.clone()).collect();
    let mut edges = BTreeSet::new();
    for source in sources {
        if is_test_file(&source.path) || source.module.first().is_some_and(|m| m == "cli") {
            continue;
        }
        for (path, reexport) in imports(&source.code) {
            let Some(to) = resolve(&source.module, &path, &known) else {
                continue;
            };
            // A mod.rs naming its own children for the outside.
            let own_child = to.len() > source.module.len() && to.starts_with(&source.module);
            if to == source.module || (reexport && own_child) {
                continue;
            }
            edges.insert((source.module.clone(), to));
        }
    }
    edges
}

fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
}

fn name(module: &ModPath) -> String {
    if module.is_empty() {
        "lib".into()
    } else {
        module.join("::")
    }
}

/// The top-level module a file belongs to (`lib` for the crate root).
fn top(module: &ModPath) -> String {
    module.first().cloned().unwrap_or_else(|| "lib".into())
}

struct Row {
    modules: Vec<String>,
    forbidden: Vec<String>,
}

/// Backticked names in a table cell, as modules: `search/` → `search`, `lib.rs` → `lib`.
fn names(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|n| n.trim_end_matches('/').trim_end_matches(".rs").to_string())
        .collect()
}

/// The code map's rows, lowest layer first, and the allowed upward imports.
fn house_plan() -> (Vec<Row>, Vec<(String, String)>) {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let map = &doc[doc.find("## Code map").expect("a \"## Code map\" section")..];
    let rows = map
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
            Row {
                modules: names(cells[0]),
                forbidden: names(cells[cells.len() - 1]),
            }
        })
        .collect();
    let section = &doc[doc
        .find("### Imports that run up")
        .expect("a \"### Imports that run up\" section")..];
    let allowed = section
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with("- "))
        .map(|l| {
            let n = names(l);
            (n[0].clone(), n[1].clone())
        })
        .collect();
    (rows, allowed)
}

/// A circle in `edges`, if there is one (by depth-first search).
fn find_cycle(edges: &BTreeSet<(ModPath, ModPath)>) -> Option<Vec<ModPath>> {
    let mut next: BTreeMap<&ModPath, Vec<&ModPath>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
    }
    // 0 unvisited, 1 on the stack, 2 done.
    let mut state: HashMap<&ModPath, u8> = HashMap::new();
    fn visit<'a>(
        node: &'a ModPath,
        next: &BTreeMap<&'a ModPath, Vec<&'a ModPath>>,
        state: &mut HashMap<&'a ModPath, u8>,
        stack: &mut Vec<&'a ModPath>,
    ) -> Option<Vec<ModPath>> {
        state.insert(node, 1);
        stack.push(node);
        for &to in next.get(node).map(Vec::as_slice).unwrap_or(&[]) {
            match state.get(to).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|m| *m == to).unwrap();
                    let mut cycle: Vec<ModPath> =
                        stack[start..].iter().map(|m| (*m).clone()).collect();
                    cycle.push(to.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(cycle) = visit(to, next, state, stack) {
                        return Some(cycle);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node, 2);
        None
    }
    let nodes: Vec<&ModPath> = next.keys().copied().collect();
    for node in nodes {
        if state.get(node).copied().unwrap_or(0) == 0 {
            if let Some(cycle) = visit(node, &next, &mut state, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

#[test]
fn the_table_names_every_module() {
    let (rows, _) = house_plan();
    let in_table: BTreeSet<String> = rows.iter().flat_map(|r| r.modules.clone()).collect();
    let in_src: BTreeSet<String> = sources().iter().map(|s| top(&s.module)).collect();
    let missing: Vec<_> = in_src.difference(&in_table).collect();
    let stale: Vec<_> = in_table.difference(&in_src).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/ARCHITECTURE.md's code map does not match src/: not in the table {missing:?}, \
         not in src/ {stale:?}"
    );
}

#[test]
fn modules_import_only_downward_and_nothing_they_must_not_know() {
    let (rows, allowed) = house_plan();
    let layer: HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.modules.iter().map(move |m| (m.as_str(), i)))
        .collect();
    assert!(
        allowed.len() <= MAX_UPWARD,
        "more than {MAX_UPWARD} upward imports allowed"
    );
    let mut problems = Vec::new();
    let mut upward = BTreeSet::new();
    for (from, to) in edges(&sources()) {
        let (a, b) = (top(&from), top(&to));
        if a == b {
            continue;
        }
        let (Some(&la), Some(&lb)) = (layer.get(a.as_str()), layer.get(b.as_str())) else {
            continue; // the_table_names_every_module says which
        };
        if rows[la].forbidden.contains(&b) {
            problems.push(format!(
                "{} imports {} ({a} must not know {b})",
                name(&from),
                name(&to)
            ));
        }
        if lb > la {
            upward.insert((a.clone(), b.clone()));
            if !allowed.contains(&(a.clone(), b.clone())) {
                problems.push(format!(
                    "{} imports {}: {b} is a higher layer than {a} (allowed only under \
                     \"Imports that run up\")",
                    name(&from),
                    name(&to)
                ));
            }
        }
    }
    for pair in &allowed {
        if !upward.contains(pair) {
            problems.push(format!(
                "{pair:?} is listed under \"Imports that run up\" but no longer happens: remove it"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The crates that keep the local store; `sync/` and `search/` reach storage only through
/// `store`'s traits (docs/ARCHITECTURE.md, "The storage seam").
const STORAGE_CRATES: &[&str] = &["tantivy", "redb", "hnsw_rs", "lancedb"];

/// `sync/` and `search/` import no storage crate: the imports of `sources` that name one.
fn storage_imports(sources: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources {
        if !matches!(top(&source.module).as_str(), "sync" | "search") {
            continue;
        }
        let mut imported = BTreeSet::new();
        for (path, _) in imports(&without_test_modules(&source.code)) {
            let first = path
                .trim_start_matches("::")
                .split("::")
                .next()
                .unwrap_or("");
            if STORAGE_CRATES.contains(&first) {
                found.push(format!("{} imports {path}", source.path.display()));
                imported.insert(first.to_string());
            }
        }
        // A path written in code (`tantivy::Index::open`), not only `use`.
        let code = without_test_modules(&source.code);
        for krate in STORAGE_CRATES.iter().filter(|k| !imported.contains(**k)) {
            let needle = format!("{krate}::");
            if let Some(at) = code.find(&needle) {
                let before = code[..at].chars().last();
                if before.is_none_or(|c| !(ident_char(c) || c == ':')) {
                    found.push(format!("{} names {krate}::", source.path.display()));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn sync_and_search_reach_storage_through_the_store_traits_only() {
    let found = storage_imports(&sources());
    assert!(
        found.is_empty(),
        "sync/ and search/ must use crate::store's traits, not the storage crates:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_import_circle_between_files() {
    if let Some(cycle) = find_cycle(&edges(&sources())) {
        let names: Vec<String> = cycle.iter().map(name).collect();
        panic!("import circle: {}", names.join(" → "));
    }
}

#[test]
fn the_binary_uses_the_public_api_only() {
    let mut files = Vec::new();
    rust_files(&root().join("src/cli"), &mut files);
    for file in files {
        let code = strip(&fs::read_to_string(&file).unwrap());
        assert!(
            !code.contains("memoria::internals"),
            "{}: the CLI uses memoria::internals",
            file.display()
        );
    }
}

#[test]
fn files_stay_small() {
    let limits = [("lib.rs", 400), ("cli/main.rs", 250)];
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let lines = fs::read_to_string(&file).unwrap().lines().count();
        let limit = limits
            .iter()
            .find(|(name, _)| *name == rel)
            .map_or(800, |(_, limit)| *limit);
        if lines > limit && !is_test_file(&file) {
            problems.push(format!("src/{rel}: {lines} lines (at most {limit})"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_sees_what_it_must() {
    // The parser itself: comments and strings are not code; use trees expand.
    let code = strip(
        "use crate::a::{b, c::{d, e as f}}; // crate::x\nlet s = \"crate::y\"; crate::z::w();",
    );
    let found: Vec<String> = imports(&code).into_iter().map(|(p, _)| p).collect();
    assert!(found.contains(&"crate::a::b".to_string()), "{found:?}");
    assert!(found.contains(&"crate::a::c::d".to_string()), "{found:?}");
    assert!(found.contains(&"crate::a::c::e".to_string()), "{found:?}");
    assert!(found.contains(&"crate::z::w".to_string()), "{found:?}");
    assert!(
        !found.iter().any(|p| p.contains('x') || p.contains('y')),
        "{found:?}"
    );
    let tested = without_test_modules(
        "fn a() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    fn b() { {} }\n}\nfn c() {}",
    );
    assert_eq!(tested, "fn a() {}\n\nfn c() {}");
    let reexports: Vec<(String, bool)> = imports(&strip("pub use child::Item;\nuse other::X;"));
    assert_eq!(reexports[0], ("child::Item".to_string(), true));
    assert_eq!(reexports[1], ("other::X".to_string(), false));
    // A circle is found.
    let m = |s: &str| vec![s.to_string()];
    let edges: BTreeSet<_> = [(m("a"), m("b")), (m("b"), m("c")), (m("c"), m("a"))].into();
    assert!(find_cycle(&edges).is_some());
    let edges: BTreeSet<_> = [(m("a"), m("b")), (m("b"), m("c"))].into();
    assert!(find_cycle(&edges).is_none());
    // A storage crate named in search/ or sync/ is found, by `use` or by path; elsewhere,
    // or in a test module, it is not.
    let source = |module: &str, code: &str| Source {
        path: PathBuf::from(format!("src/{module}/x.rs")),
        module: vec![module.to_string(), "x".to_string()],
        code: strip(code),
    };
    let found = storage_imports(&[
        source("search", "use tantivy::Index;"),
        source("sync", "fn f() { let _ = redb::Database::create(\"x\"); }"),
        source("index", "use tantivy::Index;"),
        source(
            "search",
            "#[cfg(test)]\nmod tests {\n    use hnsw_rs::Hnsw;\n}",
        ),
    ]);
    assert_eq!(
        found,
        [
            "src/search/x.rs imports tantivy::Index",
            "src/sync/x.rs names redb::"
        ],
    );
}
