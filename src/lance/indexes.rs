//! Which of a generation's tables get which index, and when: the full-text index over
//! `chunks.terms` always; from [`INDEX_ROWS`] rows, an approximate nearest-neighbour index
//! over the chunks' own vectors (IVF-PQ, its candidates re-ranked on the full vectors by
//! the reader) and B-tree indexes over the columns searches look rows up by (`chunks.id`,
//! `passages.chunk`). Below that size a search reads the whole column, which is exact and
//! faster than an index; a small generation's vectors are held in memory (module `held`).

use lancedb::index::scalar::BTreeIndexBuilder;
use lancedb::index::vector::IvfPqIndexBuilder;
use lancedb::index::Index;
use lancedb::table::{OptimizeAction, OptimizeOptions};
use lancedb::{DistanceType, Table};

/// Rows from which a table is indexed for searches that read part of it.
const INDEX_ROWS: u64 = 50_000;

/// The environment variable that sets [`INDEX_ROWS`].
const INDEX_ROWS_ENV: &str = "MEMORIA_FLEET_INDEX_ROWS";

/// [`INDEX_ROWS`], or what `MEMORIA_FLEET_INDEX_ROWS` sets.
pub(super) fn index_rows() -> u64 {
    super::env_number(INDEX_ROWS_ENV, INDEX_ROWS)
}

/// Gives `table` an index on `column` when it has at least `min_rows` rows and none
/// there yet. Returns whether `column` is indexed.
pub(super) async fn index_column(
    table: &Table,
    column: &str,
    min_rows: u64,
    index: impl FnOnce() -> Index,
) -> lancedb::Result<bool> {
    let indexed = table
        .list_indices()
        .await?
        .iter()
        .any(|i| i.columns.iter().any(|c| c == column));
    if indexed {
        return Ok(true);
    }
    if (table.count_rows(None).await? as u64) < min_rows {
        return Ok(false);
    }
    table.create_index(&[column], index()).execute().await?;
    Ok(true)
}

/// Brings every index of `table` up to its unindexed rows, when one has any (rows a
/// sync added; until then a search scans them exactly).
pub(super) async fn update_indexes(table: &Table) -> lancedb::Result<()> {
    for index in table.list_indices().await? {
        let stats = table.index_stats(&index.name).await?;
        if stats.is_some_and(|s| s.num_unindexed_rows > 0) {
            table
                .optimize(OptimizeAction::Index(OptimizeOptions::default()))
                .await?;
            break;
        }
    }
    Ok(())
}

/// The index of a large generation's chunk vectors.
pub(super) fn vector_index() -> Index {
    Index::IvfPq(IvfPqIndexBuilder::default().distance_type(DistanceType::Cosine))
}

/// The index of a column rows are looked up by.
pub(super) fn btree() -> Index {
    Index::BTree(BTreeIndexBuilder::default())
}
