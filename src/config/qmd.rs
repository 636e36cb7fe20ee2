//! `memory.qmd`: the QMD sidecar's settings (SPEC §10), parsed and typed.
//!
//! Every documented key is read and type checked; an unknown one is a warning, as
//! everywhere in the config. Defaults are OpenClaw's where the seeds give them
//! (`update.interval` 5 min, `limits.maxResults` 6, `limits.timeoutMs` 4000, the DM-only
//! `scope`), and memoria's otherwise (docs/openclaw.md, "QMD users").
//!
//! * Durations (`update.interval`, `update.embedInterval`) are `"500ms"`, `"30s"`, `"5m"`,
//!   `"1h"`, `"1d"`, or a bare number of minutes (OpenClaw's default unit for them); `0` turns
//!   the periodic run off. The `…Ms` keys are integers in milliseconds.
//! * `paths[].path` is `~`-expanded, and relative to the workspace; `pattern` is a glob
//!   (`**/*.md` by default) matched against the path below it; `name` defaults to the
//!   path's last component, lowercased, with anything outside `[a-z0-9_-]` turned into `-`
//!   and `-2`, `-3`, … added on a clash. A name appears in citations
//!   (`qmd/<name>/<path>`), so a configured one must already be of that alphabet.
//! * `scope` is `session.sendPolicy`'s schema: `default` (`allow` / `deny`) and `rules`, each
//!   `{action, match: {chatType?, channel?, keyPrefix?}}`.

use std::path::PathBuf;
use std::time::Duration;

use super::chat::ChatType;
use super::error::ConfigError;
use super::node::Node;

/// `memory.qmd`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct QmdSettings {
    /// `command`: the QMD executable (a name looked up on `PATH`, or a path).
    pub command: String,
    /// `includeDefaultMemory`: QMD also indexes `MEMORY.md`, `memory.md` and `memory/**/*.md`.
    pub include_default_memory: bool,
    /// `paths[]`: the named collections.
    pub paths: Vec<QmdPath>,
    /// `sessions.*`.
    pub sessions: QmdSessions,
    /// `update.*`.
    pub update: QmdUpdate,
    /// `limits.*`.
    pub limits: QmdLimits,
    /// `scope`: in which chats QMD's hits are shown.
    pub scope: SendPolicy,
    /// `searchMode`: which QMD command answers (`query`, the seeds' default; `search`, BM25
    /// only; `vsearch`, vectors only). A key of newer OpenClaw releases.
    pub search_mode: SearchMode,
    /// Keys memoria reads but does not act on, for `status`.
    pub unused: Vec<String>,
}

/// One `memory.qmd.paths[]` entry: a QMD collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QmdPath {
    /// `name`, or one derived from the path.
    pub name: String,
    /// `path`, `~` expanded; a relative one is relative to the workspace.
    pub path: PathBuf,
    /// `pattern` (`**/*.md` by default).
    pub pattern: String,
}

/// `memory.qmd.sessions`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QmdSessions {
    /// `enabled` (default false).
    pub enabled: bool,
    /// `retentionDays`.
    pub retention_days: Option<u64>,
    /// `exportDir` (`~` expanded; relative to the workspace), else
    /// `<stateDir>/agents/<agentId>/qmd/sessions`.
    pub export_dir: Option<String>,
}

/// `memory.qmd.update`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QmdUpdate {
    /// `interval` between `qmd update` runs (`None`: off). Default 5 min.
    pub interval: Option<Duration>,
    /// `debounceMs`: after a file change, how long to wait before `qmd update`. Default 15 s.
    pub debounce: Duration,
    /// `onBoot`: update (and embed) when memoria starts. Default true.
    pub on_boot: bool,
    /// `waitForBootSync`: searches wait for the boot update. Default false.
    pub wait_for_boot_sync: bool,
    /// `embedInterval` between `qmd embed` runs (`None`: off). Default 60 min.
    pub embed_interval: Option<Duration>,
    /// `commandTimeoutMs`. Default 30 s.
    pub command_timeout: Duration,
    /// `updateTimeoutMs`: the bound on one `qmd update`. Default 120 s.
    pub update_timeout: Duration,
    /// `embedTimeoutMs`: the bound on one `qmd embed`. Default 120 s.
    pub embed_timeout: Duration,
}

/// `memory.qmd.limits`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QmdLimits {
    /// `maxResults`. Default 6.
    pub max_results: usize,
    /// `maxSnippetChars`: one snippet's length. Default 700.
    pub max_snippet_chars: usize,
    /// `maxInjectedChars`: all snippets together. Default 4000.
    pub max_injected_chars: usize,
    /// `timeoutMs`: the bound on one QMD search. Default 4 s.
    pub timeout: Duration,
}

/// Which QMD command answers a search (`memory.qmd.searchMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchMode {
    /// `qmd query`: expansion, hybrid retrieval and reranking.
    Query,
    /// `qmd search`: BM25 only.
    Search,
    /// `qmd vsearch`: vectors only.
    Vsearch,
}

impl SearchMode {
    /// The QMD subcommand.
    pub fn command(self) -> &'static str {
        match self {
            SearchMode::Query => "query",
            SearchMode::Search => "search",
            SearchMode::Vsearch => "vsearch",
        }
    }
}

/// Allow or deny (`session.sendPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyAction {
    /// Show QMD's hits.
    Allow,
    /// Do not.
    Deny,
}

/// `session.sendPolicy`'s schema, as `memory.qmd.scope` uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendPolicy {
    /// `default`: when no rule matches.
    pub default: PolicyAction,
    /// `rules`, in order.
    pub rules: Vec<PolicyRule>,
}

/// One `scope.rules[]` entry: every field of `match` that is set must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRule {
    /// `action`.
    pub action: PolicyAction,
    /// `match.chatType`.
    pub chat_type: Option<ChatType>,
    /// `match.channel` (`telegram`, `discord`, …), compared without case.
    pub channel: Option<String>,
    /// `match.keyPrefix`: the session key starts with it.
    pub key_prefix: Option<String>,
}

impl SendPolicy {
    /// The documented default: direct chats only.
    pub fn direct_only() -> SendPolicy {
        SendPolicy {
            default: PolicyAction::Deny,
            rules: vec![PolicyRule {
                action: PolicyAction::Allow,
                chat_type: Some(ChatType::Direct),
                channel: None,
                key_prefix: None,
            }],
        }
    }
}

impl Default for QmdSettings {
    fn default() -> QmdSettings {
        QmdSettings {
            command: "qmd".into(),
            include_default_memory: true,
            paths: Vec::new(),
            sessions: QmdSessions::default(),
            update: QmdUpdate {
                interval: Some(Duration::from_secs(5 * 60)),
                debounce: Duration::from_millis(15_000),
                on_boot: true,
                wait_for_boot_sync: false,
                embed_interval: Some(Duration::from_secs(60 * 60)),
                command_timeout: Duration::from_secs(30),
                update_timeout: Duration::from_secs(120),
                embed_timeout: Duration::from_secs(120),
            },
            limits: QmdLimits {
                max_results: 6,
                max_snippet_chars: 700,
                max_injected_chars: 4000,
                timeout: Duration::from_millis(4000),
            },
            scope: SendPolicy::direct_only(),
            search_mode: SearchMode::Query,
            unused: Vec::new(),
        }
    }
}

impl QmdSettings {
    /// Expands a leading `~` of every collection path and of `sessions.exportDir`.
    pub(super) fn expand_home(&mut self, env: &super::Env) {
        for path in &mut self.paths {
            path.path = super::expand_home(&path.path.to_string_lossy(), env);
        }
        if let Some(dir) = &mut self.sessions.export_dir {
            *dir = super::expand_home(dir, env).display().to_string();
        }
    }
}

const CHAT_TYPES: &[(&str, ChatType)] = &[
    ("direct", ChatType::Direct),
    ("group", ChatType::Group),
    ("channel", ChatType::Channel),
];
const ACTIONS: &[(&str, PolicyAction)] =
    &[("allow", PolicyAction::Allow), ("deny", PolicyAction::Deny)];
const SEARCH_MODES: &[(&str, SearchMode)] = &[
    ("query", SearchMode::Query),
    ("search", SearchMode::Search),
    ("vsearch", SearchMode::Vsearch),
];

/// Parses `memory.qmd` (`node`).
pub(super) fn parse(node: &Node) -> Result<QmdSettings, ConfigError> {
    node.check_keys(&[
        "command",
        "includeDefaultMemory",
        "paths",
        "sessions",
        "update",
        "limits",
        "scope",
        "searchMode",
    ])?;
    let mut q = QmdSettings::default();
    if let Some(command) = node.get_nonblank("command")? {
        q.command = command;
    }
    q.include_default_memory = node
        .get_bool("includeDefaultMemory")?
        .unwrap_or(q.include_default_memory);
    q.search_mode = node
        .get_choice("searchMode", SEARCH_MODES)?
        .unwrap_or(q.search_mode);
    q.paths = parse_paths(node)?;
    if let Some(s) = node.section("sessions", &["enabled", "retentionDays", "exportDir"])? {
        q.sessions = QmdSessions {
            enabled: s.get_bool("enabled")?.unwrap_or(false),
            retention_days: s.get_int("retentionDays")?.map(|d| d.max(0) as u64),
            export_dir: s.get_nonblank("exportDir")?,
        };
    }
    if let Some(u) = node.section(
        "update",
        &[
            "interval",
            "debounceMs",
            "onBoot",
            "waitForBootSync",
            "embedInterval",
            "commandTimeoutMs",
            "updateTimeoutMs",
            "embedTimeoutMs",
        ],
    )? {
        let up = &mut q.update;
        if let Some(child) = u.child("interval")? {
            up.interval = duration(&child)?;
        }
        if let Some(child) = u.child("embedInterval")? {
            up.embed_interval = duration(&child)?;
        }
        up.debounce = millis(&u, "debounceMs")?.unwrap_or(up.debounce);
        up.on_boot = u.get_bool("onBoot")?.unwrap_or(up.on_boot);
        up.wait_for_boot_sync = u
            .get_bool("waitForBootSync")?
            .unwrap_or(up.wait_for_boot_sync);
        if let Some(ms) = millis(&u, "commandTimeoutMs")? {
            up.command_timeout = ms;
            q.unused.push(
                "memory.qmd.update.commandTimeoutMs: memoria writes QMD's collection file \
                 itself and runs no collection commands, so there is nothing for it to bound"
                    .into(),
            );
        }
        up.update_timeout = millis(&u, "updateTimeoutMs")?.unwrap_or(up.update_timeout);
        up.embed_timeout = millis(&u, "embedTimeoutMs")?.unwrap_or(up.embed_timeout);
    }
    if let Some(l) = node.section(
        "limits",
        &[
            "maxResults",
            "maxSnippetChars",
            "maxInjectedChars",
            "timeoutMs",
        ],
    )? {
        let lim = &mut q.limits;
        let at_least_1 = |v: Option<i64>, d: usize| v.map_or(d, |v| v.max(1) as usize);
        lim.max_results = at_least_1(l.get_int("maxResults")?, lim.max_results);
        lim.max_snippet_chars = at_least_1(l.get_int("maxSnippetChars")?, lim.max_snippet_chars);
        lim.max_injected_chars = at_least_1(l.get_int("maxInjectedChars")?, lim.max_injected_chars);
        lim.timeout =
            millis(&l, "timeoutMs")?.map_or(lim.timeout, |t| t.max(Duration::from_millis(1)));
    }
    if let Some(scope) = node.section("scope", &["default", "rules"])? {
        q.scope = parse_scope(&scope)?;
    }
    Ok(q)
}

fn parse_paths(node: &Node) -> Result<Vec<QmdPath>, ConfigError> {
    // (name, configured?, path, pattern)
    let mut named: Vec<(String, bool, String, String)> = Vec::new();
    for entry in node.get_array("paths")?.unwrap_or_default() {
        entry.check_keys(&["name", "path", "pattern"])?;
        let raw = entry
            .get_nonblank("path")?
            .ok_or_else(|| ConfigError::invalid(&entry.key_path("path"), "missing"))?;
        let pattern = entry
            .get_nonblank("pattern")?
            .unwrap_or_else(|| "**/*.md".into());
        if let Err(err) = globset::Glob::new(&pattern) {
            return Err(ConfigError::invalid(
                &entry.key_path("pattern"),
                format!("not a glob pattern: {err}"),
            ));
        }
        let (name, explicit) = match entry.get_nonblank("name")? {
            Some(name) if valid_name(&name) => (name, true),
            Some(name) => {
                return Err(ConfigError::invalid(
                    &entry.key_path("name"),
                    format!(
                        "\"{name}\": a collection name appears in paths (qmd/<name>/…), so it \
                         may hold only letters, digits, '-' and '_'"
                    ),
                ))
            }
            None => (derived_name(&raw), false),
        };
        let taken =
            |n: &str| RESERVED_COLLECTIONS.contains(&n) || named.iter().any(|p| p.1 && p.0 == n);
        if explicit && taken(&name) {
            return Err(ConfigError::invalid(
                &entry.key_path("name"),
                format!("\"{name}\" names another collection already"),
            ));
        }
        named.push((name, explicit, raw, pattern));
    }
    // Derived names that clash with any other get -2, -3, … (configured ones were checked).
    let mut paths: Vec<QmdPath> = Vec::new();
    for (i, (base, explicit, raw, pattern)) in named.iter().enumerate() {
        let mut name = base.clone();
        let mut n = 1;
        while !explicit
            && (RESERVED_COLLECTIONS.contains(&name.as_str())
                || paths.iter().any(|p| p.name == name)
                || named[i + 1..]
                    .iter()
                    .any(|later| later.1 && later.0 == name))
        {
            n += 1;
            name = format!("{base}-{n}");
        }
        paths.push(QmdPath {
            name,
            path: PathBuf::from(raw),
            pattern: pattern.clone(),
        });
    }
    Ok(paths)
}

/// The collections memoria adds for `includeDefaultMemory`, as OpenClaw names them.
pub const DEFAULT_COLLECTIONS: &[&str] = &["memory-root", "memory-alt", "memory-dir"];
/// Names `paths[].name` may not take: the default collections and `sessions` (the exported
/// transcripts).
pub const RESERVED_COLLECTIONS: &[&str] = &["memory-root", "memory-alt", "memory-dir", "sessions"];

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A collection name from a path: its last component, lowercased, `[a-z0-9_-]` only.
fn derived_name(raw: &str) -> String {
    let last = raw
        .trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("");
    let slug: String = last
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let slug = slug.trim_matches('-').to_string();
    if slug.is_empty() {
        "collection".into()
    } else {
        slug
    }
}

fn parse_scope(node: &Node) -> Result<SendPolicy, ConfigError> {
    let default = node
        .get_choice("default", ACTIONS)?
        .unwrap_or(PolicyAction::Allow);
    let mut rules = Vec::new();
    for rule in node.get_array("rules")?.unwrap_or_default() {
        rule.check_keys(&["action", "match"])?;
        let action = rule
            .get_choice("action", ACTIONS)?
            .ok_or_else(|| ConfigError::invalid(&rule.key_path("action"), "missing"))?;
        let mut parsed = PolicyRule {
            action,
            chat_type: None,
            channel: None,
            key_prefix: None,
        };
        if let Some(m) = rule.section("match", &["chatType", "channel", "keyPrefix"])? {
            parsed.chat_type = m.get_choice("chatType", CHAT_TYPES)?;
            parsed.channel = m.get_nonblank("channel")?;
            parsed.key_prefix = m.get_nonblank("keyPrefix")?;
        }
        rules.push(parsed);
    }
    Ok(SendPolicy { default, rules })
}

/// An integer number of milliseconds (negative = 0).
fn millis(node: &Node, key: &str) -> Result<Option<Duration>, ConfigError> {
    Ok(node
        .get_int(key)?
        .map(|ms| Duration::from_millis(ms.max(0) as u64)))
}

/// A duration: `"30s"`-style, or a number of minutes; zero is `None` (off).
fn duration(node: &Node) -> Result<Option<Duration>, ConfigError> {
    let parsed = match node.value {
        serde_json::Value::Number(n) => n.as_f64().map(|m| m * 60_000.0),
        serde_json::Value::String(s) => parse_duration_ms(s),
        _ => None,
    };
    match parsed {
        Some(ms) if ms.is_finite() && ms >= 0.0 => {
            Ok((ms >= 1.0).then(|| Duration::from_millis(ms as u64)))
        }
        _ => Err(node.type_error("a duration such as \"30s\", \"5m\", \"1h\" or minutes")),
    }
}

/// `"500ms"`, `"30s"`, `"5m"`, `"1h"`, `"1d"` or `"5"` (minutes) in milliseconds.
pub(super) fn parse_duration_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let value: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "ms" => 1.0,
        "s" => 1000.0,
        "" | "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    };
    Some(value * scale)
}
