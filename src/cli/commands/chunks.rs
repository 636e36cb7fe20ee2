//! `memoria chunks`: the chunks memoria makes of one Markdown file; `memoria project-key`:
//! the key `search --project` takes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use memoria::{ChunkParams, Memory};

use crate::args::Chunks;
use crate::render::count;

/// `memoria chunks`: the chunks `memory` makes of one file of its workspace (or of stdin).
pub fn chunks(memory: &Memory, args: &Chunks) -> Result<ExitCode> {
    let settings = memory.settings();
    let (file, bytes) = if args.file == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes).context("reading stdin")?;
        (PathBuf::from("<stdin>"), bytes)
    } else {
        let file = settings.workspace.join(&args.file);
        let bytes = std::fs::read(&file).with_context(|| format!("{}", file.display()))?;
        (file, bytes)
    };
    let text = String::from_utf8_lossy(&bytes);
    if std::str::from_utf8(&bytes).is_err() {
        eprintln!(
            "warning: {}: invalid UTF-8 replaced with U+FFFD",
            file.display()
        );
    }
    let params = ChunkParams {
        tokens: settings.chunking.tokens,
        overlap: settings.chunking.overlap,
    };
    // As the index chunks it (`MEMORY.md` and `USER.md` per entry under OpenClaw's layout).
    let chunks = memory.chunks(&args.file.to_string_lossy(), &text);
    if args.json {
        let rows: Vec<serde_json::Value> = chunks
            .iter()
            .map(|c| {
                serde_json::json!({
                    "startLine": c.start_line, "endLine": c.end_line,
                    "hash": c.hash, "chars": c.text.encode_utf16().count(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{}: {} (budget {} chars, overlap {} chars)",
        file.display(),
        count(chunks.len() as u64, "chunk"),
        params.max_chars(),
        params.overlap_chars()
    );
    for c in &chunks {
        println!(
            "  L{}-L{}  {:>5} chars  {}",
            c.start_line,
            c.end_line,
            c.text.encode_utf16().count(),
            &c.hash[..12]
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `memoria project-key [DIR]`: the project key of the repository at or above `dir`.
pub fn project_key(dir: Option<&std::path::Path>) -> Result<ExitCode> {
    let dir = dir.unwrap_or(std::path::Path::new("."));
    match memoria::project::key_of_directory(dir) {
        Some(key) => {
            println!("{key}");
            Ok(ExitCode::SUCCESS)
        }
        None => anyhow::bail!(
            "{}: not inside a git repository (no .git here or above), so it has no project key",
            dir.display()
        ),
    }
}
