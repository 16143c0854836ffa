//! A lean JSON tree for checking responses under load: strings borrow from the response body
//! where they hold no escapes, and objects are plain lists of entries. Building a
//! `serde_json::Value` (owned strings, an index map per object) for every response cost the
//! load generator more CPU than the fastest server spent answering (docs/benchmarks.md).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

#[derive(Debug, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    pub fn parse(bytes: &'a [u8]) -> serde_json::Result<Json<'a>> {
        serde_json::from_slice(bytes)
    }

    /// The value of `key` when this is an object that has it (the first, if repeated).
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at a JSON pointer made of object keys (`/a/b`); `""` is the value itself.
    pub fn pointer(&self, pointer: &str) -> Option<&Json<'a>> {
        pointer
            .split('/')
            .skip(1)
            .try_fold(self, |value, key| value.get(key))
    }

    pub fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// Whether this is the same scalar as `value` (ids: strings or numbers).
    pub fn same_scalar(&self, value: &Value) -> bool {
        match (self, value) {
            (Json::String(a), Value::String(b)) => a == b,
            (Json::Number(a), Value::Number(b)) => a == b,
            (Json::Bool(a), Value::Bool(b)) => a == b,
            (Json::Null, Value::Null) => true,
            _ => false,
        }
    }
}

impl fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Number(n) => write!(f, "{n}"),
            Json::String(s) => write!(f, "{}", Value::from(s.as_ref())),
            Json::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Json::Object(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:{v}", Value::from(k.as_ref()))?;
                }
                f.write_str("}")
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

/// A key that borrows from the input when it can.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match deserializer.deserialize_str(JsonVisitor)? {
            Json::String(s) => Ok(Key(s)),
            _ => Err(serde::de::Error::custom(
                "an object key that is not a string",
            )),
        }
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some((Key(k), v)) = map.next_entry()? {
            entries.push((k, v));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_borrows_and_finds() {
        let text = br#"{"data":{"a":[{"id":"x1","n":-3,"t":"q\"uote"},{"id":7,"f":1.5}],"c":null,"b":true}}"#;
        let json = Json::parse(text).unwrap();
        let list = json.pointer("/data/a").and_then(Json::as_array).unwrap();
        assert_eq!(list.len(), 2);
        assert!(matches!(
            list[0].get("id"),
            Some(Json::String(Cow::Borrowed("x1")))
        ));
        assert_eq!(list[0].get("n").and_then(Json::as_i64), Some(-3));
        assert_eq!(list[0].get("t").and_then(Json::as_str), Some("q\"uote"));
        assert!(list[1].get("id").unwrap().same_scalar(&Value::from(7)));
        assert!(!list[1].get("id").unwrap().same_scalar(&Value::from("7")));
        assert!(json.pointer("/data/c").unwrap().is_null());
        assert_eq!(json.pointer("/data/b"), Some(&Json::Bool(true)));
        assert_eq!(json.pointer("/data/missing"), None);
        let back: Value = serde_json::from_str(&json.to_string()).unwrap();
        assert_eq!(back, serde_json::from_slice::<Value>(text).unwrap());
    }
}
