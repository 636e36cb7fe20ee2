//! The packed model: the CPU kernels' weights and the tokenizer's tables, written once in
//! the layout they are used in and memory-mapped on every later start.
//!
//! Loading EmbeddingGemma from its source files costs about two CPU-seconds per process: the
//! tokenizer is built from a 33 MB JSON file and 100M f32 weights are read, rounded to f16
//! (or quantised to Q8_0) and rearranged into panels (`matmul.rs`, `q8.rs`). The first load
//! writes the result to `<cache>/packed/<model-dir-hash>.pack` (`…-q8.pack` for the q8
//! precision); later loads map that file and use it in place,
//! so the weights cost page faults (shared with every other memoria process on the machine)
//! instead of a conversion.
//!
//! # Layout
//!
//! ```text
//! [0, 16)          magic "memoria-pack\0v03"
//! [64, …)          sections, each at a 64-byte aligned offset: weight panels (f16, or Q8_0
//!                  bytes: `q8.rs`), u64 tables
//! […, end - 8)     header (JSON): sources, fingerprint state, tokenizer header, sections, crc32
//! [end - 8, end)   header length, u64 little-endian
//! ```
//!
//! # Invariants
//!
//! - A pack is used only when every source file it was made from (config, tokenizer, weights,
//!   Dense layers) has the size and modification time recorded in its header, and its
//!   sections' CRC-32 matches; otherwise it is rebuilt (it is memoria's own file).
//! - It is written to a temporary file in the same directory, synced and renamed: a reader
//!   sees a whole pack or none, and concurrent first loads each write a complete one.
//! - The header holds the fingerprint's SHA-256 state after the source files, so the
//!   fingerprint of a model loaded from its pack equals the one loaded from its files.
//! - Nothing is ever written into the model directory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use half::f16;
use memmap2::Mmap;
use serde::{Deserialize, Serialize};

use crate::digest::ResumableSha256;
use crate::gemma::slab::{as_bytes, Slab};
use crate::gemma::tokenizer::{BpeHeader, BpeTables, FastBpe};

const MAGIC: &[u8; 16] = b"memoria-pack\0v03";
const ALIGN: usize = 64;

/// Size and modification time of one file a pack was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// Relative to the model directory.
    pub path: String,
    pub len: u64,
    pub modified_ns: u64,
}

/// Reads the size and modification time of `files` (relative to `dir`).
pub fn source_files(dir: &Path, files: &[String]) -> std::io::Result<Vec<SourceFile>> {
    files
        .iter()
        .map(|rel| {
            let meta = std::fs::metadata(dir.join(rel))?;
            let modified_ns =
                crate::clock::since_epoch(meta.modified()?).map_or(0, |d| d.as_nanos() as u64);
            Ok(SourceFile {
                path: rel.clone(),
                len: meta.len(),
                modified_ns,
            })
        })
        .collect()
}

/// Where the pack of the model made from `sources` (the model directory, or a GGUF file and
/// the directory its Dense layers come from) for the kernels of `precision` (`f32`, `q8`,
/// `bf16`) lives under `cache_dir`: `packed/<hash>.pack` for f32, `packed/<hash>-q8.pack`
/// for q8, `packed/<hash>-bf16.pack` for bf16.
pub fn path_for(cache_dir: &Path, sources: &[&Path], precision: &str) -> PathBuf {
    let key: Vec<String> = sources
        .iter()
        .map(|p| {
            let canonical = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            canonical.to_string_lossy().into_owned()
        })
        .collect();
    let digest = crate::digest::sha256_hex(key.join("\0").as_bytes());
    let suffix = match precision {
        "f32" => String::new(),
        other => format!("-{other}"),
    };
    cache_dir
        .join("packed")
        .join(format!("{}{suffix}.pack", &digest[..16]))
}

/// What a section holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    /// A tokenizer table of u64.
    Table,
    /// f16 weight panels (`matmul.rs`).
    F16,
    /// Q8_0 weight panels, as bytes (`q8.rs`).
    Q8,
    /// bf16 weight panels, as u16 bits (`bf16.rs`).
    Bf16,
}

impl Kind {
    fn element_size(self) -> usize {
        match self {
            Kind::Table => 8,
            Kind::F16 => 2,
            Kind::Q8 => 1,
            Kind::Bf16 => 2,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Section {
    name: String,
    kind: Kind,
    offset: usize,
    /// Elements (u64, f16 or bytes).
    len: usize,
    /// Weight shape (`[out, in]`); 0 for tables.
    rows: usize,
    cols: usize,
}

#[derive(Serialize, Deserialize)]
struct Header {
    memoria: String,
    sources: Vec<SourceFile>,
    /// Fingerprint state after the source files (see the module docs).
    digest: ResumableSha256,
    tokenizer: Option<BpeHeader>,
    sections: Vec<Section>,
    crc32: u32,
}

/// A weight's panels, in one of the kernels' formats.
pub enum Panels<'a> {
    F16(&'a [f16]),
    Q8(&'a [u8]),
    Bf16(&'a [u16]),
}

/// A weight to pack: its name and `[rows, cols]` panels.
pub struct PackWeight<'a> {
    pub name: String,
    pub rows: usize,
    pub cols: usize,
    pub data: Panels<'a>,
}

/// Everything a pack holds.
pub struct PackContents<'a> {
    pub sources: Vec<SourceFile>,
    pub digest: ResumableSha256,
    pub tokenizer: Option<&'a BpeTables>,
    pub weights: Vec<PackWeight<'a>>,
}

/// Writes a pack atomically (temporary file, sync, rename).
pub fn write(path: &Path, contents: &PackContents) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut parts: Vec<(Section, &[u8])> = Vec::new();
    let mut offset = ALIGN;
    if let Some(t) = contents.tokenizer {
        for (name, table) in [
            ("tokenizer.merges", &t.merges),
            ("tokenizer.chars", &t.chars),
        ] {
            let bytes = as_bytes(table.as_slice());
            parts.push((section(name, Kind::Table, 0, 0, &mut offset, bytes), bytes));
        }
    }
    for w in &contents.weights {
        let (kind, bytes) = match w.data {
            Panels::F16(v) => (Kind::F16, as_bytes(v)),
            Panels::Q8(v) => (Kind::Q8, v),
            Panels::Bf16(v) => (Kind::Bf16, as_bytes(v)),
        };
        parts.push((
            section(&w.name, kind, w.rows, w.cols, &mut offset, bytes),
            bytes,
        ));
    }
    let mut crc = crc32fast::Hasher::new();
    for (_, bytes) in &parts {
        crc.update(bytes);
    }
    let header = Header {
        memoria: env!("CARGO_PKG_VERSION").to_string(),
        sources: contents.sources.clone(),
        digest: contents.digest.clone(),
        tokenizer: contents.tokenizer.map(|t| t.header.clone()),
        sections: parts.iter().map(|(s, _)| s.clone()).collect(),
        crc32: crc.finalize(),
    };
    let header = serde_json::to_vec(&header).map_err(std::io::Error::other)?;

    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let result = (|| {
        let file = File::create(&tmp)?;
        let mut out = BufWriter::with_capacity(1 << 20, &file);
        out.write_all(MAGIC)?;
        let mut at = MAGIC.len();
        for (s, bytes) in &parts {
            out.write_all(&[0u8; ALIGN][..s.offset - at])?;
            out.write_all(bytes)?;
            at = s.offset + bytes.len();
        }
        out.write_all(&header)?;
        out.write_all(&(header.len() as u64).to_le_bytes())?;
        out.flush()?;
        drop(out);
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The section for `bytes` at the next aligned offset.
fn section(
    name: &str,
    kind: Kind,
    rows: usize,
    cols: usize,
    offset: &mut usize,
    bytes: &[u8],
) -> Section {
    let s = Section {
        name: name.to_string(),
        kind,
        offset: *offset,
        len: bytes.len() / kind.element_size(),
        rows,
        cols,
    };
    *offset = (*offset + bytes.len()).div_ceil(ALIGN) * ALIGN;
    s
}

/// An open, verified pack.
pub struct Pack {
    path: PathBuf,
    map: Arc<Mmap>,
    header: Header,
}

impl std::fmt::Debug for Pack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pack({})", self.path.display())
    }
}

impl Pack {
    /// Opens the pack at `path` when it was made from exactly `sources`. `Ok(None)` when
    /// there is none; `Err` says why an existing one cannot be used.
    pub fn open(path: &Path, sources: &[SourceFile]) -> Result<Option<Pack>, String> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot open it: {e}")),
        };
        // SAFETY: a read-only map of memoria's own file, which is only ever replaced by
        // rename (never rewritten in place), so the mapped bytes do not change.
        let map = Arc::new(unsafe { Mmap::map(&file) }.map_err(|e| format!("cannot map it: {e}"))?);
        let n = map.len();
        if n < ALIGN + 8 || &map[..MAGIC.len()] != MAGIC {
            return Err("not a memoria pack of this format".into());
        }
        let header_len = u64::from_le_bytes(map[n - 8..].try_into().unwrap_or_default()) as usize;
        let start = (n - 8)
            .checked_sub(header_len)
            .filter(|&s| s >= ALIGN)
            .ok_or("a damaged header")?;
        let header: Header = serde_json::from_slice(&map[start..n - 8])
            .map_err(|e| format!("a damaged header ({e})"))?;
        if header.sources != sources {
            return Err("the model files changed since it was made".into());
        }
        if !header.digest.is_valid() {
            return Err("a damaged fingerprint state".into());
        }
        let mut crc = crc32fast::Hasher::new();
        for s in &header.sections {
            let size = s.kind.element_size();
            let end = s
                .len
                .checked_mul(size)
                .and_then(|b| b.checked_add(s.offset));
            match end {
                Some(end) if end <= start && s.offset % ALIGN == 0 => {
                    crc.update(&map[s.offset..end])
                }
                _ => return Err(format!("section `{}` out of bounds", s.name)),
            }
        }
        if crc.finalize() != header.crc32 {
            return Err("its checksum does not match (a damaged file)".into());
        }
        Ok(Some(Pack {
            path: path.to_path_buf(),
            map,
            header,
        }))
    }

    /// The fingerprint state after the source files.
    pub fn digest(&self) -> ResumableSha256 {
        self.header.digest.clone()
    }

    fn section(&self, name: &str) -> Option<&Section> {
        self.header.sections.iter().find(|s| s.name == name)
    }

    /// The f16 weight panels named `name` and their `[rows, cols]`.
    pub fn weight(&self, name: &str) -> Option<(Slab<f16>, usize, usize)> {
        let s = self.section(name).filter(|s| s.kind == Kind::F16)?;
        Some((Slab::mapped(&self.map, s.offset, s.len)?, s.rows, s.cols))
    }

    /// The Q8_0 weight panels named `name`, when they hold a `[rows, cols]` weight.
    pub fn q8_weight(&self, name: &str, rows: usize, cols: usize) -> Option<Slab<u8>> {
        let s = self
            .section(name)
            .filter(|s| s.kind == Kind::Q8 && (s.rows, s.cols) == (rows, cols))?;
        Slab::mapped(&self.map, s.offset, s.len)
    }

    /// The bf16 weight panels named `name`, when they hold a `[rows, cols]` weight.
    pub fn bf16_weight(&self, name: &str, rows: usize, cols: usize) -> Option<Slab<u16>> {
        let s = self
            .section(name)
            .filter(|s| s.kind == Kind::Bf16 && (s.rows, s.cols) == (rows, cols))?;
        Slab::mapped(&self.map, s.offset, s.len)
    }

    fn table(&self, name: &str) -> Option<Slab<u64>> {
        let s = self.section(name).filter(|s| s.kind == Kind::Table)?;
        Slab::mapped(&self.map, s.offset, s.len)
    }

    /// The tokenizer, when the pack holds one.
    pub fn tokenizer(&self) -> Option<FastBpe> {
        let header = self.header.tokenizer.clone()?;
        FastBpe::new(
            header,
            self.table("tokenizer.merges")?,
            self.table("tokenizer.chars")?,
        )
    }
}
