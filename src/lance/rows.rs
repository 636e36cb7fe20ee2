//! The tables' rows as Arrow record batches, both ways: the schemas, batches built from the
//! store's records, and columns read back (pure).

use std::sync::Arc;

use arrow_array::builder::{FixedSizeListBuilder, Float32Builder, ListBuilder};
use arrow_array::{
    Array, ArrayRef, BinaryArray, FixedSizeListArray, Float32Array, Int64Array, ListArray,
    RecordBatch, RecordBatchIterator, StringArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::analyzer::{terms, AnalyzerMode};
use crate::annotation::Annotations;
use crate::store::{ChunkRecord, FileRecord};

/// What a column read back was not.
pub(super) type ColumnError = String;

fn utf8(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}

fn u64_field(name: &str) -> Field {
    Field::new(name, DataType::UInt64, false)
}

fn vector_field(dims: usize) -> Field {
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    Field::new("vector", DataType::FixedSizeList(item, dims as i32), false)
}

/// `files_<g>`: a file's path and its record (JSON).
pub(super) fn files_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![utf8("path"), utf8("record")]))
}

/// `chunks_<g>`: a chunk's record, column by column, and `terms`: its text as the analyzer
/// reads it, space-separated, which the full-text index splits on whitespace (so LanceDB's
/// BM25 counts memoria's terms: CJK bigrams, code identifiers, folded accents).
pub(super) fn chunks_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("id"),
        utf8("path"),
        utf8("source"),
        u64_field("start_line"),
        u64_field("end_line"),
        utf8("hash"),
        utf8("title"),
        utf8("annotations"),
        utf8("text"),
        utf8("terms"),
    ]))
}

/// `vectors_<g>`: a chunk's own vector.
pub(super) fn vectors_schema(dims: usize) -> SchemaRef {
    Arc::new(Schema::new(vec![utf8("id"), vector_field(dims)]))
}

/// `passages_<g>`: a passage's vector, with its chunk.
pub(super) fn passages_schema(dims: usize) -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("id"),
        utf8("chunk"),
        vector_field(dims),
    ]))
}

/// `manifest`: one row (`entry = 'manifest'`), the manifest (JSON) and the version of each
/// of its generation's tables (0: the table does not exist).
pub(super) fn manifest_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("entry"),
        utf8("manifest"),
        u64_field("files"),
        u64_field("chunks"),
        u64_field("vectors"),
        u64_field("passages"),
    ]))
}

/// `lease`: one row (`entry = 'lease'`): who writes, until when (Unix milliseconds).
pub(super) fn lease_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("entry"),
        utf8("holder"),
        Field::new("expires", DataType::Int64, false),
    ]))
}

/// `jobs`: one row (`entry = 'jobs'`), the batch embedding jobs' record.
pub(super) fn jobs_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("entry"),
        Field::new("jobs", DataType::Binary, false),
    ]))
}

/// The shared `embedding_cache`: a vector by its cache key, of any width.
pub(super) fn cache_schema() -> SchemaRef {
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    Arc::new(Schema::new(vec![
        utf8("key"),
        Field::new("vector", DataType::List(item), false),
    ]))
}

fn batch(schema: SchemaRef, columns: Vec<ArrayRef>) -> RecordBatch {
    // The columns are built here to the schema's types and lengths.
    RecordBatch::try_new(schema, columns).unwrap_or_else(|err| unreachable!("{err}"))
}

fn strings<'a>(values: impl IntoIterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(values))
}

/// Files as rows.
pub(super) fn files_batch(files: &[(&str, &FileRecord)]) -> RecordBatch {
    let records: Vec<String> = files
        .iter()
        .map(|(_, r)| serde_json::to_string(r).unwrap_or_default())
        .collect();
    batch(
        files_schema(),
        vec![
            strings(files.iter().map(|(p, _)| *p)),
            strings(records.iter().map(String::as_str)),
        ],
    )
}

/// Chunks as rows.
pub(super) fn chunks_batch(chunks: &[(&str, &ChunkRecord)]) -> RecordBatch {
    let annotations: Vec<String> = chunks
        .iter()
        .map(|(_, c)| match c.annotations.is_empty() {
            true => String::new(),
            false => serde_json::to_string(&c.annotations).unwrap_or_default(),
        })
        .collect();
    let analyzed: Vec<String> = chunks
        .iter()
        .map(|(_, c)| terms(&c.text, AnalyzerMode::Index).join(" "))
        .collect();
    let lines = |f: fn(&ChunkRecord) -> usize| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(
            chunks.iter().map(|(_, c)| f(c) as u64),
        ))
    };
    batch(
        chunks_schema(),
        vec![
            strings(chunks.iter().map(|(id, _)| *id)),
            strings(chunks.iter().map(|(_, c)| c.path.as_str())),
            strings(chunks.iter().map(|(_, c)| c.source.as_str())),
            lines(|c| c.start_line),
            lines(|c| c.end_line),
            strings(chunks.iter().map(|(_, c)| c.hash.as_str())),
            strings(chunks.iter().map(|(_, c)| c.title.as_str())),
            strings(annotations.iter().map(String::as_str)),
            strings(chunks.iter().map(|(_, c)| c.text.as_str())),
            strings(analyzed.iter().map(String::as_str)),
        ],
    )
}

fn fixed_vectors(vectors: &[&[f32]], dims: usize) -> ArrayRef {
    let mut builder = FixedSizeListBuilder::new(Float32Builder::new(), dims as i32)
        .with_field(Arc::new(Field::new("item", DataType::Float32, true)));
    for vector in vectors {
        builder.values().append_slice(vector);
        builder.append(true);
    }
    Arc::new(builder.finish())
}

/// Chunks' own vectors as rows (every one `dims` wide).
pub(super) fn vectors_batch(rows: &[(&str, &[f32])], dims: usize) -> RecordBatch {
    let vectors: Vec<&[f32]> = rows.iter().map(|(_, v)| *v).collect();
    batch(
        vectors_schema(dims),
        vec![
            strings(rows.iter().map(|(id, _)| *id)),
            fixed_vectors(&vectors, dims),
        ],
    )
}

/// Passages' vectors as rows, with their chunks.
pub(super) fn passages_batch(rows: &[(&str, &str, &[f32])], dims: usize) -> RecordBatch {
    let vectors: Vec<&[f32]> = rows.iter().map(|(_, _, v)| *v).collect();
    batch(
        passages_schema(dims),
        vec![
            strings(rows.iter().map(|(id, _, _)| *id)),
            strings(rows.iter().map(|(_, chunk, _)| *chunk)),
            fixed_vectors(&vectors, dims),
        ],
    )
}

/// The manifest row.
pub(super) fn manifest_batch(manifest: &str, versions: [u64; 4]) -> RecordBatch {
    let version = |v: u64| -> ArrayRef { Arc::new(UInt64Array::from(vec![v])) };
    batch(
        manifest_schema(),
        vec![
            strings(["manifest"]),
            strings([manifest]),
            version(versions[0]),
            version(versions[1]),
            version(versions[2]),
            version(versions[3]),
        ],
    )
}

/// The lease row.
pub(super) fn lease_batch(holder: &str, expires_ms: i64) -> RecordBatch {
    batch(
        lease_schema(),
        vec![
            strings(["lease"]),
            strings([holder]),
            Arc::new(Int64Array::from(vec![expires_ms])),
        ],
    )
}

/// The jobs row.
pub(super) fn jobs_batch(jobs: &[u8]) -> RecordBatch {
    batch(
        jobs_schema(),
        vec![
            strings(["jobs"]),
            Arc::new(BinaryArray::from_iter_values([jobs])),
        ],
    )
}

/// Cache entries as rows.
pub(super) fn cache_batch(rows: &[(&str, &[f32])]) -> RecordBatch {
    let mut builder = ListBuilder::new(Float32Builder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::Float32,
        true,
    )));
    for (_, vector) in rows {
        builder.values().append_slice(vector);
        builder.append(true);
    }
    batch(
        cache_schema(),
        vec![
            strings(rows.iter().map(|(key, _)| *key)),
            Arc::new(builder.finish()),
        ],
    )
}

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T, ColumnError> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| format!("column `{name}` is missing or of another type"))
}

/// A text column's values.
pub(super) fn text(batch: &RecordBatch, name: &str) -> Result<Vec<String>, ColumnError> {
    let array = column::<StringArray>(batch, name)?;
    Ok((0..array.len())
        .map(|i| array.value(i).to_string())
        .collect())
}

/// An unsigned column's values.
pub(super) fn unsigned(batch: &RecordBatch, name: &str) -> Result<Vec<u64>, ColumnError> {
    Ok(column::<UInt64Array>(batch, name)?.values().to_vec())
}

/// A signed column's values.
pub(super) fn signed(batch: &RecordBatch, name: &str) -> Result<Vec<i64>, ColumnError> {
    Ok(column::<Int64Array>(batch, name)?.values().to_vec())
}

/// A float column's values (LanceDB's `_score` and `_distance`).
pub(super) fn floats(batch: &RecordBatch, name: &str) -> Result<Vec<f32>, ColumnError> {
    Ok(column::<Float32Array>(batch, name)?.values().to_vec())
}

/// A binary column's values.
pub(super) fn binary(batch: &RecordBatch, name: &str) -> Result<Vec<Vec<u8>>, ColumnError> {
    let array = column::<BinaryArray>(batch, name)?;
    Ok((0..array.len()).map(|i| array.value(i).to_vec()).collect())
}

/// A vector column's values, fixed-size or not.
pub(super) fn vectors(batch: &RecordBatch, name: &str) -> Result<Vec<Vec<f32>>, ColumnError> {
    let values = |array: &dyn Array| -> Result<Vec<f32>, ColumnError> {
        array
            .as_any()
            .downcast_ref::<Float32Array>()
            .map(|a| a.values().to_vec())
            .ok_or_else(|| format!("column `{name}` holds no 32-bit floats"))
    };
    if let Some(array) = batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>())
    {
        return (0..array.len()).map(|i| values(&array.value(i))).collect();
    }
    let array = column::<ListArray>(batch, name)?;
    (0..array.len()).map(|i| values(&array.value(i))).collect()
}

/// Chunks read back, with their ids: every column of [`chunks_schema`] but `terms`.
pub(super) fn chunk_records(
    batch: &RecordBatch,
) -> Result<Vec<(String, ChunkRecord)>, ColumnError> {
    let ids = text(batch, "id")?;
    let paths = text(batch, "path")?;
    let sources = text(batch, "source")?;
    let starts = unsigned(batch, "start_line")?;
    let ends = unsigned(batch, "end_line")?;
    let hashes = text(batch, "hash")?;
    let titles = text(batch, "title")?;
    let annotations = text(batch, "annotations")?;
    let texts = text(batch, "text")?;
    let mut out = Vec::with_capacity(ids.len());
    for (i, id) in ids.into_iter().enumerate() {
        let annotations = match annotations[i].is_empty() {
            true => Annotations::default(),
            false => serde_json::from_str(&annotations[i])
                .map_err(|err| format!("chunk {id}: annotations: {err}"))?,
        };
        out.push((
            id,
            ChunkRecord {
                path: paths[i].clone(),
                source: sources[i].clone(),
                start_line: starts[i] as usize,
                end_line: ends[i] as usize,
                hash: hashes[i].clone(),
                text: texts[i].clone(),
                title: titles[i].clone(),
                annotations,
            },
        ));
    }
    Ok(out)
}

/// The columns [`chunk_records`] reads.
pub(super) const CHUNK_COLUMNS: [&str; 9] = [
    "id",
    "path",
    "source",
    "start_line",
    "end_line",
    "hash",
    "title",
    "annotations",
    "text",
];

/// An SQL string literal.
pub(super) fn quoted(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// `column IN ('a', 'b', …)`.
pub(super) fn is_in(column: &str, values: &[&str]) -> String {
    let list: Vec<String> = values.iter().map(|v| quoted(v)).collect();
    format!("{column} IN ({})", list.join(", "))
}

/// `batch` as the reader LanceDB's writes take.
pub(super) fn reader_of(batch: RecordBatch) -> Box<dyn arrow_array::RecordBatchReader + Send> {
    let schema = batch.schema();
    Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip_and_carry_analyzed_terms() {
        let chunk = ChunkRecord {
            path: "memory/2026-03-01.md".into(),
            source: "memory".into(),
            start_line: 3,
            end_line: 9,
            hash: "abc".into(),
            text: "Café déjà-vu getUserName 東京タワー".into(),
            title: "Trip".into(),
            annotations: Annotations::default(),
        };
        let batch = chunks_batch(&[("c1", &chunk)]);
        assert_eq!(chunk_records(&batch).unwrap(), vec![("c1".into(), chunk)]);
        let analyzed = text(&batch, "terms").unwrap().remove(0);
        assert!(analyzed.split(' ').any(|t| t == "cafe"), "{analyzed}");
        assert!(analyzed.split(' ').any(|t| t == "東京"), "{analyzed}");
        assert!(!analyzed.contains("  "));
    }

    #[test]
    fn vectors_read_back_from_fixed_and_variable_lists() {
        let a = [1.0f32, 2.0];
        let b = [3.0f32, 4.0];
        let fixed = vectors_batch(&[("x", &a), ("y", &b)], 2);
        assert_eq!(
            vectors(&fixed, "vector").unwrap(),
            vec![a.to_vec(), b.to_vec()]
        );
        let listed = cache_batch(&[("k", &a)]);
        assert_eq!(vectors(&listed, "vector").unwrap(), vec![a.to_vec()]);
    }

    #[test]
    fn sql_literals_are_quoted() {
        assert_eq!(quoted("it's"), "'it''s'");
        assert_eq!(is_in("id", &["a", "b'c"]), "id IN ('a', 'b''c')");
    }
}
