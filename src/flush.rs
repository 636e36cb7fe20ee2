//! The pre-compaction memory flush (SPEC §9): when a session nears automatic compaction,
//! the agent runtime gives the model one silent turn asking it to write durable notes to
//! `memory/YYYY-MM-DD.md` before the context is compacted.
//!
//! [`plan`] is the decision, pure: flush once per compaction cycle, when the session's
//! tokens reach `contextWindow − reserveTokensFloor − softThresholdTokens`, memory flush is
//! enabled and the workspace is writable; the prompts (OpenClaw's defaults, or the
//! configured ones, both ending in `NO_REPLY` so the user sees nothing) get today's date in
//! place of `YYYY-MM-DD`. Which cycle was flushed last is the caller's to keep (the CLI
//! keeps it per session key in the agent directory, and reads OpenClaw's `sessions.json`).

use serde::Serialize;

use crate::config::{CompactionSettings, DEFAULT_FLUSH_PROMPT, DEFAULT_FLUSH_SYSTEM_PROMPT};

/// What the runtime knows about the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushInput {
    /// Tokens in the session's context now.
    pub session_tokens: u64,
    /// The model's context window.
    pub context_window: u64,
    /// Compactions the session has been through (the current cycle).
    pub compaction_count: u64,
    /// The cycle of the last flush, if any.
    pub last_flush: Option<u64>,
    /// Whether the agent can write its workspace (a sandbox with `workspaceAccess` "ro" or
    /// "none" cannot).
    pub writable: bool,
    /// Today, `YYYY-MM-DD`, in the user's time zone.
    pub today: String,
}

/// The decision, as `memoria flush-plan --json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlushPlan {
    /// Run the flush turn now.
    pub flush: bool,
    /// Why (or why not), in words.
    pub reason: String,
    /// `contextWindow − reserveTokensFloor − softThresholdTokens`, at least 0.
    pub threshold: u64,
    /// The system message of the flush turn, date substituted.
    pub system_prompt: String,
    /// The user message of the flush turn, date substituted.
    pub prompt: String,
}

/// Decides whether to flush now (see the module documentation).
pub fn plan(settings: &CompactionSettings, input: &FlushInput) -> FlushPlan {
    let flush = &settings.memory_flush;
    let threshold = input
        .context_window
        .saturating_sub(settings.reserve_tokens_floor)
        .saturating_sub(flush.soft_threshold_tokens);
    let cycle = input.compaction_count;
    let (go, reason) = if !flush.enabled {
        (false, "compaction.memoryFlush.enabled is false".to_string())
    } else if !input.writable {
        (
            false,
            "the workspace is not writable: the agent could not write its notes".to_string(),
        )
    } else if input.session_tokens < threshold {
        (
            false,
            format!(
                "{} session tokens, below the threshold {threshold} (contextWindow {} − \
                 reserveTokensFloor {} − softThresholdTokens {})",
                input.session_tokens,
                input.context_window,
                settings.reserve_tokens_floor,
                flush.soft_threshold_tokens
            ),
        )
    } else if input.last_flush == Some(cycle) {
        (
            false,
            format!("already flushed in compaction cycle {cycle}: once per cycle"),
        )
    } else {
        (
            true,
            format!(
                "{} session tokens reach the threshold {threshold}: flush once in compaction \
                 cycle {cycle}",
                input.session_tokens
            ),
        )
    };
    let dated = |text: &str| text.replace("YYYY-MM-DD", &input.today);
    FlushPlan {
        flush: go,
        reason,
        threshold,
        system_prompt: dated(
            flush
                .system_prompt
                .as_deref()
                .unwrap_or(DEFAULT_FLUSH_SYSTEM_PROMPT),
        ),
        prompt: dated(flush.prompt.as_deref().unwrap_or(DEFAULT_FLUSH_PROMPT)),
    }
}

/// The flush decision for the session `key` of the agent `settings` describe (see [`plan`]).
/// The last flushed cycle is the later of memoria's record (`flush.json` in the agent
/// directory) and OpenClaw's (`memoryFlushCompactionCount` in the agent's
/// `sessions/sessions.json`, which memoria reads but never writes); a flush decided now
/// is recorded, so the same cycle is not flushed twice.
pub(crate) fn plan_session(
    settings: &crate::config::Settings,
    dir: &crate::index::AgentDir,
    key: &str,
    session: (u64, u64, u64),
    today: &str,
) -> crate::error::Result<FlushPlan> {
    use serde_json::Value;
    let (session_tokens, context_window, compaction_count) = session;
    let mut record: serde_json::Map<String, Value> = dir
        .flush_record()?
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let ours = record.get(key).and_then(Value::as_u64);
    let sessions = settings
        .state_dir
        .join("agents")
        .join(&settings.agent_id)
        .join("sessions/sessions.json");
    let theirs = std::fs::read(&sessions)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|v| v.get(key)?.get("memoryFlushCompactionCount")?.as_u64());
    let workspace = &settings.workspace;
    let writable =
        std::fs::metadata(workspace).is_ok_and(|m| m.is_dir() && !m.permissions().readonly());
    let plan = plan(
        &settings.compaction,
        &FlushInput {
            session_tokens,
            context_window,
            compaction_count,
            last_flush: ours.max(theirs),
            writable,
            today: today.to_string(),
        },
    );
    if plan.flush {
        record.insert(key.to_string(), Value::from(compaction_count));
        let bytes =
            serde_json::to_vec_pretty(&record).map_err(|e| crate::error::Error::Corrupt {
                path: dir.root().join("flush.json"),
                message: e.to_string(),
            })?;
        dir.write_flush_record(&bytes)?;
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MemoryFlushSettings;

    fn settings(enabled: bool) -> CompactionSettings {
        CompactionSettings {
            reserve_tokens_floor: 20_000,
            memory_flush: MemoryFlushSettings {
                enabled,
                soft_threshold_tokens: 4_000,
                system_prompt: None,
                prompt: None,
            },
        }
    }

    fn input(
        tokens: u64,
        window: u64,
        cycle: u64,
        last: Option<u64>,
        writable: bool,
    ) -> FlushInput {
        FlushInput {
            session_tokens: tokens,
            context_window: window,
            compaction_count: cycle,
            last_flush: last,
            writable,
            today: "2026-11-24".into(),
        }
    }

    #[test]
    fn threshold_arithmetic_once_per_cycle_and_read_only() {
        // (enabled, tokens, window, cycle, last flush, writable, flush?, reason starts with)
        let table = [
            (
                true,
                175_999,
                200_000,
                0,
                None,
                true,
                false,
                "175999 session tokens, below the threshold 176000",
            ),
            (
                true,
                176_000,
                200_000,
                0,
                None,
                true,
                true,
                "176000 session tokens reach the threshold 176000",
            ),
            (
                true,
                190_000,
                200_000,
                2,
                Some(2),
                true,
                false,
                "already flushed in compaction cycle 2",
            ),
            (
                true,
                190_000,
                200_000,
                3,
                Some(2),
                true,
                true,
                "190000 session tokens reach",
            ),
            (
                true,
                190_000,
                200_000,
                0,
                None,
                false,
                false,
                "the workspace is not writable",
            ),
            (
                false,
                190_000,
                200_000,
                0,
                None,
                true,
                false,
                "compaction.memoryFlush.enabled is false",
            ),
            // A window smaller than the reserve: the threshold is 0, any session flushes.
            (
                true,
                0,
                16_000,
                0,
                None,
                true,
                true,
                "0 session tokens reach the threshold 0",
            ),
        ];
        for (enabled, tokens, window, cycle, last, writable, flush, reason) in table {
            let plan = plan(
                &settings(enabled),
                &input(tokens, window, cycle, last, writable),
            );
            assert_eq!(plan.flush, flush, "{reason}");
            assert!(
                plan.reason.starts_with(reason),
                "{} / {reason}",
                plan.reason
            );
        }
    }

    #[test]
    fn prompts_get_todays_date_and_say_no_reply() {
        let p = plan(&settings(true), &input(0, 200_000, 0, None, true));
        assert_eq!(p.system_prompt, DEFAULT_FLUSH_SYSTEM_PROMPT);
        assert!(p.prompt.contains("memory/2026-11-24.md"), "{}", p.prompt);
        assert!(p.prompt.contains("NO_REPLY"));
        let mut custom = settings(true);
        custom.memory_flush.prompt =
            Some("Notes for YYYY-MM-DD go to memory/YYYY-MM-DD.md.".into());
        let p = plan(&custom, &input(0, 200_000, 0, None, true));
        assert_eq!(p.prompt, "Notes for 2026-11-24 go to memory/2026-11-24.md.");
    }
}
