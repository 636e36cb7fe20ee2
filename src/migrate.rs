//! Copying an agent's committed index to another store (`memoria store migrate`): a local
//! agent directory into fleet mode's LanceDB, and back.
//!
//! The copy reads the source's committed generation through its [`Reader`] and writes it
//! through the target's [`Writer`] as a new generation: files and their chunks in batches,
//! with each batch's vectors (a chunk's passages before its own, as a sync stores them),
//! then the keyword side, the vector index and the source's manifest, renumbered. Nothing
//! is re-chunked or re-embedded, and the target answers as the source did; its workspace
//! digest is the source's, so the next search there syncs only what changed since. The
//! source's writer is held for the copy, so no sync changes it meanwhile.

use std::collections::HashMap;

use crate::config::StoreBackend;
use crate::error::{Error, Result};
use crate::freshness::{open_store, Agent};
use crate::passage;
use crate::store::{Batch, Store, Upsert};

/// Files per batch written to the target.
const FILES_PER_BATCH: usize = 200;

/// What a copy moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrateReport {
    /// Where the index was copied from (a directory, a URI).
    pub from: String,
    /// Where it was copied to.
    pub to: String,
    /// Files copied.
    pub files: usize,
    /// Chunks copied.
    pub chunks: u64,
    /// Vectors copied, chunks' own and passages'.
    pub vectors: u64,
    /// The target's new generation.
    pub generation: u64,
}

/// Copies `agent`'s committed index from its store to the store `to` names.
pub(crate) fn migrate(agent: &Agent, to: &StoreBackend) -> Result<MigrateReport> {
    let settings = agent.settings();
    if settings.store.backend == *to {
        return Err(Error::Rejected {
            message: "the index is already kept there: name another store to copy it to".into(),
        });
    }
    let mut target_settings = settings.clone();
    target_settings.store.backend = to.clone();
    let target = open_store(agent.dir(), &target_settings)?;
    copy(agent.store(), target.as_ref())
}

/// Copies `from`'s committed generation into a new generation of `to`.
pub(crate) fn copy(from: &dyn Store, to: &dyn Store) -> Result<MigrateReport> {
    let hold = from.writer()?;
    let reader = from.reader()?;
    let mut manifest = reader.manifest().clone();
    let files = reader.files()?;
    let mut writer = to.writer()?;
    let current = writer.manifest()?.map(|m| m.generation);
    let begun = writer.begin(current, true)?;
    let (mut chunks, mut vectors) = (0u64, 0u64);
    for group in files.chunks(FILES_PER_BATCH) {
        let ids: Vec<String> = group
            .iter()
            .flat_map(|(_, f)| f.chunk_ids.iter().cloned())
            .collect();
        let mut records: HashMap<String, _> = reader.chunks(&ids)?.into_iter().collect();
        let mut vector_ids = Vec::new();
        let mut upserts = Vec::new();
        for (path, record) in group {
            let mut held = Vec::new();
            for id in &record.chunk_ids {
                let Some(chunk) = records.remove(id) else {
                    continue;
                };
                if manifest.identity.passages {
                    vector_ids
                        .extend(passage::numbered(&chunk.text).map(|(n, _)| passage::id(id, n)));
                }
                vector_ids.push(id.clone());
                held.push((id.clone(), chunk));
            }
            chunks += held.len() as u64;
            upserts.push(Upsert {
                path: path.clone(),
                record: record.clone(),
                chunks: held,
            });
        }
        writer.apply(&Batch {
            upserts,
            ..Batch::default()
        })?;
        let refs: Vec<&str> = vector_ids.iter().map(String::as_str).collect();
        let found: Vec<(String, Vec<f32>)> = vector_ids
            .iter()
            .zip(reader.vectors(&refs)?)
            .filter_map(|(id, v)| Some((id.clone(), v?)))
            .collect();
        vectors += found.len() as u64;
        writer.put_vectors(&found)?;
    }
    writer.finish_keyword()?;
    if let Some(dims) = manifest.identity.dims {
        writer.index_vectors(dims)?;
    }
    manifest.generation = begun.generation;
    writer.commit(&manifest)?;
    let report = MigrateReport {
        from: hold.location(),
        to: writer.location(),
        files: files.len(),
        chunks,
        vectors,
        generation: begun.generation,
    };
    drop(writer);
    drop(hold);
    to.invalidate();
    Ok(report)
}
