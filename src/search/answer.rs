//! The answer step: a question that asks for a name gets first a hit that names one
//! (memoria's ranking; OpenClaw 2026.9's has no such step).
//!
//! "Which vet did the cat's surgery?" wants a name. Relevance can put first a recent note
//! that shares the question's words and names nobody ("took the cat to the vet for a
//! check-up; the vet says her gums healed well after the surgery"), above the note that
//! answers ("Pixel's surgery went fine: Dr. Navarro at Clínica Veterinaria Sant Antoni").
//! So when the question asks for a name (who, whom, whose, which, what's the name; quién,
//! cómo se llama; wer, welche, wie heißt; qui, comment s'appelle; quem, como se chama; chi,
//! come si chiama), and the first hit's answer line (its line
//! holding the most of the query's terms, weighed by IDF) names nothing specific — no
//! number or capitalised word inside a sentence that the query does not hold, at most four
//! chunks hold, and is not a title or a word of the calendar — the first of the next
//! [`NEXT_HITS`] hits whose answer line does name something specific takes the first place
//! (its score raised to the first's). Only the page's order changes. docs/ranking.md
//! ("Time") has the measurements.

use super::api::Hit;
use super::lines::{answer_line, lines, nameable, specific_terms, Asked, Frequencies};
use crate::analyzer::{self, AnalyzerMode};
use crate::error::Result;

/// How many hits after the first may take its place: the second and the third. Looking
/// further down the page found more answers on the over-time set and cost LoCoMo more
/// than the lever rule allows.
pub(crate) const NEXT_HITS: usize = 2;

/// First words of a question that asks for a name (analyzer terms: lowercase, folded).
/// Not Spanish `cuál`, French `quel`, Portuguese `qual` or Italian `quale`: they ask "what"
/// as often as "which" ("¿Cuál es la capital…?"), and XQuAD-es lost 0.005 of nDCG to them.
#[rustfmt::skip]
const ASKING_WORDS: &[&str] = &[
    "which", "who", "whom", "whose", "quien", "quienes", "wer", "wen", "wem", "wessen",
    "welche", "welcher", "welches", "welchen", "welchem", "qui", "quem", "chi",
];

/// Openings of a question that asks what something is called (analyzer terms).
#[rustfmt::skip]
const NAMING_OPENINGS: &[&[&str]] = &[
    &["como", "se", "llama"], &["como", "se", "llamaba"], &["como", "se", "llaman"],
    &["como", "se", "llamaban"], &["wie", "heisst"], &["wie", "hiess"], &["wie", "heissen"],
    &["wie", "hiessen"], &["comment", "s", "appelle"], &["como", "se", "chama"],
    &["come", "si", "chiama"],
];

/// Whether `query` asks for a name: it opens with a word of [`ASKING_WORDS`] or an opening
/// of [`NAMING_OPENINGS`], or is a "what … name" question.
pub(crate) fn asks_for_a_name(query: &str) -> bool {
    let terms = analyzer::terms(query, AnalyzerMode::Index);
    let Some(first) = terms.first() else {
        return false;
    };
    ASKING_WORDS.contains(&first.as_str())
        || NAMING_OPENINGS.iter().any(|opening| {
            terms
                .iter()
                .map(String::as_str)
                .take(opening.len())
                .eq(opening.iter().copied())
        })
        || (first == "what" && terms.iter().take(5).any(|t| t == "name"))
}

/// Moves first the hit that names an answer when the first names none (see the module
/// docs). `query` is the question, `asked` its content terms; `frequencies` reads the
/// terms' document frequencies.
pub(crate) fn name_first(
    query: &str,
    asked: &Asked<'_>,
    hits: &mut [Hit],
    frequencies: &Frequencies<'_>,
) -> Result<()> {
    if hits.len() < 2 || !asks_for_a_name(query) {
        return Ok(());
    }
    let idfs = asked.idfs(frequencies)?;
    // The names each of the first hits' answer lines gives (`None`: no answer line).
    let names: Vec<Option<Vec<String>>> = hits
        .iter()
        .take(1 + NEXT_HITS)
        .map(|hit| {
            let lines = lines(&hit.text);
            answer_line(&lines, asked.terms, idfs).map(|i| {
                let mut names: Vec<String> = nameable(&lines[i].values, &asked.set)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                names.sort();
                names
            })
        })
        .collect();
    let mut wanted: Vec<String> = names.iter().flatten().flatten().cloned().collect();
    wanted.sort();
    wanted.dedup();
    let specific = specific_terms(&wanted, frequencies)?;
    let names_one = |names: &Option<Vec<String>>| {
        names
            .as_ref()
            .is_some_and(|n| n.iter().any(|t| specific.contains(t.as_str())))
    };
    if names[0].is_none() || names_one(&names[0]) {
        return Ok(());
    }
    if let Some(i) = (1..names.len()).find(|&i| names_one(&names[i])) {
        let top = hits[0].score;
        hits[i].score = hits[i].score.max(top);
        hits[..=i].rotate_right(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(path: &str, score: f64, text: &str) -> Hit {
        Hit::of_text(path, score, text)
    }

    #[test]
    fn questions_that_ask_for_a_name() {
        let rows = [
            ("which vet did the cat's surgery?", true),
            ("Who was the electrician that fixed the fuse box?", true),
            ("what was the name of the notary for Mum's flat?", true),
            ("¿Cómo se llamaba la casa rural de Asturias?", true),
            ("¿quién me prestó el libro?", true),
            ("Wie hieß die Pension in Hamburg?", true),
            ("where did we stay in Lisbon?", false),
            ("what's my usual coffee order?", false),
            ("how often am I on call?", false),
            ("", false),
        ];
        for (query, want) in rows {
            assert_eq!(asks_for_a_name(query), want, "{query}");
        }
    }

    /// Every term in the test hits is specific (the index holds each once).
    fn rare(terms: &[String]) -> Result<(usize, Vec<usize>)> {
        Ok((100, vec![1; terms.len()]))
    }

    fn first(query: &str, mut hits: Vec<Hit>) -> (String, f64) {
        let terms = analyzer::query_terms(query, true);
        name_first(query, &Asked::new(&terms), &mut hits, &rare).unwrap();
        (hits[0].path.clone(), hits[0].score)
    }

    const VISIT: &str =
        "- Took the cat to the vet for a check-up; the vet says the surgery healed well.";
    const SURGERY: &str =
        "- Pixel's surgery went fine: Dr. Navarro at Clínica Sant Antoni, the vet.";

    #[test]
    fn a_hit_that_names_the_answer_comes_first() {
        let query = "which vet did the cat's surgery?";
        let hits = || {
            vec![
                hit("memory/2026-11-20.md", 0.9, VISIT),
                hit(
                    "memory/2026-09-12.md",
                    0.8,
                    "- Cat to the vet for her booster.",
                ),
                hit("memory/2026-04-28.md", 0.7, SURGERY),
            ]
        };
        assert_eq!(first(query, hits()), ("memory/2026-04-28.md".into(), 0.9));
        // A question that asks for no name keeps the order.
        assert_eq!(
            first("when did the cat's surgery heal?", hits()).0,
            "memory/2026-11-20.md"
        );
        // Nor does a first hit that names something.
        let mut named = hits();
        named[0].text = "- Took the cat to the vet, Dr. Puig, for a check-up.".into();
        assert_eq!(first(query, named).0, "memory/2026-11-20.md");
        // Nor a name further down than the next two hits.
        let mut far = hits();
        far.insert(1, hit("memory/2026-10-01.md", 0.85, "- The vet bill came."));
        assert_eq!(first(query, far).0, "memory/2026-11-20.md");
    }
}
