//! A memory file's text: UTF-8, with invalid bytes replaced (and the replacement said, so
//! the sync can warn about the file).

use std::fs;
use std::path::Path;

use crate::error::Error;

/// Reads a memory file as text. Invalid UTF-8 is replaced (U+FFFD) and reported in the
/// returned flag rather than failing: one bad byte must not hide a whole note.
pub fn read_text(path: &Path) -> Result<(String, bool), Error> {
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(decode_text(bytes))
}

/// Decodes file bytes as UTF-8, replacing invalid sequences; the flag says whether any were.
pub fn decode_text(bytes: Vec<u8>) -> (String, bool) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(err) => (String::from_utf8_lossy(err.as_bytes()).into_owned(), true),
    }
}
