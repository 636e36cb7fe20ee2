//! The documentation holds: every relative link of README.md, CHANGELOG.md, docs/ and the
//! plugin's README leads to a file and, with an anchor, to a heading of it; and every
//! `memoria` command the README shows parses (its options are the binary's).

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files whose links must resolve.
fn documents() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["README.md", "CHANGELOG.md", "models/README.md"]
        .iter()
        .map(|f| root().join(f))
        .chain([root().join("integrations/openclaw/README.md")])
        .collect();
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The lines outside fenced code blocks, with their numbers (from 1).
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((n + 1, line));
        }
    }
    out
}

/// GitHub's anchor of a heading: lowercase, spaces to `-`, punctuation other than `-` and
/// `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every heading's anchor in `text`, duplicates numbered as GitHub numbers them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        // Inline code and links keep their text.
        let heading: String = heading.replace('`', "");
        let base = slug(&heading);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(match *n {
            0 => base.clone(),
            n => format!("{base}-{n}"),
        });
        *n += 1;
    }
    out
}

/// `(target, line)` of every Markdown link `[text](target)` outside code.
fn links(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (n, line) in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((after[..end].to_string(), n));
            rest = &after[end..];
        }
    }
    out
}

fn broken_links(file: &Path) -> Vec<String> {
    let text = fs::read_to_string(file).unwrap();
    let mut broken = Vec::new();
    for (target, line) in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let dest = match path {
            "" => file.to_path_buf(),
            path => file.parent().unwrap().join(path),
        };
        let shown = format!("{}:{line}: {target}", file.display());
        if !dest.exists() {
            broken.push(format!("{shown}: no such file"));
            continue;
        }
        if let (Some(anchor), true) = (anchor, dest.extension().is_some_and(|e| e == "md")) {
            if !anchors(&fs::read_to_string(&dest).unwrap()).contains(anchor) {
                broken.push(format!("{shown}: no such heading"));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let broken: Vec<String> = documents().iter().flat_map(|f| broken_links(f)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_checker_sees_what_it_must() {
    assert_eq!(
        slug(" Live memory: memoria mcp and memoria watch"),
        "live-memory-memoria-mcp-and-memoria-watch"
    );
    let text =
        "# A\n## Two words\n## Two words\n```\n# not a heading\n[x](nowhere.md)\n```\n[y](a.md#b)";
    assert_eq!(
        anchors(text),
        ["a", "two-words", "two-words-1"].map(String::from).into()
    );
    assert_eq!(links(text), vec![("a.md#b".to_string(), 8)]);
}

/// The `memoria …` commands of the README's code blocks, comments cut.
fn readme_commands() -> Vec<String> {
    let text = fs::read_to_string(root().join("README.md")).unwrap();
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let line = line.split(" # ").next().unwrap_or("").trim();
        // A command, not a Cargo.toml line (`memoria = { … }`).
        if fenced && line.starts_with("memoria ") && !line.starts_with("memoria =") {
            out.push(line.to_string());
        }
    }
    out
}

/// Splits a shell command line into its words (double quotes group, no expansions).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[test]
fn the_readmes_commands_parse() {
    let commands = readme_commands();
    assert!(commands.len() >= 4, "{commands:?}");
    for line in commands {
        // Everything before `--help` must parse; the help then ends the run.
        let args = &words(&line)[1..];
        let args: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .take_while(|a| *a != ">")
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_memoria"))
            .args(&args)
            .arg("--help")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README's `{line}` does not parse: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
