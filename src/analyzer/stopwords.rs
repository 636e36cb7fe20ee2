//! Function words a keyword query leaves out (memoria's keyword side, not 2026.9's).
//!
//! BM25 ORs a query's terms, so a question such as "when does the cat need its next
//! vaccination?" scores every chunk holding `when`, `does`, `the` and `its`; in a small
//! workspace those words are not rare enough for their IDF to silence them, and a long note
//! full of function words outranks the one note about the vet. A query therefore drops its
//! function words before BM25, unless nothing else is left (`"what is it"` still searches
//! its words). Documents are indexed unchanged, so the index needs no rebuild and
//! a query made only of such words still finds them.
//!
//! The lists are the closed classes (articles, pronouns, auxiliaries, prepositions,
//! conjunctions, question words) of the languages whose words the analyzer splits on
//! spaces: English, Spanish, French, German, Portuguese and Italian. They are written as
//! the analyzer's terms come out (lowercase, accents folded), since the check runs on
//! terms. CJK text has no such list: its bigrams carry their own weight. The lists are
//! merged, since a query's language is not known, so a word that is a function word in one
//! language and a content word in another (German `die`, `hat`, `war`; Spanish `sin`;
//! French `son`; Italian `dove`; the `la` of "LA" and the `us` of "the US") is left out.

use std::collections::HashSet;
use std::sync::OnceLock;

const ENGLISH: &[&str] = &[
    "a", "about", "after", "all", "an", "and", "any", "are", "as", "at", "be", "been", "before",
    "being", "but", "by", "can", "could", "did", "do", "does", "doing", "done", "for", "from",
    "had", "has", "have", "having", "he", "her", "hers", "herself", "him", "himself", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "itself", "me", "my", "myself", "of", "on", "or",
    "our", "ours", "she", "should", "so", "than", "that", "the", "their", "theirs", "them", "then",
    "there", "these", "they", "this", "those", "to", "was", "we", "were", "what", "when", "where",
    "which", "who", "whom", "whose", "why", "will", "with", "would", "you", "your", "yours",
    "yourself",
];

const SPANISH: &[&str] = &[
    "a", "al", "algo", "como", "cual", "cuales", "cuando", "cuanta", "cuantas", "cuanto",
    "cuantos", "de", "del", "donde", "el", "ella", "ellas", "ellos", "en", "es", "esa", "esas",
    "ese", "eso", "esos", "esta", "estaba", "estas", "este", "esto", "estos", "fue", "fueron",
    "ha", "han", "hay", "las", "le", "les", "lo", "los", "mas", "me", "mi", "mis", "muy", "o",
    "para", "pero", "por", "que", "quien", "quienes", "se", "ser", "si", "sobre", "su", "sus",
    "te", "tu", "tus", "un", "una", "unas", "uno", "unos", "y", "ya", "yo",
];

const FRENCH: &[&str] = &[
    "a", "au", "aux", "avec", "ce", "ces", "comment", "dans", "de", "des", "du", "elle", "elles",
    "en", "est", "et", "etait", "eu", "il", "ils", "je", "le", "les", "leur", "leurs", "lui", "ma",
    "moi", "mon", "ne", "nous", "on", "ou", "par", "pas", "pour", "qu", "quand", "que", "quel",
    "quelle", "quelles", "quels", "qui", "sa", "se", "ses", "sont", "sur", "ta", "te", "tes",
    "toi", "ton", "tu", "un", "une", "vos", "votre", "vous",
];

const GERMAN: &[&str] = &[
    "auf", "aus", "bei", "bist", "das", "dass", "dem", "der", "des", "du", "ein", "eine", "einem",
    "einen", "einer", "eines", "er", "es", "hatte", "ich", "ihr", "ihre", "im", "in", "ist", "mit",
    "nach", "nicht", "oder", "sein", "seine", "sich", "sie", "sind", "uber", "um", "und", "von",
    "vor", "was", "wann", "warum", "welche", "welcher", "wer", "wie", "wir", "wo", "zu", "zum",
    "zur",
];

const PORTUGUESE: &[&str] = &[
    "a", "ao", "aos", "as", "com", "como", "da", "das", "de", "do", "dos", "e", "ela", "elas",
    "ele", "eles", "em", "esta", "este", "eu", "foi", "isso", "isto", "na", "nas", "no", "nos",
    "o", "os", "ou", "para", "pela", "pelo", "por", "qual", "quais", "quando", "que", "quem", "se",
    "seu", "sua", "um", "uma", "voce",
];

const ITALIAN: &[&str] = &[
    "a", "al", "alla", "che", "chi", "cosa", "da", "dei", "del", "della", "di", "e", "gli", "ha",
    "hanno", "il", "in", "io", "le", "lo", "ma", "mi", "nel", "nella", "non", "per", "perche",
    "quale", "quando", "si", "sono", "su", "sua", "suo", "tu", "un", "una", "uno",
];

fn words() -> &'static HashSet<&'static str> {
    static WORDS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| {
        [ENGLISH, SPANISH, FRENCH, GERMAN, PORTUGUESE, ITALIAN]
            .into_iter()
            .flatten()
            .copied()
            .collect()
    })
}

/// Whether `term` (an analyzer term: lowercase, accents folded) is a function word.
pub fn is_stopword(term: &str) -> bool {
    words().contains(term)
}

/// `terms` without their function words, or unchanged when they are all function words.
pub fn content_terms(terms: Vec<String>) -> Vec<String> {
    if terms.iter().all(|t| is_stopword(t)) {
        return terms;
    }
    terms.into_iter().filter(|t| !is_stopword(t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_hold_analyzer_terms() {
        // Every listed word is what the analyzer makes of it (lowercase, folded, one term),
        // or the check could never match it.
        for word in words() {
            let terms = crate::analyzer::terms(word, crate::analyzer::AnalyzerMode::Query);
            assert_eq!(terms, vec![word.to_string()], "{word}");
        }
    }

    #[test]
    fn content_terms_table() {
        let t = |s: &[&str]| s.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let rows: &[(&[&str], &[&str])] = &[
            (&["when", "does", "the", "cat", "need"], &["cat", "need"]),
            (
                &["cuantos", "puntos", "de", "los", "panthers"],
                &["puntos", "panthers"],
            ),
            (&["what", "is", "it"], &["what", "is", "it"]),
            (&["a828e60"], &["a828e60"]),
            (&[], &[]),
        ];
        for (input, want) in rows {
            assert_eq!(content_terms(t(input)), t(want), "{input:?}");
        }
    }
}
