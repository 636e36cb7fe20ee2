//! The vector index on disk: checksummed snapshots switched by one atomic rename.
//!
//! # Layout (`<gen>/vectors/`)
//!
//! ```text
//! meta.json                 format, tag (catalog seq), kind, dims, params, snapshot name,
//!                           and the length + CRC-32 of every file of that snapshot
//! <snap>.ids.json           slot → chunk id, tombstoned slots, zero-vector slots
//! <snap>.f32                exact: the matrix, little-endian rows in slot order
//! <snap>.hnsw.graph/.data   HNSW: hnsw_rs `file_dump` (graph topology, f16 points)
//! <snap>.passages           passage vectors, int8 (`passages`; the last file listed;
//!                           memory-mapped, not read into memory)
//! <snap>.d<tag>-<n>.delta   the changes of one sync since the snapshot (`delta`), in order
//! damaged                   left by a reader whose load failed a check: the next sync
//!                           rebuilds (removed by the next save)
//! ```
//!
//! A sync that changes a few chunks of a large index appends a delta
//! ([`VectorIndex::append`]): it writes the delta's file, then `meta.json` listing it after
//! the others, by the same atomic rename. Readers apply the deltas to the snapshot
//! (`layered`). The writer folds them into a new snapshot ([`VectorIndex::save`]) when they
//! would outgrow an exact scan or hide too much of the snapshot.
//!
//! [`VectorIndex::save`] writes a new snapshot's files under a fresh name, fsyncs them, then
//! replaces `meta.json` by an atomic rename (fsyncing the directory), and only then deletes
//! the files of older snapshots. A crash at any instant leaves either the old or the new
//! `meta.json`, each naming complete files; a reader that loses a race with the cleanup
//! re-reads `meta.json` and retries. (A directory cannot be renamed over a non-empty one
//! on POSIX, so `meta.json` is the one file whose rename switches snapshots.)
//!
//! [`VectorIndex::load`] checks every file against its recorded length and CRC-32 before
//! parsing (`crc32fast`, several GB/s with PCLMULQDQ; format 1's sha256 cost about 0.1 s
//! per 100 MB here, and either guards against accidents, not adversaries). This matters
//! for the graph: hnsw_rs's loader asserts, indexes without bounds checks and even calls
//! `process::exit` on malformed input, so corrupt or partial files must be caught before
//! they reach it; they become [`Error::Corrupt`] naming the file, and the caller rebuilds
//! from the catalog.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use serde::{Deserialize, Serialize};

use super::checked::{
    check_len, hash_file, map_checked, read_checked, verify_file, write_file, write_streamed,
    FileSum,
};
use super::delta::Delta;
use super::graph::{GraphHolder, GraphStore, LoadedGraph, Slot};
use super::index::{invalid_path, slots_in, Kind, Store, Stored, VectorIndex, VectorParams};
use super::layered::Layered;
use super::passages::Passages;
use super::{HalfCosine, UnitCosine};
use crate::atomic::write_atomic;
use crate::clock;
use crate::error::{Error, Result};

/// Bumped when the files' layout or meaning changes; an old index then fails to load and
/// is rebuilt from the catalog.
/// 2: passages moved out of the graph into `<snap>.passages`; CRC-32 instead of sha256.
/// 3: deltas after the snapshot (`delta`); a format 2 `meta.json` reads as one without.
/// 4: f16 graph points (`graph`). A format 2 or 3 graph of f32 points still reads, as an
///    exact matrix of its vectors, and the next sync rebuilds it as a graph ([`Saved`]).
const FORMAT_VERSION: u32 = 4;
const OLDEST_READ: u32 = 2;
pub(super) const META: &str = "meta.json";
/// Left by a reader whose load found a damaged file (`report_damage`).
const DAMAGED: &str = "damaged";

impl VectorIndex {
    /// Writes the index into `dir` (created if needed) as the state of catalog seq `tag`.
    /// Atomic: a reader or a crash sees the previous complete save or this one.
    pub fn save(&self, dir: &Path, tag: u64) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let nanos = clock::now().as_nanos();
        let snapshot = format!("s{tag:06}-{nanos:x}");
        let mut files = Vec::new();

        let (dead, zero, graph_points) = match &self.store {
            Store::Exact { .. } => (Vec::new(), Vec::new(), 0),
            Store::Graph(g) => (
                slots_in(&g.state, Slot::Dead),
                slots_in(&g.state, Slot::Zero),
                g.points,
            ),
        };
        let ids = IdsFile {
            ids: &self.ids,
            dead,
            zero,
        };
        let name = format!("{snapshot}.ids.json");
        let bytes = serde_json::to_vec(&ids).map_err(|e| invalid_path(&dir.join(&name), e))?;
        files.push(write_file(dir, &name, &bytes)?);

        match &self.store {
            Store::Exact { rows } => {
                let name = format!("{snapshot}.f32");
                files.push(write_streamed(dir, name, |out| {
                    for chunk in rows.chunks(1 << 16) {
                        let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
                        out.write_all(&bytes)?;
                    }
                    Ok(())
                })?);
            }
            Store::Graph(g) => {
                // hnsw_rs panics (rather than erring) when it cannot create its files.
                let dumped = panic::catch_unwind(AssertUnwindSafe(|| {
                    g.graph.with(|graph| graph.file_dump(dir, &snapshot))
                }));
                let graph_path = dir.join(format!("{snapshot}.hnsw.graph"));
                match dumped {
                    Ok(Ok(basename)) if basename == snapshot => {}
                    Ok(Ok(other)) => {
                        return Err(invalid_path(
                            &graph_path,
                            format!("hnsw_rs wrote the graph as {other:?}"),
                        ))
                    }
                    Ok(Err(e)) => return Err(invalid_path(&graph_path, e)),
                    Err(_) => {
                        return Err(invalid_path(&graph_path, "hnsw_rs panicked while saving"))
                    }
                }
                for suffix in ["hnsw.graph", "hnsw.data"] {
                    let name = format!("{snapshot}.{suffix}");
                    let path = dir.join(&name);
                    File::options()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.sync_all())
                        .map_err(|e| Error::io(&path, e))?;
                    let (len, crc32) = hash_file(&path)?;
                    files.push(FileSum { name, len, crc32 });
                }
            }
        }

        let name = format!("{snapshot}.passages");
        files.push(write_streamed(dir, name, |out| {
            self.passages.encode_to(out)
        })?);

        let meta = Meta {
            format: FORMAT_VERSION,
            tag,
            kind: self.kind(),
            dims: self.dims,
            params: self.params.clone(),
            snapshot: snapshot.clone(),
            slots: self.ids.len(),
            graph_points,
            files,
            deltas: Vec::new(),
            delta_chunks: 0,
            delta_removed: 0,
        };
        let bytes = serde_json::to_vec_pretty(&meta).map_err(|e| invalid_path(dir, e))?;
        write_atomic(&dir.join(META), &bytes)?;

        // Older snapshots and debris of interrupted saves.
        remove_unlisted(dir, |name| {
            name != META && !name.starts_with(&format!("{snapshot}."))
        });
        Ok(())
    }

    /// Loads the snapshot saved in `dir`, without the deltas after it (what the writer folds
    /// them into, having the catalog to tell what changed), and the tag the index with its
    /// deltas is at;
    /// `None` if nothing was ever saved there. Damaged or partial files are an error naming
    /// the file. Searches read [`Layered::load`].
    pub fn load(dir: &Path) -> Result<Option<(VectorIndex, u64)>> {
        with_meta(dir, |meta| {
            let index = load_snapshot(dir, meta)?;
            Ok((index, meta.tag))
        })
    }

    /// Leaves word in `dir` that a reader found the index damaged (a checksum the sync's
    /// length check cannot see), so the next sync rebuilds it. Best effort: a reader may
    /// not be able to write there (a read-only mount); the next save removes the word.
    pub(crate) fn report_damage(dir: &Path) {
        let _ = fs::write(dir.join(DAMAGED), b"");
    }

    /// Whether a reader left word of damage in `dir` that no save has cleared yet.
    pub(crate) fn damage_reported(dir: &Path) -> bool {
        dir.join(DAMAGED).exists()
    }

    /// What `meta.json` in `dir` says of the saved index, without loading it; `None` if
    /// nothing was ever saved there. A file it lists that is missing or not of the length
    /// it records is an error, and so is a reader's report of damage (checksums are left to
    /// the load: reading every byte of a large index is what a small sync must not do).
    pub(crate) fn saved(dir: &Path) -> Result<Option<Saved>> {
        if VectorIndex::damage_reported(dir) {
            return Err(invalid_path(dir, "a search found the vector index damaged"));
        }
        let meta = read_meta(&dir.join(META))?;
        for sum in meta.iter().flat_map(|m| m.files.iter().chain(&m.deltas)) {
            check_len(&dir.join(&sum.name), sum)?;
        }
        Ok(meta.map(|meta| Saved {
            tag: meta.tag,
            dims: meta.dims,
            graph: meta.kind == Kind::Hnsw,
            f32_graph: meta.kind == Kind::Hnsw && meta.format < 4,
            slots: meta.slots,
            delta_chunks: meta.delta_chunks,
            delta_removed: meta.delta_removed,
        }))
    }

    /// Appends one delta to the index saved in `dir` (which must be at tag `before`): the
    /// chunks `removed` (their vectors and passages) go, the `added` vectors (chunk or
    /// passage ids) come, and the index is at tag `tag`. Atomic, as [`save`](Self::save) is.
    pub(crate) fn append(
        dir: &Path,
        before: u64,
        tag: u64,
        removed: Vec<String>,
        added: Stored,
    ) -> Result<()> {
        let meta_path = dir.join(META);
        let mut meta = read_meta(&meta_path)?
            .filter(|meta| meta.tag == before)
            .ok_or_else(|| invalid_path(&meta_path, format!("not the index of tag {before}")))?;
        if added.passages.dims() != meta.dims {
            return Err(invalid_path(
                &meta_path,
                format!(
                    "a delta of {} dimensions for an index of {}",
                    added.passages.dims(),
                    meta.dims
                ),
            ));
        }
        let removals = removed.len();
        let delta = Delta::new(removed, added);
        let nanos = clock::now().as_nanos();
        let name = format!("{}.d{tag:06}-{nanos:x}.delta", meta.snapshot);
        meta.deltas
            .push(write_file(dir, &name, &delta.encode(meta.dims))?);
        meta.tag = tag;
        meta.delta_chunks += delta.chunks.len();
        meta.delta_removed += removals;
        let bytes = serde_json::to_vec_pretty(&meta).map_err(|e| invalid_path(dir, e))?;
        write_atomic(&meta_path, &bytes)?;
        // Deltas of interrupted appends.
        let listed: Vec<&str> = meta.deltas.iter().map(|d| d.name.as_str()).collect();
        remove_unlisted(dir, |name| {
            name.ends_with(".delta") && !listed.contains(&name)
        });
        Ok(())
    }
}

impl Layered {
    /// Loads the index saved in `dir`, snapshot and deltas, and the tag it is at; `None` if
    /// nothing was ever saved there. The snapshot of `previous` is kept when it is still the
    /// saved one, so only the deltas are read. Damaged or partial files are an error naming
    /// the file.
    pub fn load(dir: &Path, previous: Option<&Layered>) -> Result<Option<(Layered, u64)>> {
        with_meta(dir, |meta| {
            let base = match previous.filter(|p| p.snapshot == meta.snapshot) {
                Some(previous) => previous.base.clone(),
                None => Arc::new(load_snapshot(dir, meta)?),
            };
            let mut layered = Layered::new(meta.snapshot.clone(), base)?;
            for sum in &meta.deltas {
                let path = dir.join(&sum.name);
                if !sum.name.starts_with(&format!("{}.d", meta.snapshot))
                    || sum.name.contains(['/', '\\'])
                {
                    return Err(invalid_path(&dir.join(META), "unexpected delta file name"));
                }
                let delta = Delta::decode(&read_checked(&path, sum)?, meta.dims)
                    .map_err(|e| invalid_path(&path, e))?;
                layered.apply(delta)?;
            }
            Ok((layered, meta.tag))
        })
    }
}

/// What the writer reads of a saved index (`meta.json`) to choose between a delta and a
/// new snapshot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Saved {
    /// The tag of the last save or delta.
    pub(crate) tag: u64,
    pub(crate) dims: usize,
    /// Whether the snapshot is a graph (else an exact matrix).
    pub(crate) graph: bool,
    /// Whether it is a graph of f32 points (format 2 or 3), which loads as an exact matrix
    /// until the writer rebuilds it.
    pub(crate) f32_graph: bool,
    /// The snapshot's slots, tombstones included.
    pub(crate) slots: usize,
    /// Chunks the deltas add.
    pub(crate) delta_chunks: usize,
    /// Chunk ids the deltas remove (an added chunk replaces one only when its id was
    /// there already, which content-derived ids make rare, so added ones are not counted).
    pub(crate) delta_removed: usize,
}

/// Removes the entries of `dir` that `stale` names. Best effort: whatever stays is removed
/// by the next save, and nothing reads files meta.json does not name.
fn remove_unlisted(dir: &Path, stale: impl Fn(&str) -> bool) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if stale(&name) {
            let path = entry.path();
            let _ = match path.is_dir() {
                true => fs::remove_dir_all(&path),
                false => fs::remove_file(&path),
            };
        }
    }
}

/// Reads `meta.json` and runs `load` with it; retries when a concurrent save switched
/// snapshots and deleted the files `load` was reading.
fn with_meta<T>(dir: &Path, load: impl Fn(&Meta) -> Result<T>) -> Result<Option<T>> {
    let meta_path = dir.join(META);
    let mut attempt = 0;
    loop {
        let Some(meta) = read_meta(&meta_path)? else {
            return Ok(None);
        };
        match load(&meta) {
            Ok(loaded) => return Ok(Some(loaded)),
            Err(Error::Io { source, .. })
                if source.kind() == io::ErrorKind::NotFound
                    && attempt < 3
                    && read_meta(&meta_path)?.map(|m| m.snapshot) != Some(meta.snapshot) =>
            {
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Meta {
    format: u32,
    tag: u64,
    kind: Kind,
    dims: usize,
    params: VectorParams,
    snapshot: String,
    /// Length of the slot table.
    slots: usize,
    /// Points in the HNSW graph, tombstones included (0 for exact).
    graph_points: usize,
    pub(super) files: Vec<FileSum>,
    /// Deltas after the snapshot, oldest first (format 3).
    #[serde(default)]
    deltas: Vec<FileSum>,
    /// Chunks the deltas add.
    #[serde(default)]
    delta_chunks: usize,
    /// Chunk ids the deltas remove.
    #[serde(default)]
    delta_removed: usize,
}

#[derive(Serialize)]
struct IdsFile<'a> {
    ids: &'a [String],
    dead: Vec<usize>,
    zero: Vec<usize>,
}

#[derive(Deserialize)]
struct IdsFileOwned {
    ids: Vec<String>,
    dead: Vec<usize>,
    zero: Vec<usize>,
}

pub(super) fn read_meta(path: &Path) -> Result<Option<Meta>> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta: Meta = serde_json::from_slice(&bytes).map_err(|e| invalid_path(path, e))?;
    if !(OLDEST_READ..=FORMAT_VERSION).contains(&meta.format) {
        return Err(invalid_path(
            path,
            format!(
                "vector index format {} (this version reads {FORMAT_VERSION})",
                meta.format
            ),
        ));
    }
    Ok(Some(meta))
}

fn load_snapshot(dir: &Path, meta: &Meta) -> Result<VectorIndex> {
    let meta_path = dir.join(META);
    let corrupt = |message: String| invalid_path(&meta_path, message);
    if meta.dims == 0 {
        return Err(corrupt("dims is 0".into()));
    }
    let expected: Vec<String> = match meta.kind {
        Kind::Exact => vec!["ids.json", "f32", "passages"],
        Kind::Hnsw => vec!["ids.json", "hnsw.graph", "hnsw.data", "passages"],
    }
    .into_iter()
    .map(|suffix| format!("{}.{suffix}", meta.snapshot))
    .collect();
    let listed: Vec<&str> = meta.files.iter().map(|f| f.name.as_str()).collect();
    if listed != expected.iter().map(String::as_str).collect::<Vec<_>>()
        || meta.snapshot.contains(['/', '\\'])
        || meta.snapshot.starts_with('.')
    {
        return Err(corrupt(format!("unexpected file list {listed:?}")));
    }

    let ids_path = dir.join(&meta.files[0].name);
    let ids_bytes = read_checked(&ids_path, &meta.files[0])?;
    let ids: IdsFileOwned =
        serde_json::from_slice(&ids_bytes).map_err(|e| invalid_path(&ids_path, e))?;
    drop(ids_bytes);
    let bad_ids = |message: String| invalid_path(&ids_path, message);
    if ids.ids.len() != meta.slots {
        return Err(bad_ids(format!(
            "{} slots, meta.json says {}",
            ids.ids.len(),
            meta.slots
        )));
    }
    let params = meta.params.sanitized();
    // The passages file is the last one listed (the list was checked above).
    let sum = &meta.files[meta.files.len() - 1];
    let path = dir.join(&sum.name);
    let passages = Passages::mapped(map_checked(&path, sum)?, meta.dims)
        .map_err(|e| invalid_path(&path, e))?;

    match meta.kind {
        Kind::Exact => load_exact(dir, meta, ids, &ids_path, params, passages),
        Kind::Hnsw => load_graph(dir, meta, ids, &ids_path, params, passages),
    }
}

/// An exact index's rows, checked against the slot table (`ids`, read from `ids_path`).
fn load_exact(
    dir: &Path,
    meta: &Meta,
    ids: IdsFileOwned,
    ids_path: &Path,
    params: VectorParams,
    passages: Passages,
) -> Result<VectorIndex> {
    let bad_ids = |message: String| invalid_path(ids_path, message);
    if !ids.dead.is_empty() || !ids.zero.is_empty() {
        return Err(bad_ids("tombstones in an exact index".into()));
    }
    let rows_path = dir.join(&meta.files[1].name);
    let bytes = read_checked(&rows_path, &meta.files[1])?;
    if bytes.len() != meta.slots * meta.dims * 4 {
        return Err(invalid_path(
            &rows_path,
            format!(
                "{} bytes, expected {} rows of {} floats",
                bytes.len(),
                meta.slots,
                meta.dims
            ),
        ));
    }
    let rows: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let zeros = rows
        .chunks_exact(meta.dims)
        .filter(|row| row.iter().all(|&x| x == 0.0))
        .count();
    let slot_of = slot_map(&ids.ids, |_| true).map_err(bad_ids)?;
    Ok(VectorIndex {
        dims: meta.dims,
        params,
        ids: ids.ids,
        slot_of,
        zeros,
        store: Store::Exact { rows },
        passages,
    })
}

/// An HNSW index's graph (hnsw_rs's dump), cross-checked against the slot table (`ids`,
/// read from `ids_path`): every point a live or dead slot of its own, every live
/// non-zero slot a point.
fn load_graph(
    dir: &Path,
    meta: &Meta,
    ids: IdsFileOwned,
    ids_path: &Path,
    params: VectorParams,
    passages: Passages,
) -> Result<VectorIndex> {
    let bad_ids = |message: String| invalid_path(ids_path, message);
    let mut state = vec![Slot::Live; meta.slots];
    for (list, mark) in [(&ids.dead, Slot::Dead), (&ids.zero, Slot::Zero)] {
        for &slot in list {
            match state.get_mut(slot) {
                Some(s) if *s == Slot::Live => *s = mark,
                _ => return Err(bad_ids(format!("bad tombstone/zero slot {slot}"))),
            }
        }
    }
    let slot_of = slot_map(&ids.ids, |slot| state[slot] != Slot::Dead).map_err(bad_ids)?;
    let graph_path = dir.join(&meta.files[1].name);
    for sum in &meta.files[1..3] {
        verify_file(&dir.join(&sum.name), sum)?;
    }
    let loader = HnswIo::new(dir, &meta.snapshot);
    if meta.format < 4 {
        return load_f32_graph(&loader, meta, ids, &state, params, passages)
            .map_err(|m| invalid_path(&graph_path, m));
    }
    // The files are exactly what hnsw_rs wrote (checked above), so this should not
    // fail; catch_unwind turns its asserts into an error in case it still does.
    let loaded = panic::catch_unwind(AssertUnwindSafe(|| {
        LoadedGraph::try_new(loader, |loader| {
            loader.load_hnsw_with_dist::<u16, HalfCosine>(HalfCosine)
        })
    }));
    let cell = match loaded {
        Ok(Ok(cell)) => cell,
        Ok(Err(e)) => return Err(invalid_path(&graph_path, format!("{e:#}"))),
        Err(_) => return Err(invalid_path(&graph_path, "hnsw_rs could not read it")),
    };
    let graph = GraphHolder::Loaded(cell);
    let points = graph.with(|g| {
        let points = g.get_point_indexation();
        let slots = points.into_iter().map(|p| p.get_origin_id());
        check_points(meta, &state, points.get_data_dimension(), slots)
    });
    let points = points.map_err(|m| invalid_path(&graph_path, m))?;
    let live_points = state.iter().filter(|s| **s == Slot::Live).count();
    Ok(VectorIndex {
        dims: meta.dims,
        params,
        ids: ids.ids,
        slot_of,
        zeros: ids.zero.len(),
        store: Store::Graph(GraphStore {
            graph,
            state,
            points,
            dead: points - live_points,
        }),
        passages,
    })
}

/// A format 2 or 3 graph of f32 points, as an exact index of its live vectors (with the
/// saved parameters, so it asks to be rebuilt as a graph: `VectorIndex::needs_rebuild`).
fn load_f32_graph(
    loader: &HnswIo,
    meta: &Meta,
    ids: IdsFileOwned,
    state: &[Slot],
    params: VectorParams,
    passages: Passages,
) -> std::result::Result<VectorIndex, String> {
    let loaded = panic::catch_unwind(AssertUnwindSafe(|| {
        loader
            .load_hnsw_with_dist::<f32, UnitCosine>(UnitCosine)
            .map(|graph| {
                let points = graph.get_point_indexation();
                let vectors: Vec<(usize, Vec<f32>)> = points
                    .into_iter()
                    .map(|p| (p.get_origin_id(), p.get_v().to_vec()))
                    .collect();
                (points.get_data_dimension(), vectors)
            })
    }));
    let (dims, vectors) = match loaded {
        Ok(Ok(loaded)) => loaded,
        Ok(Err(e)) => return Err(format!("{e:#}")),
        Err(_) => return Err("hnsw_rs could not read it".into()),
    };
    check_points(meta, state, dims, vectors.iter().map(|v| v.0))?;
    let mut entries: Vec<(String, Vec<f32>)> = vectors
        .into_iter()
        .filter(|(slot, _)| state[*slot] == Slot::Live)
        .map(|(slot, vector)| (ids.ids[slot].clone(), vector))
        .collect();
    entries.extend(
        ids.zero
            .iter()
            .map(|&slot| (ids.ids[slot].clone(), vec![0.0; dims])),
    );
    let exact = VectorParams {
        exact_threshold: usize::MAX,
        ..params.clone()
    };
    let mut index = VectorIndex::build(meta.dims, entries, &exact).map_err(|e| e.to_string())?;
    index.params = params;
    index.passages = passages;
    Ok(index)
}

/// Cross-checks a graph's points (their data ids, `slots`, of vectors of `dims`) against
/// `meta.json` and the slot table: every point is a live or dead slot of its own, every
/// live non-zero slot is a point. Returns the number of points.
fn check_points(
    meta: &Meta,
    state: &[Slot],
    dims: usize,
    slots: impl Iterator<Item = usize>,
) -> std::result::Result<usize, String> {
    if dims != meta.dims {
        return Err(format!("{dims} dimensions, meta.json says {}", meta.dims));
    }
    let mut seen = vec![false; meta.slots];
    let mut points = 0;
    for slot in slots {
        match (seen.get(slot), state.get(slot)) {
            (Some(false), Some(Slot::Live | Slot::Dead)) => seen[slot] = true,
            _ => return Err(format!("point with unexpected data id {slot}")),
        }
        points += 1;
    }
    if points == 0 {
        return Err("empty graph".into());
    }
    let live_points = state.iter().filter(|s| **s == Slot::Live).count();
    let live_seen = (0..meta.slots)
        .filter(|&s| seen[s] && state[s] == Slot::Live)
        .count();
    if live_seen != live_points {
        return Err(format!(
            "{live_seen} live points, the slot table has {live_points}"
        ));
    }
    if points != meta.graph_points {
        return Err(format!(
            "{points} points, meta.json says {}",
            meta.graph_points
        ));
    }
    Ok(points)
}

/// Live id → slot, rejecting empty or repeated live ids.
fn slot_map(
    ids: &[String],
    live: impl Fn(usize) -> bool,
) -> std::result::Result<HashMap<String, usize>, String> {
    let mut map = HashMap::with_capacity(ids.len());
    for (slot, id) in ids.iter().enumerate() {
        if !live(slot) {
            continue;
        }
        if id.is_empty() || map.insert(id.clone(), slot).is_some() {
            return Err(format!("bad or repeated chunk id {id:?} at slot {slot}"));
        }
    }
    Ok(map)
}
