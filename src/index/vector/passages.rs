//! Passage vectors beside the graph: int8 rows grouped by chunk, read only to rescore the
//! chunks a search already found.
//!
//! A long chunk also has one vector per few-line window (`crate::passage`). Short bullet
//! notes give eight or more passages per chunk, so keeping them as graph points made the
//! index (on disk and in memory) ~9× its chunks' size and its first load seconds long. They
//! are kept here instead, each as 768 signed bytes and one `f32`, a quarter of a float row:
//! the search walks the graph by chunk vectors, then scores each chunk it found by the
//! best of its passages' cosines ([`super::VectorIndex::search`]).
//!
//! **Quantisation** (`crate::codec`, the catalog's form for passages too): a vector `v` is
//! kept as `q = round(127 · v / max|v|)` and `1 / ‖q‖`, so `q · u / ‖q‖` is the cosine of
//! the stored direction with a unit query `u` (rounding moves a cosine by ~0.001 at 768
//! dimensions; the table test bounds it). An all-zero vector keeps zeros and scores 0.
//!
//! **File** (`<snapshot>.passages`, checksummed with the snapshot's other files):
//! `MPV1`, dims (u32 LE), count (u32 LE), then per passage: id length (u16 LE), id (UTF-8),
//! `1/‖q‖` (f32 LE), `dims` bytes of `q`; a chunk's passages one after the other.
//!
//! **Read where they lie.** A snapshot's file is memory-mapped ([`Passages::mapped`]), not
//! read into memory: what is held is where each chunk's passages start (about a hundred
//! bytes a chunk with passages, where the codes are ~7 KB), and a search reads the codes
//! of the chunks it rescores from the page cache, which the kernel can drop. At a million
//! chunks that is the difference between ~7 GB held by every reader (and twice by a fold)
//! and ~0.1 GB. What changes after (a writer applying deltas) is held in memory beside the
//! file: a chunk's passages are answered wholly from one place, memory or one file.
//! Snapshot files are never rewritten in place (a save writes new names), so a mapping
//! stays valid while it is read; on Unix even after the file is deleted.
//!
//! **Gathered where they will lie.** A first index or a fold takes what it adds from the
//! catalog the same way: written one after another into an unnamed file ([`Spill`]) and
//! mapped, not collected in memory. A fold keeps that file beside its snapshot's
//! ([`Passages::absorb`]) until it writes both into the next snapshot's file; only a chunk
//! with passages in both is read into memory.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use memmap2::Mmap;

use crate::codec::quantize;
use crate::passage;
use crate::simd::dot_i8_f32;

const MAGIC: &[u8; 4] = b"MPV1";
/// Magic, dims, count.
const HEADER: usize = 12;

/// One stored passage vector, held in memory.
struct Packed {
    /// The passage's full id (`<chunk>#<n>`).
    id: String,
    inv_norm: f32,
    codes: Box<[i8]>,
}

/// One passage, wherever it is held.
#[derive(Clone, Copy)]
struct Record<'a> {
    id: &'a str,
    inv_norm: f32,
    codes: &'a [i8],
}

impl Packed {
    fn record(&self) -> Record<'_> {
        Record {
            id: &self.id,
            inv_norm: self.inv_norm,
            codes: &self.codes,
        }
    }
}

impl Record<'_> {
    fn score(&self, query: &[f32]) -> f32 {
        dot_i8_f32(self.codes, query) * self.inv_norm
    }

    fn packed(&self) -> Packed {
        Packed {
            id: self.id.to_string(),
            inv_norm: self.inv_norm,
            codes: self.codes.into(),
        }
    }

    fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(&(self.id.len() as u16).to_le_bytes())?;
        out.write_all(self.id.as_bytes())?;
        out.write_all(&self.inv_norm.to_le_bytes())?;
        out.write_all(as_bytes(self.codes))
    }
}

/// Signed bytes as the file's bytes (the same bits).
fn as_bytes(codes: &[i8]) -> &[u8] {
    // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid
    // for both.
    unsafe { std::slice::from_raw_parts(codes.as_ptr().cast::<u8>(), codes.len()) }
}

/// The file's bytes as signed codes.
pub(super) fn as_codes(bytes: &[u8]) -> &[i8] {
    // SAFETY: as in `as_bytes`.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) }
}

/// Reads the record at byte `at` of a file of `dims`-dimension passages: the record and
/// where the next one starts. Checks only that it lies within `bytes` and that its id is
/// UTF-8 (what [`parse`] checks besides is the caller's).
fn record_at(bytes: &[u8], at: usize, dims: usize) -> Result<(Record<'_>, usize), String> {
    let truncated = || format!("truncated at byte {at}");
    let len = bytes.get(at..at + 2).ok_or_else(truncated)?;
    let len = u16::from_le_bytes([len[0], len[1]]) as usize;
    let id_at = at + 2;
    let norm_at = id_at + len;
    let codes_at = norm_at + 4;
    let next = codes_at + dims;
    if next > bytes.len() {
        return Err(truncated());
    }
    let id = std::str::from_utf8(&bytes[id_at..norm_at])
        .map_err(|_| "a passage id is not UTF-8".to_string())?;
    let norm = &bytes[norm_at..codes_at];
    let record = Record {
        id,
        inv_norm: f32::from_le_bytes([norm[0], norm[1], norm[2], norm[3]]),
        codes: as_codes(&bytes[codes_at..next]),
    };
    Ok((record, next))
}

/// Checks a whole file for an index of `dims` dimensions and calls `each` with every
/// record and its offset, in file order; the error says what is wrong with it.
fn parse<'a>(
    bytes: &'a [u8],
    dims: usize,
    mut each: impl FnMut(usize, Record<'a>) -> Result<(), String>,
) -> Result<usize, String> {
    let header = bytes
        .get(..HEADER)
        .ok_or_else(|| "truncated at byte 0".to_string())?;
    if &header[..4] != MAGIC {
        return Err("not a passage vector file".into());
    }
    let u32_at = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let file_dims = u32_at(&header[4..8]);
    if file_dims != dims {
        return Err(format!("{file_dims} dimensions, the index has {dims}"));
    }
    let count = u32_at(&header[8..12]);
    let mut at = HEADER;
    for _ in 0..count {
        let (record, next) = record_at(bytes, at, dims)?;
        if !passage::is_passage(record.id) {
            return Err(format!("{:?} is not a passage id", record.id));
        }
        if !record.inv_norm.is_finite() || record.inv_norm < 0.0 {
            return Err(format!(
                "passage {}: bad norm {}",
                record.id, record.inv_norm
            ));
        }
        each(at, record)?;
        at = next;
    }
    if at != bytes.len() {
        return Err(format!("{} bytes after the last passage", bytes.len() - at));
    }
    Ok(count)
}

/// Where a chunk's passages lie in a mapped file: the bytes from the first one's offset to
/// the end of the last, and how many they are.
#[derive(Clone, Copy)]
struct Run {
    at: usize,
    end: usize,
    count: u32,
}

/// A passages file read where it lies.
struct Mapped {
    bytes: Mmap,
    dims: usize,
    runs: HashMap<Box<str>, Run>,
    /// Chunks it no longer answers for: removed, held in memory, or answered by another.
    left: HashSet<String>,
}

impl Mapped {
    /// Where chunk `chunk`'s passages lie, while this file answers for them.
    fn live(&self, chunk: &str) -> Option<Run> {
        let run = *self.runs.get(chunk)?;
        (!self.left.contains(chunk)).then_some(run)
    }

    /// The chunks this file answers for, with where their passages lie.
    fn live_runs(&self) -> impl Iterator<Item = (&str, Run)> + '_ {
        (self.runs.iter())
            .filter(|(chunk, _)| !self.left.contains(&***chunk))
            .map(|(chunk, run)| (&**chunk, *run))
    }

    /// The records of `run`, in file order (checked when the file was mapped).
    fn records(&self, run: Run) -> impl Iterator<Item = Record<'_>> + '_ {
        let mut at = run.at;
        (0..run.count).map_while(move |_| {
            let (record, next) = record_at(&self.bytes, at, self.dims).ok()?;
            at = next;
            Some(record)
        })
    }

    /// The file's bytes of `run`, as they are written.
    fn raw(&self, run: Run) -> &[u8] {
        &self.bytes[run.at..run.end]
    }
}

/// Passages gathered into an unnamed file as they come, then mapped ([`Passages::mapped`]):
/// how a rebuild takes every passage of an index from the catalog without holding them
/// (~7 GB at a million chunks). Each chunk's passages must come one after another.
pub(super) struct Spill {
    dims: usize,
    out: BufWriter<File>,
    count: u32,
}

impl Spill {
    /// An empty spill in an unnamed file in `dir`, gone when the last mapping of it is.
    pub(super) fn create(dir: &Path, dims: usize) -> io::Result<Spill> {
        let mut out = BufWriter::with_capacity(1 << 20, tempfile::tempfile_in(dir)?);
        out.write_all(MAGIC)?;
        out.write_all(&(dims as u32).to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        Ok(Spill {
            dims,
            out,
            count: 0,
        })
    }

    /// Dimensions of every passage.
    pub(super) fn dims(&self) -> usize {
        self.dims
    }

    /// Adds passage `id` in its int8 form.
    pub(super) fn push(&mut self, id: &str, inv_norm: f32, codes: &[i8]) -> io::Result<()> {
        let bad = |problem: String| io::Error::new(io::ErrorKind::InvalidData, problem);
        if codes.len() != self.dims {
            let (has, wants) = (codes.len(), self.dims);
            return Err(bad(format!(
                "passage {id} has {has} dimensions, the index has {wants}"
            )));
        }
        if id.len() > usize::from(u16::MAX) {
            return Err(bad(format!("passage id {id:.40}… is over 65,535 bytes")));
        }
        self.count = (self.count.checked_add(1))
            .ok_or_else(|| bad("an index of more than 2^32 passages".into()))?;
        Record {
            id,
            inv_norm,
            codes,
        }
        .write(&mut self.out)
    }

    /// The passages gathered, read where they lie; the error says what is wrong.
    pub(super) fn finish(self) -> io::Result<Passages> {
        let mut file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(8))?;
        file.write_all(&self.count.to_le_bytes())?;
        // SAFETY: an unnamed file no other process can open, never written again.
        let map = unsafe { Mmap::map(&file)? };
        Passages::mapped(map, self.dims)
            .map_err(|problem| io::Error::new(io::ErrorKind::InvalidData, problem))
    }
}

/// The passage vectors of an index, by chunk. Each chunk's passages are answered by one
/// place: memory (`held`) or one of the mapped `files`.
pub(super) struct Passages {
    dims: usize,
    /// Saved or gathered files' passages, read where they lie (a snapshot's one file; a
    /// fold's snapshot and the spill of what it adds).
    files: Vec<Mapped>,
    /// Passages held in memory, by chunk.
    held: HashMap<String, Vec<Packed>>,
    count: usize,
}

impl Passages {
    pub(super) fn new(dims: usize) -> Passages {
        Passages {
            dims,
            files: Vec::new(),
            held: HashMap::new(),
            count: 0,
        }
    }

    /// The passages of a mapped file written by [`encode_to`](Self::encode_to) for an
    /// index of `dims` dimensions, checked whole; the error says what is wrong with it.
    pub(super) fn mapped(bytes: Mmap, dims: usize) -> Result<Passages, String> {
        let mut runs: HashMap<Box<str>, Run> = HashMap::new();
        // The chunk whose passages are being read: its first one's offset and their ids.
        let mut current: Option<(&str, usize, Vec<&str>)> = None;
        // Records the run that ends at byte `end`.
        let mut close = |run: Option<(&str, usize, Vec<&str>)>, end: usize| {
            let Some((chunk, at, ids)) = run else {
                return Ok(());
            };
            let count = ids.len() as u32;
            match runs.insert(chunk.into(), Run { at, end, count }) {
                Some(_) => Err(format!("the passages of chunk {chunk} are not together")),
                None => Ok(()),
            }
        };
        let count = parse(&bytes, dims, |at, record| {
            let chunk = passage::chunk_of(record.id);
            match &mut current {
                Some((open, _, ids)) if *open == chunk => {
                    if ids.contains(&record.id) {
                        return Err(format!("passage {} is stored twice", record.id));
                    }
                    ids.push(record.id);
                    Ok(())
                }
                _ => close(current.replace((chunk, at, vec![record.id])), at),
            }
        })?;
        close(current.take(), bytes.len())?;
        // Checking and parsing the file read every page, which made each resident in this
        // process: they go back to the page cache, and from now on the pages are read at
        // random (a search faults in the few chunks it rescores; no read-ahead).
        #[cfg(unix)]
        {
            // SAFETY: a read-only mapping of a file that does not change (module docs): a
            // dropped page reads back the same bytes.
            let dropped = unsafe { bytes.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
            if let Err(err) = dropped.and_then(|()| bytes.advise(memmap2::Advice::Random)) {
                tracing::debug!("passages: madvise: {err}");
            }
        }
        Ok(Passages {
            dims,
            files: vec![Mapped {
                bytes,
                dims,
                runs,
                left: HashSet::new(),
            }],
            held: HashMap::new(),
            count,
        })
    }

    /// Reads a file written by [`encode`](Self::encode) for an index of `dims` dimensions
    /// into memory; the error says what is wrong with it.
    pub(super) fn decode(bytes: &[u8], dims: usize) -> Result<Passages, String> {
        let mut passages = Passages::new(dims);
        parse(bytes, dims, |_, record| {
            if passages.contains(record.id) {
                return Err(format!("passage {} is stored twice", record.id));
            }
            passages.push(record.packed());
            Ok(())
        })?;
        Ok(passages)
    }

    /// Which file answers for chunk `chunk`'s passages, and where they lie in it.
    fn filed(&self, chunk: &str) -> Option<(usize, Run)> {
        (self.files.iter().enumerate()).find_map(|(n, file)| Some((n, file.live(chunk)?)))
    }

    /// Chunk `chunk`'s passages: from memory where they are held there, else from a file.
    fn of(&self, chunk: &str) -> Box<dyn Iterator<Item = Record<'_>> + '_> {
        if let Some(list) = self.held.get(chunk) {
            return Box::new(list.iter().map(Packed::record));
        }
        match self.filed(chunk) {
            Some((n, run)) => Box::new(self.files[n].records(run)),
            None => Box::new(std::iter::empty()),
        }
    }

    /// Moves chunk `chunk`'s passages from their file into memory, to be changed there.
    fn hold(&mut self, chunk: &str) {
        let Some((n, run)) = self.filed(chunk) else {
            return;
        };
        let file = &mut self.files[n];
        let packed: Vec<Packed> = file.records(run).map(|r| r.packed()).collect();
        file.left.insert(chunk.to_string());
        self.held.insert(chunk.to_string(), packed);
    }

    /// Stores (or replaces) passage `id`'s vector, which must have `dims` finite values.
    pub(super) fn insert(&mut self, id: String, vector: &[f32]) {
        let (inv_norm, codes) = quantize(vector);
        self.replace(Packed {
            id,
            inv_norm,
            codes,
        });
    }

    /// Moves `other`'s passages in, replacing those with the same ids. Its files stay
    /// mapped (into an empty set it moves as it is): only the chunks both hold passages
    /// of are read into memory, to be merged there passage by passage.
    pub(super) fn absorb(&mut self, other: Passages) {
        if self.files.is_empty() && self.held.is_empty() && other.dims == self.dims {
            *self = other;
            return;
        }
        let mut moved: Vec<Packed> = Vec::new();
        for mut file in other.files {
            // The file's chunks this set also holds, and the passages of the others.
            let mut shared = Vec::new();
            let mut count = 0;
            for (chunk, run) in file.live_runs() {
                match self.held.contains_key(chunk) || self.filed(chunk).is_some() {
                    true => shared.push((chunk.to_string(), run)),
                    false => count += run.count as usize,
                }
            }
            for (chunk, run) in shared {
                moved.extend(file.records(run).map(|r| r.packed()));
                file.left.insert(chunk);
            }
            if count > 0 {
                self.count += count;
                self.files.push(file);
            }
        }
        moved.extend(other.held.into_values().flatten());
        for packed in moved {
            self.replace(packed);
        }
    }

    fn replace(&mut self, packed: Packed) {
        self.remove(&packed.id);
        self.push(packed);
    }

    /// Adds a passage known not to be stored yet (its chunk's passages held in memory, or
    /// not in the file).
    fn push(&mut self, packed: Packed) {
        self.count += 1;
        self.held
            .entry(passage::chunk_of(&packed.id).to_string())
            .or_default()
            .push(packed);
    }

    /// Removes passage `id`; false if it was not there.
    pub(super) fn remove(&mut self, id: &str) -> bool {
        let chunk = passage::chunk_of(id);
        self.hold(chunk);
        let Some(list) = self.held.get_mut(chunk) else {
            return false;
        };
        let Some(at) = list.iter().position(|p| p.id == id) else {
            return false;
        };
        list.swap_remove(at);
        if list.is_empty() {
            self.held.remove(chunk);
        }
        self.count -= 1;
        true
    }

    /// Passage `id`'s vector as its int8 form reads back (`crate::codec`).
    pub(super) fn get(&self, id: &str) -> Option<Vec<f32>> {
        let p = self.of(passage::chunk_of(id)).find(|p| p.id == id)?;
        Some(p.codes.iter().map(|&c| f32::from(c) * p.inv_norm).collect())
    }

    /// Removes every passage of chunk `chunk`.
    pub(super) fn remove_chunk(&mut self, chunk: &str) {
        if let Some(list) = self.held.remove(chunk) {
            self.count -= list.len();
        } else if let Some((n, run)) = self.filed(chunk) {
            self.count -= run.count as usize;
            self.files[n].left.insert(chunk.to_string());
        }
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.of(passage::chunk_of(id)).any(|p| p.id == id)
    }

    /// The chunks whose passages a file answers for, with where they lie.
    fn filed_runs(&self) -> impl Iterator<Item = (&Mapped, Run)> + '_ {
        (self.files.iter()).flat_map(|file| file.live_runs().map(move |(_, run)| (file, run)))
    }

    /// Every stored passage id, in no particular order.
    pub(super) fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        let held = self.held.values().flatten().map(|p| p.id.as_str());
        let filed = self
            .filed_runs()
            .flat_map(|(file, run)| file.records(run).map(|r| r.id));
        held.chain(filed)
    }

    pub(super) fn len(&self) -> usize {
        self.count
    }

    pub(super) fn dims(&self) -> usize {
        self.dims
    }

    pub(super) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The best cosine of chunk `chunk`'s passages with the unit vector `query`; `None`
    /// when it has none.
    pub(super) fn best(&self, chunk: &str, query: &[f32]) -> Option<f32> {
        self.of(chunk).map(|p| p.score(query)).reduce(f32::max)
    }

    /// Writes the file (see the module docs): a file's passages that did not change are
    /// copied as they lie.
    pub(super) fn encode_to(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(&(self.dims as u32).to_le_bytes())?;
        out.write_all(&(self.count as u32).to_le_bytes())?;
        for p in self.held.values().flatten() {
            p.record().write(out)?;
        }
        for (file, run) in self.filed_runs() {
            out.write_all(file.raw(run))?;
        }
        Ok(())
    }

    /// The file's bytes, in memory (a delta's passages).
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.count * (self.dims + 48));
        // Writing to a Vec does not fail.
        let _ = self.encode_to(&mut out);
        out
    }
}

#[cfg(test)]
mod tests;
