//! Discovery, text decoding and the `memory_get` path policy, on real directories.

use std::fs;
use std::path::Path;

use super::discover::*;
use super::get::*;
use super::paths::*;
use super::text::*;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

#[test]
fn discovers_memory_files_and_skips_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    write(&ws.join("MEMORY.md"), "long term");
    write(&ws.join("NOTES.md"), "not memory");
    write(&ws.join("memory/2026-01-12.md"), "daily");
    write(&ws.join("memory/projects/a.md"), "nested");
    write(&ws.join("memory/projects/a.txt"), "not markdown");
    write(&ws.join("memory/node_modules/x.md"), "ignored dir");
    write(&ws.join("memory/.git/y.md"), "ignored dir");
    write(&tmp.path().join("outside/o.md"), "outside");
    write(&tmp.path().join("outside/deep/p.md"), "outside deep");
    write(&tmp.path().join("single.md"), "single file");
    write(&tmp.path().join("plain.txt"), "plain");
    std::os::unix::fs::symlink(ws.join("MEMORY.md"), ws.join("memory/link.md")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside"), ws.join("memory/linkdir")).unwrap();
    std::os::unix::fs::symlink(ws.join("memory"), tmp.path().join("alias")).unwrap();
    let extras = vec![
        "../outside".to_string(),
        tmp.path().join("single.md").display().to_string(),
        "../plain.txt".to_string(),
        "missing".to_string(),
        "memory/projects".to_string(), // duplicates memory/** → de-duplicated
        "../alias/projects".to_string(), // the same, through a symlinked ancestor
    ];
    let found = discover(&ws, ROOT_FILES_DOCUMENTED, &extras, &[], None);
    let paths: Vec<_> = found.files.iter().map(|f| f.rel_path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "../outside/deep/p.md",
            "../outside/o.md",
            "../single.md",
            "MEMORY.md",
            "memory/2026-01-12.md",
            "memory/projects/a.md",
        ]
    );
    // `missing`, `../plain.txt`, and the skipped symlink memory/link.md.
    assert_eq!(found.warnings.len(), 3, "{:?}", found.warnings);
    assert!(found
        .warnings
        .iter()
        .any(|w| w.contains("link.md: is a symlink")));
}

/// File names that are not UTF-8 are skipped with a warning naming each, never merged
/// into one lossy path.
#[test]
fn non_utf8_names_are_skipped_with_a_warning() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let memory = ws.join("memory");
    write(&memory.join("ok.md"), "fine");
    for name in [&b"a\xff.md"[..], b"a\xfe.md", b"dir\xff"] {
        let path = memory.join(OsStr::from_bytes(name));
        if name.ends_with(b".md") {
            write(&path, "x");
        } else {
            write(&path.join("inner.md"), "y");
        }
    }
    let found = discover(&ws, ROOT_FILES_DOCUMENTED, &[], &[], None);
    let paths: Vec<_> = found.files.iter().map(|f| f.rel_path.as_str()).collect();
    assert_eq!(paths, vec!["memory/ok.md"]);
    assert_eq!(found.warnings.len(), 3, "{:?}", found.warnings);
    assert!(found.warnings.iter().all(|w| w.contains("not valid UTF-8")));
}

/// Every skip says so: a symlinked `memory/` or `MEMORY.md`, a missing workspace.
#[test]
fn skipped_roots_are_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    write(&tmp.path().join("elsewhere/memory/a.md"), "a");
    write(&tmp.path().join("elsewhere/MEMORY.md"), "m");
    fs::create_dir_all(&ws).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("elsewhere/memory"), ws.join("memory")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("elsewhere/MEMORY.md"), ws.join("MEMORY.md"))
        .unwrap();
    let found = discover(&ws, ROOT_FILES_DOCUMENTED, &[], &[], None);
    assert!(found.files.is_empty());
    assert_eq!(found.warnings.len(), 2, "{:?}", found.warnings);
    assert!(found.warnings[0].starts_with("MEMORY.md: is a symlink"));
    assert!(found.warnings[1].starts_with("memory/: is a symlink"));

    let missing = discover(
        &tmp.path().join("no-such-ws"),
        ROOT_FILES_DOCUMENTED,
        &[],
        &[],
        None,
    );
    assert!(missing.files.is_empty());
    assert!(missing.warnings[0].contains("no-such-ws: not a directory"));
}

#[test]
fn invalid_utf8_is_read_lossily() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bad.md");
    fs::write(&path, b"ok \xff\xfe text").unwrap();
    let (text, lossy) = decode_text(fs::read(&path).unwrap());
    assert!(lossy);
    assert_eq!(text, "ok \u{fffd}\u{fffd} text");
}

#[test]
fn relative_paths() {
    let cases = [
        ("/a/ws", "/a/ws/memory/x.md", "memory/x.md"),
        ("/a/ws", "/a/notes/x.md", "../notes/x.md"),
        ("/a/ws", "/b/x.md", "../../b/x.md"),
        ("/a/ws/", "/a/ws/./MEMORY.md", "MEMORY.md"),
    ];
    for (base, target, want) in cases {
        assert_eq!(relative_path(Path::new(base), Path::new(target)), want);
    }
}

#[test]
fn get_path_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    write(&ws.join("MEMORY.md"), "m");
    write(&ws.join("NOTES.md"), "n");
    write(&ws.join("memory/a.md"), "a");
    write(&ws.join("memory/a.txt"), "t");
    write(&tmp.path().join("outside.md"), "o");
    write(&tmp.path().join("extra/e.md"), "e");
    write(&tmp.path().join("real/r.md"), "r");
    std::os::unix::fs::symlink(ws.join("NOTES.md"), ws.join("memory/link.md")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("real"), ws.join("memory/dirlink")).unwrap();
    let extras = vec!["../extra".to_string()];
    let outside_abs = tmp.path().join("outside.md").display().to_string();
    let inside_abs = ws.join("memory/a.md").display().to_string();
    let cases: Vec<(&str, bool)> = vec![
        ("MEMORY.md", true),
        ("memory.md", true), // allowed even when missing
        ("memory/a.md", true),
        ("memory/new/missing.md", true),
        ("./memory/a.md", true),
        (&inside_abs, true),
        ("../extra/e.md", true),
        ("NOTES.md", false),
        ("../outside.md", false),
        ("memory/../../x.md", false),
        ("memory/../NOTES.md", false),
        (&outside_abs, false),
        ("memory/link.md", false),
        ("memory/dirlink/r.md", false),
        ("memory/a.txt", false),
        ("memory", false),
        ("", false),
    ];
    for (path, allowed) in cases {
        let got = resolve_get_path(&ws, &extras, &[], path);
        assert_eq!(got.is_ok(), allowed, "path {path:?}: {got:?}");
    }
}

/// A file flipped between a regular file and a symlink to an outside file while it is
/// read: no read ever returns the outside file (the open refuses links, it does not
/// rely on the check before it).
#[test]
fn get_never_reads_through_a_symlink_swapped_in_concurrently() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    write(&ws.join("memory/x.md"), "inside");
    write(&tmp.path().join("secret.md"), "SECRET");
    let stop = AtomicBool::new(false);
    let (mut inside, mut outside, mut refused) = (0, 0, 0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let (file, link, regular) = (
                ws.join("memory/x.md"),
                ws.join("memory/x.link"),
                ws.join("memory/x.file"),
            );
            while !stop.load(Ordering::Relaxed) {
                let _ = fs::remove_file(&link);
                std::os::unix::fs::symlink(tmp.path().join("secret.md"), &link).unwrap();
                fs::rename(&link, &file).unwrap();
                fs::write(&regular, "inside").unwrap();
                fs::rename(&regular, &file).unwrap();
            }
        });
        // At least 5,000 reads, and on until both states were seen: on a loaded
        // machine the swapper can sleep through the first 5,000 (`inside 0, refused 5000`
        // once in 40 runs beside three busy loops).
        // The deadline only bounds a swapper that never runs.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut reads = 0;
        while reads < 5_000
            || ((inside == 0 || refused == 0) && std::time::Instant::now() < deadline)
        {
            reads += 1;
            if reads % 1_000 == 0 {
                std::thread::yield_now();
            }
            let read = resolve_get_path(&ws, &[], &[], "memory/x.md")
                .and_then(|target| read_allowed(&target, "memory/x.md"));
            match read {
                Ok(Some(bytes)) if bytes == b"SECRET" => outside += 1,
                Ok(_) => inside += 1,
                Err(_) => refused += 1,
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(outside, 0, "{outside} reads returned the outside file");
    assert!(
        inside > 0 && refused > 0,
        "inside {inside}, refused {refused}"
    );
}
