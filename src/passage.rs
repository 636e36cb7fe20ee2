//! Passages: the few-line windows of a long chunk that the local model embeds instead of
//! the chunk itself, so the chunk is judged by its best passage (pure).
//!
//! A ~400-token chunk of a daily log holds ten to fifteen lines, often chat turns or notes
//! on unrelated things. Its one vector averages them all, and a question about one line
//! meets a diluted match: on LoCoMo the evidence chunk sat at rank 7–15 on the vector side
//! for most questions hybrid missed. So every chunk with at least [`MIN_LINES`] content
//! lines gets a vector per run of [`LINES`] lines (runs that do not overlap), and the
//! vector side scores it by its best passage (docs/ranking.md, "How memoria ranks"). Its
//! own text is not embedded: its vector is the [`centroid`] of its passages', which only
//! places it in the vector index. A shorter chunk is not diluted much, and passages would
//! lift it for any query near a part of it (four-line passages from five lines up cost a
//! newcomer's six-line `MEMORY.md` two right answers in `tests/data/personal`); every
//! passage shape below was measured with the same eight-line threshold.
//! Blank lines and Markdown headings are not content: the heading already is the chunk's
//! title. A passage's vector is stored under [`id`]`(chunk, n)`, which [`chunk_of`] maps
//! back.
//!
//! Passages are most of what a first index embeds, so their shape was chosen by recall and
//! cost together (docs/ranking.md, "Passages and their cost"): windows of two lines that do
//! not overlap found as much of LoCoMo's evidence as four-line windows every two lines
//! (recall@6 0.946 against 0.941) for 0.61 of the passage text, and a vector of each short
//! note as a whole (an index format 10 had) found no more (0.942 without it against 0.941)
//! while it was 0.26 of all the text embedded; with both changes LoCoMo's conv-43 indexes
//! from nothing in 126–136 s instead of 178–197 s. Both cost a little of the answer-first
//! rate (MRR 0.797 against 0.806). Embedding the long chunks themselves as well was then
//! more than half of a first index, for 0.007 of LoCoMo's evidence in six under the
//! plugin's layout and 0.002 with no config (index format 12 dropped it; docs/ranking.md,
//! "Index format 12").

/// Whether a sync embeds passages and searches use them: with an embedder that embeds them
/// (the local model) unless the config turns them off (`enabled`: memoria's
/// `plugins.entries.memoria.config.passages`), and never under OpenClaw's ranking
/// (`openclaw_ranking`), whose vector side scores chunks alone, as 2026.9's does. Part of
/// the index identity: changing it rebuilds the index once.
pub fn searched(embeds_passages: bool, enabled: bool, openclaw_ranking: bool) -> bool {
    embeds_passages && enabled && !openclaw_ranking
}

/// Content lines per passage: a chunk's content lines are cut into runs of this many.
pub const LINES: usize = 2;

/// The fewest content lines a chunk with passages has.
/// (Changing [`LINES`] or this changes stored vectors: bump the index format.)
pub const MIN_LINES: usize = 8;

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
    lines.chunks(LINES).map(|run| run.join("\n")).collect()
}

/// A chunk's passages with their numbers, from 1 (the `n` of [`id`]).
pub fn numbered(text: &str) -> impl Iterator<Item = (usize, String)> {
    (1..).zip(windows(text))
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

/// The id of the `n`-th passage (from 1) of chunk `chunk`.
pub fn id(chunk: &str, n: usize) -> String {
    format!("{chunk}{MARK}{n}")
}

/// The chunk a vector id belongs to: the id itself for a chunk's own vector.
pub fn chunk_of(id: &str) -> &str {
    id.split_once(MARK).map_or(id, |(chunk, _)| chunk)
}

/// The vector of a chunk with passages: the direction of the sum of its passages' unit
/// vectors (zeros when they cancel or there are none). Not an embedding of the chunk's
/// text: the chunk is searched by its passages alone, and this vector only places it in
/// the vector index, where a search finds it before its passages rescore it.
pub fn centroid(passages: &[Vec<f32>]) -> Vec<f32> {
    let dims = passages.first().map_or(0, Vec::len);
    let mut sum = vec![0f32; dims];
    for vector in passages {
        let mut unit = vector.clone();
        if crate::simd::l2_normalize(&mut unit) {
            sum.iter_mut().zip(&unit).for_each(|(s, u)| *s += u);
        }
    }
    crate::simd::l2_normalize(&mut sum);
    sum
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
                vec!["#1 one\ntwo", "three\nfour", "five\nsix", "seven\n#tag"],
            ),
        ];
        for (text, want) in cases {
            assert_eq!(windows(text), *want, "{text:?}");
        }
        assert_eq!(
            windows(&format!("# Day\n\n{}", lines(9))),
            vec![
                "line 1\nline 2",
                "line 3\nline 4",
                "line 5\nline 6",
                "line 7\nline 8",
                "line 9",
            ]
        );
        // Every content line is in exactly one passage, in order.
        for n in MIN_LINES..40 {
            let w = windows(&lines(n));
            assert_eq!(w.len(), n.div_ceil(LINES), "{n} lines");
            assert_eq!(w.join("\n"), lines(n), "{n} lines");
        }
        let numbers: Vec<usize> = numbered(&lines(8)).map(|p| p.0).collect();
        assert_eq!(numbers, [1, 2, 3, 4]);
        assert_eq!(numbered("short").count(), 0);
    }

    #[test]
    fn centroid_table() {
        let cases: &[(&[&[f32]], &[f32])] = &[
            (&[], &[]),
            (&[&[3.0, 4.0]], &[0.6, 0.8]),
            // Each passage counts once, whatever its length.
            (&[&[10.0, 0.0], &[0.0, 0.5]], &[0.70710677, 0.70710677]),
            (&[&[1.0, 0.0], &[-2.0, 0.0]], &[0.0, 0.0]),
            // A zero vector has no direction and adds nothing.
            (&[&[0.0, 0.0], &[0.0, 2.0]], &[0.0, 1.0]),
        ];
        for (passages, want) in cases {
            let vectors: Vec<Vec<f32>> = passages.iter().map(|v| v.to_vec()).collect();
            let got = centroid(&vectors);
            assert_eq!(got.len(), want.len(), "{passages:?}");
            for (g, w) in got.iter().zip(*want) {
                assert!((g - w).abs() < 1e-6, "{passages:?}: {got:?}");
            }
        }
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
