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
//!    hold and that at most [`SPECIFIC_CHUNKS`] chunks of the index hold (`fitzone`), not a
//!    function word, a title, a change word or a word of the calendar (`month`, `monday`);
//!    or **restates its amount or hour**: the old line gives an amount of money or a time
//!    of day, and this line another one of the same kind (`1.150 €` then `1.240 €`, `19
//!    Uhr` then `18:30`), for a fact written down anew in other words;
//! 2. **says it changed**: holds a change word ([`CHANGE_WORDS`]: new, now, switched,
//!    cancelled, sold, nuevo, ahora, jetzt, …);
//! 3. **gives a value of its own**: a number, or a capitalised word inside a sentence
//!    (`Bloc`, `699`), that neither the old line nor the query holds and that at most
//!    [`SPECIFIC_CHUNKS`] chunks hold (again no title or word of the calendar).
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
use crate::analyzer::{self, stopwords, AnalyzerMode};
use crate::error::Result;
use crate::store::idf;

/// A term at most this many chunks hold is specific: a name, a number, a place.
pub(crate) const SPECIFIC_CHUNKS: usize = 4;

/// Terms shorter than this (in characters) never name an old value: `dr`, `am`, `uk`.
const MIN_SHARED_CHARS: usize = 3;

/// Words that say a statement replaces an earlier one, as the analyzer writes them
/// (lowercase, accents folded): English, Spanish, Portuguese, French, German, Italian.
#[rustfmt::skip]
pub(crate) const CHANGE_WORDS: &[&str] = &[
    // English
    "new", "now", "nowadays", "longer", "anymore", "instead", "switched", "switching",
    "switch", "changed", "changing", "moved", "moves", "moving", "cancelled", "canceled",
    "sold", "replaced", "replacing", "stopped", "quit", "updated",
    // Spanish
    "nuevo", "nueva", "nuevos", "nuevas", "ahora", "cambiado", "cambie", "cambiamos",
    "cambio", "cambia", "vendimos", "vendi",
    // Portuguese
    "novo", "nova", "agora", "mudou", "mudamos", "trocou", "trocamos",
    // French
    "nouveau", "nouvelle", "nouvel", "maintenant", "desormais", "change", "remplace",
    // German
    "neu", "neue", "neues", "neuen", "neuer", "jetzt", "nun", "gewechselt", "stattdessen",
    "umgezogen", "verkauft",
    // Italian
    "nuovo", "nuova", "adesso", "cambiato",
];

/// Words of the calendar: they say when, never what, so they are never an old or a new
/// value (a daily log's notes share them without being about the same thing).
#[rustfmt::skip]
const CALENDAR_WORDS: &[&str] = &[
    // English
    "day", "days", "week", "weeks", "month", "months", "year", "years", "daily", "weekly",
    "monthly", "yearly", "today", "tomorrow", "yesterday", "morning", "evening", "night",
    "weekend", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
    "sunday", "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
    // Spanish
    "dia", "dias", "semana", "semanas", "mes", "meses", "ano", "anos", "hoy", "manana",
    "ayer", "tarde", "noche", "lunes", "martes", "miercoles", "jueves", "viernes",
    "sabado", "domingo", "enero", "febrero", "marzo", "abril", "mayo", "junio", "julio",
    "agosto", "septiembre", "octubre", "noviembre", "diciembre",
    // Portuguese
    "semana", "mes", "ano", "hoje", "amanha", "ontem", "segunda", "terca", "quarta",
    "quinta", "sexta", "janeiro", "fevereiro", "marco", "maio", "junho", "julho",
    "setembro", "outubro", "novembro", "dezembro",
    // French
    "jour", "jours", "semaine", "mois", "an", "annee", "aujourd", "hui", "demain", "hier",
    "lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche", "janvier",
    "fevrier", "mars", "avril", "mai", "juin", "juillet", "aout", "septembre", "octobre",
    "novembre", "decembre",
    // German
    "tag", "tage", "woche", "wochen", "monat", "monate", "jahr", "jahre", "heute",
    "morgen", "gestern", "abend", "montag", "dienstag", "mittwoch", "donnerstag",
    "freitag", "samstag", "sonntag", "montags", "dienstags", "mittwochs", "donnerstags",
    "freitags", "samstags", "sonntags", "januar", "februar", "marz", "juni", "juli",
    "oktober", "dezember",
    // Italian
    "giorno", "settimana", "mese", "anno", "oggi", "domani", "ieri", "lunedi", "martedi",
    "mercoledi", "giovedi", "venerdi", "sabato", "gennaio", "febbraio", "aprile", "maggio",
    "giugno", "luglio", "settembre", "ottobre", "dicembre",
];

/// Titles before a name: never a specific of their own, and their period ends no sentence.
#[rustfmt::skip]
const TITLES: &[&str] = &[
    
    "dr", "mr", "mrs", "ms", "mx", "prof", "sr", "sra", "srta", "st", "herr", "frau", "mme",
];

/// Kinds of value whose change restates a fact even when the new line names nothing of the
/// old one: an amount of money (the rent), a time of day (the class's hour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Money,
    Clock,
}

/// Words next to a number that make it an amount of money (analyzer terms).
#[rustfmt::skip]
const CURRENCIES: &[&str] = &[
    "eur", "euro", "euros", "usd", "dollar", "dollars", "gbp", "pound", "pounds", "chf",
    "franken", "yen", "jpy", "cny", "yuan", "kr", "sek", "nok", "dkk", "pln", "zloty",
];

/// Words after a number that make it a time of day.
const CLOCK_WORDS: &[&str] = &["uhr", "am", "pm", "h"];

/// The amounts of money and times of day `body` states, each with its digits.
fn kinds(body: &str) -> Vec<(Kind, String)> {
    let words: Vec<&str> = body.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
        if !bare.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let digits: String = bare.chars().filter(char::is_ascii_digit).collect();
        let next = words.get(i + 1).map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        });
        let symbol = |w: &str| w.contains(['€', '$', '£', '¥']);
        let money = symbol(word)
            || words.get(i + 1).is_some_and(|w| symbol(w))
            || (i > 0 && symbol(words[i - 1]))
            || next.as_deref().is_some_and(|n| CURRENCIES.contains(&n));
        let suffix = bare.trim_start_matches(|c: char| c.is_ascii_digit() || c == ':');
        let clock = is_clock(bare)
            || (bare.len() <= 2 && next.as_deref().is_some_and(|n| CLOCK_WORDS.contains(&n)))
            || (bare.len() <= 4 && matches!(suffix, "am" | "pm" | "h"));
        if money {
            out.push((Kind::Money, digits));
        } else if clock {
            out.push((Kind::Clock, digits));
        }
    }
    out
}

/// Whether `word` is written as a time of day: `7:50`, `18:30`, `18h30`.
fn is_clock(word: &str) -> bool {
    let Some((h, m)) = word.split_once([':', 'h']) else {
        return false;
    };
    (1..=2).contains(&h.len())
        && m.len() == 2
        && h.chars().chain(m.chars()).all(|c| c.is_ascii_digit())
}

/// Whether `new` states a value of a kind `old` states, different from it.
fn restates(old: &[(Kind, String)], new: &[(Kind, String)]) -> bool {
    new.iter()
        .any(|(kind, value)| old.iter().any(|(k, v)| k == kind && v != value))
        && !new.iter().any(|n| old.contains(n))
}

/// The document frequencies the step reads: how many chunks the generation holds, and how
/// many hold each term (the store reader's `frequencies`).
pub(crate) type Frequencies<'a> = dyn Fn(&[String]) -> Result<(usize, Vec<usize>)> + 'a;

/// Where the step looks beyond the page: the chunks that hold any of `terms` (the answer
/// line's specific values), best first, as hits (the pipeline asks the keyword side).
pub(crate) type Beyond<'a> = dyn Fn(&[String]) -> Result<Vec<Hit>> + 'a;

/// One line of a hit, as the step reads it.
#[derive(Debug, Clone)]
struct Line {
    /// Its analyzer terms.
    terms: HashSet<String>,
    /// The terms of its values: numbers and capitalised words inside a sentence.
    values: HashSet<String>,
    /// Its amounts of money and times of day.
    kinds: Vec<(Kind, String)>,
}

/// The lines of a chunk's text that state something (headings and blank lines left out).
fn lines(text: &str) -> Vec<Line> {
    text.lines().filter_map(line).collect()
}

/// A line's terms and values; `None` for a heading or a blank line.
fn line(text: &str) -> Option<Line> {
    let body = text.trim();
    if body.is_empty() || body.starts_with('#') {
        return None;
    }
    let body = body.trim_start_matches(['-', '*', '+', '>', ' ']);
    let terms: HashSet<String> = analyzer::terms(body, AnalyzerMode::Index)
        .into_iter()
        .collect();
    let mut values = HashSet::new();
    let mut sentence_start = true;
    for word in body.split_whitespace() {
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
        let title = TITLES.contains(&bare.to_lowercase().as_str());
        let digit = bare.chars().any(char::is_numeric);
        let capital =
            !sentence_start && !title && bare.chars().next().is_some_and(char::is_uppercase);
        if digit || capital {
            values.extend(analyzer::terms(bare, AnalyzerMode::Index));
        }
        if !bare.is_empty() {
            sentence_start = !title && word.ends_with(['.', '!', '?', ':', ';']);
        }
    }
    Some(Line {
        terms,
        values,
        kinds: kinds(body),
    })
}

/// Whether `term` can name an old value or be a new one: not a function word, a change
/// word, a word of the calendar or a title.
fn specific_kind(term: &str) -> bool {
    !stopwords::is_stopword(term)
        && ![CHANGE_WORDS, CALENDAR_WORDS, TITLES]
            .iter()
            .any(|list| list.contains(&term))
}

/// Those of `terms` (an old line's terms or values) that can name its value: outside the
/// query, of a specific kind, long enough.
fn nameable<'t>(terms: &'t HashSet<String>, query: &HashSet<&str>) -> HashSet<&'t str> {
    terms
        .iter()
        .map(String::as_str)
        .filter(|t| !query.contains(t) && specific_kind(t))
        .filter(|t| t.chars().count() >= MIN_SHARED_CHARS)
        .collect()
}

/// The line of `lines` that holds the most of `query`'s terms, weighed by `idfs`; `None`
/// when no line holds any.
fn answer_line(lines: &[Line], query: &[String], idfs: &[f64]) -> Option<usize> {
    let weight = |line: &Line| -> f64 {
        query
            .iter()
            .zip(idfs)
            .filter(|(term, _)| line.terms.contains(*term))
            .map(|(_, idf)| idf)
            .sum()
    };
    let mut best: Option<(usize, f64)> = None;
    for (i, line) in lines.iter().enumerate() {
        let w = weight(line);
        if w > 0.0 && best.is_none_or(|(_, b)| w > b) {
            best = Some((i, w));
        }
    }
    best.map(|(i, _)| i)
}

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

/// Those of `terms` that at most [`SPECIFIC_CHUNKS`] chunks hold.
fn specific_terms<'t>(
    terms: &'t [String],
    frequencies: &Frequencies<'_>,
) -> Result<HashSet<&'t str>> {
    if terms.is_empty() {
        return Ok(HashSet::new());
    }
    let (_, counts) = frequencies(terms)?;
    Ok(terms
        .iter()
        .zip(counts)
        .filter(|(_, c)| *c <= SPECIFIC_CHUNKS)
        .map(|(t, _)| t.as_str())
        .collect())
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
/// first place and the page keeps its length. `query` is the query's content terms;
/// `frequencies` reads the terms' document frequencies.
pub(crate) fn supersede(
    query: &[String],
    hits: &mut Vec<Hit>,
    frequencies: &Frequencies<'_>,
    beyond: &Beyond<'_>,
) -> Result<()> {
    let Some(mut day) = hits.first().and_then(day_of) else {
        return Ok(());
    };
    let (documents, counts) = frequencies(query)?;
    let idfs: Vec<f64> = counts.iter().map(|&c| idf(documents, c)).collect();
    let first_lines = lines(&hits[0].text);
    let Some(answer) = answer_line(&first_lines, query, &idfs) else {
        return Ok(());
    };
    let query_set: HashSet<&str> = query.iter().map(String::as_str).collect();
    let mut old = first_lines[answer].clone();
    // On the page: the step repeats from each superseding line.
    loop {
        let nameable = nameable(&old.terms, &query_set);
        let newer = hits
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, h)| day_of(h).is_some_and(|d| d > day))
            .map(|(i, h)| (i, lines(&h.text)));
        let found = candidates(&old, &nameable, &query_set, newer);
        let Some((i, line)) = winner(found, frequencies)? else {
            break;
        };
        let hit = superseding(hits.remove(i), &hits[0]);
        day = day_of(&hit).unwrap_or(day);
        hits.insert(0, hit);
        old = line;
    }
    // Beyond the page: newer chunks naming the answer line's specific values.
    let values: Vec<String> = nameable(&old.values, &query_set)
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
    let found = candidates(&old, &nameable, &query_set, newer);
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

    fn hit(path: &str, score: f64, text: &str) -> Hit {
        Hit {
            id: path.into(),
            path: path.into(),
            source: "memory".into(),
            start_line: 1,
            end_line: text.lines().count(),
            text: text.into(),
            score,
            text_score: 0.0,
            vector_score: None,
            recall: Default::default(),
            wiki: None,
            supersedes: None,
        }
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
        supersede(&terms, &mut hits, &frequencies, &nothing).unwrap();
        hits.into_iter().map(|h| h.path).collect()
    }

    #[test]
    fn lists_hold_analyzer_terms() {
        // Each listed word is what the analyzer makes of it, or no line could match it.
        for word in CHANGE_WORDS.iter().chain(CALENDAR_WORDS).chain(TITLES) {
            let terms = analyzer::terms(word, AnalyzerMode::Index);
            assert_eq!(terms, vec![word.to_string()], "{word}");
        }
    }

    #[test]
    fn a_line_s_values_are_numbers_and_capitals_inside_a_sentence() {
        let rows: &[(&str, &[&str])] = &[
            (
                "- Cancelled FitZone and moved over to Bloc District, 52 €/month.",
                // a camelCase name is also its parts, as the analyzer indexes it
                &["fitzone", "fit", "zone", "bloc", "district", "52"],
            ),
            ("- First cleaning with Dr. Okafor; switching.", &["okafor"]),
            ("- Caroline: Hey Mel! Good to see you.", &["mel"]),
            ("- El alquiler: 1.240 € al mes.", &["1.240", "1", "240"]),
            ("## Work", &[]),
        ];
        for (text, want) in rows {
            let mut got: Vec<String> = line(text)
                .map(|l| l.values.into_iter().collect())
                .unwrap_or_default();
            got.sort();
            let mut want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
            want.sort();
            assert_eq!(got, want, "{text}");
        }
    }

    const JANUARY: &str = "- Joined FitZone today; the gym membership is 39 €/month.";
    const JULY: &str = "- Cancelled FitZone and moved over to Bloc District for bouldering.";

    #[test]
    fn a_newer_statement_of_the_same_fact_comes_first() {
        let hits = vec![
            hit("memory/2026-01-08.md", 0.9, JANUARY),
            hit(
                "memory/2026-03-02.md",
                0.8,
                "- Gym was packed, skipped the gym.",
            ),
            hit("memory/2026-07-02.md", 0.6, JULY),
        ];
        let mut moved = hits.clone();
        let frequencies = over(&hits);
        let terms = analyzer::query_terms("which gym am I a member of?", true);
        supersede(&terms, &mut moved, &frequencies, &nothing).unwrap();
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
    fn amounts_and_hours_are_read_as_such() {
        use Kind::{Clock, Money};
        let rows: &[(&str, &[(Kind, &str)])] = &[
            ("pagamos 1.150 € de alquiler", &[(Money, "1150")]),
            ("rent is $1,240 a month", &[(Money, "1240")]),
            ("saves 35 euros a month", &[(Money, "35")]),
            ("dienstags um 19 Uhr", &[(Clock, "19")]),
            ("la ruta pasa a las 8:10", &[(Clock, "810")]),
            ("class at 7pm, room 18h30", &[(Clock, "7"), (Clock, "1830")]),
            ("version 17 and 3.1 % and 612 334 851", &[]),
        ];
        for (text, want) in rows {
            let want: Vec<(Kind, String)> = want.iter().map(|(k, v)| (*k, v.to_string())).collect();
            assert_eq!(kinds(text), want, "{text}");
        }
        let money = |v: &str| vec![(Money, v.to_string())];
        assert!(restates(&money("1150"), &money("1240")));
        assert!(
            !restates(&money("1150"), &money("1150")),
            "the same amount again"
        );
        assert!(
            !restates(&money("1150"), &[(Clock, "1830".into())]),
            "another kind"
        );
        assert!(!restates(&[], &money("1240")), "the old line gives none");
    }

    #[test]
    fn a_new_amount_restates_the_fact() {
        let got = order(
            "¿cuánto pagamos de alquiler?",
            vec![
                hit(
                    "memory/2026-03-03.md",
                    0.9,
                    "- El casero nos sube el alquiler: desde abril pagamos 1.150 € de alquiler.",
                ),
                hit(
                    "memory/2026-10-01.md",
                    0.8,
                    "- Firmado el nuevo contrato del piso: 1.240 € mensuales.",
                ),
            ],
        );
        assert_eq!(got[0], "memory/2026-10-01.md");
        // Without a change word it is only another amount.
        let got =
            order(
                "¿cuánto pagamos de alquiler?",
                vec![
                hit(
                    "memory/2026-03-03.md",
                    0.9,
                    "- El casero nos sube el alquiler: desde abril pagamos 1.150 € de alquiler.",
                ),
                hit("memory/2026-10-01.md", 0.8, "- Cena en Askua: 84 € los dos."),
            ],
            );
        assert_eq!(got[0], "memory/2026-03-03.md");
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
            hit(
                "memory/2026-03-02.md",
                0.8,
                "- Gym was packed, skipped the gym.",
            ),
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
        supersede(&terms, &mut hits, &frequencies, &beyond).unwrap();
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
