//! Passages: the few-line windows of a chunk that the local model embeds besides the
//! chunk itself, so a long chunk is judged by its best passage (pure).
//!
//! A ~400-token chunk of a daily log holds ten to fifteen lines, often chat turns or notes
//! on unrelated things. Its one vector averages them all, and a question about one line
//! meets a diluted match: on LoCoMo the evidence chunk sat at rank 7–15 on the vector side
//! for most questions hybrid missed. So every chunk with at least [`MIN_LINES`] content
//! lines also gets a vector per window of [`LINES`] lines, one every [`STRIDE`] lines, and
//! the vector side scores a chunk by the best of its vectors (docs/ranking.md, "How memoria
//! ranks"). A shorter chunk is not diluted much, and a window of most of it is a second
//! vector of nearly the same text that lifts it for any query near a part of it (it cost a
//! newcomer's six-line `MEMORY.md` two right answers in `tests/data/personal`).
//! Blank lines and Markdown headings are not content: the heading already is the chunk's
//! title. A passage's vector is stored under [`id`]`(chunk, n)`, which [`chunk_of`] maps
//! back.
//!
//! The widest passage is a whole file. A short note split into two to [`WHOLE_MAX_CHUNKS`]
//! chunks has no vector of all of it, and a question about the note as a whole meets
//! halves. So such a file's first chunk also carries the file's text ([`whole_file`]),
//! embedded as its passage [`WHOLE`]: the file as a whole lifts its first chunk, never
//! several of its chunks, so one file does not crowd the results (LoCoMo's daily logs are
//! mostly two to four chunks: its vector side found 0.913 of the evidence, 0.900 without).

/// Whether a sync embeds passages and searches use them: with an embedder that embeds them
/// (the local model) unless the config turns them off (`enabled`: memoria's
/// `plugins.entries.memoria.config.passages`), and never under OpenClaw's ranking
/// (`openclaw_ranking`), whose vector side scores chunks alone, as 2026.9's does. Part of
/// the index identity: changing it rebuilds the index once.
pub fn searched(embeds_passages: bool, enabled: bool, openclaw_ranking: bool) -> bool {
    embeds_passages && enabled && !openclaw_ranking
}

/// Content lines per passage.
pub const LINES: usize = 4;

/// Content lines from one passage's start to the next one's.
pub const STRIDE: usize = 2;

/// The fewest content lines a chunk with passages has: each passage is at most half of it.
/// (Changing [`LINES`], [`STRIDE`] or this changes stored vectors: bump the index format.)
pub const MIN_LINES: usize = 2 * LINES;

/// The passage number of a file's whole text, on its first chunk ([`whole_file`]).
/// Window passages count from 1.
pub const WHOLE: usize = 0;

/// The most chunks a file whose whole text is also embedded has: four default chunks are
/// ~1,600 tokens, within EmbeddingGemma's 2,048. (Changing it changes stored vectors: bump
/// the index format.)
pub const WHOLE_MAX_CHUNKS: usize = 4;

/// Whether a Markdown file split into `chunks` chunks also gets a vector of its whole text,
/// kept on its first chunk: a file of one chunk already has one, and a longer file would
/// not fit the model or would average too much.
pub fn whole_file(chunks: usize) -> bool {
    (2..=WHOLE_MAX_CHUNKS).contains(&chunks)
}

/// What separates a chunk id from its passage number in a vector's id (chunk ids are hex).
const MARK: char = '#';

/// The passages of a chunk's `text`: empty when it has fewer than [`MIN_LINES`] content
/// lines (the chunk's own vector is then its only one). Each is its lines joined by `\n`;
/// the last may be shorter.
pub fn windows(text: &str) -> Vec<String> {
    let lines = content_lines(text);
    if lines.len() < MIN_LINES {
        return Vec::new();
    }
    (0..lines.len() - LINES + STRIDE)
        .step_by(STRIDE)
        .map(|start| lines[start..(start + LINES).min(lines.len())].join("\n"))
        .collect()
}

/// A chunk's passages with their numbers: its file's `whole` text as [`WHOLE`] when it
/// carries it (non-empty), then its [`windows`] from 1.
pub fn numbered(text: &str, whole: String) -> Vec<(usize, String)> {
    let whole = (!whole.is_empty()).then_some((WHOLE, whole));
    whole.into_iter().chain((1..).zip(windows(text))).collect()
}

/// The text a file is embedded as whole ([`whole_file`]): its content lines, as a
/// passage's. Its title is its first chunk's; a heading repeated in the text moved the
/// vector away from the note's (SciFact's abstracts under their `#` title: cosine 0.989
/// with the abstract's, query cosines ~0.01 lower).
pub fn whole_text(text: &str) -> String {
    content_lines(text).join("\n")
}

/// The lines of `text` that are neither blank nor a Markdown heading.
fn content_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| {
            let t = line.trim_start();
            !t.is_empty() && crate::title::heading(t).is_none()
        })
        .collect()
}

/// The id of the `n`-th passage (from 1; [`WHOLE`] for the whole file) of chunk `chunk`.
pub fn id(chunk: &str, n: usize) -> String {
    format!("{chunk}{MARK}{n}")
}

/// The chunk a vector id belongs to: the id itself for a chunk's own vector.
pub fn chunk_of(id: &str) -> &str {
    id.split_once(MARK).map_or(id, |(chunk, _)| chunk)
}

/// Whether a vector id is a passage's rather than a chunk's own.
pub fn is_passage(id: &str) -> bool {
    id.contains(MARK)
}

/// The key range of chunk `chunk`'s passage vectors in a table sorted by id: `chunk#` up
/// to, not including, `chunk$` (`$` follows `#`).
pub fn id_range(chunk: &str) -> (String, String) {
    (format!("{chunk}{MARK}"), format!("{chunk}$"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_table() {
        let lines = |n: usize| -> String {
            (1..=n)
                .map(|i| format!("line {i}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let cases: &[(&str, Vec<&str>)] = &[
            ("", vec![]),
            ("one\ntwo\nthree\nfour", vec![]),
            // Headings and blank lines are not content: still four lines.
            ("# Day\n\none\ntwo\n\nthree\n## Later\nfour\n", vec![]),
            // Seven lines: fewer than MIN_LINES.
            ("one\ntwo\nthree\nfour\nfive\nsix\nseven", vec![]),
            // `#1` and `#tag` are not headings: eight lines.
            (
                "#1 one\ntwo\nthree\nfour\nfive\nsix\nseven\n#tag",
                vec![
                    "#1 one\ntwo\nthree\nfour",
                    "three\nfour\nfive\nsix",
                    "five\nsix\nseven\n#tag",
                ],
            ),
        ];
        for (text, want) in cases {
            assert_eq!(windows(text), *want, "{text:?}");
        }
        assert_eq!(
            windows(&format!("# Day\n\n{}", lines(9))),
            vec![
                "line 1\nline 2\nline 3\nline 4",
                "line 3\nline 4\nline 5\nline 6",
                "line 5\nline 6\nline 7\nline 8",
                "line 7\nline 8\nline 9",
            ]
        );
        // Every content line is in a passage, and passages start every STRIDE lines.
        for n in MIN_LINES..40 {
            let w = windows(&lines(n));
            assert_eq!(w.len(), (n - LINES).div_ceil(STRIDE) + 1, "{n} lines");
            assert!(
                w.last().unwrap().ends_with(&format!("line {n}")),
                "{n} lines"
            );
        }
    }

    #[test]
    fn whole_file_table() {
        for (chunks, want) in [(0, false), (1, false), (2, true), (4, true), (5, false)] {
            assert_eq!(whole_file(chunks), want, "{chunks} chunks");
        }
        let eight = "1\n2\n3\n4\n5\n6\n7\n8";
        let numbers = |whole: &str| -> Vec<usize> {
            numbered(eight, whole.into())
                .into_iter()
                .map(|p| p.0)
                .collect()
        };
        assert_eq!(numbers(""), [1, 2, 3]);
        assert_eq!(numbers("the file"), [0, 1, 2, 3]);
        assert_eq!(
            numbered("short", "the file".into()),
            [(0, "the file".into())]
        );
        assert_eq!(
            whole_text("# Kyoto\n\nday one\n## Food\nramen\n"),
            "day one\nramen"
        );
        assert_eq!(id("ab12", WHOLE), "ab12#0");
        assert_eq!(chunk_of(&id("ab12", WHOLE)), "ab12");
    }

    #[test]
    fn ids_round_trip() {
        assert_eq!(id("ab12", 3), "ab12#3");
        assert_eq!(chunk_of("ab12#3"), "ab12");
        assert_eq!(chunk_of("ab12"), "ab12");
        assert!(is_passage("ab12#1") && !is_passage("ab12"));
        let (lo, hi) = id_range("ab12");
        assert!(lo.as_str() <= "ab12#1" && "ab12#99" < hi.as_str());
        assert!(!("ab12" >= lo.as_str() && "ab12" < hi.as_str()));
        assert!(!("ab123" >= lo.as_str() && "ab123" < hi.as_str()));
    }
}
