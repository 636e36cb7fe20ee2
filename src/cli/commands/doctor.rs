//! `memoria doctor`: checks, in the order a first run needs them, the config, the
//! workspace, the embedder (and the model files), the index, the writer lock and the live
//! sync, and says what to do about each problem. Read-only: it creates nothing.

use std::process::ExitCode;

use anyhow::Result;

use memoria::config::{self, ProviderKind, Settings};

use crate::args::Cli;
use crate::render::watcher;
use crate::setup::{apply_overrides, env_for, load_config, model_search, open_memory_to_look};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Ok,
    Warn,
    Fail,
    /// Not checked: what it needs failed above.
    Skip,
}

/// One finding: what was checked, what was found, and what to do when it is not fine.
struct Finding {
    level: Level,
    area: &'static str,
    what: String,
    fix: Option<String>,
}

fn ok(area: &'static str, what: impl Into<String>) -> Finding {
    Finding {
        level: Level::Ok,
        area,
        what: what.into(),
        fix: None,
    }
}

fn problem(level: Level, area: &'static str, what: impl Into<String>, fix: &str) -> Finding {
    Finding {
        level,
        area,
        what: what.into(),
        fix: Some(fix.to_string()),
    }
}

/// Runs every check, prints one line per finding (and its fix), and exits 1 when any
/// check failed.
pub fn doctor(cli: &Cli, agent: &str) -> Result<ExitCode> {
    let findings = check(cli, agent)?;
    for f in &findings {
        let level = match f.level {
            Level::Ok => "ok  ",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
            Level::Skip => "skip",
        };
        println!("{level}  {:<10} {}", f.area, f.what);
        if let Some(fix) = &f.fix {
            println!("      {:<10} fix: {fix}", "");
        }
    }
    let failed = findings.iter().filter(|f| f.level == Level::Fail).count();
    let warned = findings.iter().filter(|f| f.level == Level::Warn).count();
    println!("\n{failed} failed, {warned} warning(s)");
    Ok(ExitCode::from(u8::from(failed > 0)))
}

fn check(cli: &Cli, agent: &str) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    let env = env_for(cli)?;
    let (path, explicit) = config::config_file(&env);
    let Some(settings) = check_config(cli, &env, agent, &path, explicit, &mut out)? else {
        return Ok(out);
    };
    check_workspace(&settings, &path, &mut out);
    // The embedder (this loads the model, as a first search would).
    let memory = open_memory_to_look(cli, settings.clone())?;
    let status = memory.status()?;
    let model = memoria::gemma::resolve_model(&model_search(cli, &settings)?);
    check_embedder(&settings, &status, model.as_ref().err(), &mut out);
    check_model(&settings, &status, model.as_ref().ok(), &mut out);
    check_index(&settings, &status, &memory, &mut out);
    check_live(&status, &mut out);
    Ok(out)
}

/// The config file: one verdict; `None` when it does not load (every other check rests on
/// the settings: advice from defaults the config overrides would mislead).
fn check_config(
    cli: &Cli,
    env: &config::Env,
    agent: &str,
    path: &std::path::Path,
    explicit: bool,
    out: &mut Vec<Finding>,
) -> Result<Option<Settings>> {
    let shown = path.display();
    let settings = match load_config(cli, env, agent) {
        Ok(settings) => {
            out.push(ok(
                "config",
                match path.is_file() {
                    true => format!("{shown}"),
                    false => format!("no file at {shown}: OpenClaw's built-in defaults"),
                },
            ));
            settings
        }
        Err(err) => {
            let (what, fix) = match explicit && !path.is_file() {
                true => (
                    format!("{shown} does not exist"),
                    "check --config or OPENCLAW_CONFIG_PATH",
                ),
                false => (err.to_string(), "fix the key named above"),
            };
            out.push(problem(Level::Fail, "config", what, fix));
            out.push(Finding {
                level: Level::Skip,
                area: "others",
                what: "workspace, embedder, index and live sync are checked once the config \
                       loads"
                    .into(),
                fix: None,
            });
            return Ok(None);
        }
    };
    let settings = apply_overrides(cli, settings)?;
    for warning in &settings.warnings {
        out.push(problem(
            Level::Warn,
            "config",
            warning.clone(),
            "see docs/configuration.md, 'Behaviour decisions'; status lists these too",
        ));
    }
    Ok(Some(settings))
}

/// The workspace: there, and holding memory.
fn check_workspace(settings: &Settings, config: &std::path::Path, out: &mut Vec<Finding>) {
    let shown = config.display();
    let ws = &settings.workspace;
    let origin = &settings.workspace_origin;
    if !ws.is_dir() {
        // The advice follows where the path came from.
        let fix = match origin.as_str() {
            "--workspace" => "create it, or pass the agent's workspace to --workspace".to_string(),
            o if o.starts_with("agents.") => {
                format!("create it, or correct {o} in {shown}, or pass --workspace DIR")
            }
            _ => "pass --workspace DIR, or set agents.defaults.workspace in the config".into(),
        };
        out.push(problem(
            Level::Fail,
            "workspace",
            format!("{} does not exist (from {origin})", ws.display()),
            &fix,
        ));
    } else {
        let memory_md = ws.join("MEMORY.md").is_file() || ws.join("memory.md").is_file();
        let daily = std::fs::read_dir(ws.join("memory"))
            .map(|entries| entries.flatten().count())
            .ok();
        match (memory_md, daily) {
            (false, None) => out.push(problem(
                Level::Warn,
                "workspace",
                format!(
                    "{} (from {origin}) has no MEMORY.md and no memory/: nothing to index",
                    ws.display()
                ),
                "point --workspace at the agent's workspace, or let the agent write its notes",
            )),
            (memory_md, daily) => out.push(ok(
                "workspace",
                format!(
                    "{} (from {origin}): MEMORY.md {}, memory/ {}",
                    ws.display(),
                    if memory_md { "present" } else { "absent" },
                    daily.map_or("absent".to_string(), |n| format!("{n} entries"))
                ),
            )),
        }
    }
}

/// The embedder serving searches, or why none does. `unfound` is why the local model
/// was not found: when a flag, variable or key named it, the search fails and that naming
/// is the fix.
fn check_embedder(
    settings: &Settings,
    status: &memoria::Status,
    unfound: Option<&memoria::gemma::ModelNotFound>,
    out: &mut Vec<Finding>,
) {
    let named = unfound.and_then(|why| why.named());
    let (level, fix) = match named {
        _ if settings.provider == ProviderKind::None => (
            Level::Warn,
            "drop the provider none to search with the model, or stop naming the model".to_string(),
        ),
        Some((origin, path)) => (
            Level::Fail,
            format!(
                "correct {origin} or remove it ({} is not a usable model; `memoria model \
                 path` shows where memoria looks without it)",
                path.display()
            ),
        ),
        None => (
            Level::Warn,
            "`memoria model pull` (local model), set the provider's API key, or \
             --provider none to choose keyword search"
                .to_string(),
        ),
    };
    match (&status.embedding, &status.fallback) {
        (Some(embedding), fallback) => {
            let mut what = format!(
                "{} {} ({} dims)",
                status.provider,
                status.model.as_deref().unwrap_or("?"),
                embedding.dims
            );
            if let Some(source) = &embedding.key_source {
                what.push_str(&format!("; API key from {source}"));
            }
            match fallback {
                Some(fb) => out.push(problem(
                    Level::Warn,
                    "embedder",
                    format!("{what}, instead of {}: {}", fb.from, fb.reason),
                    "see the reason: a key, a model download, or a provider that is down",
                )),
                None => out.push(ok("embedder", what)),
            }
        }
        (None, None) => out.push(ok("embedder", "none: keyword search only (provider none)")),
        (None, Some(fb)) => out.push(problem(
            level,
            "embedder",
            format!(
                "keyword search only: {} cannot serve: {}{}",
                fb.from,
                fb.reason,
                status
                    .key_source
                    .as_ref()
                    .map_or(String::new(), |k| format!(" (API key from {k})"))
            ),
            &fix,
        )),
    }
}

/// Where the local model is, where it runs and on which kernels.
fn check_model(
    settings: &Settings,
    status: &memoria::Status,
    location: Option<&memoria::gemma::ModelLocation>,
    out: &mut Vec<Finding>,
) {
    // Where the local model is (a missing one is the embedder's finding above).
    if matches!(settings.provider, ProviderKind::Local | ProviderKind::Auto) {
        if let Some(location) = location {
            let layout = match location.dir.is_file() {
                true => "GGUF",
                false => "safetensors, sentence-transformers layout",
            };
            out.push(ok(
                "model",
                format!("{} ({layout})", location.dir.display()),
            ));
        }
        // Where it runs, in what precision, on which kernels and why (`cpu, bf16 (auto:
        // AMX), AMX bf16 kernels`).
        let device = status.embedding.as_ref().and_then(|e| e.device.as_deref());
        if let Some(runs) = device.and_then(|d| d.split("; ").next()) {
            out.push(ok("embedding", runs.to_string()));
        }
        // A GGUF file without Dense layers embeds into a space of its own: say so.
        if let Some(at) = device.and_then(|d| d.find("no Dense layers")) {
            out.push(ok("model", device.unwrap_or_default()[at..].to_string()));
        }
    }
}

/// The index: its generation, whether it is fresh, whether a sync could run, its warnings.
fn check_index(
    settings: &Settings,
    status: &memoria::Status,
    memory: &memoria::Memory,
    out: &mut Vec<Finding>,
) {
    match status.generation {
        None => out.push(problem(
            Level::Warn,
            "index",
            format!("none yet in {}", status.agent_dir),
            "memoria index",
        )),
        Some(generation) => {
            let vectors = status
                .vectors
                .map_or(String::new(), |v| format!(", {v} vectors"));
            out.push(ok(
                "index",
                format!(
                    "{}: generation {generation}, {} files, {} chunks{vectors}",
                    status.agent_dir, status.files, status.chunks
                ),
            ));
            if status.dirty {
                out.push(problem(
                    Level::Warn,
                    "index",
                    "the workspace changed since the last sync",
                    "memoria index (or keep `memoria watch` / `memoria mcp` running)",
                ));
            }
            // Whether a sync could run now (only when the directory exists: doctor writes
            // nothing).
            match memory.can_sync() {
                Ok(_) => out.push(ok("lock", "free: a sync can run")),
                Err(memoria::Error::IndexBusy { .. }) => out.push(ok(
                    "lock",
                    "held by another memoria process (a sync in progress)",
                )),
                Err(err) => out.push(problem(
                    Level::Fail,
                    "lock",
                    err.to_string(),
                    "check the permissions of the agent directory",
                )),
            }
        }
    }
    let config_warnings = settings.warnings.len();
    for warning in status.warnings.iter().skip(config_warnings) {
        if warning.starts_with("no index yet") || warning.contains("does not exist (from ") {
            continue; // said above
        }
        out.push(problem(
            Level::Warn,
            "index",
            warning.clone(),
            "see the message; `memoria status` lists it too",
        ));
    }
}

/// The live sync, this process's or another's.
fn check_live(status: &memoria::Status, out: &mut Vec<Finding>) {
    match &status.live {
        Some(live) => {
            let what = format!("process {}: {}", live.pid, watcher(live.watcher));
            let what = match &live.reason {
                Some(reason) => format!("{what}: {reason}"),
                None => what,
            };
            if let Some(error) = &live.last_sync_error {
                out.push(problem(
                    Level::Warn,
                    "live",
                    format!("{what}; the last sync failed: {error}"),
                    "fix what the error names; the sync is retried at the next change of the \
                     workspace and with backoff, and searches answer from the last index \
                     meanwhile",
                ));
            } else if live.watcher == memoria::WatcherState::Polling {
                out.push(problem(
                    Level::Warn,
                    "live",
                    what,
                    "see the reason; polling still keeps the index fresh",
                ));
            } else {
                out.push(ok("live", what));
            }
        }
        None => out.push(ok(
            "live",
            "no live sync running (`memoria mcp` or `memoria watch` keep the index fresh)",
        )),
    }
}
