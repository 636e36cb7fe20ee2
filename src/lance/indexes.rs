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
/// sync added; until then a search scans them exactly): a vector index as
/// [`vector_update`] says, the others as LanceDB does by default.
pub(super) async fn update_indexes(table: &Table) -> lancedb::Result<()> {
    for index in table.list_indices().await? {
        let Some(stats) = table.index_stats(&index.name).await? else {
            continue;
        };
        if stats.num_unindexed_rows == 0 {
            continue;
        }
        // (Only a vector index has a distance.)
        let mut options = match stats.distance_type {
            Some(_) => match vector_update(
                stats.num_indexed_rows as u64,
                stats.num_unindexed_rows as u64,
                stats.num_indices.unwrap_or(1),
            ) {
                VectorUpdate::Delta => OptimizeOptions::append(),
                VectorUpdate::MergeDeltas(n) => OptimizeOptions::merge(n),
                VectorUpdate::Retrain => OptimizeOptions::retrain(),
            },
            None => OptimizeOptions::default(),
        };
        options.index_names = Some(vec![index.name.clone()]);
        table.optimize(OptimizeAction::Index(options)).await?;
    }
    Ok(())
}

/// How a vector index takes the rows added since it was last brought up to date.
#[derive(Debug, PartialEq)]
enum VectorUpdate {
    /// A delta index over the new rows alone, in the index's partitions.
    Delta,
    /// The new rows and the last `n` parts (the deltas; the first part kept) built into one.
    MergeDeltas(usize),
    /// The whole index rebuilt, its partitions trained again on every row.
    Retrain,
}

/// Parts (the first index and its deltas) a vector index has at most: a search probes each.
const VECTOR_PARTS: u32 = 8;

/// How an index over `indexed` rows in `parts` parts takes `unindexed` new ones (pure): a
/// delta while they are no more than the indexed, the deltas merged at [`VECTOR_PARTS`],
/// and the whole index retrained once the new rows outnumber it, so that the rows a graph
/// is built over add up to at most twice the table, however it grows. LanceDB's default
/// merges every part with the new rows whenever a partition outgrows its size, so a small
/// change could rebuild the graphs of a large index.
fn vector_update(indexed: u64, unindexed: u64, parts: u32) -> VectorUpdate {
    if unindexed > indexed {
        VectorUpdate::Retrain
    } else if parts + 1 >= VECTOR_PARTS {
        VectorUpdate::MergeDeltas(parts.saturating_sub(1) as usize)
    } else {
        VectorUpdate::Delta
    }
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
    use lancedb::query::QueryBase;

    use super::*;
    use crate::lance::rows;
    use crate::lance::tables::{block, collect};

    #[test]
    fn a_vector_index_takes_few_new_rows_as_a_delta_and_many_by_a_rebuild() {
        for (indexed, unindexed, parts, update) in [
            (1_000, 1, 1, VectorUpdate::Delta),
            (1_000, 1_000, 1, VectorUpdate::Delta),
            (1_000, 1_001, 1, VectorUpdate::Retrain),
            // The first sync of a million chunks: its checkpoints, then its end.
            (50_000, 811_000, 1, VectorUpdate::Retrain),
            (861_000, 224_009, 1, VectorUpdate::Delta),
            (1_000, 10, 6, VectorUpdate::Delta),
            (1_000, 10, 7, VectorUpdate::MergeDeltas(6)),
            (1_000, 10, 12, VectorUpdate::MergeDeltas(11)),
            (1_000, 1_200, 7, VectorUpdate::Retrain),
            (0, 10, 1, VectorUpdate::Retrain),
        ] {
            assert_eq!(
                vector_update(indexed, unindexed, parts),
                update,
                "{unindexed} rows onto {indexed} in {parts} parts"
            );
        }
    }

    /// 16-dimensional vectors `c{from}`.. `c{to - 1}`, all different.
    fn rows(from: usize, to: usize) -> (Vec<String>, Vec<Vec<f32>>) {
        let ids = (from..to).map(|i| format!("c{i}")).collect();
        let vectors = (from..to)
            .map(|i| {
                (0..16)
                    .map(|d| ((i * (d + 1)) as f32 * 0.37).sin())
                    .collect()
            })
            .collect();
        (ids, vectors)
    }

    fn batch(ids: &[String], vectors: &[Vec<f32>]) -> arrow_array::RecordBatch {
        let rows: Vec<(&str, &[f32])> = ids
            .iter()
            .zip(vectors)
            .map(|(id, v)| (id.as_str(), v.as_slice()))
            .collect();
        rows::vectors_batch(&rows, 16)
    }

    /// The index's parts and unindexed rows after each update, as the policy says.
    #[test]
    fn a_vector_index_grows_by_deltas_merges_them_and_is_rebuilt_when_outgrown() {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().display().to_string();
        let seen = block(&uri.clone(), async move {
            let db = lancedb::connect(&uri).execute().await?;
            let (ids, vectors) = rows(0, 400);
            let table = db
                .create_table("vectors_1", batch(&ids, &vectors))
                .execute()
                .await?;
            index_column(&table, "vector", 1, vector_index).await?;
            let state = |t: Table| async move {
                let name = t.list_indices().await?[0].name.clone();
                let stats = t.index_stats(&name).await?.unwrap();
                Ok::<_, lancedb::Error>((stats.num_indices, stats.num_unindexed_rows))
            };
            let mut seen = vec![state(table.clone()).await?];
            // Eight small additions: deltas, merged at eight parts; then one too large.
            let mut next = 400;
            for added in [20, 20, 20, 20, 20, 20, 20, 20, 700] {
                let (ids, vectors) = rows(next, next + added);
                next += added;
                table.add(batch(&ids, &vectors)).execute().await?;
                update_indexes(&table).await?;
                seen.push(state(table.clone()).await?);
            }
            // The last rows added are found through the index.
            let (_, vectors) = rows(next - 1, next);
            let query = table
                .query()
                .nearest_to(vectors[0].as_slice())?
                .distance_type(DistanceType::Cosine)
                .limit(1);
            let batches = collect(query).await?;
            let first = rows::text(&batches[0], "id").unwrap()[0].clone();
            Ok::<_, lancedb::Error>((seen, first))
        })
        .unwrap();
        let parts: Vec<(Option<u32>, usize)> = [1, 2, 3, 4, 5, 6, 7, 2, 3, 1]
            .into_iter()
            .map(|p| (Some(p), 0))
            .collect();
        assert_eq!(seen, (parts, "c1259".to_string()));
    }

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
