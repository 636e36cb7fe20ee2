//! Which of a generation's tables get which index, and when: the full-text index over
//! `chunks.terms` always; from [`INDEX_ROWS`] rows, an approximate nearest-neighbour index
//! over the chunks' own vectors ([`vector_index`], its candidates re-ranked on the full
//! vectors by the reader) and B-tree indexes over the columns searches look rows up by (`chunks.id`,
//! `passages.chunk`). Below that size a search reads the whole column, which is exact and
//! faster than an index; a small generation's vectors are held in memory (module `held`).

use lancedb::index::scalar::BTreeIndexBuilder;
use lancedb::index::vector::IvfHnswSqIndexBuilder;
use lancedb::index::{Index, IndexType};
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

/// The index of a large generation's chunk vectors: IVF partitions with an HNSW graph in
/// each over the vectors in 8-bit scalar quantisation, its candidates re-ranked on the full
/// vectors by the reader. Chosen on 48,456 real EmbeddingGemma vectors (SciFact and XQuAD
/// sentences) and 1,010 real queries, against an exact scan, at the reader's 24 candidates,
/// 32 probes and 8× re-ranking (`benches/lance_index_recall.py`, two runs): recall@10 0.990
/// (0.997 re-ranking 16×), where IVF-PQ with LanceDB's default 48 sub-vectors gave
/// 0.906–0.913 (0.964–0.972 re-ranking 32×) and with 96 gave 0.978–0.979 (0.991–0.992
/// re-ranking 16×, twice the full rows read).
pub(super) fn vector_index() -> Index {
    Index::IvfHnswSq(IvfHnswSqIndexBuilder::default().distance_type(DistanceType::Cosine))
}

/// The kind of [`vector_index`].
pub(super) const VECTOR_INDEX: IndexType = IndexType::IvfHnswSq;

/// Drops `table`'s index on `column` when it is of another kind than `kind` (IVF-PQ, which
/// an earlier memoria built), so that [`index_column`] builds the current one from the
/// stored vectors. Returns whether it dropped one.
pub(super) async fn drop_other_kind(
    table: &Table,
    column: &str,
    kind: IndexType,
) -> lancedb::Result<bool> {
    for index in table.list_indices().await? {
        if index.columns.iter().any(|c| c == column) && index.index_type != kind {
            table.drop_index(&index.name).await?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// The index of a column rows are looked up by.
pub(super) fn btree() -> Index {
    Index::BTree(BTreeIndexBuilder::default())
}

#[cfg(test)]
mod tests {
    use lancedb::index::vector::IvfPqIndexBuilder;

    use super::*;
    use crate::lance::rows;
    use crate::lance::tables::block;

    /// An IVF-PQ index an earlier memoria built is replaced by the current kind.
    #[test]
    fn an_index_of_another_kind_is_dropped_and_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().display().to_string();
        let kinds = block(&uri.clone(), async move {
            let db = lancedb::connect(&uri).execute().await?;
            let ids: Vec<String> = (0..300).map(|i| format!("c{i}")).collect();
            let vectors: Vec<Vec<f32>> = (0..300)
                .map(|i| {
                    (0..16)
                        .map(|d| ((i * 7 + d * 13) % 17) as f32 - 8.0)
                        .collect()
                })
                .collect();
            let rows: Vec<(&str, &[f32])> = ids
                .iter()
                .zip(&vectors)
                .map(|(id, v)| (id.as_str(), v.as_slice()))
                .collect();
            let table = db
                .create_table("vectors_1", rows::vectors_batch(&rows, 16))
                .execute()
                .await?;
            let pq = IvfPqIndexBuilder::default()
                .distance_type(DistanceType::Cosine)
                .num_partitions(2)
                .num_sub_vectors(2);
            table
                .create_index(&["vector"], Index::IvfPq(pq))
                .execute()
                .await?;
            let kinds = |t: Table| async move {
                let indices = t.list_indices().await?;
                Ok::<_, lancedb::Error>(
                    indices
                        .into_iter()
                        .map(|i| i.index_type)
                        .collect::<Vec<_>>(),
                )
            };
            let before = kinds(table.clone()).await?;
            let dropped = drop_other_kind(&table, "vector", VECTOR_INDEX).await?;
            let built = index_column(&table, "vector", 1, vector_index).await?;
            let after = kinds(table.clone()).await?;
            let again = drop_other_kind(&table, "vector", VECTOR_INDEX).await?;
            Ok((before, dropped, built, after, again))
        })
        .unwrap();
        assert_eq!(
            kinds,
            (
                vec![IndexType::IvfPq],
                true,
                true,
                vec![VECTOR_INDEX],
                false
            )
        );
    }
}
