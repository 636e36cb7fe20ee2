//! A snapshot's files as `meta.json` records them (`snapshot`): each written through a
//! hash (`crc32fast`) and fsynced, and read back, or mapped, only once its length and
//! CRC-32 match the record.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use memmap2::Mmap;
use serde::{Deserialize, Serialize};

use super::index::invalid_path;
use crate::error::{Error, Result};

/// A file of a snapshot as `meta.json` records it: its name, length and CRC-32.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct FileSum {
    pub(super) name: String,
    pub(super) len: u64,
    pub(super) crc32: u32,
}

/// Writes `bytes` to `dir/name` and fsyncs it.
pub(super) fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<FileSum> {
    write_streamed(dir, name.to_string(), |out| out.write_all(bytes))
}

/// Writes file `name` in `dir` through `write` (buffered), fsyncs it, and returns its
/// length and CRC-32.
pub(super) fn write_streamed(
    dir: &Path,
    name: String,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<FileSum> {
    let path = dir.join(&name);
    let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
    let mut out = HashingWriter::new(BufWriter::with_capacity(1 << 20, file));
    write(&mut out).map_err(|e| Error::io(&path, e))?;
    let (writer, (len, crc32)) = out.finish();
    let file = writer
        .into_inner()
        .map_err(|e| Error::io(&path, e.into_error()))?;
    file.sync_all().map_err(|e| Error::io(&path, e))?;
    Ok(FileSum { name, len, crc32 })
}

/// Length and CRC-32 of a file.
pub(super) fn hash_file(path: &Path) -> Result<(u64, u32)> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((len, hasher.finalize()))
}

/// Checks a file's length and checksum against `meta.json` without keeping its bytes.
pub(super) fn verify_file(path: &Path, sum: &FileSum) -> Result<()> {
    check_len(path, sum)?;
    let (len, crc32) = hash_file(path)?;
    if len != sum.len || crc32 != sum.crc32 {
        return Err(invalid_path(path, "checksum mismatch (damaged file)"));
    }
    Ok(())
}

/// Reads a whole file, checked against `meta.json`.
pub(super) fn read_checked(path: &Path, sum: &FileSum) -> Result<Vec<u8>> {
    check_len(path, sum)?;
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 != sum.len || crc32fast::hash(&bytes) != sum.crc32 {
        return Err(invalid_path(path, "checksum mismatch (damaged file)"));
    }
    Ok(bytes)
}

/// File `path` memory-mapped, once its length and CRC-32 match `sum` (hashed through the
/// map, so that what is then parsed from it is read from disk once).
pub(super) fn map_checked(path: &Path, sum: &FileSum) -> Result<Mmap> {
    check_len(path, sum)?;
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: snapshot files are written once under a fresh name and never changed after
    // (`snapshot`'s docs); what the map holds is checked below before anything parses it.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    if map.len() as u64 != sum.len || crc32fast::hash(&map) != sum.crc32 {
        return Err(invalid_path(path, "checksum mismatch (damaged file)"));
    }
    Ok(map)
}

pub(super) fn check_len(path: &Path, sum: &FileSum) -> Result<()> {
    let len = fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
    if len != sum.len {
        return Err(invalid_path(
            path,
            format!(
                "{len} bytes, expected {} (partial or damaged file)",
                sum.len
            ),
        ));
    }
    Ok(())
}

/// A writer that hashes and counts what passes through it.
struct HashingWriter<W> {
    inner: W,
    hasher: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> HashingWriter<W> {
    fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: crc32fast::Hasher::new(),
            len: 0,
        }
    }

    fn finish(self) -> (W, (u64, u32)) {
        (self.inner, (self.len, self.hasher.finalize()))
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
