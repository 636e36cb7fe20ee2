//! Text to token ids: EmbeddingGemma's tokenizer in tables that load in place.
//!
//! Gemma's `tokenizer.json` is a byte-fallback BPE: added tokens (`<eos>`, runs of `\n`, …)
//! are cut out of the raw text first (leftmost-longest); every other segment has its spaces
//! replaced by `▁` and is merged as one word, starting from its characters (or, for a
//! character outside the vocabulary, its UTF-8 bytes as `<0xNN>` tokens) and repeatedly
//! applying the lowest-ranked merge, leftmost first; `<bos>` and `<eos>` frame the result.
//!
//! The Hugging Face `tokenizers` crate does exactly this, but building its structures from
//! the 33 MB JSON (262,144 tokens, 514,906 merges) takes about a second at every start.
//! [`FastBpe`] runs the same algorithm over two open-addressing tables (merges and
//! characters) that are written once into the packed model (`pack.rs`) and used from its
//! memory map. It is built only for a `tokenizer.json` of exactly this shape, and only when
//! it encodes a set of probe texts exactly as the `tokenizers` crate does; any other
//! tokenizer runs on the `tokenizers` crate ([`TextTokenizer::Hf`]). Equality on real
//! corpora is tested in `tests/gemma_real_model.rs`.

use std::collections::{BinaryHeap, HashMap};
use std::path::Path;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::gemma::error::{GemmaError, Result};
use crate::gemma::slab::Slab;

/// The tokenizer a model runs: memoria's table-driven BPE, or the `tokenizers` crate.
pub enum TextTokenizer {
    Fast(FastBpe),
    Hf(Box<tokenizers::Tokenizer>),
}

impl TextTokenizer {
    /// Ids of `text` with the post-processor's special tokens (`<bos>` … `<eos>`).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        match self {
            TextTokenizer::Fast(bpe) => Ok(bpe.encode(text)),
            TextTokenizer::Hf(tok) => tok
                .encode(text, true)
                .map(|e| e.get_ids().to_vec())
                .map_err(|e| GemmaError::Tokenize(e.to_string())),
        }
    }

    /// The id of an added (special) token such as `<eos>`.
    pub fn added_token_id(&self, content: &str) -> Option<u32> {
        match self {
            TextTokenizer::Fast(bpe) => bpe
                .added
                .iter()
                .find(|(c, _)| c == content)
                .map(|&(_, id)| id),
            TextTokenizer::Hf(tok) => tok.token_to_id(content),
        }
    }

    /// Which implementation runs, in words.
    pub fn words(&self) -> &'static str {
        match self {
            TextTokenizer::Fast(_) => "memoria BPE tables",
            TextTokenizer::Hf(_) => "tokenizers crate",
        }
    }
}

/// `tokenizer.json` → the `tokenizers` crate's tokenizer without truncation or padding
/// (memoria does both itself).
pub fn parse_hf(bytes: &[u8], path: &Path) -> Result<tokenizers::Tokenizer> {
    let failed = |e: tokenizers::Error| GemmaError::Tokenizer {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut tokenizer = tokenizers::Tokenizer::from_bytes(bytes).map_err(failed)?;
    tokenizer.with_truncation(None).map_err(failed)?;
    tokenizer.with_padding(None);
    Ok(tokenizer)
}

/// A map from u64 keys to u64 values with open addressing (linear probing, Fibonacci
/// hashing), stored as `[key, value]` pairs so it can live in a memory map as it is.
pub struct U64Map {
    slots: Slab<u64>,
    shift: u32,
}

const EMPTY: u64 = u64::MAX;

impl U64Map {
    /// The slot array for `entries` (keys distinct and not `u64::MAX`), at most half full.
    pub fn build(entries: &[(u64, u64)]) -> Vec<u64> {
        let cap = (entries.len() * 2).next_power_of_two().max(2);
        let shift = 64 - cap.trailing_zeros();
        let mut slots = vec![EMPTY; cap * 2];
        for &(k, v) in entries {
            let mut i = Self::home(k, shift);
            while slots[2 * i] != EMPTY {
                i = (i + 1) & (cap - 1);
            }
            slots[2 * i] = k;
            slots[2 * i + 1] = v;
        }
        slots
    }

    /// Wraps slots made by [`U64Map::build`]; `None` when their count is not a power of two.
    pub fn new(slots: Slab<u64>) -> Option<Self> {
        let cap = slots.len() / 2;
        (cap.is_power_of_two() && slots.len() == cap * 2).then(|| U64Map {
            shift: 64 - cap.trailing_zeros(),
            slots,
        })
    }

    fn home(key: u64, shift: u32) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
    }

    /// The value stored for `key`, if any.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        let cap = self.slots.len() / 2;
        let mut i = Self::home(key, self.shift);
        // Bounded: a table read from a file may be full.
        for _ in 0..cap {
            let k = self.slots[2 * i];
            if k == key {
                return Some(self.slots[2 * i + 1]);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & (cap - 1);
        }
        None
    }
}

/// Gemma's BPE over tables (see the module docs).
pub struct FastBpe {
    /// `(left << 32 | right)` → `(rank << 32 | merged id)`.
    merges: U64Map,
    /// A character (as u32) → its id, for the characters that are tokens.
    chars: U64Map,
    /// `<0xNN>` ids.
    bytes: Vec<u32>,
    /// Added tokens, in the order of `automaton`'s patterns.
    added: Vec<(String, u32)>,
    automaton: Option<AhoCorasick>,
    /// Ids before and after the text (`<bos>`, `<eos>`).
    prefix: Vec<u32>,
    suffix: Vec<u32>,
}

/// What [`FastBpe`] keeps besides its two tables (stored in the pack's header).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BpeHeader {
    pub bytes: Vec<u32>,
    pub added: Vec<(String, u32)>,
    pub prefix: Vec<u32>,
    pub suffix: Vec<u32>,
}

/// The tables of a [`FastBpe`] before they are written.
pub struct BpeTables {
    pub header: BpeHeader,
    pub merges: Vec<u64>,
    pub chars: Vec<u64>,
}

#[derive(Debug, Eq, PartialEq)]
struct Merge {
    pos: usize,
    rank: u32,
    new_id: u32,
}

impl Ord for Merge {
    /// A max-heap pops the lowest rank first, then the leftmost position (as `tokenizers`).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .rank
            .cmp(&self.rank)
            .then_with(|| other.pos.cmp(&self.pos))
    }
}

impl PartialOrd for Merge {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: usize,
    next: usize,
    /// Bytes covered; 0 once merged into its left neighbour.
    len: usize,
}

const NONE: usize = usize::MAX;

impl FastBpe {
    /// Assembles a tokenizer from its tables; `None` when they are malformed.
    pub fn new(header: BpeHeader, merges: Slab<u64>, chars: Slab<u64>) -> Option<Self> {
        if header.bytes.len() != 256 {
            return None;
        }
        let automaton = if header.added.is_empty() {
            None
        } else {
            Some(
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(header.added.iter().map(|(c, _)| c.as_str()))
                    .ok()?,
            )
        };
        Some(FastBpe {
            merges: U64Map::new(merges)?,
            chars: U64Map::new(chars)?,
            bytes: header.bytes,
            added: header.added,
            automaton,
            prefix: header.prefix,
            suffix: header.suffix,
        })
    }

    /// Token ids of `text`, with the BOS/EOS framing of the tokenizer's post-processor.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + self.prefix.len() + 4);
        out.extend_from_slice(&self.prefix);
        let mut last = 0;
        if let Some(automaton) = &self.automaton {
            for m in automaton.find_iter(text) {
                self.merge_segment(&text[last..m.start()], &mut out);
                out.push(self.added[m.pattern().as_usize()].1);
                last = m.end();
            }
        }
        self.merge_segment(&text[last..], &mut out);
        out.extend_from_slice(&self.suffix);
        out
    }

    fn merge(&self, left: u32, right: u32) -> Option<(u32, u32)> {
        let v = self.merges.get((left as u64) << 32 | right as u64)?;
        Some(((v >> 32) as u32, v as u32))
    }

    /// One segment between added tokens: normalised (`' '` → `'▁'`) and merged as a word.
    fn merge_segment(&self, segment: &str, out: &mut Vec<u32>) {
        if segment.is_empty() {
            return;
        }
        let mut symbols: Vec<Symbol> = Vec::with_capacity(segment.len());
        let mut push = |id: u32, len: usize| {
            let at = symbols.len();
            if let Some(last) = symbols.last_mut() {
                last.next = at;
            }
            symbols.push(Symbol {
                id,
                prev: if at == 0 { NONE } else { at - 1 },
                next: NONE,
                len,
            });
        };
        for c in segment.chars() {
            let c = if c == ' ' { '\u{2581}' } else { c };
            match self.chars.get(c as u64) {
                Some(id) => push(id as u32, c.len_utf8()),
                None => {
                    let mut buf = [0u8; 4];
                    for &b in c.encode_utf8(&mut buf).as_bytes() {
                        push(self.bytes[b as usize], 1);
                    }
                }
            }
        }
        let mut queue: BinaryHeap<Merge> = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(pos, w)| {
                let (rank, new_id) = self.merge(w[0].id, w[1].id)?;
                Some(Merge { pos, rank, new_id })
            })
            .collect();
        while let Some(top) = queue.pop() {
            let here = symbols[top.pos];
            if here.len == 0 || here.next == NONE {
                continue;
            }
            let right = symbols[here.next];
            // Skip entries made stale by an earlier merge.
            if self.merge(here.id, right.id).map(|m| m.1) != Some(top.new_id) {
                continue;
            }
            let merged = Symbol {
                id: top.new_id,
                prev: here.prev,
                next: right.next,
                len: here.len + right.len,
            };
            symbols[top.pos] = merged;
            symbols[here.next].len = 0;
            if merged.next != NONE {
                symbols[merged.next].prev = top.pos;
            }
            if merged.prev != NONE {
                if let Some((rank, new_id)) = self.merge(symbols[merged.prev].id, merged.id) {
                    queue.push(Merge {
                        pos: merged.prev,
                        rank,
                        new_id,
                    });
                }
            }
            if merged.next != NONE {
                if let Some((rank, new_id)) = self.merge(merged.id, symbols[merged.next].id) {
                    queue.push(Merge {
                        pos: top.pos,
                        rank,
                        new_id,
                    });
                }
            }
        }
        out.extend(symbols.iter().filter(|s| s.len != 0).map(|s| s.id));
    }
}

/// The parts of `tokenizer.json` [`FastBpe`] needs.
#[derive(Deserialize)]
struct TokenizerJson {
    added_tokens: Vec<AddedToken>,
    normalizer: Option<Value>,
    pre_tokenizer: Option<Value>,
    post_processor: Option<Value>,
    model: ModelJson,
}

#[derive(Deserialize)]
struct AddedToken {
    content: String,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
}

#[derive(Deserialize)]
struct ModelJson {
    #[serde(rename = "type")]
    kind: String,
    dropout: Option<f64>,
    continuing_subword_prefix: Option<String>,
    end_of_word_suffix: Option<String>,
    #[serde(default)]
    byte_fallback: bool,
    #[serde(default)]
    ignore_merges: bool,
    vocab: HashMap<String, u32>,
    merges: Vec<MergeJson>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum MergeJson {
    Pair(String, String),
    Legacy(String),
}

/// Texts whose encodings must equal the `tokenizers` crate's before the tables are used:
/// spaces and their runs, newlines (added tokens), special tokens in text, characters
/// outside the vocabulary (byte fallback), CJK, emoji, combining marks.
const PROBES: &[&str] = &[
    "",
    " ",
    "task: search result | query: What did Caroline do on 8 May 2023?",
    "title: none | text:   leading and  double  spaces\tand tabs\n\nand newlines\n",
    "<bos>literal special tokens<eos> and <unused42> and <start_of_turn>user",
    "▁▁ already-normalised ▁ marks",
    "東京で会議があった。机器学习模型 한국어 텍스트",
    "emoji 🧠🔥 and ZWJ 👩‍💻, combining e\u{301} and \u{0}\u{7f}\u{feff} controls",
    "code: fn main() { println!(\"{}\", 42); } // λx. x + 1 ∀ε>0",
    "¿Dónde está la memoria? Über straße naïve façade",
    "\u{10FFFF}\u{E000} private-use and the last code point",
    "a",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
];

/// Builds the tables from `tokenizer.json`'s bytes, or says why this tokenizer needs the
/// `tokenizers` crate: a shape other than Gemma's, or any probe text encoding differently
/// from `reference`.
pub fn build_tables(
    bytes: &[u8],
    reference: &tokenizers::Tokenizer,
) -> std::result::Result<BpeTables, String> {
    let json: TokenizerJson =
        serde_json::from_slice(bytes).map_err(|e| format!("not a BPE tokenizer ({e})"))?;
    let model = &json.model;
    if model.kind != "BPE"
        || model.dropout.is_some_and(|d| d != 0.0)
        || model.continuing_subword_prefix.is_some()
        || model.end_of_word_suffix.is_some()
        || !model.byte_fallback
        || model.ignore_merges
    {
        return Err("a BPE model other than Gemma's byte-fallback BPE".into());
    }
    if json.normalizer.as_ref()
        != Some(&json!({"type": "Replace", "pattern": {"String": " "}, "content": "\u{2581}"}))
    {
        return Err("a normalizer other than Gemma's space replacement".into());
    }
    // A split on spaces after the normaliser replaced them all splits nothing.
    match &json.pre_tokenizer {
        None => {}
        Some(p) if p["type"] == "Split" && p["pattern"] == json!({"String": " "}) => {}
        Some(_) => return Err("a pre-tokenizer other than Gemma's".into()),
    }
    if json
        .added_tokens
        .iter()
        .any(|t| t.single_word || t.lstrip || t.rstrip || t.normalized)
    {
        return Err("added tokens with word, strip or normalisation options".into());
    }
    let (prefix, suffix) = template(json.post_processor.as_ref(), reference)
        .ok_or("a post-processor other than `<bos> text <eos>`")?;

    let vocab = &model.vocab;
    let bytes: Vec<u32> = (0..=255u8)
        .map(|b| vocab.get(&format!("<0x{b:02X}>")).copied())
        .collect::<Option<_>>()
        .ok_or("byte-fallback tokens missing from the vocabulary")?;
    // A pair listed twice keeps its last rank, as in `tokenizers` (a map collected in order).
    let mut merges = HashMap::with_capacity(model.merges.len());
    for (rank, m) in model.merges.iter().enumerate() {
        let (a, b) = match m {
            MergeJson::Pair(a, b) => (a.as_str(), b.as_str()),
            MergeJson::Legacy(s) => s.split_once(' ').ok_or("a malformed merge")?,
        };
        let id = |s: &str| {
            vocab
                .get(s)
                .copied()
                .ok_or("a merge outside the vocabulary")
        };
        let merged = id(&format!("{a}{b}"))?;
        let key = (id(a)? as u64) << 32 | id(b)? as u64;
        merges.insert(key, (rank as u64) << 32 | merged as u64);
    }
    let merges: Vec<(u64, u64)> = merges.into_iter().collect();
    let chars: Vec<(u64, u64)> = vocab
        .iter()
        .filter_map(|(s, &id)| {
            let mut it = s.chars();
            match (it.next(), it.next()) {
                (Some(c), None) => Some((c as u64, id as u64)),
                _ => None,
            }
        })
        .collect();
    let added = json
        .added_tokens
        .iter()
        .map(|t| {
            reference
                .token_to_id(&t.content)
                .map(|id| (t.content.clone(), id))
                .ok_or("an added token without an id")
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let tables = BpeTables {
        header: BpeHeader {
            bytes,
            added,
            prefix,
            suffix,
        },
        merges: U64Map::build(&merges),
        chars: U64Map::build(&chars),
    };
    let fast = tables.to_bpe().ok_or("tables that do not assemble")?;
    for probe in PROBES {
        let want = reference
            .encode(*probe, true)
            .map_err(|e| format!("the reference tokenizer failed: {e}"))?;
        if fast.encode(probe) != want.get_ids() {
            return Err(format!("a different encoding of the probe {probe:?}"));
        }
    }
    Ok(tables)
}

impl BpeTables {
    /// A tokenizer over copies of these tables (the process that builds the pack uses it).
    pub fn to_bpe(&self) -> Option<FastBpe> {
        FastBpe::new(
            self.header.clone(),
            Slab::Owned(self.merges.clone()),
            Slab::Owned(self.chars.clone()),
        )
    }
}

/// The special-token ids before and after the text in a `TemplateProcessing` single
/// template (`[SpecialToken…, Sequence A, SpecialToken…]`).
fn template(
    post: Option<&Value>,
    reference: &tokenizers::Tokenizer,
) -> Option<(Vec<u32>, Vec<u32>)> {
    let post = post?;
    if post["type"] != "TemplateProcessing" {
        return None;
    }
    let (mut prefix, mut suffix, mut seen_text) = (Vec::new(), Vec::new(), false);
    for piece in post["single"].as_array()? {
        if piece.get("Sequence").is_some() {
            if seen_text {
                return None;
            }
            seen_text = true;
        } else {
            let name = piece["SpecialToken"]["id"].as_str()?;
            let ids = post["special_tokens"][name]["ids"].as_array()?;
            let ids: Vec<u32> = ids
                .iter()
                .map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
                .collect::<Option<_>>()?;
            if ids.len() != 1 || reference.token_to_id(name) != Some(ids[0]) {
                return None;
            }
            if seen_text { &mut suffix } else { &mut prefix }.extend(ids);
        }
    }
    seen_text.then_some((prefix, suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_map_finds_every_key_and_no_other() {
        let entries: Vec<(u64, u64)> = (0..1000u64).map(|i| (i * 7919 + 3, i)).collect();
        let map = U64Map::new(Slab::Owned(U64Map::build(&entries))).unwrap();
        for &(k, v) in &entries {
            assert_eq!(map.get(k), Some(v));
        }
        assert_eq!(map.get(4), None);
        assert!(U64Map::new(Slab::Owned(vec![EMPTY; 6])).is_none());
        // A full table read from a corrupt file answers rather than spins.
        let full = U64Map::new(Slab::Owned(vec![1, 1, 2, 2])).unwrap();
        assert_eq!(full.get(3), None);
    }

    /// A toy byte-fallback BPE in Gemma's shape, checked against the `tokenizers` crate on
    /// texts that exercise ranks, ties, added tokens and byte fallback.
    #[test]
    fn fast_bpe_equals_tokenizers_on_a_toy_vocabulary() {
        let mut vocab = serde_json::Map::new();
        let mut add = |s: &str| {
            let id = vocab.len();
            vocab.insert(s.to_string(), json!(id));
        };
        for s in ["<pad>", "<eos>", "<bos>", "<unk>"] {
            add(s);
        }
        for b in 0..=255u8 {
            add(&format!("<0x{b:02X}>"));
        }
        for s in [
            "a", "b", "c", "▁", "ab", "bc", "abc", "▁a", "aa", "aaa", "\n", "\n\n",
        ] {
            add(s);
        }
        let merges = json!([
            ["a", "b"],
            ["b", "c"],
            ["ab", "c"],
            ["▁", "a"],
            ["a", "a"],
            ["aa", "a"]
        ]);
        let special = |id: usize, s: &str, special: bool| {
            json!({"id": id, "content": s, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": special})
        };
        let tok = json!({
            "version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [special(0, "<pad>", true), special(1, "<eos>", true),
                             special(2, "<bos>", true), special(3, "<unk>", true),
                             special(270, "\n", false), special(271, "\n\n", false)],
            "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            "pre_tokenizer": {"type": "Split", "pattern": {"String": " "},
                              "behavior": "MergedWithPrevious", "invert": false},
            "post_processor": {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}},
                           {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
                "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]},
                                   "<eos>": {"id": "<eos>", "ids": [1], "tokens": ["<eos>"]}}},
            "decoder": null,
            "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>",
                      "continuing_subword_prefix": null, "end_of_word_suffix": null,
                      "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
                      "vocab": vocab, "merges": merges}
        });
        let bytes = serde_json::to_vec(&tok).unwrap();
        let reference = parse_hf(&bytes, Path::new("toy.json")).unwrap();
        let tables = build_tables(&bytes, &reference).unwrap();
        let fast = tables.to_bpe().unwrap();
        for text in [
            "abc",
            "aaaa",
            "aaaaa",
            " abc  a",
            "abcabc\n\n\nab",
            "x",
            "ab<eos>bc",
            "é東",
            "",
            "a a a",
            "ccc bbb",
        ] {
            let want = reference.encode(text, true).unwrap();
            assert_eq!(fast.encode(text), want.get_ids(), "{text:?}");
        }

        // Any other shape is refused with its reason.
        let mut other = tok.clone();
        other["normalizer"] = Value::Null;
        let why = build_tables(&serde_json::to_vec(&other).unwrap(), &reference).err();
        assert!(why.unwrap().contains("normalizer"));
    }
}
