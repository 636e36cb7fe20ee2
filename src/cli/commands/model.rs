//! The local embedding model: `memoria model path|pull` (where it comes from, or download
//! it) and `memoria embed` (JSONL texts in, vectors out).

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use memoria::config::Settings;

use crate::args::{Cli, Embed, ModelAction};
use crate::setup::model_search;

/// `memoria model path` and `memoria model pull`.
pub fn model(cli: &Cli, settings: &Settings, action: &ModelAction) -> Result<ExitCode> {
    match action {
        ModelAction::Path => match memoria::gemma::resolve_model(&model_search(cli, settings)?) {
            Ok(location) => {
                println!("{}", location.dir.display());
                eprintln!("from {}", location.reason);
                Ok(ExitCode::SUCCESS)
            }
            Err(err) => {
                eprintln!("{err}");
                Ok(ExitCode::from(1))
            }
        },
        ModelAction::Pull { repo } => {
            let search = model_search(cli, settings)?;
            let Some(cache) = search.pull_cache() else {
                bail!("no Hugging Face cache: set HF_HOME or local.modelCacheDir");
            };
            let configured = settings.local.model_path.as_deref();
            let repo = match (repo, configured.and_then(|p| p.strip_prefix("hf:"))) {
                (Some(repo), _) => repo.as_str(),
                (None, Some(uri)) => uri,
                (None, None) => memoria::gemma::DEFAULT_REPO,
            };
            eprintln!("downloading {repo} into {}", cache.display());
            let dir = memoria::gemma::pull(repo, cache)?;
            println!("{}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `memoria embed`.
pub fn embed(cli: &Cli, settings: &Settings, args: &Embed) -> Result<ExitCode> {
    let location = memoria::gemma::resolve_model(&model_search(cli, settings)?)?;
    let started = Instant::now();
    let (embedder, device) = memoria::embed::load_local_on(&location.dir, cli.precision)
        .with_context(|| format!("{}: cannot load the model", location.dir.display()))?;
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    // Which device and precision produced the vectors (stdout carries only the vectors).
    eprintln!("memoria: model on {device}");
    if let Some(dim) = args.dim {
        if !memoria::gemma::MATRYOSHKA_DIMS.contains(&dim) || dim > embedder.dims() {
            bail!("--dim {dim}: choose one of 768, 512, 256, 128");
        }
    }
    let mut texts = Vec::new();
    for (i, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.with_context(|| format!("stdin: line {}", i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("stdin: line {}: invalid JSON", i + 1))?;
        let Some(text) = record.get("text").and_then(|t| t.as_str()) else {
            bail!("stdin: line {}: missing string \"text\"", i + 1);
        };
        texts.push(text.to_string());
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut calls = Vec::new();
    for batch in texts.chunks(args.batch as usize) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        let started = Instant::now();
        let embeddings = embedder.embed(&refs, args.kind)?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let tokens: usize = embeddings.iter().map(|e| e.tokens).sum();
        calls.push(serde_json::json!({"texts": batch.len(), "tokens": tokens, "ms": ms}));
        for embedding in embeddings {
            if embedding.truncated {
                eprintln!(
                    "warning: an input was longer than {} tokens and was truncated",
                    embedder.max_tokens()
                );
            }
            let mut vector = embedding.vector;
            if let Some(dim) = args.dim {
                memoria::gemma::truncate_dims(&mut vector, dim);
            }
            let line = serde_json::json!({"embedding": vector, "tokens": embedding.tokens});
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    if args.timings {
        let mut line = serde_json::json!({"device": device, "load_ms": load_ms, "calls": calls});
        if let Some(profile) = memoria::gemma::profile_report() {
            line["profile"] = profile.into();
        }
        eprintln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
