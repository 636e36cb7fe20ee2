//! What every part of the LanceDB store shares: the generation's tables and their names,
//! the manifest row read back, and LanceDB's futures run to their answers.

use std::future::Future;

use futures::TryStreamExt;
use lancedb::query::{ExecutableQuery, QueryBase};
use lancedb::{Connection, Table};

use super::{rows, runtime};
use crate::error::{Error, Result};
use crate::store::Manifest;

/// How many vectors (or cache entries) a writer holds before it writes them. LanceDB makes
/// a new table version per write (a data file, a manifest and several object-store round
/// trips), and a search reads every data file of a table, so a sync's vectors and cache
/// entries wait in memory (about 3 KB each at 768 dimensions) and go in few large appends:
/// at each commit, or when this many wait. Nothing is lost by waiting: what a sync wrote
/// after its last commit is rolled back by the next one's `begin` anyway. The tests hold
/// fewer, so that their syncs write in several appends too (a chunk's passages split
/// between two, its centroid from both).
pub(super) const PENDING_ROWS: usize = if cfg!(test) { 64 } else { 4096 };

pub(super) const TABLES: [&str; 4] = ["files", "chunks", "vectors", "passages"];

pub(super) fn table_name(kind: &str, generation: u64) -> String {
    format!("{kind}_{generation}")
}

/// Runs a LanceDB operation on the store's runtime; its error names `location`.
pub(super) fn block<T: Send + 'static>(
    location: &str,
    future: impl Future<Output = lancedb::Result<T>> + Send + 'static,
) -> Result<T> {
    let at = location.to_string();
    runtime::run(location, async move {
        future.await.map_err(|err| Error::Store {
            location: at,
            message: format!("LanceDB: {err}"),
        })
    })
}

/// What the manifest row says: the manifest and its generation's table versions.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Committed {
    pub(super) manifest: Manifest,
    pub(super) versions: [u64; 4],
}

/// Opens `name` at `version`; `None` for version 0 (the table does not exist).
pub(super) async fn open_at(
    db: &Connection,
    name: &str,
    version: u64,
) -> lancedb::Result<Option<Table>> {
    if version == 0 {
        return Ok(None);
    }
    let table = db.open_table(name).execute().await?;
    table.checkout(version).await?;
    Ok(Some(table))
}

/// All the batches a query gives.
pub(super) async fn collect(
    query: impl ExecutableQuery,
) -> lancedb::Result<Vec<arrow_array::RecordBatch>> {
    query.execute().await?.try_collect().await
}

/// Deletes the files of `table`'s versions older than `older_than` (the latest stays).
pub(super) async fn prune(
    table: &Table,
    older_than: lancedb::table::Duration,
) -> lancedb::Result<()> {
    table
        .optimize(lancedb::table::OptimizeAction::Prune {
            older_than: Some(older_than),
            delete_unverified: None,
            error_if_tagged_old_versions: None,
        })
        .await?;
    Ok(())
}

pub(super) fn runtime_error(message: String) -> lancedb::Error {
    lancedb::Error::Runtime { message }
}

/// The manifest row, read from the latest version of the `manifest` table.
pub(super) async fn read_committed(db: &Connection) -> lancedb::Result<Option<Committed>> {
    let table = match db.open_table("manifest").execute().await {
        Ok(table) => table,
        Err(lancedb::Error::TableNotFound { .. }) => return Ok(None),
        Err(err) => return Err(err),
    };
    for batch in collect(table.query().only_if("entry = 'manifest'")).await? {
        let json = rows::text(&batch, "manifest").map_err(runtime_error)?;
        let Some(json) = json.first() else { continue };
        let manifest: Manifest = serde_json::from_str(json)
            .map_err(|err| runtime_error(format!("the manifest row: {err}")))?;
        let mut versions = [0; 4];
        for (slot, kind) in versions.iter_mut().zip(TABLES) {
            *slot = rows::unsigned(&batch, kind).map_err(runtime_error)?[0];
        }
        return Ok(Some(Committed { manifest, versions }));
    }
    Ok(None)
}
