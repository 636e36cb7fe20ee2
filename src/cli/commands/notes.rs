//! The session's commands, for agent runtimes: `memoria append` (a note in today's daily
//! log), `memoria context` (what a session reads at start) and `memoria flush-plan` (the
//! pre-compaction memory flush). None of them loads an embedding model.

use std::process::ExitCode;

use anyhow::{Context as _, Result};

use memoria::config::Settings;
use memoria::{EmbedderChoice, Memory};

use crate::args::{Append, Context, FlushPlan};
use crate::daily::{session_context, today};

/// The memory without --model: these commands never embed.
fn open(settings: Settings) -> Result<Memory> {
    Ok(Memory::open_with(
        settings,
        EmbedderChoice::FromSettings {
            model_dir: None,
            precision: None,
        },
    )?)
}

/// `memoria append`.
pub fn append(settings: Settings, args: &Append) -> Result<ExitCode> {
    let text = match args.text.as_str() {
        "-" => std::io::read_to_string(std::io::stdin()).context("reading stdin")?,
        text => text.to_string(),
    };
    let date = args.date.clone().unwrap_or_else(today);
    let appended = open(settings)?.append(&text, &date)?;
    if args.json {
        println!("{}", serde_json::to_string(&appended)?);
    } else {
        println!(
            "appended to {}#L{}-L{}",
            appended.path, appended.start_line, appended.end_line
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `memoria context`.
pub fn context(settings: Settings, args: &Context) -> Result<ExitCode> {
    let files = session_context(&open(settings)?, args.private);
    if args.json {
        println!("{}", serde_json::json!({ "files": files }));
        return Ok(ExitCode::SUCCESS);
    }
    for file in &files {
        println!("## {}\n\n{}", file.path, file.text.trim_end());
    }
    if files.is_empty() {
        println!(
            "no daily log for today or yesterday{}",
            if args.private {
                ", and no MEMORY.md"
            } else {
                ""
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `memoria flush-plan`.
pub fn flush_plan(settings: Settings, args: &FlushPlan) -> Result<ExitCode> {
    let today = today();
    let plan = open(settings)?.flush_plan(
        &args.session_key,
        (
            args.session_tokens,
            args.context_window,
            args.compaction_count,
        ),
        &today,
    )?;
    if args.json {
        println!("{}", serde_json::to_string(&plan)?);
    } else {
        println!("flush        {}", if plan.flush { "yes" } else { "no" });
        println!("reason       {}", plan.reason);
        println!("system       {}", plan.system_prompt);
        println!("prompt       {}", plan.prompt);
    }
    Ok(ExitCode::SUCCESS)
}
