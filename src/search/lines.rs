//! How supersession and the answer step read a hit: line by line, each line's terms, its
//! *values* (numbers and capitalised words inside a sentence: the names and figures a
//! fact is made of), its amounts of money and times of day, and which terms are specific
//! enough to name a fact (rare in the index, not a function word, a title, a change word or
//! a word of the calendar). Capitals, numbers and the word lists are those of the languages
//! written with spaces (English, Spanish, French, German, Portuguese, Italian). Pure.

use std::cell::OnceCell;
use std::collections::HashSet;

use crate::analyzer::{self, stopwords, AnalyzerMode};
use crate::error::Result;
use crate::store::idf;

/// A term at most this many chunks hold is specific: a name, a number, a place.
pub(super) const SPECIFIC_CHUNKS: usize = 4;

/// Terms shorter than this (in characters) never name an old value: `dr`, `am`, `uk`.
const MIN_SHARED_CHARS: usize = 3;

/// Words that say a statement replaces an earlier one, as the analyzer writes them
/// (lowercase, accents folded): English, Spanish, Portuguese, French, German, Italian.
#[rustfmt::skip]
pub(super) const CHANGE_WORDS: &[&str] = &[
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
pub(super) enum Kind {
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
pub(super) fn restates(old: &[(Kind, String)], new: &[(Kind, String)]) -> bool {
    new.iter()
        .any(|(kind, value)| old.iter().any(|(k, v)| k == kind && v != value))
        && !new.iter().any(|n| old.contains(n))
}

/// The query as the steps after the page read it: its content terms, and their IDFs, read
/// once when a step first needs them.
pub(crate) struct Asked<'a> {
    /// The content terms.
    pub(super) terms: &'a [String],
    /// The same, as a set.
    pub(super) set: HashSet<&'a str>,
    idfs: OnceCell<Vec<f64>>,
}

impl<'a> Asked<'a> {
    /// The query of content terms `terms`.
    pub(crate) fn new(terms: &'a [String]) -> Asked<'a> {
        Asked {
            terms,
            set: terms.iter().map(String::as_str).collect(),
            idfs: OnceCell::new(),
        }
    }

    /// Each term's IDF in the generation (`frequencies` read on the first call only).
    pub(super) fn idfs(&self, frequencies: &Frequencies<'_>) -> Result<&[f64]> {
        if let Some(idfs) = self.idfs.get() {
            return Ok(idfs);
        }
        let (documents, counts) = frequencies(self.terms)?;
        let idfs = counts.iter().map(|&c| idf(documents, c)).collect();
        Ok(self.idfs.get_or_init(|| idfs))
    }
}

/// The document frequencies the steps read: how many chunks the generation holds, and how
/// many hold each term (the store reader's `frequencies`).
pub(crate) type Frequencies<'a> = dyn Fn(&[String]) -> Result<(usize, Vec<usize>)> + 'a;

/// One line of a hit, as the step reads it.
#[derive(Debug, Clone)]
pub(super) struct Line {
    /// Its analyzer terms.
    pub(super) terms: HashSet<String>,
    /// The terms of its values: numbers and capitalised words inside a sentence.
    pub(super) values: HashSet<String>,
    /// Its amounts of money and times of day.
    pub(super) kinds: Vec<(Kind, String)>,
}

/// The lines of a chunk's text that state something (headings and blank lines left out).
pub(super) fn lines(text: &str) -> Vec<Line> {
    text.lines().filter_map(line).collect()
}

/// A line's terms and values; `None` for a heading or a blank line.
pub(super) fn line(text: &str) -> Option<Line> {
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
pub(super) fn specific_kind(term: &str) -> bool {
    !stopwords::is_stopword(term)
        && ![CHANGE_WORDS, CALENDAR_WORDS, TITLES]
            .iter()
            .any(|list| list.contains(&term))
}

/// Those of `terms` (an old line's terms or values) that can name its value: outside the
/// query, of a specific kind, long enough.
pub(super) fn nameable<'t>(terms: &'t HashSet<String>, query: &HashSet<&str>) -> HashSet<&'t str> {
    terms
        .iter()
        .map(String::as_str)
        .filter(|t| !query.contains(t) && specific_kind(t))
        .filter(|t| t.chars().count() >= MIN_SHARED_CHARS)
        .collect()
}

/// The line of `lines` that holds the most of `query`'s terms, weighed by `idfs`; `None`
/// when no line holds any.
pub(super) fn answer_line(lines: &[Line], query: &[String], idfs: &[f64]) -> Option<usize> {
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

/// Those of `terms` that at most [`SPECIFIC_CHUNKS`] chunks hold.
pub(super) fn specific_terms<'t>(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
