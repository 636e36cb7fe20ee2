//! A memory file's text: UTF-8, with invalid bytes replaced (and the replacement said, so
//! the sync can warn about the file).

/// Decodes file bytes as UTF-8, replacing invalid sequences (U+FFFD) and saying so in the
/// returned flag rather than failing: one bad byte must not hide a whole note.
pub fn decode_text(bytes: Vec<u8>) -> (String, bool) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(err) => (String::from_utf8_lossy(err.as_bytes()).into_owned(), true),
    }
}
