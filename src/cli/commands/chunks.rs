//! `memoria chunks`: the chunks memoria makes of one Markdown file; `memoria project-key`:
//! the key `search --project` takes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use memoria::config::Settings;
use memoria::{chunk_entries, chunk_markdown, chunk_markdown_2026_9, ChunkParams};

use crate::args::Chunks;
use crate::render::count;

/// `memoria chunks`.
pub fn chunks(settings: &Settings, args: &Chunks) -> Result<ExitCode> {
    let (file, (text, lossy)) = if args.file == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes).context("reading stdin")?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let lossy = std::str::from_utf8(&bytes).is_err();
        (PathBuf::from("<stdin>"), (text, lossy))
    } else {
        let file = settings.workspace.join(&args.file);
        let read = memoria::read_text(&file)?;
        (file, read)
    };
    if lossy {
        eprintln!(
            "warning: {}: invalid UTF-8 replaced with U+FFFD",
            file.display()
        );
    }
    let params = ChunkParams {
        tokens: settings.chunking.tokens,
        overlap: settings.chunking.overlap,
    };
    // As the index chunks it: OpenClaw 2026.9's chunker under the newer layout (MEMORY.md
    // and USER.md per entry), the documented one otherwise.
    let curated = ["MEMORY.md", "USER.md"]
        .iter()
        .any(|f| args.file == Path::new(f));
    let chunks = match settings.semantics.is_2026_9() {
        true if curated => chunk_entries(&text, params),
        true => chunk_markdown_2026_9(&text, params),
        false => chunk_markdown(&text, params),
    };
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
