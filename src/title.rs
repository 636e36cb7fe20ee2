//! A chunk's title, for the embedder's document prompt (pure).
//!
//! EmbeddingGemma was trained to embed a document as `title: {title} | text: {content}`,
//! and `title: none` when there is none. A chunk cut from the middle of a note loses what
//! the note is about; its title gives it back: the headings in force at the chunk's first
//! line, outermost first, joined by ` > `. When none of them is a level-1 heading (the
//! note's own title), the file's name comes first: `memory/2026-03-14.md` with
//! `## Vet visit` above a chunk titles it `2026-03-14 > Vet visit`; `# Trip to Kyoto` above
//! it titles it `Trip to Kyoto`.
//!
//! Headings are ATX headings (`#` to `######` and a space) outside fenced code blocks.
//! Markdown emphasis and a closing run of `#` are dropped, whitespace collapsed, and `|`
//! (the prompt's own separator) becomes `/`; a title is cut at [`MAX_TITLE_CHARS`].
//! Only Markdown memory files have titles; a session transcript's chunks have none.

/// Longest title, in characters: a heading trail longer than this is cut.
pub const MAX_TITLE_CHARS: usize = 200;

/// The level and text of an ATX heading line.
pub(crate) fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim_end();
    Some((level, text))
}

/// A heading's words as a title part.
fn clean(text: &str) -> String {
    let text: String = text
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '`'))
        .map(|c| if c == '|' { '/' } else { c })
        .collect();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The file's name without its directory and `.md`.
fn file_label(path: &str) -> &str {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    name.strip_suffix(".md").unwrap_or(name)
}

/// The title of each chunk of the Markdown file `path` (content `text`) that starts at the
/// 1-based line in `starts` (in any order).
pub fn chunk_titles(path: &str, text: &str, starts: &[usize]) -> Vec<String> {
    // The heading trail at every line: (level, text) outermost first.
    let mut trail: Vec<(usize, String)> = Vec::new();
    let mut trails: Vec<Vec<(usize, String)>> = Vec::new();
    let mut fence: Option<&str> = None;
    for line in text.split('\n') {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => {
                if let Some((level, words)) = heading(line) {
                    trail.retain(|(l, _)| *l < level);
                    let words = clean(words);
                    if !words.is_empty() {
                        trail.push((level, words));
                    }
                }
            }
            _ => {}
        }
        trails.push(trail.clone());
    }
    starts
        .iter()
        .map(|&start| {
            let at = trails
                .get(start.saturating_sub(1))
                .or(trails.last())
                .map_or(&[][..], Vec::as_slice);
            let mut parts: Vec<&str> = Vec::new();
            if !at.iter().any(|(level, _)| *level == 1) {
                parts.push(file_label(path));
            }
            parts.extend(at.iter().map(|(_, words)| words.as_str()));
            let title = clean(&parts.join(" > "));
            match title.char_indices().nth(MAX_TITLE_CHARS) {
                Some((cut, _)) => title[..cut].trim_end().to_string(),
                None => title,
            }
        })
        .collect()
}

/// The part of a chunk's `text` to embed behind its `title`: without the heading lines at
/// its top that the title already names (and the blank lines around them), so the model
/// does not read the note's title twice. A heading the title lacks (a cut title, a deeper
/// heading below the first) stays, and so does a text without such headings, unchanged.
pub fn body<'a>(title: &str, text: &'a str) -> &'a str {
    if title.is_empty() {
        return text;
    }
    let named = |words: &str| {
        let words = clean(words);
        !words.is_empty() && title.split(" > ").any(|part| part == words)
    };
    let (mut offset, mut cut) = (0, 0);
    for line in text.split_inclusive('\n') {
        let bare = line.trim();
        if !bare.is_empty() {
            match heading(line.trim_end()) {
                Some((_, words)) if named(words) => {}
                _ => break,
            }
        }
        offset += line.len();
        if !bare.is_empty() || cut > 0 {
            cut = offset;
        }
    }
    &text[cut..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_titles_table() {
        let log = "# 2026-03-14\n\n## Vet visit\nMochi's shots.\n## Groceries\n- rice\n";
        let rows: &[(&str, &str, usize, &str)] = &[
            // H1 present: the trail alone.
            ("memory/2026-03-14.md", log, 1, "2026-03-14"),
            ("memory/2026-03-14.md", log, 4, "2026-03-14 > Vet visit"),
            ("memory/2026-03-14.md", log, 3, "2026-03-14 > Vet visit"),
            ("memory/2026-03-14.md", log, 6, "2026-03-14 > Groceries"),
            // No H1: the file's name first; no heading at all: the name alone.
            ("MEMORY.md", "intro\n## Pets\n- Mochi\n", 3, "MEMORY > Pets"),
            ("memory/notes.md", "just text\n", 1, "notes"),
            // A deeper heading pops back out at a shallower one.
            ("a.md", "# A\n### C\nx\n## B\ny\n", 5, "A > B"),
            // Headings in fenced code are not headings; `#tag` is not a heading.
            ("a.md", "# A\n```\n# not\n```\n#tag\nx\n", 6, "A"),
            // Emphasis, closing hashes and the prompt's separator.
            ("a.md", "# **Trip** | Kyoto ##\nx\n", 2, "Trip / Kyoto"),
            // A start past the end uses the last line's trail.
            ("a.md", "# A\n", 9, "A"),
        ];
        for (path, text, start, want) in rows {
            assert_eq!(
                chunk_titles(path, text, &[*start]),
                vec![want.to_string()],
                "{path} {start}"
            );
        }
    }

    #[test]
    fn body_table() {
        let rows: &[(&str, &str, &str)] = &[
            // The note's title, then its text.
            (
                "Trip to Kyoto",
                "# Trip to Kyoto\n\nHotel near the station.\n",
                "Hotel near the station.\n",
            ),
            ("notes > Pets", "## Pets\n- Mochi\n", "- Mochi\n"),
            ("Trip / Kyoto", "# **Trip** | Kyoto ##\nx\n", "x\n"),
            ("A", "\n# A\r\n\r\nx\r\n", "x\r\n"),
            ("A", "# A\n", ""),
            // A deeper heading below is not in the title: it stays.
            ("A", "# A\n## B\nx\n", "## B\nx\n"),
            // No title, a cut title, a heading below the text, text alone: unchanged.
            ("", "# A\nx\n", "# A\nx\n"),
            (
                "Trip to Kyo",
                "# Trip to Kyoto\nx\n",
                "# Trip to Kyoto\nx\n",
            ),
            ("A", "x\n# A\n", "x\n# A\n"),
            ("A", "\n\nx\n", "\n\nx\n"),
            ("A", "#A\nx\n", "#A\nx\n"),
        ];
        for (title, text, want) in rows {
            assert_eq!(body(title, text), *want, "{title:?} {text:?}");
        }
    }

    #[test]
    fn long_trails_are_cut() {
        let text = format!("# {}\nx\n", "word ".repeat(60));
        let title = &chunk_titles("a.md", &text, &[2])[0];
        assert!(title.chars().count() <= MAX_TITLE_CHARS);
        assert!(title.starts_with("word word"));
    }
}
