//! The agent directory: everything one agent's memory index needs, in one place.
//!
//! ```text
//! <stateDir>/memory/<agentId>/
//!   manifest.json        format, identity, current generation, last-sync stats (atomic rename)
//!   LOCK                 held (flock) by the one process that writes
//!   cache.redb           embedding cache, shared by every generation
//!   gen-000001/          one index generation
//!     catalog.redb       source of truth: files, chunks (text, lines, hash), vectors
//!     text/              tantivy BM25 index, derived; commit payload = catalog seq
//!     vectors/           exact or HNSW vector index, derived; tagged with the catalog seq
//! ```
//!
//! Invariants:
//! - Readers never take the lock and never hold the catalog open: they read `manifest.json`,
//!   then open that generation's `text/` and `vectors/`, whose last commits are always
//!   complete states ([`view`]). Only when `text/` cannot be opened does a search read
//!   chunks from the catalog, opened read-only per call, so the writer is never kept out.
//! - Writers hold `LOCK`. A second writer gets [`Error::IndexBusy`] instead of waiting.
//! - An identity change (chunking, sources, embedder) builds a *new* generation; the manifest
//!   switches to it by atomic rename once it is complete, then the old one is deleted.
//!   Generations the manifest does not name are leftovers of an interrupted build and are
//!   removed the next time a writer opens the directory.
//! - The text index is derived: when its commit payload lags the catalog `seq` (a crash
//!   between the two commits), the writer rebuilds it from the catalog.

pub(crate) mod analyzer;
mod atomic;
pub(crate) mod cache;
pub(crate) mod catalog;
pub(crate) mod text;
pub(crate) mod vector;
mod view;

pub(crate) use view::{GenerationView, Views};

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Bumped when the on-disk layout changes incompatibly (forces a rebuild).
/// 3: the text index keeps each chunk's ranking key (id, path, start line) in fast fields.
pub const FORMAT_VERSION: u32 = 3;

const MANIFEST: &str = "manifest.json";
const LOCK: &str = "LOCK";
const GEN_PREFIX: &str = "gen-";

/// Everything that, when changed, invalidates the index (SPEC §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// `chunking.tokens`.
    pub chunk_tokens: usize,
    /// `chunking.overlap`.
    pub chunk_overlap: usize,
    /// The sources indexed (`memory`, `sessions`).
    pub sources: Vec<String>,
    /// Embedding provider (`none` when keyword-only).
    pub provider: String,
    /// Embedding model, when there is one.
    pub model: Option<String>,
    /// The embedder's fingerprint (model weights, prompts, output dims), if any.
    #[serde(default)]
    pub embedder: Option<String>,
    /// Vector dimensions, when there is an embedder.
    #[serde(default)]
    pub dims: Option<usize>,
}

/// Facts about the last completed sync, shown by `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncStats {
    pub files: usize,
    pub chunks: u64,
    pub bytes: u64,
    pub warnings: Vec<String>,
    /// Unix seconds.
    pub synced_at: u64,
    /// Digest of the discovered files' paths, sizes and mtimes: a search whose discovery
    /// gives another digest knows the workspace changed without opening the catalog.
    pub workspace_digest: String,
    /// Vector side, when an embedder was in use.
    #[serde(default)]
    pub embedding: Option<EmbeddingStats>,
}

/// The vector side of the last sync.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingStats {
    pub vectors: u64,
    /// Chunks still without a vector (non-zero after an embedding failure).
    pub missing: u64,
    /// Why embedding failed, if it did.
    pub error: Option<String>,
}

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub generation: u64,
    pub identity: Identity,
    pub stats: SyncStats,
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
    /// Uses (and creates if needed) the directory `root`.
    pub fn open(root: &Path) -> Result<AgentDir> {
        fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
        Ok(AgentDir {
            root: root.to_path_buf(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Takes the writer lock without waiting.
    pub fn lock_writer(&self) -> Result<WriterLock> {
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
        atomic::write_atomic(&path, &bytes)
    }

    /// Directory of generation `n`.
    pub fn generation_dir(&self, n: u64) -> PathBuf {
        self.root.join(format!("{GEN_PREFIX}{n:06}"))
    }

    /// Deletes every generation other than `keep` and stray temporary files: leftovers of
    /// interrupted builds or of a swap that crashed before deleting the old generation.
    pub fn remove_leftovers(&self, _lock: &WriterLock, keep: Option<u64>) -> Result<()> {
        let entries = fs::read_dir(&self.root).map_err(|e| Error::io(&self.root, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if let Some(n) = name.strip_prefix(GEN_PREFIX) {
                if n.parse::<u64>().ok() != keep {
                    fs::remove_dir_all(&path).map_err(|e| Error::io(&path, e))?;
                }
            } else if name.ends_with(".tmp") {
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
        assert_eq!(names, vec!["LOCK", "gen-000002", "manifest.json"]);
    }

    #[test]
    fn corrupt_manifest_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join(MANIFEST), "{not json").unwrap();
        let err = AgentDir::open(tmp.path()).unwrap().manifest().unwrap_err();
        assert!(err.to_string().contains("manifest.json"), "{err}");
    }
}
