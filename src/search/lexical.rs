//! OpenClaw 2026.9's keyword score, over memoria's BM25 (pure).
//!
//! OpenClaw 2026.9 does not rank keyword hits by BM25 alone: a hit's score is
//!
//! ```text
//! min(1, textScore + 0.45·coverage + 0.2·density + 0.18·pathWords + min(length/160, 0.18))
//! ```
//!
//! where `textScore` is the BM25 mapping `s/(1+s)`, `coverage` the share of the query's
//! words found in the chunk, `density` the found words over the chunk's distinct words,
//! `pathWords` how many query words appear in the chunk's path, and `length` the chunk's
//! length in UTF-16 units. Words are runs of letters, digits and `_`, lower-cased, compared
//! whole. The payload's `textScore` stays the plain mapping.
//!
//! Its candidates are the chunks holding every query word, or one of the query's keywords
//! (the words that are not stop words, not one- or two-letter ASCII words, not numbers):
//! a chunk that shares only `the` or `was` with the query is not a keyword hit.
//! [`is_candidate`] applies that rule to memoria's candidates (BM25 over any query term).

use std::collections::HashSet;

use unicode_normalization::UnicodeNormalization;

use crate::analyzer::is_cjk;

/// The bonuses' weights and caps, as OpenClaw 2026.9 fixes them.
const COVERAGE: f64 = 0.45;
const DENSITY: f64 = 0.2;
const PATH_WORD: f64 = 0.18;
const LENGTH_CAP: f64 = 0.18;
const LENGTH_SCALE: f64 = 160.0;

/// Words that never make a chunk a keyword candidate on their own (English, Spanish,
/// Portuguese function words; memoria's list, in the spirit of OpenClaw's).
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "am", "an", "and", "any", "are", "as", "at",
    "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can",
    "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no", "nor",
    "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over",
    "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs",
    "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under",
    "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who",
    "whom", "why", "will", "with", "would", "you", "your", "yours", "el", "la", "los", "las", "un",
    "una", "unos", "unas", "de", "del", "al", "y", "o", "que", "en", "por", "para", "con", "sin",
    "se", "su", "sus", "es", "son", "fue", "como", "pero", "mas", "más", "lo", "le", "les", "mi",
    "tu", "yo", "ya", "muy", "este", "esta", "esto", "ese", "esa", "eso", "os", "as", "um", "uma",
    "do", "da", "dos", "das", "no", "na", "nos", "nas", "em", "ao", "e", "é", "não", "seu", "sua",
    "eu", "ele", "ela",
];

/// The words of `text`: runs of letters, digits and `_`, NFC, lower-cased.
pub fn words(text: &str) -> Vec<String> {
    let text: String = text.nfc().collect::<String>().to_lowercase();
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The query's keywords: its words less stop words, ASCII words under three letters and
/// numbers; a word in a CJK script adds each pair of its adjacent CJK characters (such a
/// "word" is a whole run of text, so its parts are what other texts share).
pub fn keywords(query: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for w in words(query) {
        let stop = STOP_WORDS.contains(&w.as_str());
        let number = w.chars().all(|c| c.is_ascii_digit());
        let short = w.is_ascii() && w.chars().count() < 3;
        if stop || number || short {
            continue;
        }
        let chars: Vec<char> = w.chars().collect();
        for pair in chars.windows(2).filter(|p| is_cjk(p[0]) && is_cjk(p[1])) {
            out.insert(pair.iter().collect());
        }
        out.insert(w);
    }
    out
}

/// A chunk's words and text, prepared once for the keyword rules.
#[derive(Debug, Clone)]
pub struct ChunkWords {
    words: HashSet<String>,
    /// NFC, lower-cased: where a CJK word is looked for.
    folded: String,
}

impl ChunkWords {
    /// The words of `text`.
    pub fn new(text: &str) -> ChunkWords {
        ChunkWords {
            words: words(text).into_iter().collect(),
            folded: text.nfc().collect::<String>().to_lowercase(),
        }
    }

    /// Whether the chunk holds `word`: as a whole word, or, in a CJK script, anywhere in the
    /// text (memoria does not leave Japanese or Chinese to whole-run matching).
    fn holds(&self, word: &str) -> bool {
        match word.chars().any(is_cjk) {
            true => self.folded.contains(word),
            false => self.words.contains(word),
        }
    }
}

/// One query, prepared once for every candidate.
#[derive(Debug, Clone)]
pub struct KeywordQuery {
    words: HashSet<String>,
    keywords: HashSet<String>,
}

impl KeywordQuery {
    /// The query's words and keywords.
    pub fn new(query: &str) -> KeywordQuery {
        KeywordQuery {
            words: words(query).into_iter().collect(),
            keywords: keywords(query),
        }
    }

    /// Whether a chunk with these words is a keyword hit: it holds every query word, or a
    /// keyword.
    pub fn is_candidate(&self, chunk: &ChunkWords) -> bool {
        self.words.iter().all(|w| chunk.holds(w)) || self.keywords.iter().any(|w| chunk.holds(w))
    }

    /// The keyword score of a chunk (`text`, at `path`, its words `chunk`) whose BM25
    /// mapping is `text_score`.
    pub fn score_words(&self, text_score: f64, chunk: &ChunkWords, text: &str, path: &str) -> f64 {
        if self.words.is_empty() {
            return text_score;
        }
        let found = self.words.iter().filter(|w| chunk.holds(w)).count() as f64;
        let coverage = found / self.words.len() as f64;
        let density = found / chunk.words.len().max(1) as f64;
        let path = path.to_lowercase();
        let path_words = self
            .words
            .iter()
            .filter(|w| path.contains(w.as_str()))
            .count() as f64;
        let length = text.encode_utf16().count() as f64;
        let boosted = text_score
            + COVERAGE * coverage
            + DENSITY * density
            + PATH_WORD * path_words
            + (length / LENGTH_SCALE).min(LENGTH_CAP);
        boosted.min(1.0)
    }
}

/// How exactly `query` names `path`, OpenClaw 2026.9's exact-path tiers: 3 the whole
/// path, 2 its file name, 1 its name without the extension, 0 not at all (compared
/// trimmed, lower-cased, `\\` as `/`, without a leading `./`; a query with a `/` must be the
/// whole path). Such files rank before every content hit.
pub fn path_specificity(query: &str, path: &str) -> u8 {
    let norm = |s: &str| {
        let s = s
            .trim()
            .replace('\\', "/")
            .nfc()
            .collect::<String>()
            .to_lowercase();
        match s.strip_prefix("./") {
            Some(rest) => rest.to_string(),
            None => s,
        }
    };
    let (q, p) = (norm(query), norm(path));
    if q.is_empty() {
        return 0;
    }
    if q == p {
        return 3;
    }
    if q.contains('/') {
        return 0;
    }
    let name = p.rsplit('/').next().unwrap_or(&p);
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    match () {
        _ if q == name => 2,
        _ if q == stem => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_keywords() {
        assert_eq!(
            words("Node-22 café_x, 猫カフェ!"),
            ["node", "22", "café_x", "猫カフェ"]
        );
        let k = keywords("What was the solution for the bug in v2 2024?");
        let mut k: Vec<_> = k.into_iter().collect();
        k.sort();
        assert_eq!(k, ["bug", "solution"]);
    }

    #[test]
    fn candidates_need_all_words_or_a_keyword() {
        let q = KeywordQuery::new("what was the bug");
        let set = ChunkWords::new;
        assert!(q.is_candidate(&set("the bug was here")));
        assert!(!q.is_candidate(&set("what was the weather")));
        assert!(q.is_candidate(&set("what was the bug")));
        // CJK: a run is one "word"; its character pairs are keywords, found anywhere
        let q = KeywordQuery::new("京都の紅葉と猫カフェ");
        assert!(q.is_candidate(&set("十一月に京都の紅葉を見て、猫カフェにも行った")));
        assert!(!q.is_candidate(&set("大阪の夜景")));
        let k = keywords("猫カフェ");
        assert!(
            k.contains("猫カ") && k.contains("カフ") && k.contains("フェ"),
            "{k:?}"
        );
    }

    #[test]
    fn queries_naming_a_path() {
        for (q, p, tier) in [
            ("memory", "MEMORY.md", 1),
            ("MEMORY.md", "MEMORY.md", 3),
            ("2026-01-02", "memory/2026-01-02.md", 1),
            ("2026-01-02.md", "memory/2026-01-02.md", 2),
            ("memory/2026-01-02.md", "memory/2026-01-02.md", 3),
            ("./memory/2026-01-02.md", "memory/2026-01-02.md", 3),
            (" Memory\\2026-01-02.md ", "memory/2026-01-02.md", 3),
            ("x/2026-01-02", "memory/2026-01-02.md", 0),
            ("2026", "memory/2026-01-02.md", 0),
            ("", "MEMORY.md", 0),
        ] {
            assert_eq!(path_specificity(q, p), tier, "{q} {p}");
        }
    }

    #[test]
    fn the_score_table() {
        let q = KeywordQuery::new("zephyr checklist");
        let score =
            |ts: f64, text: &str, path: &str| q.score_words(ts, &ChunkWords::new(text), text, path);
        // both words, 3 distinct words, 25 UTF-16 units, no path word
        let s = score(0.0, "- zephyr deploy checklist", "MEMORY.md");
        assert!(
            (s - (0.45 + 0.2 * 2.0 / 3.0 + 25.0 / 160.0)).abs() < 1e-12,
            "{s}"
        );
        // a path word adds 0.18; the sum is capped at 1
        let s = score(0.2, "- zephyr deploy checklist", "memory/zephyr.md");
        assert_eq!(s, 1.0);
        // long text: the length bonus stops at 0.18
        let long = format!("zephyr {}", "word ".repeat(100));
        let s = score(0.0, &long, "x.md");
        assert!((s - (0.45 * 0.5 + 0.2 * 0.5 + 0.18)).abs() < 1e-12, "{s}");
    }
}
