//! serde reading a tool call's arguments, a JSON object, with errors that name their key:
//! a value of the wrong kind is said with its key and the value, `` `maxResults`: expected a
//! whole number of at least 1, got 0 ``.

use std::fmt;

use serde::de::value::SeqDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::Deserializer;
use serde_json::{Map, Value};

/// Reads `arguments` as `T` (a struct of the tool's arguments).
pub(super) fn read<T: DeserializeOwned>(arguments: &Map<String, Value>) -> Result<T, String> {
    T::deserialize(Json::Object(arguments)).map_err(|err| err.to_string())
}

/// Why arguments were refused: a value of the wrong kind (said later with its key and the
/// value), or a whole message.
#[derive(Debug)]
enum ArgError {
    Expected(String),
    Message(String),
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            ArgError::Expected(expected) => write!(f, "expected {expected}"),
            ArgError::Message(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ArgError {}

impl de::Error for ArgError {
    fn custom<T: fmt::Display>(message: T) -> ArgError {
        ArgError::Message(message.to_string())
    }

    fn invalid_type(_: de::Unexpected, expected: &dyn de::Expected) -> ArgError {
        ArgError::Expected(expected.to_string())
    }

    fn invalid_value(_: de::Unexpected, expected: &dyn de::Expected) -> ArgError {
        ArgError::Expected(expected.to_string())
    }

    fn missing_field(field: &'static str) -> ArgError {
        ArgError::Message(format!("`{field}` is required"))
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> ArgError {
        ArgError::Message(format!(
            "unknown argument `{field}` (expected {})",
            expected.join(", ")
        ))
    }
}

/// A JSON value read by serde with [`ArgError`]s, an object's keys named in them.
#[derive(Clone, Copy)]
enum Json<'a> {
    Value(&'a Value),
    Object(&'a Map<String, Value>),
}

/// What an absent key reads as.
static NULL: Value = Value::Null;

impl<'a> Json<'a> {
    fn object(self) -> Option<&'a Map<String, Value>> {
        match self {
            Json::Object(object) | Json::Value(Value::Object(object)) => Some(object),
            Json::Value(_) => None,
        }
    }
}

impl<'de> Deserializer<'de> for Json<'_> {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        match self {
            Json::Object(object) | Json::Value(Value::Object(object)) => {
                let keys = object.keys().map(String::as_str).collect();
                visitor.visit_map(Entries::new(object, keys))
            }
            Json::Value(Value::Null) => visitor.visit_unit(),
            Json::Value(Value::Bool(b)) => visitor.visit_bool(*b),
            Json::Value(Value::Number(n)) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(n), _, _) => visitor.visit_u64(n),
                (_, Some(n), _) => visitor.visit_i64(n),
                (_, _, Some(n)) => visitor.visit_f64(n),
                _ => Err(ArgError::Expected("a number".into())),
            },
            Json::Value(Value::String(text)) => visitor.visit_str(text),
            Json::Value(Value::Array(items)) => {
                visitor.visit_seq(SeqDeserializer::new(items.iter().map(Json::Value)))
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        match self {
            Json::Value(Value::Null) => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    /// The arguments of a tool: a key that is not one of `fields` is refused first, then
    /// every field is read in the order the type declares it, an absent one as null. So the
    /// first error is the one a reader of the type expects, and an optional argument is an
    /// `Option` (absent and null read the same).
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        let Some(object) = self.object() else {
            return self.deserialize_any(visitor);
        };
        if let Some(key) = object.keys().find(|key| !fields.contains(&key.as_str())) {
            return Err(de::Error::unknown_field(key, fields));
        }
        visitor.visit_map(Entries::new(object, fields.to_vec()))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

impl<'de, 'a> IntoDeserializer<'de, ArgError> for Json<'a> {
    type Deserializer = Json<'a>;

    fn into_deserializer(self) -> Json<'a> {
        self
    }
}

/// An object's values under `keys`, in that order; a value's error is said with its key.
struct Entries<'a> {
    object: &'a Map<String, Value>,
    keys: std::vec::IntoIter<&'a str>,
    current: Option<&'a str>,
}

impl<'a> Entries<'a> {
    fn new(object: &'a Map<String, Value>, keys: Vec<&'a str>) -> Entries<'a> {
        Entries {
            object,
            keys: keys.into_iter(),
            current: None,
        }
    }
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ArgError> {
        let Some(key) = self.keys.next() else {
            return Ok(None);
        };
        self.current = Some(key);
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ArgError> {
        let Some(key) = self.current.take() else {
            return Err(ArgError::Message("a value without its key".into()));
        };
        let value = self.object.get(key).unwrap_or(&NULL);
        seed.deserialize(Json::Value(value))
            .map_err(|err| match err {
                // Null is an absent key: refused only where the key is required.
                _ if value.is_null() => ArgError::Message(format!("`{key}` is required")),
                ArgError::Expected(expected) => {
                    ArgError::Message(format!("`{key}`: expected {expected}, got {value}"))
                }
                ArgError::Message(message) => ArgError::Message(format!("`{key}`: {message}")),
            })
    }
}
