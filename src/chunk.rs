//! Markdown → chunks with 1-based line ranges, reproducing OpenClaw's chunker (SPEC §2).
//!
//! The budget is counted in UTF-16 code units because that is what OpenClaw's JavaScript
//! counts; matching it keeps line ranges (and therefore citations) identical for users
//! switching engines. Unlike JavaScript we never cut inside a character: a segment of an
//! over-long line ends before a character that would cross the budget.
//!
//! ```
//! use memoria::internals::chunk_markdown;
//! use memoria::ChunkParams;
//! let chunks = chunk_markdown("# Title\nline two\n", ChunkParams::default());
//! assert_eq!((chunks[0].start_line, chunks[0].end_line), (1, 3));
//! ```

use crate::digest::sha256_hex;

/// Chunk size and overlap in tokens; one token is budgeted as four characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkParams {
    /// Target chunk size in tokens (`chunking.tokens`; 4 characters per token).
    pub tokens: usize,
    /// Tokens repeated from the end of one chunk at the start of the next.
    pub overlap: usize,
}

impl Default for ChunkParams {
    fn default() -> Self {
        ChunkParams {
            tokens: 400,
            overlap: 80,
        }
    }
}

impl ChunkParams {
    /// Maximum chunk size in UTF-16 code units: `max(32, tokens * 4)`.
    pub fn max_chars(&self) -> usize {
        self.tokens.saturating_mul(4).max(32)
    }

    /// Overlap carried into the next chunk, in UTF-16 code units.
    pub fn overlap_chars(&self) -> usize {
        self.overlap.saturating_mul(4)
    }
}

/// One chunk of a Markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// First line (1-based) of the chunk's first segment.
    pub start_line: usize,
    /// Line of the chunk's last segment.
    pub end_line: usize,
    /// The segments joined by `\n`.
    pub text: String,
    /// sha256 of `text`, lowercase hex.
    pub hash: String,
}

/// One entry of a curated memory file (`MEMORY.md`, `USER.md`): a list item starting at
/// column 0 (`- `) or a heading (`#` to `######`) with the lines up to the next one; the
/// text before the first is an entry too. Lines are 1-based and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The entry's first line.
    pub start_line: usize,
    /// Its last line (the line before the next entry, or the file's last).
    pub end_line: usize,
    /// A list item (`- `), as opposed to a heading's section or the lead text.
    pub bullet: bool,
}

/// Whether `line` starts an entry, and if so whether it is a list item.
fn entry_start(line: &str) -> Option<bool> {
    if line.starts_with("- ") {
        return Some(true);
    }
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    let rest = &line[hashes..];
    ((1..=6).contains(&hashes) && (rest.is_empty() || rest.starts_with(char::is_whitespace)))
        .then_some(false)
}

/// The entries of a curated memory file, in order, covering every line.
pub fn entries(content: &str) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for (index, line) in content.split('\n').enumerate() {
        let line_no = index + 1;
        match (entry_start(line), out.last_mut()) {
            (Some(bullet), _) => out.push(Entry {
                start_line: line_no,
                end_line: line_no,
                bullet,
            }),
            (None, Some(entry)) => entry.end_line = line_no,
            (None, None) => out.push(Entry {
                start_line: line_no,
                end_line: line_no,
                bullet: false,
            }),
        }
    }
    out
}

/// Chunks a curated memory file per entry (OpenClaw 2026.9): each entry is chunked on
/// its own, as [`chunk_markdown_openclaw`] chunks a file, so no chunk spans two entries and
/// no overlap crosses from one to the next.
pub fn chunk_entries(content: &str, params: ChunkParams) -> Vec<Chunk> {
    let lines: Vec<&str> = content.split('\n').collect();
    let mut out = Vec::new();
    for entry in entries(content) {
        let text = lines[entry.start_line - 1..entry.end_line].join("\n");
        for mut chunk in chunk_markdown_openclaw(&text, params) {
            chunk.start_line += entry.start_line - 1;
            chunk.end_line += entry.start_line - 1;
            out.push(chunk);
        }
    }
    out
}

/// A piece of one line: the whole line, or a `max_chars` slice of an over-long one.
#[derive(Clone, Copy)]
struct Segment<'a> {
    text: &'a str,
    line: usize,
    /// The segment's budget (UTF-16 units, or 2026.9's weighted characters) plus its
    /// newline.
    cost: usize,
}

/// Splits `content` into chunks exactly as OpenClaw's `chunkMarkdown` does (SPEC §2).
pub fn chunk_markdown(content: &str, params: ChunkParams) -> Vec<Chunk> {
    let overlap = params.overlap_chars();
    chunk_segments(content, params, split_line, |current, _next| {
        current[overlap_start(current, overlap)..].to_vec()
    })
}

/// The chunker both rules share: segments from `split` (a line, its number, the budget)
/// are added while the budget holds; past it the chunk is pushed and the next one starts
/// with what `carry` keeps of it (given the segment that did not fit).
fn chunk_segments<'a, I: IntoIterator<Item = Segment<'a>>>(
    content: &'a str,
    params: ChunkParams,
    split: impl Fn(&'a str, usize, usize) -> I,
    carry: impl Fn(&[Segment<'a>], &Segment<'a>) -> Vec<Segment<'a>>,
) -> Vec<Chunk> {
    let max_chars = params.max_chars();
    let mut chunks = Vec::new();
    let mut current: Vec<Segment> = Vec::new();
    let mut current_cost = 0usize;
    for (index, line) in content.split('\n').enumerate() {
        for segment in split(line, index + 1, max_chars) {
            if current_cost + segment.cost > max_chars && !current.is_empty() {
                push_chunk(&current, &mut chunks);
                current = carry(&current, &segment);
                current_cost = current.iter().map(|s| s.cost).sum();
            }
            current_cost += segment.cost;
            current.push(segment);
        }
    }
    push_chunk(&current, &mut chunks);
    chunks
}

/// Cuts one line into segments of at most `max_chars` UTF-16 units (an empty line is one
/// empty segment), never splitting a character.
fn split_line(line: &str, line_no: usize, max_chars: usize) -> impl Iterator<Item = Segment<'_>> {
    let mut rest = Some(line);
    std::iter::from_fn(move || {
        let text = rest?;
        let mut units = 0usize;
        let mut end = text.len();
        for (byte, ch) in text.char_indices() {
            let width = ch.len_utf16();
            // `byte > 0` guarantees progress even if max_chars < 2 (it never is: ≥ 32).
            if units + width > max_chars && byte > 0 {
                end = byte;
                break;
            }
            units += width;
        }
        let (head, tail) = text.split_at(end);
        rest = (!tail.is_empty()).then_some(tail);
        Some(Segment {
            text: head,
            line: line_no,
            cost: units + 1,
        })
    })
}

/// Index of the first segment kept as overlap: segments are taken back to front until
/// their cost reaches `overlap_chars` (so the overlap may exceed it by one segment).
fn overlap_start(segments: &[Segment], overlap_chars: usize) -> usize {
    if overlap_chars == 0 {
        return segments.len();
    }
    let mut acc = 0usize;
    for (i, segment) in segments.iter().enumerate().rev() {
        acc += segment.cost;
        if acc >= overlap_chars {
            return i;
        }
    }
    0
}

fn push_chunk(segments: &[Segment], out: &mut Vec<Chunk>) {
    let (Some(first), Some(last)) = (segments.first(), segments.last()) else {
        return;
    };
    let mut text = String::with_capacity(segments.iter().map(|s| s.text.len() + 1).sum());
    for (i, segment) in segments.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(segment.text);
    }
    if text.trim().is_empty() {
        return;
    }
    let hash = sha256_hex(text.as_bytes());
    out.push(Chunk {
        start_line: first.line,
        end_line: last.line,
        text,
        hash,
    });
}

/// Splits `content` into chunks as OpenClaw 2026.9's `chunkMarkdown` does (its chunking
/// version 5): the budget counts [`weighted_chars`] (a common CJK character as four, as
/// most tokenizers spend more on it), and the overlap carried into the next chunk stays
/// within `min(overlap, max − the next line)`: whole lines from the end while they fit,
/// else the tail of the last line alone.
pub fn chunk_markdown_openclaw(content: &str, params: ChunkParams) -> Vec<Chunk> {
    let (max_chars, overlap) = (params.max_chars(), params.overlap_chars());
    chunk_segments(content, params, split_line_weighted, |current, next| {
        carry_overlap(current, overlap.min(max_chars.saturating_sub(next.cost)))
    })
}

/// A line cut into segments of at most `max_chars` weighted characters (and UTF-16 units),
/// never splitting a character; an empty line is one empty segment.
fn split_line_weighted(line: &str, line_no: usize, max_chars: usize) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    // First at most `max_chars` UTF-16 units, as OpenClaw slices; then by weight.
    for coarse in split_line(line, line_no, max_chars) {
        let weight = weighted_chars(coarse.text);
        if weight <= max_chars {
            out.push(Segment {
                cost: weight + 1,
                ..coarse
            });
            continue;
        }
        let (mut start, mut chars) = (0, 0);
        for (byte, ch) in coarse.text.char_indices() {
            let w = char_weight(ch);
            if chars + w > max_chars {
                out.push(Segment {
                    text: &coarse.text[start..byte],
                    line: line_no,
                    cost: chars + 1,
                });
                (start, chars) = (byte, 0);
            }
            chars += w;
        }
        out.push(Segment {
            text: &coarse.text[start..],
            line: line_no,
            cost: chars + 1,
        });
    }
    out
}

/// The segments kept as the next chunk's start: whole segments from the end while they fit
/// in `window`, or, when the last alone does not, its tail.
fn carry_overlap<'a>(current: &[Segment<'a>], window: usize) -> Vec<Segment<'a>> {
    let mut kept: Vec<Segment<'a>> = Vec::new();
    let mut acc = 0;
    if window == 0 {
        return kept;
    }
    for segment in current.iter().rev() {
        let remaining = window - acc;
        if segment.cost > remaining {
            let tail = match kept.is_empty() {
                true => tail_within(segment.text, remaining.saturating_sub(1)),
                false => "",
            };
            if !tail.is_empty() {
                kept.push(Segment {
                    text: tail,
                    line: segment.line,
                    cost: weighted_chars(tail) + 1,
                });
            }
            break;
        }
        acc += segment.cost;
        kept.push(*segment);
        if acc >= window {
            break;
        }
    }
    kept.reverse();
    kept
}

/// The longest tail of `text` weighing at most `budget`.
fn tail_within(text: &str, budget: usize) -> &str {
    let mut acc = 0;
    let mut start = text.len();
    for (byte, ch) in text.char_indices().rev() {
        acc += char_weight(ch);
        if acc > budget {
            break;
        }
        start = byte;
    }
    &text[start..]
}

/// OpenClaw's weighted length of `text` (`estimateStringChars`): one per UTF-16 unit,
/// more for the characters tokenizers spend more on: common CJK, Hangul and full-width
/// forms 4, rarer BMP CJK 12, width-compatibility and modifier forms 8, supplementary
/// ideographs 12 or 16.
pub fn weighted_chars(text: &str) -> usize {
    text.chars().map(char_weight).sum()
}

/// One character's weight: common CJK, Hangul and full-width forms 4; rarer BMP CJK 12;
/// the width-compatibility and modifier set 8; supplementary ideographs 12 or 16; any other
/// character its UTF-16 length.
fn char_weight(ch: char) -> usize {
    const COMMON: &[(u32, u32)] = &[
        (183, 183),
        (12288, 12703),
        (19968, 40869),
        (44032, 55215),
        (65281, 65376),
    ];
    const RARE_BMP: &[(u32, u32)] = &[
        (4352, 4607),
        (11904, 12287),
        (12704, 19967),
        (40870, 40959),
        (40960, 42239),
        (42752, 42759),
        (43360, 43391),
        (55216, 55295),
        (63744, 64255),
    ];
    const TWO_TOKEN: &[(u32, u32)] = &[
        (711, 711),
        (713, 715),
        (729, 729),
        (746, 747),
        (773, 773),
        (803, 803),
        (65040, 65103),
        (65377, 65500),
        (65504, 65510),
    ];
    const THREE_TOKEN_SUPPLEMENTARY: &[(u32, u32)] = &[(119648, 119665)];
    const SUPPLEMENTARY: &[(u32, u32)] = &[
        (94176, 94207),
        (110576, 110591),
        (110592, 110959),
        (127488, 127743),
        (131072, 195103),
        (196608, 210047),
    ];
    let c = ch as u32;
    if c < 128 {
        return 1;
    }
    let within = |ranges: &[(u32, u32)]| ranges.iter().any(|&(a, b)| (a..=b).contains(&c));
    match () {
        _ if within(COMMON) => 4,
        _ if within(RARE_BMP) => 12,
        _ if within(TWO_TOKEN) => 8,
        _ if within(THREE_TOKEN_SUPPLEMENTARY) => 12,
        _ if within(SUPPLEMENTARY) => 16,
        _ => ch.len_utf16(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_as_openclaw_counts_them() {
        let cases = [
            ("abc", 3),
            ("é", 1),
            ("京都", 8),
            ("한국어", 12),
            ("ㄱ", 4),
            ("·", 4),
            ("Ａ", 4),
            ("ﾊ", 8),
            ("ˇ", 8),
            ("ꀀ", 12),
            ("𠀀", 16),
            ("😀", 2),
            ("𝍠", 12),
        ];
        for (text, want) in cases {
            assert_eq!(weighted_chars(text), want, "{text}");
        }
    }

    #[test]
    fn openclaw_2026_9_chunks_weigh_cjk_and_bound_the_overlap() {
        let ranges = |chunks: Vec<Chunk>| -> Vec<(usize, usize)> {
            chunks.iter().map(|c| (c.start_line, c.end_line)).collect()
        };
        // 50 ideographs a line: 7 lines a chunk, one line carried over.
        let cjk = format!("{}\n", "京".repeat(50)).repeat(20);
        assert_eq!(
            ranges(chunk_markdown_openclaw(&cjk, ChunkParams::default())),
            [(1, 7), (7, 13), (13, 19), (19, 21)]
        );
        // Counted in UTF-16 units (the documented chunker), the same text is one chunk.
        assert_eq!(
            ranges(chunk_markdown(&cjk, ChunkParams::default())),
            [(1, 21)]
        );
        // Before a 1,401-character line, only the tail of line 3 fits the overlap.
        let text = [
            "alpha ".repeat(50),
            "bravo ".repeat(50),
            "charlie ".repeat(37),
            "d".repeat(1401),
        ]
        .join("\n");
        let chunks = chunk_markdown_openclaw(&text, ChunkParams::default());
        assert_eq!(ranges(chunks.clone()), [(1, 3), (3, 4)]);
        let (tail, _) = chunks[1].text.split_once('\n').unwrap();
        assert_eq!(tail.len(), 197, "the tail within min(320, 1600 - 1402) - 1");
        assert!("charlie ".repeat(37).ends_with(tail));
        assert_eq!(
            ranges(chunk_markdown(&text, ChunkParams::default())),
            [(1, 3), (2, 4)]
        );
        // A line over the budget is cut by weight: 400 ideographs in 1,600-weight pieces.
        let wide = "京".repeat(800);
        let pieces: Vec<usize> = chunk_markdown_openclaw(&wide, ChunkParams::default())
            .iter()
            .map(|c| weighted_chars(&c.text))
            .collect();
        assert!(pieces.iter().all(|&w| w <= 1600), "{pieces:?}");
        // No overlap at all: nothing carried.
        let params = ChunkParams {
            tokens: 400,
            overlap: 0,
        };
        assert_eq!(
            ranges(chunk_markdown_openclaw(&cjk, params)),
            [(1, 7), (8, 14), (15, 21)]
        );
    }
    use proptest::prelude::*;

    #[test]
    fn curated_files_chunk_per_entry() {
        let text = "# Prefs\nlead\n- a\n  - nested\n\n- b\n* star\n1. one\n-x\n## H\n#nope\n####### seven\n- c";
        let spans: Vec<(usize, usize, bool)> = entries(text)
            .iter()
            .map(|e| (e.start_line, e.end_line, e.bullet))
            .collect();
        assert_eq!(
            spans,
            [
                (1, 2, false),
                (3, 5, true),
                (6, 9, true),
                (10, 12, false),
                (13, 13, true)
            ]
        );
        let ranges: Vec<(usize, usize)> = chunk_entries(text, ChunkParams::default())
            .iter()
            .map(|c| (c.start_line, c.end_line))
            .collect();
        assert_eq!(ranges, [(1, 2), (3, 5), (6, 9), (10, 12), (13, 13)]);
        // lead text before the first entry, a trailing newline, blank entries dropped
        assert_eq!(
            entries("intro\n- a\n")[0],
            Entry {
                start_line: 1,
                end_line: 1,
                bullet: false
            }
        );
        let ranges: Vec<(usize, usize)> = chunk_entries("\n\n- a\n", ChunkParams::default())
            .iter()
            .map(|c| (c.start_line, c.end_line))
            .collect();
        assert_eq!(ranges, [(3, 4)]);
        // a long entry is windowed inside itself
        let long = format!("- {}\n{}\n- b", "x".repeat(30), "y".repeat(30));
        let small = ChunkParams {
            tokens: 8,
            overlap: 0,
        };
        let ranges: Vec<(usize, usize)> = chunk_entries(&long, small)
            .iter()
            .map(|c| (c.start_line, c.end_line))
            .collect();
        assert_eq!(ranges, [(1, 1), (2, 2), (3, 3)]);
    }

    fn ranges(content: &str, tokens: usize, overlap: usize) -> Vec<(usize, usize)> {
        chunk_markdown(content, ChunkParams { tokens, overlap })
            .iter()
            .map(|c| (c.start_line, c.end_line))
            .collect()
    }

    /// Ranges computed by hand from OpenClaw's algorithm (budget 32 chars when tokens ≤ 8).
    #[test]
    fn pinned_line_ranges() {
        let ten = "abcdefghi"; // 9 chars, cost 10
                               // (name, content, tokens, overlap, expected ranges)
        type Case = (&'static str, String, usize, usize, Vec<(usize, usize)>);
        let cases: Vec<Case> = vec![
            ("empty", String::new(), 8, 0, vec![]),
            ("only newlines", "\n\n\n".into(), 8, 0, vec![]),
            ("single line", "hello".into(), 8, 0, vec![(1, 1)]),
            (
                "trailing newline counts as a line",
                "hello\n".into(),
                8,
                0,
                vec![(1, 2)],
            ),
            // 3 lines of cost 10 fit in 32; the 4th starts a new chunk.
            (
                "no overlap",
                [ten; 4].join("\n"),
                8,
                0,
                vec![(1, 3), (4, 4)],
            ),
            // overlap 2 tokens = 8 chars: the last segment (cost 10 ≥ 8) is carried.
            (
                "overlap carries one line",
                [ten; 5].join("\n"),
                8,
                2,
                vec![(1, 3), (3, 5)],
            ),
            // overlap 3 tokens = 12 chars: two segments needed (10 < 12, 20 ≥ 12).
            (
                "overlap carries two lines",
                [ten; 5].join("\n"),
                8,
                3,
                vec![(1, 3), (2, 4), (3, 5)],
            ),
            // a 70-char line with budget 32 → segments 32, 32, 6 on line 2.
            (
                "over-long line keeps its number",
                format!("a\n{}\nb", "x".repeat(70)),
                8,
                0,
                vec![(1, 1), (2, 2), (2, 2), (2, 3)],
            ),
            (
                "blank runs are kept inside chunks",
                "a\n\n\n\nb".into(),
                8,
                0,
                vec![(1, 5)],
            ),
            (
                "whitespace-only chunk is dropped",
                format!("{}\n   \n   ", "y".repeat(31)),
                8,
                0,
                vec![(1, 1)],
            ),
            // overlap clamps are the config's job; here overlap ≥ tokens keeps whole chunks.
            (
                "huge overlap still terminates",
                [ten; 4].join("\n"),
                8,
                100,
                vec![(1, 3), (1, 4)],
            ),
        ];
        for (name, content, tokens, overlap, want) in cases {
            assert_eq!(ranges(&content, tokens, overlap), want, "case {name}");
        }
    }

    #[test]
    fn utf16_budget_and_astral_characters() {
        // '😀' is 2 UTF-16 units: 16 of them fill a 32-unit segment exactly.
        let line = "😀".repeat(17);
        let chunks = chunk_markdown(
            &line,
            ChunkParams {
                tokens: 8,
                overlap: 0,
            },
        );
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].text.chars().count(), 16);
        assert_eq!(chunks[1].text, "😀");
        // An odd budget boundary never splits the pair: 'a' + 16 emoji = 33 units.
        let line = format!("a{}", "😀".repeat(16));
        let chunks = chunk_markdown(
            &line,
            ChunkParams {
                tokens: 8,
                overlap: 0,
            },
        );
        assert_eq!(chunks[0].text, format!("a{}", "😀".repeat(15)));
        assert_eq!(chunks[1].text, "😀");
        // Multibyte BMP characters count one unit each: 32 CJK chars fit one segment.
        let line = "记".repeat(32);
        assert_eq!(ranges(&line, 8, 0), vec![(1, 1)]);
        let line = "记".repeat(33);
        assert_eq!(ranges(&line, 8, 0), vec![(1, 1), (1, 1)]);
    }

    #[test]
    fn defaults_and_hash() {
        assert_eq!(ChunkParams::default().max_chars(), 1600);
        assert_eq!(ChunkParams::default().overlap_chars(), 320);
        assert_eq!(
            ChunkParams {
                tokens: 1,
                overlap: 0
            }
            .max_chars(),
            32
        );
        let chunk = &chunk_markdown("abc", ChunkParams::default())[0];
        assert_eq!(
            chunk.hash,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    proptest! {
        #[test]
        fn every_nonblank_line_is_covered_and_ranges_are_monotone(
            lines in proptest::collection::vec("[a-z 记😀]{0,90}", 0..60),
            tokens in 1usize..40,
            overlap in 0usize..40,
        ) {
            let overlap = overlap.min(tokens - 1);
            let content = lines.join("\n");
            let chunks = chunk_markdown(&content, ChunkParams { tokens, overlap });
            for (i, line) in lines.iter().enumerate() {
                if !line.trim().is_empty() {
                    let n = i + 1;
                    prop_assert!(chunks.iter().any(|c| c.start_line <= n && n <= c.end_line),
                        "line {} uncovered", n);
                }
            }
            for pair in chunks.windows(2) {
                prop_assert!(pair[0].start_line <= pair[1].start_line);
                prop_assert!(pair[0].end_line <= pair[1].end_line);
            }
            for chunk in &chunks {
                prop_assert!(chunk.start_line <= chunk.end_line);
                prop_assert!(!chunk.text.trim().is_empty());
            }
        }

        #[test]
        fn without_overlap_chunks_partition_the_text(
            lines in proptest::collection::vec("[a-z]{1,50}", 1..40),
            tokens in 1usize..30,
        ) {
            let content = lines.join("\n");
            let chunks = chunk_markdown(&content, ChunkParams { tokens, overlap: 0 });
            let max = ChunkParams { tokens, overlap: 0 }.max_chars();
            // Every chunk respects the budget, and concatenating chunk texts rebuilds the
            // content (chunks meet either at a newline or inside a cut line).
            let mut rebuilt = String::new();
            for (i, chunk) in chunks.iter().enumerate() {
                prop_assert!(chunk.text.encode_utf16().count() <= max);
                if i > 0 {
                    let prev = &chunks[i - 1];
                    if prev.end_line != chunk.start_line { rebuilt.push('\n'); }
                }
                rebuilt.push_str(&chunk.text);
            }
            prop_assert_eq!(rebuilt, content);
        }

        #[test]
        fn overlap_repeats_the_tail_of_the_previous_chunk(
            lines in proptest::collection::vec("[a-z]{1,20}", 1..60),
            tokens in 8usize..30,
            overlap in 1usize..7,
        ) {
            let content = lines.join("\n");
            let params = ChunkParams { tokens, overlap };
            let chunks = chunk_markdown(&content, params);
            for pair in chunks.windows(2) {
                // The next chunk starts with the previous chunk's overlap lines.
                prop_assert!(pair[1].start_line <= pair[0].end_line);
                let first_line = pair[1].text.split('\n').next().unwrap_or("");
                prop_assert!(pair[0].text.contains(first_line));
            }
        }
    }
}
