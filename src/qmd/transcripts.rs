//! `memory.qmd.sessions`: the agent's transcripts exported as Markdown, for QMD's
//! `sessions` collection (as OpenClaw does, so `memory_search` recalls recent conversations
//! through QMD).
//!
//! Each `<stateDir>/agents/<agentId>/sessions/<id>.jsonl` becomes `<export dir>/<id>.md`: a
//! `# Session <id>` heading, then its `User:` / `Assistant:` lines, secrets redacted (the
//! same reading as memoria's own session indexing). An export is rewritten only when its
//! transcript is newer. Transcripts last written more than `retentionDays` ago are not
//! exported, and their exports are removed. memoria removes only files it wrote: their names
//! are kept in the export directory's `.memoria-export.json`, so a user's own files there
//! are never touched.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::atomic::write_atomic;
use crate::transcript::transcript;

/// The collection's name.
pub(crate) const COLLECTION: &str = "sessions";
/// The names memoria wrote in the export directory.
const MANIFEST: &str = ".memoria-export.json";

/// What one export did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Exported {
    pub written: usize,
    pub removed: usize,
    pub kept: usize,
}

/// Exports the transcripts of `source` into `dir` (see the module docs); `retention` bounds
/// the age of a transcript by its last write.
pub(crate) fn export(
    source: &Path,
    dir: &Path,
    retention: Option<Duration>,
    now: SystemTime,
) -> Result<Exported, String> {
    let io = |path: &Path, err: std::io::Error| format!("{}: {err}", path.display());
    fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let manifest_path = dir.join(MANIFEST);
    let mut ours: BTreeSet<String> = fs::read(&manifest_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let mut wanted = BTreeSet::new();
    let mut done = Exported::default();
    let entries = match fs::read_dir(source) {
        Ok(entries) => entries.flatten().collect(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(err) => return Err(io(source, err)),
    };
    for entry in entries {
        let path = entry.path();
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".jsonl"))
        else {
            continue;
        };
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue; // symlinks and directories are not followed
        }
        let modified = meta.modified().unwrap_or(now);
        if retention.is_some_and(|keep| now.duration_since(modified).unwrap_or_default() > keep) {
            continue;
        }
        let name = format!("{stem}.md");
        wanted.insert(name.clone());
        let target = dir.join(&name);
        let fresh = fs::metadata(&target)
            .and_then(|m| m.modified())
            .is_ok_and(|exported| exported >= modified);
        if fresh && ours.contains(&name) {
            done.kept += 1;
            continue;
        }
        if target.exists() && !ours.contains(&name) {
            continue; // a file of the user's with that name: not ours to replace
        }
        let jsonl = fs::read(&path).map_err(|e| io(&path, e))?;
        let text = transcript(&String::from_utf8_lossy(&jsonl), stem).text;
        write_atomic(&target, format!("# Session {stem}\n\n{text}").as_bytes())
            .map_err(|e| e.to_string())?;
        ours.insert(name);
        done.written += 1;
    }
    let stale: Vec<String> = ours.difference(&wanted).cloned().collect();
    for name in stale {
        match fs::remove_file(dir.join(&name)) {
            Ok(()) => done.removed += 1,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(io(&dir.join(&name), err)),
        }
        ours.remove(&name);
    }
    let bytes = serde_json::to_vec_pretty(&ours).unwrap_or_default();
    write_atomic(&manifest_path, &bytes).map_err(|e| e.to_string())?;
    Ok(done)
}

/// The export directory: `exportDir` (relative to the workspace), else `<qmd home>/sessions`.
pub(crate) fn export_dir(configured: Option<&Path>, workspace: &Path, home: &Path) -> PathBuf {
    match configured {
        Some(dir) => crate::workspace::absolute_in(workspace, dir),
        None => home.join(COLLECTION),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"type":"message","message":{"role":"user","content":"my key is sk-abcdefghijklmnopqrstuvwx"}}"#;

    #[test]
    fn exports_refreshes_expires_and_removes_only_its_own() {
        let tmp = tempfile::tempdir().unwrap();
        let source = tmp.path().join("sessions");
        let dir = tmp.path().join("export");
        fs::create_dir_all(&source).unwrap();
        fs::create_dir_all(&dir).unwrap();
        fs::write(source.join("a.jsonl"), format!("{LINE}\n")).unwrap();
        fs::write(source.join("b.jsonl"), format!("{LINE}\n")).unwrap();
        fs::write(dir.join("mine.md"), "the user's own file").unwrap();
        let now = SystemTime::now();
        let done = export(&source, &dir, None, now).unwrap();
        assert_eq!(
            done,
            Exported {
                written: 2,
                removed: 0,
                kept: 0
            }
        );
        let a = fs::read_to_string(dir.join("a.md")).unwrap();
        assert!(a.starts_with("# Session a\n\nUser: my key is "), "{a}");
        assert!(!a.contains("sk-abcdefghijklmnopqrstuvwx"), "redacted: {a}");
        // Unchanged transcripts are not rewritten.
        assert_eq!(export(&source, &dir, None, now).unwrap().kept, 2);
        // A transcript gone: its export goes; the user's file stays.
        fs::remove_file(source.join("b.jsonl")).unwrap();
        let done = export(&source, &dir, None, now).unwrap();
        assert_eq!((done.removed, done.kept), (1, 1));
        assert!(!dir.join("b.md").exists());
        assert_eq!(
            fs::read_to_string(dir.join("mine.md")).unwrap(),
            "the user's own file"
        );
        // Retention: a transcript last written 3 days ago is dropped with retentionDays 2.
        let later = now + Duration::from_secs(3 * 86_400);
        let done = export(&source, &dir, Some(Duration::from_secs(2 * 86_400)), later).unwrap();
        assert_eq!(done.removed, 1);
        assert!(!dir.join("a.md").exists());
        assert!(dir.join("mine.md").exists());
        // A missing sessions directory exports nothing and fails nothing.
        assert_eq!(
            export(&tmp.path().join("none"), &dir, None, now).unwrap(),
            Exported::default()
        );
    }
}
