//! `memoria eval`: retrieval quality on LoCoMo-style memory workspaces or a BEIR set, per
//! retrieval mode, with one loaded embedder for every run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use memoria::config::{ProviderKind, Settings};
use memoria::{eval, EmbedderChoice, Memory};

use crate::args::{Cli, Eval};
use crate::setup::{absolute, open_memory};

/// `memoria eval`.
pub fn eval(cli: &Cli, settings: &Settings, args: &Eval) -> Result<ExitCode> {
    // `-` (one of them): standard input, kept as a file named by its content so the eval
    // cache (keyed by path) stays right.
    let from_stdin = |path: &PathBuf| -> Result<PathBuf> {
        if path != Path::new("-") {
            return Ok(path.clone());
        }
        let text = std::io::read_to_string(std::io::stdin()).context("reading stdin")?;
        let dir = settings.state_dir.join("eval");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let file = dir.join(format!("stdin-{}.txt", &sha256_hex(text.as_bytes())[..16]));
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
        Ok(file)
    };
    let beir = match (&args.corpus, &args.queries, &args.qrels) {
        (Some(c), Some(q), Some(r)) => Some((from_stdin(c)?, from_stdin(q)?, from_stdin(r)?)),
        _ => None,
    };
    let beir = beir
        .as_ref()
        .map(|(c, q, r)| (c.as_path(), q.as_path(), r.as_path()));
    let mut log = match &args.candidates {
        Some(path) => Some(eval::CandidateLog::create(path)?),
        None => None,
    };
    let sets = Sets {
        locomo: args.locomo.as_deref(),
        beir,
    };
    let results = measure(cli, settings, &sets, &args.mode.0, log.as_mut())?;
    if let Some(log) = log {
        log.finish()?;
    }
    for m in &results {
        if args.json {
            println!("{}", serde_json::to_string(m)?);
            continue;
        }
        let recall: Vec<String> = m
            .recall
            .iter()
            .map(|(k, v)| format!("recall@{k} {v:.3}"))
            .collect();
        let ndcg = m
            .ndcg10
            .map(|v| format!("nDCG@10 {v:.3}  "))
            .unwrap_or_default();
        println!(
            "{:<7} {:<10} {:>5} queries  {ndcg}{}  MRR {:.3}  no result {}",
            m.mode,
            m.name,
            m.queries,
            recall.join("  "),
            m.mrr,
            m.empty
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The evaluation data: memory workspaces, or a BEIR corpus, queries and qrels.
struct Sets<'a> {
    locomo: Option<&'a Path>,
    beir: Option<(&'a Path, &'a Path, &'a Path)>,
}

/// The metrics of every set in each of `modes`, with the pooled totals of several sets;
/// every question's fusion inputs go to `log` when there is one.
fn measure(
    cli: &Cli,
    settings: &Settings,
    sets: &Sets,
    modes: &[eval::EvalMode],
    mut log: Option<&mut eval::CandidateLog>,
) -> Result<Vec<eval::Metrics>> {
    // Load the embedder once and share it across every workspace and mode.
    let probe = open_memory(cli, settings.clone())?;
    let embedder = probe.embedder().cloned();
    let (provider, model) = probe.provider();
    let (provider, model) = (provider.to_string(), model.unwrap_or_default().to_string());
    drop(probe);
    let open = |settings: Settings| -> memoria::Result<Memory> {
        match (&embedder, settings.provider) {
            (Some(embedder), p) if p != ProviderKind::None => Memory::open_with(
                settings,
                EmbedderChoice::Given {
                    embedder: embedder.clone(),
                    provider: provider.clone(),
                    model: model.clone(),
                },
            ),
            _ => Memory::open(settings),
        }
    };
    // Persistent scratch space: a re-run reuses its indexes and embedding cache.
    let eval_root = settings.state_dir.join("eval");
    let mut results = Vec::new();
    for &mode in modes {
        if mode != eval::EvalMode::Bm25 && embedder.is_none() {
            eprintln!("skipping {}: no embedding model available", mode.as_str());
            continue;
        }
        let settings = mode.apply(settings.clone());
        let mut these = Vec::new();
        if let Some(dir) = sets.locomo {
            let dirs = eval::memory_workspaces(dir)?;
            if dirs.is_empty() {
                bail!(
                    "{}: no queries.jsonl here or in its subdirectories",
                    dir.display()
                );
            }
            for dir in &dirs {
                let name = dir
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                let scratch = eval_root.join(format!("locomo-{name}"));
                these.push(eval::eval_memory_workspace(
                    dir,
                    &settings,
                    &open,
                    &scratch,
                    log.as_deref_mut(),
                )?);
            }
        } else if let Some((corpus, queries, qrels)) = sets.beir {
            let absolute = absolute(corpus)?;
            let tag = &sha256_hex(absolute.to_string_lossy().as_bytes())[..12];
            let scratch = eval_root.join(format!("beir-{tag}"));
            these.push(eval::eval_beir(
                corpus,
                queries,
                qrels,
                &settings,
                &open,
                &scratch,
                log.as_deref_mut(),
            )?);
        } else {
            bail!("give --locomo DIR, or --corpus, --queries and --qrels");
        }
        if these.len() > 1 {
            these.push(pooled(&these));
        }
        for m in &mut these {
            m.mode = mode.as_str().to_string();
        }
        results.extend(these);
    }
    Ok(results)
}

/// Question-weighted totals over several sets.
fn pooled(results: &[eval::Metrics]) -> eval::Metrics {
    let total: usize = results.iter().map(|m| m.queries).sum();
    let weight = |f: &dyn Fn(&eval::Metrics) -> f64| {
        results.iter().map(|m| f(m) * m.queries as f64).sum::<f64>() / total.max(1) as f64
    };
    let recall = results[0]
        .recall
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (*k, weight(&|m| m.recall[i].1)))
        .collect();
    eval::Metrics {
        name: "all".into(),
        mode: String::new(),
        queries: total,
        recall,
        mrr: weight(&|m| m.mrr),
        ndcg10: None,
        empty: results.iter().map(|m| m.empty).sum(),
    }
}

/// Lowercase hex SHA-256 of `bytes` (names of eval's scratch directories).
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
