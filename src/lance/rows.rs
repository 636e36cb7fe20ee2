//! The tables' rows as Arrow record batches, both ways: the schemas, batches built from the
//! store's records, and columns read back (pure).

use std::sync::Arc;

use arrow_array::builder::{FixedSizeListBuilder, Float32Builder, ListBuilder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, BinaryArray, FixedSizeListArray, Float32Array, Int64Array, ListArray,
    RecordBatch, RecordBatchIterator, StringArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::analyzer::{terms, AnalyzerMode};
use crate::annotation::Annotations;
use crate::codec;
use crate::passage;
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

/// `passages_<g>`: a long chunk's passages, one row per chunk (and per write: a chunk whose
/// passages a sync wrote in two pieces has two rows): their ids, and their vectors in the
/// int8 form (`crate::codec`, the local store's form for passages), end to end. A search
/// that rescores its candidates by their passages reads one row per candidate, where one
/// row per passage cost about a hundred object-store reads a search.
pub(super) fn passages_schema() -> SchemaRef {
    let item = Arc::new(Field::new("item", DataType::Utf8, true));
    Arc::new(Schema::new(vec![
        utf8("chunk"),
        Field::new("ids", DataType::List(item), false),
        Field::new("codes", DataType::Binary, false),
    ]))
}

/// Whether `schema` is the passages' layout before [`passages_schema`]: one row per passage
/// (`id`, `chunk`, `vector` in f32), written by an earlier memoria.
pub(super) fn one_row_per_passage(schema: &Schema) -> bool {
    schema.field_with_name("vector").is_ok()
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

/// The shared `embedding_codes`: a vector by its cache key, in `crate::codec`'s bytes (a
/// passage's in int8, a chunk's own in f32, as the local store's cache keeps them).
pub(super) fn cache_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("key"),
        Field::new("codes", DataType::Binary, false),
    ]))
}

/// The shared cache as memoria wrote it before `embedding_codes`, `embedding_cache`: every
/// vector in f32, as a list of any width (read, no longer written).
#[cfg(test)]
pub(super) fn earlier_cache_schema() -> SchemaRef {
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

/// Passages' vectors as rows: `(id, vector)` pairs sorted by id, so a chunk's passages are
/// together, one row per chunk.
pub(super) fn passages_batch(passages: &[(&str, &[f32])]) -> RecordBatch {
    let mut chunks: Vec<&str> = Vec::new();
    let mut ids = ListBuilder::new(StringBuilder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::Utf8,
        true,
    )));
    let mut codes: Vec<Vec<u8>> = Vec::new();
    for (id, vector) in passages {
        let chunk = passage::chunk_of(id);
        if chunks.last() != Some(&chunk) {
            if !chunks.is_empty() {
                ids.append(true);
            }
            chunks.push(chunk);
            codes.push(Vec::new());
        }
        ids.values().append_value(id);
        if let Some(row) = codes.last_mut() {
            row.extend(codec::encode_int8(vector));
        }
    }
    if !chunks.is_empty() {
        ids.append(true);
    }
    batch(
        passages_schema(),
        vec![
            strings(chunks.iter().copied()),
            Arc::new(ids.finish()),
            Arc::new(BinaryArray::from_iter_values(codes)),
        ],
    )
}

/// Passages as the layout before [`passages_schema`] kept them, one row per passage
/// (tests: a store an earlier memoria wrote).
#[cfg(test)]
pub(super) fn passages_batch_one_row_each(passages: &[(String, String, Vec<f32>)]) -> RecordBatch {
    let dims = passages.first().map_or(0, |(_, _, v)| v.len());
    let schema = Arc::new(Schema::new(vec![
        utf8("id"),
        utf8("chunk"),
        vector_field(dims),
    ]));
    let vectors: Vec<&[f32]> = passages.iter().map(|(_, _, v)| v.as_slice()).collect();
    batch(
        schema,
        vec![
            strings(passages.iter().map(|(id, _, _)| id.as_str())),
            strings(passages.iter().map(|(_, chunk, _)| chunk.as_str())),
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

/// Cache entries as rows: keys and their vectors' `crate::codec` bytes.
pub(super) fn cache_batch(rows: &[(&str, &[u8])]) -> RecordBatch {
    batch(
        cache_schema(),
        vec![
            strings(rows.iter().map(|(key, _)| *key)),
            Arc::new(BinaryArray::from_iter_values(rows.iter().map(|(_, b)| *b))),
        ],
    )
}

/// Cache entries as memoria wrote them before `embedding_codes` ([`earlier_cache_schema`]).
#[cfg(test)]
pub(super) fn earlier_cache_batch(rows: &[(&str, &[f32])]) -> RecordBatch {
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
        earlier_cache_schema(),
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

/// Passages read back as `(id, chunk, vector)`, from rows of either layout: one row per
/// chunk ([`passages_schema`]; vectors as the int8 form reads back, unit length) or one row
/// per passage (the layout before, which a store keeps until its next sync rebuilds it).
pub(super) fn passages(
    batch: &RecordBatch,
) -> Result<Vec<(String, String, Vec<f32>)>, ColumnError> {
    let chunks = text(batch, "chunk")?;
    if one_row_per_passage(&batch.schema()) {
        let ids = text(batch, "id")?;
        let vectors = vectors(batch, "vector")?;
        return Ok(ids
            .into_iter()
            .zip(chunks)
            .zip(vectors)
            .map(|((id, chunk), vector)| (id, chunk, vector))
            .collect());
    }
    let ids = column::<ListArray>(batch, "ids")?;
    let codes = column::<BinaryArray>(batch, "codes")?;
    let mut out = Vec::new();
    for (row, chunk) in chunks.into_iter().enumerate() {
        let listed = listed_text(&ids.value(row))?;
        let bytes = codes.value(row);
        let stride = bytes.len().checked_div(listed.len()).unwrap_or(0);
        if stride * listed.len() != bytes.len() {
            return Err(format!(
                "chunk {chunk}: {} passage ids for {} bytes of codes",
                listed.len(),
                bytes.len()
            ));
        }
        for (id, vector) in listed.into_iter().zip(int8_vectors(&chunk, bytes, stride)?) {
            out.push((id, chunk.clone(), vector));
        }
    }
    Ok(out)
}

/// `bytes` cut into int8-form vectors of `stride` bytes each, read back.
fn int8_vectors(chunk: &str, bytes: &[u8], stride: usize) -> Result<Vec<Vec<f32>>, ColumnError> {
    bytes
        .chunks(stride.max(1))
        .map(|code| {
            codec::int8_parts(code)
                .and_then(|_| codec::decode(code))
                .ok_or_else(|| format!("chunk {chunk}: its passages' codes are not the int8 form"))
        })
        .collect()
}

/// The passage ids of `batch`'s rows, of either layout.
pub(super) fn passage_ids(batch: &RecordBatch) -> Result<Vec<String>, ColumnError> {
    if one_row_per_passage(&batch.schema()) {
        return text(batch, "id");
    }
    let ids = column::<ListArray>(batch, "ids")?;
    let mut out = Vec::new();
    for row in 0..ids.len() {
        out.extend(listed_text(&ids.value(row))?);
    }
    Ok(out)
}

/// The values of one row of a list-of-text column.
fn listed_text(values: &ArrayRef) -> Result<Vec<String>, ColumnError> {
    let values = values
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| "column `ids` holds no text".to_string())?;
    Ok(values
        .iter()
        .map(|id| id.unwrap_or_default().to_string())
        .collect())
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
        let listed = earlier_cache_batch(&[("k", &a)]);
        assert_eq!(vectors(&listed, "vector").unwrap(), vec![a.to_vec()]);
    }

    #[test]
    fn passages_read_back_one_row_per_chunk_and_in_the_layout_before() {
        let unit = |v: &[f32]| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        let (a, b, c) = (
            unit(&[1.0, 2.0, 3.0]),
            unit(&[0.0, -1.0, 0.5]),
            unit(&[3.0, 0.0, 0.0]),
        );
        let written = [("x#0", a.as_slice()), ("x#1", &b), ("y#0", &c)];
        let batch = passages_batch(&written);
        assert_eq!(batch.num_rows(), 2, "one row per chunk");
        assert_eq!(passage_ids(&batch).unwrap(), ["x#0", "x#1", "y#0"]);
        let read = passages(&batch).unwrap();
        let owners: Vec<(&str, &str)> = read
            .iter()
            .map(|(id, ch, _)| (id.as_str(), ch.as_str()))
            .collect();
        assert_eq!(owners, [("x#0", "x"), ("x#1", "x"), ("y#0", "y")]);
        // The int8 form: within rounding of the vector written.
        for ((_, _, got), (_, want)) in read.iter().zip(written) {
            let cosine: f32 = got.iter().zip(want).map(|(g, w)| g * w).sum();
            assert!(cosine > 0.999, "{cosine}");
        }
        // A store an earlier memoria wrote reads the same.
        let before = passages_batch_one_row_each(&read);
        assert!(one_row_per_passage(&before.schema()));
        assert!(!one_row_per_passage(&batch.schema()));
        assert_eq!(passages(&before).unwrap(), read);
        assert_eq!(passage_ids(&before).unwrap(), ["x#0", "x#1", "y#0"]);
    }

    #[test]
    fn damaged_passage_codes_are_named() {
        let batch = passages_batch(&[("x#0", &[1.0, 0.0][..])]);
        let mut columns = batch.columns().to_vec();
        columns[2] = Arc::new(BinaryArray::from_iter_values([b"oops".as_slice()]));
        let damaged = RecordBatch::try_new(batch.schema(), columns).unwrap();
        let err = passages(&damaged).unwrap_err();
        assert!(err.contains("chunk x"), "{err}");
    }

    #[test]
    fn sql_literals_are_quoted() {
        assert_eq!(quoted("it's"), "'it''s'");
        assert_eq!(is_in("id", &["a", "b'c"]), "id IN ('a', 'b''c')");
    }
}
