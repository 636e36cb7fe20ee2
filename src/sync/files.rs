//! One file's part of a sync: its (size, mtime) stat and the workspace digest built from
//! them, reading and hashing a changed file, chunking it (a transcript through its
//! `User:` / `Assistant:` lines), and the `sync.sessions` deltas below which a growing
//! transcript waits.

use crate::annotation::{self, Annotations};
use crate::chunk::{
    chunk_entries, chunk_markdown, chunk_markdown_openclaw, entries, Chunk, ChunkParams, Entry,
};
use crate::clock;
use crate::config::{Semantics, SessionSyncSettings};
use crate::digest::sha256_hex;
use crate::error::{Error, Result};
use crate::store::{ChunkRecord, FileRecord, Upsert};
use crate::title;
use crate::transcript;
use crate::workspace::{decode_text, Discovery, MemoryFile, SourceKind};
use std::fs;

/// Size and modification time of a discovered file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStat {
    pub size: u64,
    pub mtime_ns: i128,
}

/// Stats `file` (following nothing: discovery already rejected symlinks).
pub fn stat(file: &MemoryFile) -> Result<FileStat> {
    let meta = fs::metadata(&file.abs_path).map_err(|e| Error::io(&file.abs_path, e))?;
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(clock::since_epoch)
        .map_or(0, |d| d.as_nanos() as i128);
    Ok(FileStat {
        size: meta.len(),
        mtime_ns,
    })
}

/// Digest of the discovered files' paths, sizes and mtimes (see [`SyncStats`]).
pub fn workspace_digest(discovery: &Discovery) -> String {
    let stats: Vec<Option<FileStat>> = discovery.files.iter().map(|f| stat(f).ok()).collect();
    digest_of(discovery, &stats)
}

/// The digest of the discovered files given their stats (`None`: could not be read).
pub(super) fn digest_of(discovery: &Discovery, stats: &[Option<FileStat>]) -> String {
    let mut listing = String::new();
    for (file, stat) in discovery.files.iter().zip(stats) {
        let (size, mtime) = stat.as_ref().map_or((0, 0), |s| (s.size, s.mtime_ns));
        listing.push_str(&format!("{}\0{size}\0{mtime}\n", file.rel_path));
    }
    sha256_hex(listing.as_bytes())
}

/// Stable id of the `ordinal`-th chunk of a file.
pub fn chunk_id(
    source: &str,
    path: &str,
    ordinal: usize,
    start: usize,
    end: usize,
    hash: &str,
    title: &str,
) -> String {
    let key = format!("{source}:{path}:{ordinal}:{start}:{end}:{hash}:{title}");
    let mut id = sha256_hex(key.as_bytes());
    id.truncate(32);
    id
}

/// True when a transcript that only grew since it was indexed has fewer new bytes than
/// `deltaBytes` and fewer new lines than `deltaMessages`. A transcript that shrank (was
/// rewritten) or cannot be read is never deferred.
pub(super) fn below_session_delta(
    file: &MemoryFile,
    indexed_size: u64,
    stat: &FileStat,
    deltas: SessionSyncSettings,
) -> bool {
    if stat.size < indexed_size {
        return false;
    }
    let new_bytes = stat.size - indexed_size;
    if new_bytes >= deltas.delta_bytes {
        return false;
    }
    let new_lines = (|| -> std::io::Result<u64> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = fs::File::open(&file.abs_path)?;
        f.seek(SeekFrom::Start(indexed_size))?;
        let mut tail = Vec::with_capacity(new_bytes as usize);
        f.take(new_bytes).read_to_end(&mut tail)?;
        Ok(transcript::count_lines(&tail))
    })();
    new_lines.is_ok_and(|lines| lines < deltas.delta_messages)
}

pub(super) enum Outcome {
    /// A changed file's new chunks, and what was wrong in it (malformed transcript lines).
    Changed(Upsert, Vec<String>),
    Touched {
        path: String,
        record: FileRecord,
    },
}

/// A file's text as chunks with the file's own line ranges: Markdown as it is, and a
/// transcript as its `User:` / `Assistant:` lines, cited by JSONL line.
///
/// Under OpenClaw 2026.9's semantics a memory file's annotations are read per entry (the
/// curated root files chunked per entry, see `chunk::chunk_entries`) and cut from the
/// indexed text (`annotation::strip`); otherwise every chunk's [`Annotations`] are empty.
pub(super) fn chunk_file(
    file: &MemoryFile,
    text: &str,
    params: ChunkParams,
    semantics: Semantics,
    mtime_ms: u64,
) -> (Vec<(Chunk, Annotations)>, Vec<String>) {
    let plain = |chunks: Vec<Chunk>| -> Vec<(Chunk, Annotations)> {
        chunks
            .into_iter()
            .map(|c| (c, Annotations::default()))
            .collect()
    };
    match file.source {
        SourceKind::Memory if semantics.is_openclaw() => {
            (annotated_chunks(&file.rel_path, text, params), Vec::new())
        }
        SourceKind::Memory => (plain(chunk_markdown(text, params)), Vec::new()),
        SourceKind::Sessions => {
            let transcript = transcript::transcript(text, &file.rel_path);
            let chunker = match semantics.is_openclaw() {
                true => chunk_markdown_openclaw,
                false => chunk_markdown,
            };
            let chunks = chunker(&transcript.text, params)
                .into_iter()
                .map(|mut chunk| {
                    let annotations = Annotations {
                        origin: transcript.chunk_origin(chunk.start_line, chunk.end_line, mtime_ms),
                        ..Annotations::default()
                    };
                    (chunk.start_line, chunk.end_line) =
                        transcript.source_range(chunk.start_line, chunk.end_line);
                    (chunk, annotations)
                })
                .collect();
            (chunks, transcript.warnings)
        }
    }
}

/// A memory file's chunks under 2026.9's semantics, annotations read from the original
/// lines of each chunk's entry (a list item of a curated file) or of the chunk itself.
fn annotated_chunks(path: &str, text: &str, params: ChunkParams) -> Vec<(Chunk, Annotations)> {
    let stripped = annotation::strip(text);
    let curated = annotation::is_curated(path);
    let chunks = match curated {
        true => chunk_entries(&stripped, params),
        false => chunk_markdown_openclaw(&stripped, params),
    };
    let entries: Vec<Entry> = match curated {
        true => entries(&stripped)
            .into_iter()
            .filter(|e| e.bullet)
            .collect(),
        false => Vec::new(),
    };
    let lines: Vec<&str> = text.split('\n').collect();
    chunks
        .into_iter()
        .map(|chunk| {
            let (start, end) = entries
                .iter()
                .find(|e| (e.start_line..=e.end_line).contains(&chunk.start_line))
                .map_or((chunk.start_line, chunk.end_line), |e| {
                    (e.start_line, e.end_line)
                });
            let span = lines
                .get(start - 1..end.min(lines.len()))
                .unwrap_or_default()
                .join("\n");
            let annotations = annotation::read(path, &span);
            (chunk, annotations)
        })
        .collect()
}

pub(super) fn process_file(
    file: &MemoryFile,
    stat: &FileStat,
    known: Option<&FileRecord>,
    params: ChunkParams,
    semantics: Semantics,
) -> Result<Outcome> {
    let bytes = fs::read(&file.abs_path).map_err(|e| Error::io(&file.abs_path, e))?;
    let hash = sha256_hex(&bytes);
    let source = file.source.as_str();
    if let Some(known) = known.filter(|k| k.hash == hash) {
        let record = FileRecord {
            size: stat.size,
            mtime_ns: stat.mtime_ns,
            ..known.clone()
        };
        return Ok(Outcome::Touched {
            path: file.rel_path.clone(),
            record,
        });
    }
    let (text, lossy) = decode_text(bytes);
    let (chunks, warnings) = chunk_file(
        file,
        &text,
        params,
        semantics,
        u64::try_from(stat.mtime_ns / 1_000_000).unwrap_or(0),
    );
    // A Markdown chunk's title is read from the lines as they are (the heading trail above
    // it); a transcript's chunks have none.
    let titles = match file.source {
        SourceKind::Memory => {
            let starts: Vec<usize> = chunks.iter().map(|(c, _)| c.start_line).collect();
            title::chunk_titles(&file.rel_path, &text, &starts)
        }
        SourceKind::Sessions => vec![String::new(); chunks.len()],
    };
    let chunks: Vec<(String, ChunkRecord)> = chunks
        .into_iter()
        .zip(titles)
        .enumerate()
        .map(|(ordinal, ((chunk, annotations), title))| {
            let id = chunk_id(
                source,
                &file.rel_path,
                ordinal,
                chunk.start_line,
                chunk.end_line,
                &chunk.hash,
                &title,
            );
            let record = ChunkRecord {
                path: file.rel_path.clone(),
                source: source.to_string(),
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                hash: chunk.hash,
                text: chunk.text,
                title,
                annotations,
            };
            (id, record)
        })
        .collect();
    let record = FileRecord {
        source: source.to_string(),
        hash,
        size: stat.size,
        mtime_ns: stat.mtime_ns,
        chunk_ids: chunks.iter().map(|(id, _)| id.clone()).collect(),
        lossy,
    };
    let upsert = Upsert {
        path: file.rel_path.clone(),
        record,
        chunks,
    };
    Ok(Outcome::Changed(upsert, warnings))
}
