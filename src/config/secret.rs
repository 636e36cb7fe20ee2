//! API keys as the config gives them, never shown by `Debug`, and OpenClaw's SecretRefs
//! read where they point.
//!
//! A SecretRef (`{source, provider?, id}`) names a key kept elsewhere. Its provider is
//! `provider`, else `secrets.defaults.<source>`, else `default`; a `secrets.providers`
//! entry of that name and the same source says how to read it, and `env` refs without one
//! read the environment. As in OpenClaw 2026.9:
//! - `env`: the variable `id` (unset or empty is an error naming it; an `allowlist`
//!   limits the names);
//! - `file`: a private regular file (no symlink, one hard link, no group or other
//!   permission bits) of at most `maxBytes` (1 MiB), JSON read at the JSON pointer `id`
//!   (`mode: "json"`), or its whole text when `mode: "singleValue"` and `id: "value"`;
//! - `exec`: the absolute `command` (not a symlink, not group- or world-writable) run
//!   directly with `args`, only the `passEnv` variables and `env`, given
//!   `{"protocolVersion": 1, "provider", "ids": [id]}` on stdin, killed after `timeoutMs`
//!   (5 s), its stdout (at most `maxOutputBytes`, 1 MiB) read as
//!   `{"protocolVersion": 1, "values": {id: key}, "errors": {id: {code}}}` (or as the key
//!   itself with `jsonOnly: false`);
//! - `store` (OpenClaw's SQLite secret store) and plugin-managed exec providers are not
//!   readable by memoria, and say so.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// An API key as the config gives it: the key itself, or OpenClaw's SecretRef object
/// (`{source: "env", provider: "default", id: "OPENAI_API_KEY"}`) naming where to find it.
/// `Debug` never shows a literal key.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// The key, written in the config.
    Literal(String),
    /// A SecretRef.
    Ref {
        /// `env`, `file`, `exec` or `store`.
        source: String,
        /// The secret provider's name, when given.
        provider: Option<String>,
        /// What to look up: the variable (`env`), a JSON pointer (`file`), the id asked of
        /// the command (`exec`).
        id: String,
    },
}

/// `secrets`: how each named secret provider reads its keys, and the default name per
/// source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretProviders {
    /// `secrets.providers.<name>`.
    pub providers: BTreeMap<String, SecretProvider>,
    /// `secrets.defaults.<source>`: the provider a ref of that source uses by default.
    pub defaults: BTreeMap<String, String>,
}

/// One `secrets.providers` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretProvider {
    /// `source: "env"`.
    Env {
        /// `allowlist`: the variable names it may read (`None`: any).
        allowlist: Option<Vec<String>>,
    },
    /// `source: "file"`.
    File {
        /// `path` (`~` expanded).
        path: PathBuf,
        /// `mode: "singleValue"`: the whole file is the key (else JSON).
        single_value: bool,
        /// `maxBytes` (1 MiB).
        max_bytes: u64,
    },
    /// `source: "exec"`.
    Exec {
        /// `command`: an absolute path.
        command: PathBuf,
        /// `args`.
        args: Vec<String>,
        /// `passEnv`: variables passed through from memoria's environment.
        pass_env: Vec<String>,
        /// `env`: variables set for the command.
        env: BTreeMap<String, String>,
        /// `timeoutMs` (5000).
        timeout_ms: u64,
        /// `maxOutputBytes` (1 MiB).
        max_output_bytes: u64,
        /// `jsonOnly` (true).
        json_only: bool,
    },
    /// A source memoria cannot read (`store`, a plugin-managed exec provider), and why.
    Unsupported {
        /// `source`.
        source: String,
        /// Why memoria cannot read it.
        why: String,
    },
}

impl SecretProvider {
    fn source(&self) -> &str {
        match self {
            SecretProvider::Env { .. } => "env",
            SecretProvider::File { .. } => "file",
            SecretProvider::Exec { .. } => "exec",
            SecretProvider::Unsupported { source, .. } => source,
        }
    }
}

/// The sources a SecretRef or a `secrets.providers` entry may name.
pub(crate) const SECRET_SOURCES: &[(&str, &str)] = &[
    ("env", "env"),
    ("file", "file"),
    ("exec", "exec"),
    ("store", "store"),
];

/// The default for `maxBytes` and `maxOutputBytes`.
pub(crate) const ONE_MIB: u64 = 1 << 20;

impl Secret {
    /// The key: a literal one, or an `env` SecretRef looked up with `var` (no providers
    /// configured); `None` when it cannot be read (see [`Secret::read`] for why).
    pub fn resolve(&self, var: impl Fn(&str) -> Option<String>) -> Option<String> {
        self.read(&SecretProviders::default(), &var).ok()
    }

    /// The key, read where the ref points (see the module docs), or why it cannot be:
    /// the ref, its provider and the cause (an unset variable named, a file's problem, a
    /// command's failure; never the key).
    pub fn read(
        &self,
        providers: &SecretProviders,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, String> {
        let (source, provider, id) = match self {
            Secret::Literal(key) => return Ok(key.clone()),
            Secret::Ref {
                source,
                provider,
                id,
            } => (source.as_str(), provider, id.as_str()),
        };
        let alias = provider
            .clone()
            .or_else(|| providers.defaults.get(source).cloned())
            .unwrap_or_else(|| "default".into());
        let what = format!("SecretRef {{source: {source:?}, provider: {alias:?}, id: {id:?}}}");
        let fail = |why: String| Err(format!("{what}: {why}"));
        let entry = providers
            .providers
            .get(&alias)
            .filter(|p| p.source() == source);
        let result = match (entry, source) {
            (Some(SecretProvider::Env { allowlist }), _) => match allowlist {
                Some(names) if !names.iter().any(|n| n == id) => Err(format!(
                    "{id} is not in secrets.providers.{alias}.allowlist"
                )),
                _ => read_env(id, var),
            },
            (None, "env") => read_env(id, var),
            (
                Some(SecretProvider::File {
                    path,
                    single_value,
                    max_bytes,
                }),
                _,
            ) => read_file(path, *single_value, *max_bytes, id),
            (
                Some(SecretProvider::Exec {
                    command,
                    args,
                    pass_env,
                    env,
                    timeout_ms,
                    max_output_bytes,
                    json_only,
                }),
                _,
            ) => {
                let run = Exec {
                    command,
                    args,
                    pass_env,
                    env,
                    timeout: Duration::from_millis(*timeout_ms),
                    max_output: *max_output_bytes,
                    json_only: *json_only,
                };
                run.read(&alias, id, var)
            }
            (Some(SecretProvider::Unsupported { why, .. }), _) => Err(why.clone()),
            (None, "store") => Err("the store source (OpenClaw's SQLite secret store) is not \
                 readable by memoria: use an env, file or exec SecretRef"
                .into()),
            (None, _) => Err(format!(
                "no secrets.providers.{alias} with source {source:?} is configured"
            )),
        };
        match result {
            Ok(key) if key.trim().is_empty() => fail("it is empty".into()),
            Ok(key) => Ok(key),
            Err(why) => fail(why),
        }
    }
}

fn read_env(id: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    var(id)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("the environment variable {id} is unset or empty"))
}

/// A `file` provider's key: the file checked as OpenClaw checks it, then read.
fn read_file(path: &Path, single_value: bool, max_bytes: u64, id: &str) -> Result<String, String> {
    let shown = path.display();
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{shown}: {e}"))?;
    if meta.file_type().is_symlink() {
        return Err(format!(
            "{shown} is a symbolic link (a secret file must not be)"
        ));
    }
    if !meta.is_file() {
        return Err(format!("{shown} is not a regular file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() > 1 {
            return Err(format!(
                "{shown} must not be hardlinked ({} links): copy it to a new private file",
                meta.nlink()
            ));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "{shown} is readable or writable by others (mode {:o}): chmod 600 it",
                meta.mode() & 0o777
            ));
        }
    }
    if meta.len() > max_bytes {
        return Err(format!("{shown} is over maxBytes ({max_bytes})"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    if single_value {
        return match id {
            "value" => Ok(text.strip_suffix('\n').unwrap_or(&text).to_string()),
            _ => Err(format!(
                "a singleValue file is read with id \"value\", not {id:?}"
            )),
        };
    }
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{shown}: not JSON ({e})"))?;
    match json.pointer(id) {
        Some(serde_json::Value::String(key)) => Ok(key.clone()),
        Some(_) => Err(format!("{shown}: the value at {id} is not a string")),
        None => Err(format!("{shown}: nothing at the JSON pointer {id}")),
    }
}

/// An `exec` provider's run.
struct Exec<'a> {
    command: &'a Path,
    args: &'a [String],
    pass_env: &'a [String],
    env: &'a BTreeMap<String, String>,
    timeout: Duration,
    max_output: u64,
    json_only: bool,
}

impl Exec<'_> {
    fn read(
        &self,
        provider: &str,
        id: &str,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, String> {
        let shown = self.command.display();
        if !self.command.is_absolute() {
            return Err(format!("command {shown} is not an absolute path"));
        }
        let meta = std::fs::symlink_metadata(self.command).map_err(|e| format!("{shown}: {e}"))?;
        if meta.file_type().is_symlink() {
            return Err(format!(
                "command {shown} is a symbolic link: configure the real binary's path"
            ));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if meta.mode() & 0o022 != 0 {
                return Err(format!("command {shown} is group- or world-writable"));
            }
        }
        let mut command = Command::new(self.command);
        command
            .args(self.args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for name in self.pass_env {
            if let Some(value) = var(name) {
                command.env(name, value);
            }
        }
        command.envs(self.env);
        let mut child = command.spawn().map_err(|e| format!("{shown}: {e}"))?;
        let request = serde_json::json!({"protocolVersion": 1, "provider": provider, "ids": [id]});
        if let Some(mut stdin) = child.stdin.take() {
            // A command that does not read its input is its own business.
            let _ = stdin.write_all(request.to_string().as_bytes());
        }
        let mut stdout = child.stdout.take().ok_or("no stdout")?;
        let limit = self.max_output;
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            let read = (&mut stdout).take(limit + 1).read_to_end(&mut out);
            read.map(|_| out)
        });
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() >= self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "command {shown} did not answer within {} ms",
                        self.timeout.as_millis()
                    ));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return Err(format!("{shown}: {e}")),
            }
        };
        let out = reader
            .join()
            .map_err(|_| "reading the command's output failed".to_string())?
            .map_err(|e| format!("{shown}: {e}"))?;
        if !status.success() {
            return Err(format!("command {shown} failed ({status})"));
        }
        if out.len() as u64 > limit {
            return Err(format!(
                "command {shown} wrote more than maxOutputBytes ({limit})"
            ));
        }
        let text = String::from_utf8(out).map_err(|_| format!("command {shown}: not UTF-8"))?;
        let answer: serde_json::Value = match serde_json::from_str(&text) {
            Ok(answer) => answer,
            Err(_) if !self.json_only => return Ok(text.trim().to_string()),
            Err(e) => return Err(format!("command {shown} did not answer JSON ({e})")),
        };
        if let Some(key) = answer["values"][id].as_str() {
            return Ok(key.to_string());
        }
        match answer["errors"][id]["code"].as_str() {
            Some(code) => Err(format!("command {shown} answered {code} for {id:?}")),
            None => Err(format!("command {shown} gave no value for {id:?}")),
        }
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Literal(_) => f.write_str("Literal(<redacted>)"),
            Secret::Ref {
                source,
                provider,
                id,
            } => f
                .debug_struct("Ref")
                .field("source", source)
                .field("provider", provider)
                .field("id", id)
                .finish(),
        }
    }
}
