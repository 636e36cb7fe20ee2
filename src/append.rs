//! Appending to the daily log, for agents without file tools (`memory_append`,
//! `memoria append`). **This is the only place memoria writes to a memory file**, and it
//! only ever adds to the end of `memory/YYYY-MM-DD.md`: existing content is never
//! rewritten.
//!
//! - The block (the text, ending with a newline) is written with one `write(2)` on a file
//!   opened with `O_APPEND`, then `fsync`ed: concurrent appenders, in any process, never
//!   interleave or overwrite each other.
//! - **A crash never leaves half a block.** One `write(2)` is not enough for that: Linux
//!   stops a write between pages when the process is killed, and a power cut can keep a
//!   prefix. So before writing, the appender records its intent (the file's length and the
//!   block) in `memory/.<date>.md.memoria-append` (written atomically; not Markdown, so
//!   never indexed), and removes it once the block is fsynced. The next append to any day
//!   (`recover`) finds a leftover record and rolls it forward: if the file ends with a
//!   prefix of the block, exactly at the recorded length, the rest is appended (the block
//!   ends up whole); if it holds the block already, the record is just dropped; if the file
//!   changed otherwise (edited by hand since), it is left alone and the record dropped,
//!   with a warning. Until then `status` names the pending record.
//! - A new day's file appears with its `# YYYY-MM-DD` heading already in it (written to a
//!   temporary file, then hard-linked into place), so two first appenders cannot both
//!   write a heading and no block lands before it.
//! - Appenders take turns on an advisory lock of the file, so each reports its own line
//!   range.
//! - A file that does not end with a newline (edited by hand) gets one before the block,
//!   so the block starts on its own line.
//! - Symlinks are not followed (`memory/` or the day's file being one is refused), as
//!   everywhere in memoria.
//!
//! [`Memory::append`](crate::Memory::append) syncs right after, so the block is searchable
//! at once.

use std::fs::{self, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The largest block accepted (a note, not a document).
pub const MAX_APPEND_BYTES: usize = 64 * 1024;

/// Where a block landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Appended {
    /// The daily log, relative to the workspace (`memory/2026-11-24.md`).
    pub path: String,
    /// The block's first line (1-based).
    pub start_line: usize,
    /// The block's last line.
    pub end_line: usize,
}

/// True for a real calendar date written `YYYY-MM-DD`.
pub(crate) fn is_date(date: &str) -> bool {
    matches!(crate::clock::calendar_day(date), Some(Some(_)))
}

/// Appends `text` to `<workspace>/memory/<date>.md` (see the module documentation).
pub(crate) fn append(workspace: &Path, text: &str, date: &str) -> Result<Appended> {
    let rejected = |message: String| Error::Rejected { message };
    if !is_date(date) {
        return Err(rejected(format!(
            "`date`: expected YYYY-MM-DD, got {date:?}"
        )));
    }
    let text = text.trim_end();
    if text.trim().is_empty() {
        return Err(rejected("`text` is empty: nothing to append".into()));
    }
    if text.len() > MAX_APPEND_BYTES || text.contains('\0') {
        return Err(rejected(format!(
            "`text`: at most {MAX_APPEND_BYTES} bytes of text, without NUL"
        )));
    }
    let dir = workspace.join("memory");
    match fs::symlink_metadata(&dir) {
        Ok(meta) if meta.file_type().is_symlink() || !meta.is_dir() => {
            return Err(rejected(format!(
                "{}: not a directory (or a symlink, which memoria does not follow)",
                dir.display()
            )))
        }
        Ok(_) => {}
        Err(_) => fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?,
    }
    let rel = format!("memory/{date}.md");
    let path = workspace.join(&rel);
    create_day(&dir, &path, date)?;
    if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(rejected(format!(
            "{}: a symlink, which memoria does not follow",
            path.display()
        )));
    }
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    // Appenders in every process take turns (so each knows its line numbers); the one
    // write goes to the end whatever happened before the lock.
    file.lock().map_err(|e| Error::io(&path, e))?;
    let intent = intent_path(&path);
    roll_forward(&mut file, &path, &intent)?;
    let (lines, ends_with_newline, length) = count_lines(&mut file, &path)?;
    let block = format!("{text}\n");
    let bytes = match ends_with_newline {
        true => block.clone(),
        false => format!("\n{block}"),
    };
    let record = Intent {
        offset: length,
        block: bytes.clone(),
    };
    let record = serde_json::to_vec(&record).map_err(|e| Error::io(&intent, e.into()))?;
    crate::atomic::write_atomic(&intent, &record)?;
    file.write_all(bytes.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io(&path, e))?;
    let _ = fs::remove_file(&intent);
    drop(file); // releases the lock
    Ok(Appended {
        path: rel,
        start_line: lines + 1,
        end_line: lines + block.lines().count(),
    })
}

/// Creates the day's file with its heading, atomically: written to a temporary file (not
/// Markdown, so never indexed) and hard-linked into place, so no appender ever sees the
/// file without its heading and two first appenders cannot both write one.
fn create_day(dir: &Path, path: &Path, date: &str) -> Result<()> {
    if fs::symlink_metadata(path).is_ok() {
        return Ok(());
    }
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{date}.md.memoria-new-{}-{n}", std::process::id()));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(format!("# {date}\n\n").as_bytes())?;
            f.sync_all()
        });
    let linked = written.and_then(|()| match fs::hard_link(&tmp, path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    });
    let _ = fs::remove_file(&tmp);
    linked.map_err(|e| Error::io(path, e))?;
    crate::atomic::sync_dir(dir)
}

/// The file's line count (a last line without a newline counts), whether it ends with a
/// newline (an empty file does, for this purpose), and its length.
fn count_lines(file: &mut fs::File, path: &Path) -> Result<(usize, bool, u64)> {
    let text = read_all(file, path)?;
    let newlines = text.iter().filter(|&&b| b == b'\n').count();
    let length = text.len() as u64;
    match text.last() {
        None => Ok((0, true, length)),
        Some(b'\n') => Ok((newlines, true, length)),
        Some(_) => Ok((newlines + 1, false, length)),
    }
}

fn read_all(file: &mut fs::File, path: &Path) -> Result<Vec<u8>> {
    let mut text = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut text))
        .map_err(|e| Error::io(path, e))?;
    Ok(text)
}

/// An append in progress: the day file's length before it, and the bytes being added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Intent {
    offset: u64,
    block: String,
}

/// What to do with a leftover [`Intent`], given the file's content now.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RollForward {
    /// The block is there, whole: drop the record.
    Done,
    /// The file ends with the block's first bytes: append these, the rest of it.
    Complete(Vec<u8>),
    /// The file changed otherwise since (edited by hand): leave it, drop the record.
    Changed,
}

/// The decision for `intent` over `file` (pure).
fn decide(file: &[u8], intent: &Intent) -> RollForward {
    let block = intent.block.as_bytes();
    let Some(tail) = usize::try_from(intent.offset)
        .ok()
        .and_then(|offset| file.get(offset..))
    else {
        return RollForward::Changed; // shorter than before the append: cut by someone
    };
    if tail.starts_with(block) {
        RollForward::Done
    } else if block.starts_with(tail) {
        RollForward::Complete(block[tail.len()..].to_vec())
    } else {
        RollForward::Changed
    }
}

/// `memory/.<date>.md.memoria-append`, the record of an append in progress to `day`.
fn intent_path(day: &Path) -> std::path::PathBuf {
    let name = day.file_name().unwrap_or_default().to_string_lossy();
    day.with_file_name(format!(".{name}{INTENT_SUFFIX}"))
}

const INTENT_SUFFIX: &str = ".memoria-append";

/// Rolls a leftover intent for the locked day `file` forward (module docs).
fn roll_forward(file: &mut fs::File, path: &Path, intent_file: &Path) -> Result<()> {
    let bytes = match fs::read(intent_file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(intent_file, e)),
    };
    let Ok(intent) = serde_json::from_slice::<Intent>(&bytes) else {
        // Not one of ours in a readable state (cut while being written cannot happen:
        // records are written atomically); drop it.
        tracing::warn!(
            "{}: unreadable append record, removed",
            intent_file.display()
        );
        return fs::remove_file(intent_file).map_err(|e| Error::io(intent_file, e));
    };
    match decide(&read_all(file, path)?, &intent) {
        RollForward::Done => {}
        RollForward::Complete(rest) => {
            tracing::warn!(
                "{}: an interrupted append is completed ({} bytes)",
                path.display(),
                rest.len()
            );
            file.write_all(&rest)
                .and_then(|()| file.sync_all())
                .map_err(|e| Error::io(path, e))?;
        }
        RollForward::Changed => tracing::warn!(
            "{}: an interrupted append was not completed: the file changed since",
            path.display()
        ),
    }
    fs::remove_file(intent_file).map_err(|e| Error::io(intent_file, e))
}

/// The days with an interrupted append waiting to be completed (`memory/<date>.md`).
pub(crate) fn pending(workspace: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(workspace.join("memory")) else {
        return Vec::new();
    };
    let mut days: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let day = name.strip_prefix('.')?.strip_suffix(INTENT_SUFFIX)?;
            Some(format!("memory/{day}"))
        })
        .collect();
    days.sort();
    days
}

/// Completes every interrupted append of the workspace (each under its file's lock).
pub(crate) fn recover(workspace: &Path) -> Result<()> {
    for day in pending(workspace) {
        let path = workspace.join(&day);
        if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            continue;
        }
        let mut file = match OpenOptions::new().read(true).append(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // The day file is gone: nothing to complete.
                let _ = fs::remove_file(intent_path(&path));
                continue;
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        file.lock().map_err(|e| Error::io(&path, e))?;
        roll_forward(&mut file, &path, &intent_path(&path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        for (date, ok) in [
            ("2026-11-24", true),
            ("2024-02-29", true),
            ("2026-02-29", false),
            ("2026-13-01", false),
            ("2026-11-31", false),
            ("2026-1-05", false),
            ("2026-11-24.md", false),
            ("../2026-11", false),
            ("２０２６-11-24", false),
        ] {
            assert_eq!(is_date(date), ok, "{date}");
        }
    }

    #[test]
    fn appends_create_the_day_then_add_blocks_without_rewriting() {
        let ws = tempfile::tempdir().unwrap();
        let a = append(ws.path(), "- Sam prefers tea.\n\n", "2026-11-24").unwrap();
        assert_eq!(
            (a.path.as_str(), a.start_line, a.end_line),
            ("memory/2026-11-24.md", 3, 3)
        );
        let b = append(ws.path(), "- Two\n- lines", "2026-11-24").unwrap();
        assert_eq!((b.start_line, b.end_line), (4, 5));
        let file = ws.path().join("memory/2026-11-24.md");
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "# 2026-11-24\n\n- Sam prefers tea.\n- Two\n- lines\n"
        );
        // A hand edit without a final newline: the block still starts on its own line.
        let mut f = OpenOptions::new().append(true).open(&file).unwrap();
        f.write_all(b"edited by hand").unwrap();
        let c = append(ws.path(), "after the edit", "2026-11-24").unwrap();
        assert_eq!((c.start_line, c.end_line), (7, 7));
        assert!(fs::read_to_string(&file)
            .unwrap()
            .ends_with("- lines\nedited by hand\nafter the edit\n"));
    }

    #[test]
    fn bad_input_is_refused_naming_it() {
        let ws = tempfile::tempdir().unwrap();
        for (text, date, says) in [
            ("x", "2026-02-30", "`date`"),
            ("   \n", "2026-11-24", "`text` is empty"),
            ("a\0b", "2026-11-24", "without NUL"),
        ] {
            let err = append(ws.path(), text, date).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        #[cfg(unix)]
        {
            let elsewhere = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(elsewhere.path(), ws.path().join("memory")).unwrap();
            let err = append(ws.path(), "x", "2026-11-24")
                .unwrap_err()
                .to_string();
            assert!(err.contains("symlink"), "{err}");
            assert!(fs::read_dir(elsewhere.path()).unwrap().next().is_none());
        }
    }

    #[test]
    fn leftover_intents_roll_forward() {
        let intent = |offset: u64, block: &str| Intent {
            offset,
            block: block.into(),
        };
        let table: &[(&str, Intent, RollForward)] = &[
            (
                "# d\n\n",
                intent(5, "- a\n"),
                RollForward::Complete(b"- a\n".to_vec()),
            ),
            (
                "# d\n\n- ",
                intent(5, "- a\n"),
                RollForward::Complete(b"a\n".to_vec()),
            ),
            ("# d\n\n- a\n", intent(5, "- a\n"), RollForward::Done),
            ("# d\n\n- a\nmore\n", intent(5, "- a\n"), RollForward::Done),
            ("# d\n\nhand edit", intent(5, "- a\n"), RollForward::Changed),
            ("# d\n", intent(5, "- a\n"), RollForward::Changed),
        ];
        for (file, intent, want) in table {
            assert_eq!(&decide(file.as_bytes(), intent), want, "{file:?}");
        }
    }

    /// A crash mid-append, as Linux can leave it (a prefix written: a kill between pages
    /// or a power cut): the next append completes the block first, so it ends up whole.
    #[test]
    fn an_interrupted_append_is_completed_by_the_next() {
        let ws = tempfile::tempdir().unwrap();
        append(ws.path(), "- before", "2026-11-23").unwrap();
        let day = ws.path().join("memory/2026-11-23.md");
        let length = fs::metadata(&day).unwrap().len();
        let block = format!("{}\n", "x".repeat(9000));
        let record = serde_json::to_vec(&Intent {
            offset: length,
            block: block.clone(),
        })
        .unwrap();
        fs::write(intent_path(&day), record).unwrap();
        let mut f = OpenOptions::new().append(true).open(&day).unwrap();
        f.write_all(&block.as_bytes()[..4096]).unwrap();
        drop(f);
        assert_eq!(pending(ws.path()), ["memory/2026-11-23.md"]);
        // Another day's append completes it too (recover), then appends its own block.
        recover(ws.path()).unwrap();
        append(ws.path(), "- today", "2026-11-24").unwrap();
        assert!(pending(ws.path()).is_empty());
        assert_eq!(
            fs::read_to_string(&day).unwrap(),
            format!("# 2026-11-23\n\n- before\n{block}")
        );
        // A record whose file was edited since is dropped without touching the file.
        fs::write(
            intent_path(&day),
            serde_json::to_vec(&Intent {
                offset: 3,
                block: "- gone\n".into(),
            })
            .unwrap(),
        )
        .unwrap();
        let before = fs::read_to_string(&day).unwrap();
        append(ws.path(), "- next", "2026-11-23").unwrap();
        assert_eq!(
            fs::read_to_string(&day).unwrap(),
            format!("{before}- next\n")
        );
        assert!(pending(ws.path()).is_empty());
    }

    #[test]
    fn concurrent_appends_lose_nothing() {
        let ws = tempfile::tempdir().unwrap();
        std::thread::scope(|scope| {
            for t in 0..8 {
                let ws = ws.path();
                scope.spawn(move || {
                    for i in 0..50 {
                        append(ws, &format!("- thread {t} note {i}"), "2026-11-24").unwrap();
                    }
                });
            }
        });
        let text = fs::read_to_string(ws.path().join("memory/2026-11-24.md")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# 2026-11-24", "one heading");
        assert_eq!(lines.iter().filter(|l| l.starts_with("# ")).count(), 1);
        assert_eq!(lines.len(), 2 + 8 * 50);
        for t in 0..8 {
            for i in 0..50 {
                let line = format!("- thread {t} note {i}");
                assert_eq!(lines.iter().filter(|l| **l == line).count(), 1, "{line}");
            }
        }
    }
}
