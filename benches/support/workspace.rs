//! A generated daily-log workspace for the benches (shared with `#[path]`): Zipf-distributed
//! words from a synthetic vocabulary, hex ids, dotted identifiers and some CJK. The
//! including bench also declares `mod rng` (support/rng.rs).

use std::fs;
use std::path::Path;

use super::rng::Rng;

pub fn vocabulary(size: usize) -> Vec<String> {
    let syllables = [
        "ka", "to", "ri", "mem", "or", "ix", "lan", "ter", "qua", "zo", "pel", "dra", "sun", "vi",
        "no", "cha", "bel", "gor", "thi", "us", "en", "al", "mo", "ra",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..size)
        .map(|_| {
            let n = 1 + (rng.next() % 3) as usize;
            (0..n)
                .map(|_| syllables[(rng.next() % syllables.len() as u64) as usize])
                .collect()
        })
        .collect()
}

/// Writes daily-log-like Markdown files totalling about `megabytes` MB.
pub fn generate_workspace(dir: &Path, megabytes: usize, vocab: &[String]) -> u64 {
    generate_bytes(dir, (megabytes as u64) << 20, vocab, 42)
}

/// Writes daily-log-like Markdown files totalling about `target` bytes, their words drawn
/// from `seed`: workspaces of different seeds share the vocabulary, not their lines.
pub fn generate_bytes(dir: &Path, target: u64, vocab: &[String], seed: u64) -> u64 {
    let memory = dir.join("memory");
    fs::create_dir_all(&memory).unwrap();
    let mut rng = Rng(seed);
    let mut written = 0u64;
    let mut day = 0usize;
    while written < target {
        let mut text = format!("# Log {day}\n\n");
        while text.len() < 48 * 1024 {
            let words = 6 + (rng.next() % 18) as usize;
            text.push_str("- ");
            for w in 0..words {
                if w > 0 {
                    text.push(' ');
                }
                match rng.next() % 60 {
                    0 => text.push_str(&format!("{:07x}", rng.next() & 0xfff_ffff)),
                    1 => text.push_str("memorySearch.query.hybrid"),
                    2 => text.push_str("记忆搜索"),
                    _ => text.push_str(&vocab[rng.zipf(vocab.len())]),
                }
            }
            text.push('\n');
            if rng.next().is_multiple_of(9) {
                text.push('\n');
            }
        }
        written += text.len() as u64;
        fs::write(memory.join(format!("2026-{:04}.md", day)), text).unwrap();
        day += 1;
    }
    written
}

/// `n` queries of 1–4 words drawn Zipf-like from the 2,000 most common words.
pub fn queries(vocab: &[String], n: usize) -> Vec<String> {
    let mut rng = Rng(7);
    (0..n)
        .map(|_| {
            let words = 1 + (rng.next() % 4) as usize;
            (0..words)
                .map(|_| vocab[rng.zipf(2000)].clone())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}
