//! The agent directory on disk: its layout, the writer lock, generations, the manifest's
//! and the batch jobs' files, and the clean-up of leftovers (see the module docs of
//! `index` for the layout and invariants).

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

use crate::store::Manifest;

const MANIFEST: &str = "manifest.json";
/// Batch embedding jobs submitted and not yet read (`embed::backfill`); absent when none.
const BATCHES: &str = "batches.json";
const BATCHES_TMP: &str = "batches.json.tmp";
/// The compaction cycle of each session's last memory flush (`flush`).
const FLUSH: &str = "flush.json";
const FLUSH_TMP: &str = "flush.json.tmp";
const LOCK: &str = "LOCK";
const GEN_PREFIX: &str = "gen-";
/// Written first into every directory memoria creates or adopts as an agent directory:
/// clean-up only ever runs in a directory that has it.
const MARKER: &str = ".memoria-agent-dir";
/// The temporary files memoria may leave in the agent directory itself (from
/// [`write_atomic`](crate::atomic::write_atomic) of the manifest and of the batch jobs, [`BATCHES_TMP`]).
const MANIFEST_TMP: &str = "manifest.json.tmp";
/// What the marker file says to someone who finds it.
const MARKER_TEXT: &str = "This directory is a memoria agent directory: memoria creates and \
deletes gen-<digits>/ and manifest.json.tmp here. Do not keep other files in it.\n";

/// The generation number of a directory name `gen-<digits>` (as [`AgentDir::generation_dir`]
/// writes it), or `None` for any other name.
fn generation_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(GEN_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The agent directory.
#[derive(Debug, Clone)]
pub struct AgentDir {
    root: PathBuf,
}

/// Proof that this process is the directory's one writer; released on drop.
pub struct WriterLock {
    _file: File,
}

impl AgentDir {
    /// Uses the directory `root`. Nothing is created until the first write
    /// ([`AgentDir::lock_writer`]), so reading (`memory_get`, a search of a read-only
    /// index) needs no writable state directory.
    ///
    /// memoria deletes leftovers in its agent directory, so it never adopts a directory
    /// that is not one: `root` must be missing, empty, or already an agent directory (it
    /// has memoria's marker file, or a `manifest.json` from a memoria that wrote no
    /// marker). Anything else — a `store.path` naming a folder of the user's — is
    /// [`Error::NotAgentDir`], and nothing in it is touched.
    pub fn open(root: &Path) -> Result<AgentDir> {
        let dir = AgentDir {
            root: root.to_path_buf(),
        };
        if root.exists() {
            dir.check_ours()?;
        }
        Ok(dir)
    }

    /// Refuses a directory that is neither empty nor an agent directory, and marks an
    /// agent directory that has no marker yet (best effort: a read-only one stays as it is).
    fn check_ours(&self) -> Result<()> {
        let marker = self.root.join(MARKER);
        if marker.exists() {
            return Ok(());
        }
        if !self.root.join(MANIFEST).exists() {
            let mut entries = fs::read_dir(&self.root).map_err(|e| Error::io(&self.root, e))?;
            if let Some(entry) = entries.next() {
                let entry = entry.map_err(|e| Error::io(&self.root, e))?;
                return Err(Error::NotAgentDir {
                    dir: self.root.clone(),
                    found: entry.file_name().to_string_lossy().into_owned(),
                });
            }
        }
        let _ = fs::write(&marker, MARKER_TEXT);
        Ok(())
    }

    /// Creates the directory if needed and makes sure it is ours and marked, before
    /// anything is written or removed in it.
    fn adopt(&self) -> Result<()> {
        fs::create_dir_all(&self.root).map_err(|e| Error::io(&self.root, e))?;
        self.check_ours()?;
        let marker = self.root.join(MARKER);
        if !marker.exists() {
            fs::write(&marker, MARKER_TEXT).map_err(|e| Error::io(&marker, e))?;
        }
        Ok(())
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Takes the writer lock without waiting (creating the directory on first use).
    pub fn lock_writer(&self) -> Result<WriterLock> {
        self.adopt()?;
        let path = self.root.join(LOCK);
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(WriterLock { _file: file }),
            Err(fs::TryLockError::WouldBlock) => Err(Error::IndexBusy {
                dir: self.root.clone(),
            }),
            Err(fs::TryLockError::Error(e)) => Err(Error::io(&path, e)),
        }
    }

    /// The manifest, or `None` before the first completed build.
    pub fn manifest(&self) -> Result<Option<Manifest>> {
        let path = self.root.join(MANIFEST);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        Ok(Some(manifest))
    }

    /// Replaces the manifest atomically (write, fsync, rename, fsync directory).
    pub fn write_manifest(&self, _lock: &WriterLock, manifest: &Manifest) -> Result<()> {
        let path = self.root.join(MANIFEST);
        let bytes = serde_json::to_vec_pretty(manifest).map_err(|e| Error::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        crate::atomic::write_atomic(&path, &bytes)
    }

    /// The recorded batch embedding jobs (`batches.json`), if any.
    pub fn batch_jobs(&self) -> Result<Option<Vec<u8>>> {
        self.read_if_present(BATCHES)
    }

    /// Records the batch embedding jobs atomically; `None` removes the record.
    pub fn write_batch_jobs(&self, _lock: &WriterLock, jobs: Option<&[u8]>) -> Result<()> {
        let path = self.root.join(BATCHES);
        match jobs {
            Some(bytes) => crate::atomic::write_atomic(&path, bytes),
            None => match fs::remove_file(&path) {
                Ok(()) => crate::atomic::sync_dir(&self.root),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(Error::io(&path, e)),
            },
        }
    }

    /// The memory flush record (`flush.json`), if any.
    pub fn flush_record(&self) -> Result<Option<Vec<u8>>> {
        self.read_if_present(FLUSH)
    }

    /// Replaces the memory flush record atomically, creating the agent directory if needed
    /// (no writer lock: it is not part of the index).
    pub fn write_flush_record(&self, bytes: &[u8]) -> Result<()> {
        self.adopt()?;
        crate::atomic::write_atomic(&self.root.join(FLUSH), bytes)
    }

    /// The bytes of the file `name` in the directory, `None` when it does not exist.
    fn read_if_present(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let path = self.root.join(name);
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Directory of generation `n`.
    pub fn generation_dir(&self, n: u64) -> PathBuf {
        self.root.join(format!("{GEN_PREFIX}{n:06}"))
    }

    /// Deletes every generation other than `keep` and the manifest's temporary file:
    /// leftovers of interrupted builds or of a swap that crashed before deleting the old
    /// generation. Only names memoria makes are touched: directories (not symlinks) named
    /// `gen-` and digits, and the `.tmp` files of `manifest.json`, `batches.json` and
    /// `flush.json`. Everything else stays, whatever its
    /// name.
    pub fn remove_leftovers(&self, _lock: &WriterLock, keep: Option<u64>) -> Result<()> {
        let entries = fs::read_dir(&self.root).map_err(|e| Error::io(&self.root, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if let Some(n) = generation_number(name) {
                if Some(n) != keep && kind.is_dir() {
                    fs::remove_dir_all(&path).map_err(|e| Error::io(&path, e))?;
                }
            } else if [MANIFEST_TMP, BATCHES_TMP, FLUSH_TMP].contains(&name) && kind.is_file() {
                fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
            }
        }
        Ok(())
    }

    /// The next unused generation number.
    pub fn next_generation(&self, current: Option<u64>) -> u64 {
        current.map_or(1, |n| n + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Identity, SyncStats, FORMAT_VERSION};

    fn manifest(generation: u64) -> Manifest {
        Manifest {
            format: FORMAT_VERSION,
            generation,
            identity: Identity {
                chunk_tokens: 400,
                chunk_overlap: 80,
                sources: vec!["memory".into()],
                provider: "none".into(),
                model: None,
                embedder: None,
                dims: None,
                chunking: None,
                passages: false,
            },
            stats: SyncStats::default(),
        }
    }

    #[test]
    fn second_writer_is_told_the_index_is_busy() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = AgentDir::open(tmp.path()).unwrap();
        let lock = dir.lock_writer().unwrap();
        let err = dir.lock_writer().err().unwrap();
        assert!(matches!(err, Error::IndexBusy { .. }));
        assert!(err.to_string().contains("index busy"));
        drop(lock);
        assert!(dir.lock_writer().is_ok());
    }

    #[test]
    fn identity_is_camel_case_and_reads_older_snake_case() {
        let old = r#"{"chunk_tokens": 400, "chunk_overlap": 80, "sources": ["memory"],
                      "provider": "none", "model": null}"#;
        let identity: Identity = serde_json::from_str(old).unwrap();
        assert_eq!((identity.chunk_tokens, identity.chunk_overlap), (400, 80));
        let written = serde_json::to_string(&identity).unwrap();
        assert!(
            written.starts_with(r#"{"chunkTokens":400,"chunkOverlap":80,"#),
            "{written}"
        );
        assert_eq!(
            serde_json::from_str::<Identity>(&written).unwrap(),
            identity
        );
    }

    #[test]
    fn manifest_round_trip_and_leftover_cleanup() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = AgentDir::open(tmp.path()).unwrap();
        assert_eq!(dir.manifest().unwrap(), None);
        let lock = dir.lock_writer().unwrap();
        dir.write_manifest(&lock, &manifest(2)).unwrap();
        assert_eq!(dir.manifest().unwrap(), Some(manifest(2)));
        for n in 1..=3 {
            fs::create_dir_all(dir.generation_dir(n)).unwrap();
        }
        fs::write(tmp.path().join("manifest.json.tmp"), "partial").unwrap();
        dir.remove_leftovers(&lock, Some(2)).unwrap();
        let mut names: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![".memoria-agent-dir", "LOCK", "gen-000002", "manifest.json"]
        );
    }

    #[test]
    fn generation_names_table() {
        let rows: &[(&str, Option<u64>)] = &[
            ("gen-000001", Some(1)),
            ("gen-42", Some(42)),
            ("gen-", None),
            ("gen-photos", None),
            ("gen-2024-photos", None),
            ("gen-000001x", None),
            ("gen- 1", None),
            ("gen-+1", None),
            ("Gen-000001", None),
            ("xgen-000001", None),
        ];
        for (name, want) in rows {
            assert_eq!(generation_number(name), *want, "{name}");
        }
    }

    /// A directory full of names that look like memoria's: clean-up removes only its own.
    #[test]
    fn leftover_cleanup_never_touches_look_alikes() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("precious.md"), "keep").unwrap();
        let root = tmp.path().join("agent");
        let dir = AgentDir::open(&root).unwrap();
        let lock = dir.lock_writer().unwrap();
        dir.write_manifest(&lock, &manifest(2)).unwrap();
        let keep_files = [
            "gen-photos/keep.md",
            "gen-2024-photos/img.md",
            "gen-000001x/a.md",
            "gen-/b.md",
            "notes.tmp",
            "draft.tmp",
            "gen-7.tmp",
            "manifest.json.tmp.bak",
        ];
        for file in keep_files {
            let path = root.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, "user data").unwrap();
        }
        fs::write(root.join("gen-000005"), "a file, not a generation").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, root.join("gen-000009")).unwrap();
        for n in [1, 2, 3] {
            fs::create_dir_all(dir.generation_dir(n).join("text")).unwrap();
        }
        fs::write(root.join(MANIFEST_TMP), "partial").unwrap();

        dir.remove_leftovers(&lock, Some(2)).unwrap();

        for file in keep_files {
            assert!(root.join(file).exists(), "{file} was removed");
        }
        assert!(root.join("gen-000005").is_file());
        assert!(outside.join("precious.md").exists());
        #[cfg(unix)]
        assert!(root.join("gen-000009").symlink_metadata().is_ok());
        assert!(dir.generation_dir(2).exists());
        assert!(!dir.generation_dir(1).exists() && !dir.generation_dir(3).exists());
        assert!(!root.join(MANIFEST_TMP).exists());
    }

    #[test]
    fn a_folder_that_is_not_an_agent_directory_is_refused_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("gen-2024-photos")).unwrap();
        fs::write(tmp.path().join("gen-2024-photos/img.md"), "photo").unwrap();
        fs::write(tmp.path().join("draft.tmp"), "draft").unwrap();
        let err = AgentDir::open(tmp.path()).unwrap_err();
        assert!(matches!(err, Error::NotAgentDir { .. }), "{err}");
        let message = err.to_string();
        assert!(
            message.contains(&tmp.path().display().to_string()),
            "{message}"
        );
        let mut names: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, vec!["draft.tmp", "gen-2024-photos"]);

        // Empty, or an agent directory an older memoria wrote (a manifest, no marker): adopted.
        let empty = tempfile::tempdir().unwrap();
        let adopted = AgentDir::open(empty.path()).unwrap();
        drop(adopted.lock_writer().unwrap());
        assert!(empty.path().join(MARKER).exists());
        // Nothing is created before the first write.
        let missing = empty.path().join("not-yet");
        let dir = AgentDir::open(&missing).unwrap();
        assert!(!missing.exists());
        assert_eq!(dir.manifest().unwrap(), None);
        let old = tempfile::tempdir().unwrap();
        fs::write(old.path().join(MANIFEST), "{}").unwrap();
        AgentDir::open(old.path()).unwrap();
        AgentDir::open(old.path()).unwrap();
    }

    #[test]
    fn corrupt_manifest_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join(MANIFEST), "{not json").unwrap();
        let err = AgentDir::open(tmp.path()).unwrap().manifest().unwrap_err();
        assert!(err.to_string().contains("manifest.json"), "{err}");
    }
}
