//! `memoria index` (with a progress bar) and `memoria status`: the index, brought up to date
//! and described.

use std::process::ExitCode;

use anyhow::{Context, Result};
use std::fmt::Write;

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

use memoria::config::{ProviderKind, StoreBackend};
use memoria::{Memory, SyncProgress};

use crate::args::{Status, StoreAction};
use crate::render::{self, count};

/// `memoria index`. A local model named explicitly (`--model`, `$MEMORIA_MODEL_DIR`,
/// `local.modelPath`: `model_named`; or `provider: local`) that cannot load is an error:
/// the index would be keyword-only without the user asking for it (`provider: none` asks
/// for it).
pub fn index(memory: Memory, force: bool, model_named: bool) -> Result<ExitCode> {
    let settings = memory.settings();
    // The first load of a local model takes seconds: say what is happening meanwhile.
    if settings.provider != ProviderKind::None {
        let spinner = ProgressBar::new_spinner();
        spinner.set_message("loading the embedding model");
        spinner.enable_steady_tick(std::time::Duration::from_millis(120));
        let started = std::time::Instant::now();
        let loaded = memory.embedder().is_some();
        spinner.finish_and_clear();
        if loaded {
            let (provider, model) = memory.provider();
            eprintln!(
                "embedding model {} ({provider}) ready in {:.1} s",
                model.unwrap_or("?"),
                started.elapsed().as_secs_f64()
            );
        }
    }
    let explicit = settings.provider != ProviderKind::None
        && (model_named || settings.provider == ProviderKind::Local);
    if explicit {
        memory.require_embedder().context("nothing was indexed")?;
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} indexing [{bar:30}] {bytes}/{total_bytes} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let report = memory.sync(force, &|p| match p {
        SyncProgress::Files {
            files_done,
            files_total,
            bytes_done,
            bytes_total,
        } => {
            bar.set_length(bytes_total);
            bar.set_position(bytes_done);
            bar.set_message(format!("{files_done}/{files_total} files"));
        }
        SyncProgress::Embedding {
            chunks_done,
            chunks_total,
        } => {
            if bar.length() != Some(chunks_total as u64) {
                // From bytes to chunks: restart the position, rate and ETA (the bar said
                // `74802/76 chunks 0.001/s` when it kept the byte count).
                bar.reset();
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} embedding [{bar:30}] {pos}/{len} texts {rate} eta {eta}",
                    )
                    .map(|style| {
                        style.with_key("rate", |state: &ProgressState, w: &mut dyn Write| {
                            let _ = w.write_str(&rate(state.per_sec()));
                        })
                    })
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar.set_length(chunks_total as u64);
            }
            bar.set_position(chunks_done as u64);
        }
    })?;
    bar.finish_and_clear();
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    let skipped = match report.warnings.len() {
        0 => String::new(),
        1 => ", 1 warning (above; `memoria status` lists it)".to_string(),
        n => format!(", {n} warnings (above; `memoria status` lists them)"),
    };
    println!(
        "indexed {} ({} changed, {} removed), {} in {:.2}s{}{skipped} → {}",
        count(report.files as u64, "file"),
        report.indexed,
        report.removed,
        count(report.chunks, "chunk"),
        report.seconds,
        if report.rebuilt {
            " (new generation)"
        } else {
            ""
        },
        settings
            .store
            .backend
            .agent_uri(&settings.agent_id)
            .unwrap_or_else(|| memory.agent_root().display().to_string())
    );
    Ok(ExitCode::SUCCESS)
}

/// `memoria status`.
pub fn status(memory: Memory, args: &Status) -> Result<ExitCode> {
    let status = memory.status()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else {
        print!("{}", render::status(&status));
    }
    Ok(ExitCode::SUCCESS)
}

/// `memoria store migrate --to URI|local`: the committed index copied to another store.
pub fn store(memory: &Memory, action: &StoreAction) -> Result<ExitCode> {
    let StoreAction::Migrate { to } = action;
    let target = match to.as_str() {
        "local" => StoreBackend::Local,
        uri => StoreBackend::LanceDb {
            uri: uri.to_string(),
            // From a fleet store, its options; from a local one, the AWS_* variables.
            options: match &memory.settings().store.backend {
                StoreBackend::LanceDb { options, .. } => options.clone(),
                StoreBackend::Local => Vec::new(),
            },
        },
    };
    let report = memory
        .migrate_store(&target)
        .with_context(|| format!("copying the index to {to}"))?;
    println!(
        "copied {} files, {} chunks and {} vectors from {} to {} (generation {})",
        report.files, report.chunks, report.vectors, report.from, report.to, report.generation
    );
    let next = match target {
        StoreBackend::Local => {
            "drop plugins.entries.memoria.config.store (or --store-uri)".to_string()
        }
        StoreBackend::LanceDb { .. } => {
            format!("pass --store-uri {to}, or set plugins.entries.memoria.config.store.uri")
        }
    };
    eprintln!("to search the copy, {next}");
    Ok(ExitCode::SUCCESS)
}

/// Chunks per second as a reader takes them in: `12.3/s`, `850/s`; a rate measured over
/// too short a time (a handful of cached chunks in a millisecond) is not shown.
fn rate(per_sec: f64) -> String {
    match per_sec {
        r if !r.is_finite() || r > 100_000.0 => String::new(),
        r if r < 100.0 => format!("{r:.1}/s"),
        r => format!("{r:.0}/s"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rates() {
        let cases = [
            (0.0, "0.0/s"),
            (12.34, "12.3/s"),
            (850.4, "850/s"),
            (533_362.924_3, ""),
            (f64::INFINITY, ""),
            (f64::NAN, ""),
        ];
        for (per_sec, want) in cases {
            assert_eq!(super::rate(per_sec), want, "{per_sec}");
        }
    }
}
