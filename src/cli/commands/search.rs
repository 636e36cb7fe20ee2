//! `memoria search` (one query, or a JSONL file of them) and `memoria get`: the
//! `memory_search` and `memory_get` tools on the command line.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use memoria::{Memory, SearchOptions};

use crate::args::{Get, Search, SessionsSearch};
use crate::tool_args::{get_request, search_options};
use crate::EXIT_NOT_FOUND;

/// `memoria search`.
pub fn search(memory: &Memory, args: &Search) -> Result<ExitCode> {
    let mut options = search_options(
        args.max_results,
        args.min_score,
        Some(args.corpus),
        Some(args.chat_type),
        args.channel.clone(),
        args.session_key.clone(),
        args.lexical_only,
    );
    options.active_project_keys = args.projects.clone();
    match (&args.query, &args.queries) {
        (_, Some(file)) => search_batch(memory, file, &options),
        (Some(query), None) => search_one(memory, query, &options, args.json),
        (None, None) => bail!("give a QUERY or --queries FILE"),
    }
}

fn search_one(
    memory: &Memory,
    query: &str,
    options: &SearchOptions,
    json: bool,
) -> Result<ExitCode> {
    let payload = memory.memory_search(query, options);
    if json {
        println!("{}", serde_json::to_string(&payload)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(error) = &payload.error {
        eprintln!("error: {error}");
        return Ok(ExitCode::from(1));
    }
    // The payload speaks of the tool's arguments; the command's are options.
    let warning = payload
        .warning
        .as_ref()
        .map(|why| why.replace("a lower minScore", "a lower --min-score"));
    match (&warning, payload.results.is_empty()) {
        (Some(why), true) => println!("no results: {why}"),
        (None, true) => println!("no results"),
        (Some(why), false) => eprintln!("warning: {why}"),
        (None, false) => {}
    }
    for (i, result) in payload.results.iter().enumerate() {
        println!(
            "{}. {}:{}-{}  score {:.3}",
            i + 1,
            result.path,
            result.start_line,
            result.end_line,
            result.score
        );
        let preview: String = result
            .snippet
            .lines()
            .take(4)
            .collect::<Vec<_>>()
            .join("\n   ");
        println!("   {preview}");
    }
    let mode = payload.mode.as_deref().unwrap_or("?");
    let provider = payload.provider.as_deref().unwrap_or("?");
    eprintln!("mode {mode} (provider {provider})");
    if let Some(fallback) = &payload.fallback {
        eprintln!("fallback from {}: {}", fallback.from, fallback.reason);
    }
    Ok(ExitCode::SUCCESS)
}

fn search_batch(memory: &Memory, file: &Path, options: &SearchOptions) -> Result<ExitCode> {
    let reader: Box<dyn BufRead> = if file == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(file)
                .with_context(|| format!("{}: cannot open", file.display()))?,
        ))
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (i, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{}: line {}", file.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("{}: line {}: invalid JSON", file.display(), i + 1))?;
        let Some(query) = record.get("query").and_then(|q| q.as_str()) else {
            bail!(
                "{}: line {}: missing string \"query\"",
                file.display(),
                i + 1
            );
        };
        let mut payload = serde_json::to_value(memory.memory_search(query, options))?;
        if let (Some(object), Some(id)) = (payload.as_object_mut(), record.get("id")) {
            object.insert("id".into(), id.clone());
        }
        writeln!(out, "{}", serde_json::to_string(&payload)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `memoria get`: a missing file reads as empty (the tool's behaviour) and exits 4.
pub fn get(memory: &Memory, args: &Get) -> Result<ExitCode> {
    let request = get_request(&args.path, args.from, args.lines, Some(args.corpus))
        .map_err(|why| anyhow::anyhow!(why))?;
    let path = request.path.as_str();
    let payload = memory.memory_get_in(request.corpus, path, request.from, request.lines);
    // The tool reads a missing file as empty (OpenClaw's behaviour); the command says
    // so and exits 4, so a script can tell "empty" from "not there". The index's copy of
    // a file whose directory is not here is there.
    let missing = payload.error.is_none()
        && payload.wiki.is_none()
        && payload.from.is_none()
        && !memory_file_exists(memory, path);
    if args.json {
        println!("{}", serde_json::to_string(&payload)?);
    } else if let Some(error) = &payload.error {
        eprintln!("error: {error}");
        return Ok(ExitCode::from(1));
    } else {
        print!("{}", payload.text);
        if !payload.text.is_empty() && !payload.text.ends_with('\n') {
            println!();
        }
        if let Some(note) = &payload.note {
            eprintln!("{note}");
        }
    }
    if missing {
        eprintln!("{path}: no such memory file");
        return Ok(ExitCode::from(EXIT_NOT_FOUND));
    }
    Ok(ExitCode::SUCCESS)
}

/// True when `path` (a `memory_get` path) names a file that exists: a memory file or
/// extra path under the workspace, or a session transcript.
fn memory_file_exists(memory: &Memory, path: &str) -> bool {
    let settings = memory.settings();
    match (path.strip_prefix("sessions/"), settings.sessions_dir()) {
        (Some(name), Some(dir)) => dir.join(name).is_file(),
        _ => settings.workspace.join(path).is_file(),
    }
}

/// `memoria sessions-search`: one line per message (score, transcript and line, role,
/// snippet), or the tool's payload with `--json`; exit 1 for a refused query.
pub fn sessions_search(memory: &Memory, args: &SessionsSearch) -> Result<ExitCode> {
    let payload = memory.sessions_search(&args.query, Some(args.limit as usize));
    if args.json {
        println!("{}", serde_json::to_string(&payload)?);
    } else {
        for hit in &payload.results {
            println!(
                "{:.3} {}:{} {}: {}",
                hit.score, hit.path, hit.line, hit.role, hit.snippet
            );
        }
        if let Some(warning) = &payload.warning {
            eprintln!("{warning}");
        }
    }
    if let Some(error) = &payload.error {
        eprintln!("error: {error}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
