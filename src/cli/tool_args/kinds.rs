//! The kinds of tool argument: each reads from JSON (serde) with its own check, gives its
//! JSON schema (schemars) and, where the command line takes it too, parses from a string.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};

use memoria::config::ChatType;
use memoria::Corpus;

/// A whole number of at least 1: JSON `3` or `3.0`, `-n 3` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(pub usize);

const COUNT: &str = "a whole number of at least 1";

impl Count {
    fn new(n: f64) -> Option<Count> {
        (n.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(&n)).then_some(Count(n as usize))
    }
}

/// A number from 0 to 1: a score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fraction(pub f64);

const FRACTION: &str = "a number from 0 to 1";

impl Fraction {
    fn new(x: f64) -> Option<Fraction> {
        (0.0..=1.0).contains(&x).then_some(Fraction(x))
    }
}

/// Reads a number as `T` through `new`; anything else is refused as `expected`.
struct NumberVisitor<T> {
    new: fn(f64) -> Option<T>,
    expected: &'static str,
}

impl<T> Visitor<'_> for NumberVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expected)
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
        self.visit_f64(n as f64)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        self.visit_f64(n as f64)
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<T, E> {
        (self.new)(n).ok_or_else(|| E::invalid_value(de::Unexpected::Float(n), &self))
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Count, D::Error> {
        deserializer.deserialize_any(NumberVisitor {
            new: Count::new,
            expected: COUNT,
        })
    }
}

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Fraction, D::Error> {
        deserializer.deserialize_any(NumberVisitor {
            new: Fraction::new,
            expected: FRACTION,
        })
    }
}

/// `--max-results 3`: clap says `invalid value '0' for '--max-results <N>': expected …`.
impl FromStr for Count {
    type Err = String;

    fn from_str(text: &str) -> Result<Count, String> {
        text.parse()
            .ok()
            .and_then(Count::new)
            .ok_or_else(|| format!("expected {COUNT}"))
    }
}

impl FromStr for Fraction {
    type Err = String;

    fn from_str(text: &str) -> Result<Fraction, String> {
        text.parse()
            .ok()
            .and_then(Fraction::new)
            .ok_or_else(|| format!("expected {FRACTION}"))
    }
}

impl JsonSchema for Count {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Count".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1})
    }
}

impl JsonSchema for Fraction {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Fraction".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "number", "minimum": 0, "maximum": 1})
    }
}

/// A library enum a tool argument names by string: its names, in the order the schema and
/// the errors list them.
pub trait Named: Sized + 'static {
    /// Every accepted name.
    const NAMES: &'static [&'static str];
    /// The value a name stands for.
    fn parse(name: &str) -> Option<Self>;
}

impl Named for Corpus {
    const NAMES: &'static [&'static str] = &["memory", "sessions", "wiki", "all"];
    fn parse(name: &str) -> Option<Corpus> {
        Corpus::parse(name)
    }
}

impl Named for ChatType {
    const NAMES: &'static [&'static str] = &["direct", "group", "channel"];
    fn parse(name: &str) -> Option<ChatType> {
        ChatType::parse(name)
    }
}

/// One of `T`'s names: a string (`expected a string, got 7`), and one `T` knows
/// (`expected memory, sessions or all, got "mail"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice<T>(pub T);

/// `a, b or c`.
struct OneOf(&'static [&'static str]);

impl de::Expected for OneOf {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.0 {
            [] => Ok(()),
            [one] => f.write_str(one),
            [rest @ .., last] => write!(f, "{} or {last}", rest.join(", ")),
        }
    }
}

impl<'de, T: Named> Deserialize<'de> for Choice<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Choice<T>, D::Error> {
        let name = String::deserialize(deserializer)?;
        T::parse(&name)
            .map(Choice)
            .ok_or_else(|| de::Error::invalid_value(de::Unexpected::Str(&name), &OneOf(T::NAMES)))
    }
}

impl<T: Named> JsonSchema for Choice<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        T::NAMES.join("_").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "enum": T::NAMES})
    }
}

/// `true` or `false`; anything else is refused as `` `private`: expected true or false ``.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Flag, D::Error> {
        bool::deserialize(deserializer)
            .map(Flag)
            .map_err(|_| de::Error::custom("expected true or false"))
    }
}

impl JsonSchema for Flag {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Flag".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "boolean"})
    }
}
