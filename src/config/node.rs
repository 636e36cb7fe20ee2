//! A typed walker over `serde_json::Value`: every read knows its full key path, so every
//! error names it.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::ConfigError;
use super::secret::Secret;

/// A value and its key path, for path-precise errors.
#[derive(Clone)]
pub(super) struct Node<'a> {
    pub(super) path: String,
    pub(super) value: &'a Value,
    /// Where unknown keys are reported (shared by every node of one parse).
    pub(super) warnings: &'a RefCell<Vec<String>>,
}

impl<'a> Node<'a> {
    pub(super) fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(super) fn type_error(&self, expected: &str) -> ConfigError {
        ConfigError::invalid(
            &self.path,
            format!("expected {expected}, got {}", describe(self.value)),
        )
    }

    pub(super) fn as_object(&self) -> Result<&'a Map<String, Value>, ConfigError> {
        self.value
            .as_object()
            .ok_or_else(|| self.type_error("an object"))
    }

    /// The child `key`; `None` when absent or `null`. `self` must be an object.
    pub(super) fn child(&self, key: &str) -> Result<Option<Node<'a>>, ConfigError> {
        Ok(match self.as_object()?.get(key) {
            None | Some(Value::Null) => None,
            Some(value) => Some(Node {
                path: self.key_path(key),
                value,
                warnings: self.warnings,
            }),
        })
    }

    /// Reports keys not in `allowed` as warnings: a key from a newer OpenClaw release (or a
    /// typo) is ignored and named in `status`, never a reason to refuse the whole config.
    pub(super) fn check_keys(&self, allowed: &[&str]) -> Result<(), ConfigError> {
        let unknown = self
            .as_object()?
            .keys()
            .filter(|k| !allowed.contains(&k.as_str()));
        for key in unknown {
            let why = match suggest(key, allowed) {
                Some(near) => format!("did you mean `{near}`?"),
                None => "a newer OpenClaw setting, or a typo?".to_string(),
            };
            self.warnings.borrow_mut().push(format!(
                "{}: unknown key, ignored ({why})",
                self.key_path(key)
            ));
        }
        Ok(())
    }

    /// The object `key`, type checked; no key check.
    pub(super) fn object(&self, key: &str) -> Result<Option<Node<'a>>, ConfigError> {
        match self.child(key)? {
            Some(node) => {
                node.as_object()?;
                Ok(Some(node))
            }
            None => Ok(None),
        }
    }

    /// The object `key`, type checked, whose keys must all be in `allowed`.
    pub(super) fn section(
        &self,
        key: &str,
        allowed: &[&str],
    ) -> Result<Option<Node<'a>>, ConfigError> {
        let node = self.object(key)?;
        if let Some(node) = &node {
            node.check_keys(allowed)?;
        }
        Ok(node)
    }

    pub(super) fn get_bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        self.child(key)?
            .map(|n| n.value.as_bool().ok_or_else(|| n.type_error("a boolean")))
            .transpose()
    }

    pub(super) fn get_f64(&self, key: &str) -> Result<Option<f64>, ConfigError> {
        self.child(key)?
            .map(|n| n.value.as_f64().ok_or_else(|| n.type_error("a number")))
            .transpose()
    }

    /// An integer; fractions are floored, out-of-range values saturate.
    pub(super) fn get_int(&self, key: &str) -> Result<Option<i64>, ConfigError> {
        self.child(key)?
            .map(|n| match n.value {
                Value::Number(num) => Ok(num
                    .as_i64()
                    .or_else(|| num.as_u64().map(|_| i64::MAX))
                    .unwrap_or_else(|| num.as_f64().unwrap_or(0.0).floor() as i64)),
                _ => Err(n.type_error("an integer")),
            })
            .transpose()
    }

    pub(super) fn get_string(&self, key: &str) -> Result<Option<String>, ConfigError> {
        self.child(key)?.map(|n| n.string()).transpose()
    }

    /// An API key: a string (blank = unset; `${NAME}` / `$NAME` is an env ref), or a
    /// SecretRef object `{source, provider?, id}` with `source` one of `env`, `file`,
    /// `exec`, `store`.
    pub(super) fn get_secret(&self, key: &str) -> Result<Option<Secret>, ConfigError> {
        let Some(node) = self.child(key)? else {
            return Ok(None);
        };
        if let Some(key) = node.value.as_str() {
            // OpenClaw's shorthand for an env ref: `${OPENAI_API_KEY}` or `$OPENAI_API_KEY`.
            let name = key.trim().strip_prefix('$').map(|n| {
                n.strip_prefix('{')
                    .and_then(|n| n.strip_suffix('}'))
                    .unwrap_or(n)
            });
            if let Some(name) = name.filter(|n| is_env_name(n)) {
                return Ok(Some(Secret::Ref {
                    source: "env".into(),
                    provider: None,
                    id: name.to_string(),
                }));
            }
            return Ok((!key.trim().is_empty()).then(|| Secret::Literal(key.to_string())));
        }
        if !node.value.is_object() {
            return Err(node.type_error("a string or a SecretRef object"));
        }
        node.check_keys(&["source", "provider", "id"])?;
        let source = node
            .get_choice("source", super::secret::SECRET_SOURCES)?
            .ok_or_else(|| ConfigError::invalid(&node.key_path("source"), "missing"))?;
        let id = node
            .get_nonblank("id")?
            .ok_or_else(|| ConfigError::invalid(&node.key_path("id"), "missing"))?;
        Ok(Some(Secret::Ref {
            source: source.to_string(),
            provider: node.get_nonblank("provider")?,
            id,
        }))
    }

    pub(super) fn get_nonblank(&self, key: &str) -> Result<Option<String>, ConfigError> {
        Ok(self.get_string(key)?.filter(|s| !s.trim().is_empty()))
    }

    pub(super) fn string(&self) -> Result<String, ConfigError> {
        self.value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.type_error("a string"))
    }

    pub(super) fn choice<T: Copy>(&self, choices: &[(&str, T)]) -> Result<T, ConfigError> {
        let expected = || {
            let names: Vec<String> = choices.iter().map(|(n, _)| format!("\"{n}\"")).collect();
            format!("one of {}", names.join(", "))
        };
        let s = self
            .value
            .as_str()
            .ok_or_else(|| self.type_error(&expected()))?;
        choices
            .iter()
            .find(|(name, _)| *name == s)
            .map(|(_, v)| *v)
            .ok_or_else(|| self.type_error(&expected()))
    }

    pub(super) fn get_choice<T: Copy>(
        &self,
        key: &str,
        choices: &[(&str, T)],
    ) -> Result<Option<T>, ConfigError> {
        self.child(key)?.map(|n| n.choice(choices)).transpose()
    }

    /// The elements of the array `key`, each with its `[i]` path.
    pub(super) fn get_array(&self, key: &str) -> Result<Option<Vec<Node<'a>>>, ConfigError> {
        let Some(node) = self.child(key)? else {
            return Ok(None);
        };
        let items = node
            .value
            .as_array()
            .ok_or_else(|| node.type_error("an array"))?;
        Ok(Some(
            items
                .iter()
                .enumerate()
                .map(|(i, value)| Node {
                    path: format!("{}[{i}]", node.path),
                    value,
                    warnings: self.warnings,
                })
                .collect(),
        ))
    }

    pub(super) fn get_string_array(&self, key: &str) -> Result<Option<Vec<String>>, ConfigError> {
        self.get_array(key)?
            .map(|items| items.iter().map(Node::string).collect())
            .transpose()
    }

    pub(super) fn get_string_map(
        &self,
        key: &str,
    ) -> Result<Option<BTreeMap<String, String>>, ConfigError> {
        let Some(node) = self.object(key)? else {
            return Ok(None);
        };
        let mut map = BTreeMap::new();
        for (k, value) in node.as_object()? {
            let entry = Node {
                path: node.key_path(k),
                value,
                warnings: self.warnings,
            };
            map.insert(k.clone(), entry.string()?);
        }
        Ok(Some(map))
    }
}

/// How a value appears in an error message: scalars as JSON (long strings shortened),
/// containers by kind.
pub(super) fn describe(value: &Value) -> String {
    const MAX_CHARS: usize = 40;
    match value {
        Value::String(s) if s.chars().count() > MAX_CHARS => {
            let short: String = s.chars().take(MAX_CHARS).collect();
            format!("{}…", Value::String(short))
        }
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
        other => other.to_string(),
    }
}

/// An environment variable name as OpenClaw's env refs allow: `[A-Z][A-Z0-9_]{0,127}`.
fn is_env_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && b[0].is_ascii_uppercase()
        && b.iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
}

/// The one known key close to `key` (a typo): the nearest by edit distance, ignoring case,
/// within a third of the key's length (at least 1); `None` when none is, or two are.
pub(super) fn suggest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let key = key.to_lowercase();
    let limit = (key.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    let mut tied = false;
    for &candidate in known {
        let d = edit_distance(&key, &candidate.to_lowercase());
        if d > limit {
            continue;
        }
        match best {
            Some((b, _)) if d > b => {}
            Some((b, _)) if d == b => tied = true,
            _ => {
                best = Some((d, candidate));
                tied = false;
            }
        }
    }
    best.filter(|_| !tied).map(|(_, k)| k)
}

/// Levenshtein distance over characters, with a swap of two neighbours counting as one
/// edit (`maxRseults`).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}
