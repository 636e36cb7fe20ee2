//! Supersession: when a newer note replaces the fact the first hit states, the newer note
//! comes first (memoria's ranking; OpenClaw 2026.9's has no such step).
//!
//! Facts change: "Joined FitZone, the gym membership is 39 €/month" in January, "Cancelled
//! FitZone and moved over to Bloc District" in July. Asked "which gym am I a member of?",
//! relevance puts January first: it repeats the question's words, July does not. A decay by
//! age would fix that and bury every fact written down once, long ago (where the receipt
//! is, who lent the book), behind any recent note that shares a word. So time decides only
//! between two statements of the *same* fact, and a statement says it replaces another the
//! way people write it down: it names the old value, says it changed, and gives a new one.
//!
//! After the page is ranked, this step reads the first hit's **answer line** (its line
//! holding the most of the query's terms, weighed by IDF). A hit from a newer dated note
//! (`memory/YYYY-MM-DD….md`) supersedes it when one of its lines
//!
//! 1. **names the old line's specifics**: shares a term with it that the query does not
//!    hold and that at most four (`lines::SPECIFIC_CHUNKS`) chunks of the index hold (`fitzone`), not a
//!    function word, a title, a change word or a word of the calendar (`month`, `monday`);
//!    or **restates its amount or hour**: the old line gives an amount of money or a time
//!    of day, and this line another one of the same kind (`1.150 €` then `1.240 €`, `19
//!    Uhr` then `18:30`), for a fact written down anew in other words;
//! 2. **says it changed**: holds a change word (`lines::CHANGE_WORDS`: new, now, switched,
//!    cancelled, sold, nuevo, ahora, jetzt, …);
//! 3. **gives a value of its own**: a number, or a capitalised word inside a sentence
//!    (`Bloc`, `699`), that neither the old line nor the query holds and that at most
//!    four (`lines::SPECIFIC_CHUNKS`) chunks hold (again no title or word of the calendar).
//!
//! The superseding hit moves to first place (its score raised to the first's, so scores
//! still fall down the page) and names the hit it replaces (`supersedes`); the rest keep
//! their order. The step repeats from the superseding line, so a fact that changed twice
//! ends at its newest statement. Then it looks **beyond the page**: the newest statement
//! often shares none of the question's words ("Bloc District for bouldering" for "which
//! gym"), so keyword search alone never returns it. The chunks that hold the answer line's
//! specific *values* (`FitZone`: the number or capitalised name, not any shared word) are
//! read from the keyword side, and one of them that meets the three conditions takes the
//! first place; the page keeps its length (its last hit leaves). Hits without a dated
//! path (`MEMORY.md`, transcripts, wiki pages) neither supersede nor are superseded.
//! Capitals, numbers and the change words are those of the languages written with spaces
//! (English, Spanish, French, German, Portuguese, Italian): CJK notes are left in their
//! order. docs/ranking.md ("Time") has the measurements that chose each condition.

use std::collections::HashSet;

use super::api::{Hit, Superseded};
use super::hybrid::dated_note_day;
use super::lines::{
    answer_line, lines, nameable, restates, specific_kind, specific_terms, Asked, Frequencies,
    Line, CHANGE_WORDS,
};
use crate::error::Result;

/// Where the step looks beyond the page: the chunks that hold any of `terms` (the answer
/// line's specific values), best first, as hits (the pipeline asks the keyword side).
pub(crate) type Beyond<'a> = dyn Fn(&[String]) -> Result<Vec<Hit>> + 'a;

/// A line of a newer hit that may supersede the old line: the terms it shares with it and
/// its new values, before their frequencies are known.
struct Candidate {
    hit: usize,
    line: Line,
    shared: Vec<String>,
    fresh: Vec<String>,
    /// It gives another amount of money or time of day than the old line.
    restates: bool,
}

/// The lines of `newer` hits that name a term of `nameable`, say they changed and give a
/// value of their own that `old` and the query do not hold (conditions 1–3 of the module
/// docs, before the frequencies), best hit first.
fn candidates(
    old: &Line,
    nameable: &HashSet<&str>,
    query: &HashSet<&str>,
    newer: impl Iterator<Item = (usize, Vec<Line>)>,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (hit, lines) in newer {
        for line in lines {
            if !line
                .terms
                .iter()
                .any(|t| CHANGE_WORDS.contains(&t.as_str()))
            {
                continue;
            }
            let mut shared: Vec<String> = line
                .terms
                .iter()
                .filter(|t| nameable.contains(t.as_str()))
                .cloned()
                .collect();
            let mut fresh: Vec<String> = line
                .values
                .iter()
                .filter(|t| !old.terms.contains(*t) && !query.contains(t.as_str()))
                .filter(|t| specific_kind(t))
                .cloned()
                .collect();
            let restates = restates(&old.kinds, &line.kinds);
            if (shared.is_empty() && !restates) || fresh.is_empty() {
                continue;
            }
            shared.sort();
            fresh.sort();
            out.push(Candidate {
                hit,
                line,
                shared,
                fresh,
                restates,
            });
        }
    }
    out
}

/// The first of `found` whose shared and new terms are both specific (their frequencies
/// read in one call), as (hit, line).
fn winner(found: Vec<Candidate>, frequencies: &Frequencies<'_>) -> Result<Option<(usize, Line)>> {
    if found.is_empty() {
        return Ok(None);
    }
    let mut wanted: Vec<String> = found
        .iter()
        .flat_map(|c| c.shared.iter().chain(&c.fresh).cloned())
        .collect();
    wanted.sort();
    wanted.dedup();
    let specific = specific_terms(&wanted, frequencies)?;
    let is_specific = |t: &String| specific.contains(t.as_str());
    Ok(found
        .into_iter()
        .find(|c| {
            (c.restates || c.shared.iter().any(is_specific)) && c.fresh.iter().any(is_specific)
        })
        .map(|c| (c.hit, c.line)))
}

/// The date of a hit's dated note, as days since the Unix epoch.
fn day_of(hit: &Hit) -> Option<i64> {
    dated_note_day(&hit.path).flatten()
}

/// `hit`, moved first above `first`: it names it and takes its score when higher.
fn superseding(mut hit: Hit, first: &Hit) -> Hit {
    hit.supersedes = Some(Superseded {
        path: first.path.clone(),
        start_line: first.start_line,
        end_line: first.end_line,
    });
    hit.score = hit.score.max(first.score);
    hit
}

/// Moves to first place the newest statement that supersedes the first hit's answer line
/// (see the module docs): among the page's hits, then among the chunks `beyond` finds for
/// the answer line's specific values (the newest statement may not hold the query's words
/// at all, and keyword search alone then never returns it); a hit found there takes the
/// first place and the page keeps its length. `frequencies` reads the terms' document
/// frequencies.
pub(crate) fn supersede(
    asked: &Asked<'_>,
    hits: &mut Vec<Hit>,
    frequencies: &Frequencies<'_>,
    beyond: &Beyond<'_>,
) -> Result<()> {
    let Some(mut day) = hits.first().and_then(day_of) else {
        return Ok(());
    };
    let first_lines = lines(&hits[0].text);
    let idfs = asked.idfs(frequencies)?;
    let Some(answer) = answer_line(&first_lines, asked.terms, idfs) else {
        return Ok(());
    };
    let query_set = &asked.set;
    let mut old = first_lines[answer].clone();
    // On the page: the step repeats from each superseding line.
    loop {
        let nameable = nameable(&old.terms, query_set);
        let newer = hits
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, h)| day_of(h).is_some_and(|d| d > day))
            .map(|(i, h)| (i, lines(&h.text)));
        let found = candidates(&old, &nameable, query_set, newer);
        let Some((i, line)) = winner(found, frequencies)? else {
            break;
        };
        let hit = superseding(hits.remove(i), &hits[0]);
        day = day_of(&hit).unwrap_or(day);
        hits.insert(0, hit);
        old = line;
    }
    // Beyond the page: newer chunks naming the answer line's specific values.
    let values: Vec<String> = nameable(&old.values, query_set)
        .into_iter()
        .map(str::to_string)
        .collect();
    let mut values: Vec<String> = specific_terms(&values, frequencies)?
        .into_iter()
        .map(str::to_string)
        .collect();
    if values.is_empty() {
        return Ok(());
    }
    values.sort();
    let mut extra: Vec<Hit> = beyond(&values)?
        .into_iter()
        .filter(|h| day_of(h).is_some_and(|d| d > day) && !hits.iter().any(|p| p.id == h.id))
        .collect();
    let nameable: HashSet<&str> = values.iter().map(String::as_str).collect();
    let newer = extra.iter().enumerate().map(|(i, h)| (i, lines(&h.text)));
    let found = candidates(&old, &nameable, query_set, newer);
    if let Some((i, _)) = winner(found, frequencies)? {
        let length = hits.len();
        let hit = superseding(extra.swap_remove(i), &hits[0]);
        hits.insert(0, hit);
        hits.truncate(length);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::{self, AnalyzerMode};

    const JANUARY: &str = "- Joined FitZone today; the gym membership is 39 €/month.";
    const JULY: &str = "- Cancelled FitZone and moved over to Bloc District for bouldering.";
    const MARCH: &str = "- Gym was packed, skipped the gym.";
    const RENT: &str = "- El casero nos sube el alquiler: desde abril pagamos 1.150 € de alquiler.";

    fn hit(path: &str, score: f64, text: &str) -> Hit {
        Hit::of_text(path, score, text)
    }

    /// Frequencies over `hits` as if they were the whole index, each line its own chunk.
    fn over(hits: &[Hit]) -> impl Fn(&[String]) -> Result<(usize, Vec<usize>)> {
        let chunks: Vec<HashSet<String>> = hits
            .iter()
            .flat_map(|h| {
                h.text
                    .lines()
                    .map(|l| analyzer::terms(l, AnalyzerMode::Index))
            })
            .map(|t| t.into_iter().collect())
            .collect();
        move |terms: &[String]| {
            let counts = terms
                .iter()
                .map(|t| chunks.iter().filter(|c| c.contains(t)).count())
                .collect();
            Ok((chunks.len(), counts))
        }
    }

    /// Nothing beyond the page.
    fn nothing(_: &[String]) -> Result<Vec<Hit>> {
        Ok(Vec::new())
    }

    fn order(query: &str, mut hits: Vec<Hit>) -> Vec<String> {
        let frequencies = over(&hits);
        let terms = analyzer::query_terms(query, true);
        supersede(&Asked::new(&terms), &mut hits, &frequencies, &nothing).unwrap();
        hits.into_iter().map(|h| h.path).collect()
    }

    #[test]
    fn a_newer_statement_of_the_same_fact_comes_first() {
        let hits = vec![
            hit("memory/2026-01-08.md", 0.9, JANUARY),
            hit("memory/2026-03-02.md", 0.8, MARCH),
            hit("memory/2026-07-02.md", 0.6, JULY),
        ];
        let mut moved = hits.clone();
        let frequencies = over(&hits);
        let terms = analyzer::query_terms("which gym am I a member of?", true);
        supersede(&Asked::new(&terms), &mut moved, &frequencies, &nothing).unwrap();
        let paths: Vec<&str> = moved.iter().map(|h| h.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "memory/2026-07-02.md",
                "memory/2026-01-08.md",
                "memory/2026-03-02.md"
            ]
        );
        assert_eq!(moved[0].score, 0.9, "scores still fall down the page");
        let superseded = moved[0].supersedes.as_ref().unwrap();
        assert_eq!(superseded.path, "memory/2026-01-08.md");
        assert!(moved[1..].iter().all(|h| h.supersedes.is_none()));
    }

    #[test]
    fn each_condition_is_needed() {
        let query = "which gym am I a member of?";
        let old = hit("memory/2026-01-08.md", 0.9, JANUARY);
        let rows: &[(&str, &str, &str)] = &[
            ("memory/2026-07-02.md", JULY, "memory/2026-07-02.md"),
            // names nothing of the old line
            (
                "memory/2026-07-02.md",
                "- Cancelled it and moved to Bloc District.",
                "memory/2026-01-08.md",
            ),
            // no change word
            (
                "memory/2026-07-02.md",
                "- FitZone was full, tried Bloc District once.",
                "memory/2026-01-08.md",
            ),
            // no value of its own
            (
                "memory/2026-07-02.md",
                "- Cancelled FitZone for the summer.",
                "memory/2026-01-08.md",
            ),
            // older than the first hit
            ("memory/2025-07-02.md", JULY, "memory/2026-01-08.md"),
            // not a dated note
            ("MEMORY.md", JULY, "memory/2026-01-08.md"),
        ];
        for (path, text, first) in rows {
            let got = order(query, vec![old.clone(), hit(path, 0.5, text)]);
            assert_eq!(got[0], *first, "{path}: {text}");
        }
    }

    #[test]
    fn a_new_amount_restates_the_fact() {
        let rows = [
            (
                "- Firmado el nuevo contrato del piso: 1.240 € mensuales.",
                "memory/2026-10-01.md",
            ),
            // Without a change word it is only another amount.
            ("- Cena en Askua: 84 € los dos.", "memory/2026-03-03.md"),
        ];
        for (newer, first) in rows {
            let got = order(
                "¿cuánto pagamos de alquiler?",
                vec![
                    hit("memory/2026-03-03.md", 0.9, RENT),
                    hit("memory/2026-10-01.md", 0.8, newer),
                ],
            );
            assert_eq!(got[0], first, "{newer}");
        }
    }

    #[test]
    fn a_fact_that_changed_twice_ends_at_its_newest_statement() {
        let got = order(
            "which gym am I a member of?",
            vec![
                hit("memory/2026-01-08.md", 0.9, JANUARY),
                hit(
                    "memory/2026-11-02.md",
                    0.5,
                    "- Sold the Bloc District pass to Marc; switched to Urban Climb.",
                ),
                hit("memory/2026-07-02.md", 0.6, JULY),
            ],
        );
        assert_eq!(
            got,
            [
                "memory/2026-11-02.md",
                "memory/2026-07-02.md",
                "memory/2026-01-08.md"
            ]
        );
    }

    #[test]
    fn a_newer_statement_beyond_the_page_takes_the_first_place() {
        // Keyword search alone returns January and March (they hold "gym"); July holds none
        // of the question's words, so only the look beyond the page for "FitZone" finds it.
        let page = vec![
            hit("memory/2026-01-08.md", 0.9, JANUARY),
            hit("memory/2026-03-02.md", 0.8, MARCH),
        ];
        let july = hit("memory/2026-07-02.md", 0.0, JULY);
        let older = hit(
            "memory/2025-06-01.md",
            0.0,
            "- Sold my FitZone pass; new Nike shoes.",
        );
        let everything: Vec<Hit> = page.iter().chain([&july, &older]).cloned().collect();
        let frequencies = over(&everything);
        let asked = std::cell::RefCell::new(Vec::new());
        let beyond = |values: &[String]| {
            asked.borrow_mut().push(values.to_vec());
            Ok(vec![page[0].clone(), older.clone(), july.clone()])
        };
        let mut hits = page.clone();
        let terms = analyzer::query_terms("which gym am I a member of?", true);
        supersede(&Asked::new(&terms), &mut hits, &frequencies, &beyond).unwrap();
        let paths: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
        assert_eq!(paths, ["memory/2026-07-02.md", "memory/2026-01-08.md"]);
        assert_eq!(hits[0].score, 0.9);
        assert_eq!(
            hits[0].supersedes.as_ref().unwrap().path,
            "memory/2026-01-08.md"
        );
        // It asked for the answer line's specific values (the camelCase name and its parts).
        assert_eq!(asked.borrow()[0], ["fit", "fitzone", "zone"]);
    }

    #[test]
    fn a_fact_stated_once_keeps_its_place() {
        // A recent note on the same topic, with a change word and a name, but naming nothing
        // specific of the old statement.
        let got = order(
            "where did we stay in Lisbon?",
            vec![
                hit(
                    "memory/2025-12-27.md",
                    0.9,
                    "- We're staying at Casa do Alecrim, a small guesthouse in Alfama.",
                ),
                hit(
                    "memory/2026-09-12.md",
                    0.8,
                    "- New colleague Inês joined the team; she's from Lisbon.",
                ),
            ],
        );
        assert_eq!(got[0], "memory/2025-12-27.md");
    }
}
