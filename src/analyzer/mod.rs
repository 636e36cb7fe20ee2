//! How text becomes search terms: the multilingual analyzer of the keyword side (SPEC §5.2),
//! and the function words a keyword query leaves out (`stopwords.rs`). Every store's
//! keyword side and memoria's MMR read text through it.
//!
//! One tokenizer serves every language in a memory workspace:
//! - words are runs of letters and digits, lowercased and accent-folded by tantivy's
//!   `LowerCaser` and `AsciiFoldingFilter` chained after it;
//! - code identifiers are kept whole *and* split into parts, so `memorySearch.query.hybrid`
//!   matches a query for the identifier, for `memorySearch`, or for `hybrid`; parts are
//!   split at `.`, `_`, `-`, `/` and at camelCase boundaries, never between letters and
//!   digits, so hex ids such as `a828e60` stay intact;
//! - Chinese, Japanese and Korean runs become overlapping character bigrams (plus single
//!   characters when indexing, so a one-character query still matches). Without this a
//!   whole CJK sentence would be one "word" and keyword search would find nothing.
//!
//! Text is brought to Unicode NFC first, so a word typed with combining accents (`cafe` +
//! U+0301, as some keyboards and macOS file names produce) and its precomposed spelling
//! (`café`) give the same terms; the check is a fast scan that copies nothing for text
//! already in NFC, which is nearly all text.
//!
//! Indexing and querying differ only for CJK: a multi-character query run is searched by its
//! bigrams alone (unigrams would flood the candidates with noise), a one-character run by
//! the unigram.

pub(crate) mod stopwords;

use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, TextAnalyzer, Token, TokenStream, Tokenizer,
};
use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

/// Name under which the index analyzer is registered in the tantivy index.
pub const ANALYZER_NAME: &str = "memoria";

/// A compound with more camelCase parts than this, averaging fewer than
/// [`MIN_PART_CHARS`] characters, is random text, not an identifier (see `emit_compound`).
const MAX_CAMEL_PARTS: usize = 8;
const MIN_PART_CHARS: usize = 4;

/// Tokens longer than this (in bytes) are skipped: base64 blobs and the like are noise.
const MAX_TOKEN_BYTES: usize = 128;

/// Whether text is being indexed or is a query (they differ only for CJK, see module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnalyzerMode {
    /// Document text: CJK runs give bigrams and single characters.
    Index,
    /// Query text: CJK runs give bigrams (a single character alone).
    Query,
}

/// The distinct terms a keyword query searches, sorted; with `content_only`, without its
/// function words ([`stopwords::content_terms`]).
pub(crate) fn query_terms(query: &str, content_only: bool) -> Vec<String> {
    let mut out = terms(query, AnalyzerMode::Query);
    if content_only {
        out = stopwords::content_terms(out);
    }
    out.sort();
    out.dedup();
    out
}

/// The full analyzer: [`MemoriaTokenizer`] → lowercase → accent folding.
pub fn analyzer(mode: AnalyzerMode) -> TextAnalyzer {
    TextAnalyzer::builder(MemoriaTokenizer::new(mode))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// The normalised terms a text produces (handy for tests and for building queries).
pub fn terms(text: &str, mode: AnalyzerMode) -> Vec<String> {
    let mut analyzer = analyzer(mode);
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(token) = stream.next() {
        out.push(token.text.clone());
    }
    out
}

/// Splits text into word, identifier-part and CJK n-gram tokens (before normalisation).
#[derive(Clone)]
pub struct MemoriaTokenizer {
    mode: AnalyzerMode,
    /// Reused buffers: token spans, the text's characters, camelCase parts.
    spans: Vec<(usize, usize)>,
    chars: Vec<(usize, char)>,
    parts: Vec<(usize, usize)>,
    /// The text in NFC, when it was not already.
    normalized: String,
    token: Token,
}

impl MemoriaTokenizer {
    /// A tokenizer for indexing or for queries.
    pub fn new(mode: AnalyzerMode) -> Self {
        MemoriaTokenizer {
            mode,
            spans: Vec::new(),
            chars: Vec::new(),
            parts: Vec::new(),
            normalized: String::new(),
            token: Token::default(),
        }
    }
}

/// Streams the byte spans computed by `collect_spans` as tokens.
pub struct MemoriaTokenStream<'a> {
    text: &'a str,
    spans: &'a [(usize, usize)],
    next: usize,
    token: &'a mut Token,
}

impl Tokenizer for MemoriaTokenizer {
    type TokenStream<'a> = MemoriaTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> MemoriaTokenStream<'a> {
        let text: &'a str = if is_nfc_quick(text.chars()) == IsNormalized::Yes {
            text
        } else {
            self.normalized.clear();
            self.normalized.extend(text.nfc());
            &self.normalized
        };
        self.spans.clear();
        self.chars.clear();
        self.chars.extend(text.char_indices());
        collect_spans(
            text,
            &self.chars,
            self.mode,
            &mut self.spans,
            &mut self.parts,
        );
        self.token.reset();
        MemoriaTokenStream {
            text,
            spans: &self.spans,
            next: 0,
            token: &mut self.token,
        }
    }
}

impl TokenStream for MemoriaTokenStream<'_> {
    fn advance(&mut self) -> bool {
        let Some(&(from, to)) = self.spans.get(self.next) else {
            return false;
        };
        self.token.text.clear();
        self.token.text.push_str(&self.text[from..to]);
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = self.next;
        self.token.position_length = 1;
        self.next += 1;
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// True for Han ideographs, kana and Hangul: scripts written without spaces between words
/// (Hangul has spaces, but bigrams still match Korean particles and compounds far better
/// than whole eojeol).
pub fn is_cjk(c: char) -> bool {
    if c.is_ascii() {
        return false;
    }
    matches!(c as u32,
        0x3005 | 0x3007
        | 0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF      // Katakana phonetic extensions
        | 0x3400..=0x4DBF      // CJK Extension A
        | 0x4E00..=0x9FFF      // CJK Unified Ideographs
        | 0xF900..=0xFAFF      // CJK Compatibility Ideographs
        | 0xFF66..=0xFF9F      // half-width Katakana
        | 0x1100..=0x11FF      // Hangul Jamo
        | 0x3130..=0x318F      // Hangul compatibility Jamo
        | 0xAC00..=0xD7AF      // Hangul syllables
        | 0x20000..=0x3134F    // CJK Extensions B–G
    )
}

fn is_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    !is_cjk(c) && (c.is_alphanumeric() || matches!(c as u32, 0x0300..=0x036F))
}

fn is_joiner(c: char) -> bool {
    matches!(c, '.' | '_' | '-' | '/')
}

/// Computes token spans (byte ranges into `text`) in emission order.
fn collect_spans(
    text: &str,
    chars: &[(usize, char)],
    mode: AnalyzerMode,
    out: &mut Vec<(usize, usize)>,
    parts: &mut Vec<(usize, usize)>,
) {
    let end_of = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        if is_cjk(c) {
            let start = i;
            while i < chars.len() && is_cjk(chars[i].1) {
                i += 1;
            }
            let run = i - start;
            for (k, &(byte, _)) in chars.iter().enumerate().take(i).skip(start) {
                if mode == AnalyzerMode::Index || run == 1 {
                    out.push((byte, end_of(k + 1)));
                }
                if k + 1 < i {
                    out.push((byte, end_of(k + 2)));
                }
            }
        } else if is_word(c) {
            // A compound: word runs joined by single joiners that sit between word chars.
            let start = i;
            pieces.clear();
            loop {
                let piece_start = i;
                while i < chars.len() && is_word(chars[i].1) {
                    i += 1;
                }
                pieces.push((piece_start, i));
                let joined =
                    i + 1 < chars.len() && is_joiner(chars[i].1) && is_word(chars[i + 1].1);
                if !joined {
                    break;
                }
                i += 1;
            }
            emit_compound(chars, &end_of, start, i, &pieces, out, parts);
        } else {
            i += 1;
        }
    }
}

/// Emits a compound whole, then its joiner-separated pieces (when there are several), then
/// the camelCase parts of each piece (when it has several).
fn emit_compound(
    chars: &[(usize, char)],
    end_of: &dyn Fn(usize) -> usize,
    start: usize,
    end: usize,
    pieces: &[(usize, usize)],
    out: &mut Vec<(usize, usize)>,
    parts: &mut Vec<(usize, usize)>,
) {
    let push = |out: &mut Vec<(usize, usize)>, from: usize, to: usize| {
        let span = (chars[from].0, end_of(to));
        if span.1 - span.0 <= MAX_TOKEN_BYTES {
            out.push(span);
        }
    };
    push(out, start, end);
    // Random text (base64, keys) splits into many short camelCase parts; indexing its
    // pieces and parts would flood the term dictionary with one-off terms (indexing ran
    // ~15× slower than prose). It is indexed whole only, so an exact key is still found.
    let mut camel = 0;
    for &(s, e) in pieces {
        parts.clear();
        camel_parts(chars, s, e, parts);
        camel += parts.len();
    }
    if camel > MAX_CAMEL_PARTS && (end - start) < MIN_PART_CHARS * camel {
        return;
    }
    for &(s, e) in pieces {
        if pieces.len() > 1 {
            push(out, s, e);
        }
        parts.clear();
        camel_parts(chars, s, e, parts);
        if parts.len() > 1 {
            for &(ps, pe) in parts.iter() {
                push(out, ps, pe);
            }
        }
    }
}

/// Splits `chars[start..end]` at camelCase boundaries: `memorySearch` → memory|Search,
/// `HTTPServer` → HTTP|Server. Letter/digit boundaries are not split (hex ids).
fn camel_parts(chars: &[(usize, char)], start: usize, end: usize, parts: &mut Vec<(usize, usize)>) {
    let mut part_start = start;
    for k in start + 1..end {
        let prev = chars[k - 1].1;
        let cur = chars[k].1;
        let next_lower = k + 1 < end && chars[k + 1].1.is_lowercase();
        let boundary = (prev.is_lowercase() && cur.is_uppercase())
            || (prev.is_uppercase() && cur.is_uppercase() && next_lower);
        if boundary {
            parts.push((part_start, k));
            part_start = k;
        }
    }
    parts.push((part_start, end));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(text: &str) -> Vec<String> {
        terms(text, AnalyzerMode::Index)
    }
    fn query(text: &str) -> Vec<String> {
        terms(text, AnalyzerMode::Query)
    }

    /// Random text is indexed whole only; real identifiers still split into parts.
    #[test]
    fn random_text_is_not_split_into_parts() {
        let key = "kQ7pZr2XbN9mTv4LcW8yHd3FgJ6sRe1AuYo5BiMx";
        assert_eq!(idx(key), vec![key.to_lowercase()]);
        let path = "aGVsbG8gV29y/bGQhIFRoaXMgaXMg";
        assert_eq!(idx(path), vec![path.to_lowercase()]);
        let long = "memorySearchQueryHybridVectorWeightTextWeightMaximum";
        let terms = idx(long);
        assert_eq!(terms.len(), 10, "{terms:?}"); // whole + 9 parts
        assert!(terms.contains(&"hybrid".to_string()));
    }

    /// Decomposed accents (NFD) and precomposed ones (NFC) give the same terms.
    #[test]
    fn decomposed_and_precomposed_text_give_the_same_terms() {
        let rows: &[(&str, &str)] = &[
            ("cafe\u{301}", "café"),
            ("Mu\u{308}ller", "Müller"),
            ("nai\u{308}ve cafe\u{301} au lait", "naïve café au lait"),
            ("\u{1100}\u{1161}\u{11a8}", "\u{ac01}"), // Hangul jamo → syllable
        ];
        for (decomposed, precomposed) in rows {
            for mode in [AnalyzerMode::Index, AnalyzerMode::Query] {
                assert_eq!(
                    terms(decomposed, mode),
                    terms(precomposed, mode),
                    "{decomposed:?} {mode:?}"
                );
            }
        }
        assert_eq!(terms("cafe\u{301}", AnalyzerMode::Query), vec!["cafe"]);
    }

    #[test]
    fn analyzer_table() {
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("Hello, World!", vec!["hello", "world"]),
            ("Café NAÏVE façade", vec!["cafe", "naive", "facade"]),
            (
                "commit a828e60 fixed it",
                vec!["commit", "a828e60", "fixed", "it"],
            ),
            (
                "memorySearch.query.hybrid",
                vec![
                    "memorysearch.query.hybrid",
                    "memorysearch",
                    "memory",
                    "search",
                    "query",
                    "hybrid",
                ],
            ),
            ("snake_case", vec!["snake_case", "snake", "case"]),
            ("HTTPServer", vec!["httpserver", "http", "server"]),
            ("2026-01-12", vec!["2026-01-12", "2026", "01", "12"]),
            ("end of sentence.", vec!["end", "of", "sentence"]),
            ("v2 -flag", vec!["v2", "flag"]),
            ("Straße", vec!["strasse"]),
            ("Привет мир", vec!["привет", "мир"]),
            (
                "记忆搜索",
                vec!["记", "记忆", "忆", "忆搜", "搜", "搜索", "索"],
            ),
            (
                "東京タワー",
                vec!["東", "東京", "京", "京タ", "タ", "タワ", "ワ", "ワー", "ー"],
            ),
            ("한국어", vec!["한", "한국", "국", "국어", "어"]),
            ("API调用", vec!["api", "调", "调用", "用"]),
        ];
        for (text, want) in cases {
            assert_eq!(idx(text), want, "text {text:?}");
        }
    }

    #[test]
    fn cjk_queries_use_bigrams_and_single_chars() {
        assert_eq!(query("记忆搜索"), vec!["记忆", "忆搜", "搜索"]);
        assert_eq!(query("猫"), vec!["猫"]);
        assert_eq!(query("memorySearch"), idx("memorySearch"));
    }

    #[test]
    fn overlong_tokens_are_skipped() {
        let blob = "x".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(idx(&format!("a {blob} b")), vec!["a", "b"]);
    }
}
