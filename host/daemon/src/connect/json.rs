//! Reading a Connect request's JSON: strictly (UTF-8, no duplicate keys,
//! bounded depth), then leniently by field as protobuf's JSON mapping
//! allows: lowerCamel or snake_case names, `null` or absent as the zero
//! value, 64-bit integers as numbers or decimal strings. Unknown fields are
//! ignored (Connect's rule; the protocol number is the gate).
//!
//! Errors name the field (from the schema) and what was expected, never a
//! value from the body.

use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;

/// A JSON value with duplicate keys refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Uint(u64),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Json>),
    Object(BTreeMap<String, Json>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_none<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Uint(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Int(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
                Ok(Json::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(Json::List(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(k) = map.next_key::<String>()? {
                    let v: Json = map.next_value()?;
                    if out.insert(k, v).is_some() {
                        // The key is the body's: not named.
                        return Err(A::Error::custom("an object has a duplicate key"));
                    }
                }
                Ok(Json::Object(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Why a request could not be read: always the caller's to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// Parses a request body: a JSON object, strictly.
pub fn parse(body: &[u8]) -> Result<Msg<'static>, Invalid> {
    let text = std::str::from_utf8(body).map_err(|_| Invalid("the body is not UTF-8".into()))?;
    let value: Json = serde_json::from_str(text).map_err(|e| {
        let what = if e.to_string().contains("duplicate key") {
            "an object has a duplicate key"
        } else {
            match e.classify() {
                serde_json::error::Category::Eof => "the body ends early",
                _ => "the body is not valid JSON",
            }
        };
        Invalid(format!("{what} (line {} column {})", e.line(), e.column()))
    })?;
    match value {
        Json::Object(map) => Ok(Msg::owned(map, "request")),
        _ => Err(Invalid("the body is not a JSON object".into())),
    }
}

/// The snake_case form of a lowerCamel name.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// One JSON object read as a protobuf message.
#[derive(Debug, Clone)]
pub struct Msg<'a> {
    map: std::borrow::Cow<'a, BTreeMap<String, Json>>,
    path: String,
}

impl<'a> Msg<'a> {
    fn owned(map: BTreeMap<String, Json>, path: &str) -> Msg<'static> {
        Msg {
            map: std::borrow::Cow::Owned(map),
            path: path.to_owned(),
        }
    }

    fn get(&self, name: &str) -> Result<Option<&Json>, Invalid> {
        let camel = self.map.get(name).filter(|v| **v != Json::Null);
        let snake_name = snake(name);
        let snaked = if snake_name != name {
            self.map.get(&snake_name).filter(|v| **v != Json::Null)
        } else {
            None
        };
        match (camel, snaked) {
            (Some(_), Some(_)) => Err(Invalid(format!(
                "{}.{name} is given twice (as {name} and {snake_name})",
                self.path
            ))),
            (a, b) => Ok(a.or(b)),
        }
    }

    fn bad(&self, name: &str, what: &str) -> Invalid {
        Invalid(format!("{}.{name} is not {what}", self.path))
    }

    /// Whether the field is present (and not `null`).
    pub fn has(&self, name: &str) -> Result<bool, Invalid> {
        Ok(self.get(name)?.is_some())
    }

    /// A string field.
    pub fn str(&self, name: &str) -> Result<String, Invalid> {
        match self.get(name)? {
            None => Ok(String::new()),
            Some(Json::Str(s)) => Ok(s.clone()),
            Some(_) => Err(self.bad(name, "a string")),
        }
    }

    /// An integer field within `lo..=hi`: a JSON number without a fraction,
    /// or a decimal string.
    pub fn int(&self, name: &str, lo: i128, hi: i128) -> Result<i128, Invalid> {
        let bad = || self.bad(name, &format!("an integer from {lo} to {hi}"));
        let n: i128 = match self.get(name)? {
            None => 0,
            Some(Json::Uint(v)) => i128::from(*v),
            Some(Json::Int(v)) => i128::from(*v),
            Some(Json::Float(f)) => {
                if !f.is_finite() || f.fract() != 0.0 || f.abs() > 1.8e19 {
                    return Err(bad());
                }
                *f as i128
            }
            Some(Json::Str(s)) => {
                let digits = s.strip_prefix('-').unwrap_or(s);
                if digits.is_empty()
                    || digits.len() > 20
                    || !digits.bytes().all(|b| b.is_ascii_digit())
                {
                    return Err(bad());
                }
                s.parse::<i128>().map_err(|_| bad())?
            }
            Some(_) => return Err(bad()),
        };
        if n < lo || n > hi {
            return Err(bad());
        }
        Ok(n)
    }

    /// A message field, `None` when absent.
    pub fn msg(&self, name: &str) -> Result<Option<Msg<'_>>, Invalid> {
        match self.get(name)? {
            None => Ok(None),
            Some(Json::Object(m)) => Ok(Some(Msg {
                map: std::borrow::Cow::Borrowed(m),
                path: format!("{}.{name}", self.path),
            })),
            Some(_) => Err(self.bad(name, "an object")),
        }
    }

    fn list(&self, name: &str) -> Result<&[Json], Invalid> {
        match self.get(name)? {
            None => Ok(&[]),
            Some(Json::List(l)) => Ok(l),
            Some(_) => Err(self.bad(name, "a list")),
        }
    }

    /// A repeated string field.
    pub fn strs(&self, name: &str) -> Result<Vec<String>, Invalid> {
        self.list(name)?
            .iter()
            .map(|v| match v {
                Json::Str(s) => Ok(s.clone()),
                _ => Err(self.bad(name, "a list of strings")),
            })
            .collect()
    }

    /// The number of entries of a repeated field (without reading them).
    pub fn count(&self, name: &str) -> Result<usize, Invalid> {
        Ok(self.list(name)?.len())
    }

    /// A repeated message field.
    pub fn msgs(&self, name: &str) -> Result<Vec<Msg<'_>>, Invalid> {
        self.list(name)?
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Json::Object(m) => Ok(Msg {
                    map: std::borrow::Cow::Borrowed(m),
                    path: format!("{}.{name}[{i}]", self.path),
                }),
                _ => Err(self.bad(name, "a list of objects")),
            })
            .collect()
    }

    /// A repeated number field (protobuf `double`: numbers, or the strings
    /// `NaN`, `Infinity`, `-Infinity` and decimal numbers).
    pub fn floats(&self, name: &str) -> Result<Vec<f64>, Invalid> {
        self.list(name)?
            .iter()
            .map(|v| as_float(v).ok_or_else(|| self.bad(name, "a list of numbers")))
            .collect()
    }

    /// A number field (protobuf `double`).
    pub fn float(&self, name: &str) -> Result<f64, Invalid> {
        match self.get(name)? {
            None => Ok(0.0),
            Some(v) => as_float(v).ok_or_else(|| self.bad(name, "a number")),
        }
    }
}

fn as_float(v: &Json) -> Option<f64> {
    match v {
        Json::Uint(u) => Some(*u as f64),
        Json::Int(i) => Some(*i as f64),
        Json::Float(f) => Some(*f),
        Json::Str(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            s => s.parse::<f64>().ok().filter(|f| f.is_finite()),
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_either_case_nulls_and_numbers_as_strings() {
        let m = parse(br#"{"timeout_ms": "1500", "minimumIsolation": null, "traceId": "t"}"#)
            .expect("parses");
        assert_eq!(m.int("timeoutMs", 0, 100_000).expect("int"), 1500);
        assert_eq!(m.str("minimumIsolation").expect("str"), "");
        assert_eq!(m.str("traceId").expect("str"), "t");
        assert!(!m.has("javascript").expect("has"));
    }

    #[test]
    fn duplicates_overflow_and_wrong_types_are_refused_without_values() {
        let e = parse(br#"{"protocol": 4, "protocol": 4}"#).expect_err("dup");
        assert!(e.0.contains("duplicate key"), "{e}");
        let m =
            parse(br#"{"timeoutMs": 99999999999999999999999, "a": "SECRET", "b_c": 1, "bC": 2}"#)
                .expect("parses");
        assert!(m.int("timeoutMs", 0, i32::MAX.into()).is_err());
        let e = m.int("a", 0, 10).expect_err("not a number");
        assert!(!e.0.contains("SECRET"), "{e}");
        assert!(m.str("bC").is_err(), "both spellings of one field");
        assert!(parse(b"[1]").is_err());
        assert!(parse(b"{\"x\": \"\xff\"}").is_err());
        let m = parse(br#"{"n": "18446744073709551616", "f": 1.5}"#).expect("parses");
        assert!(m.int("n", 0, u64::MAX.into()).is_err());
        assert!(m.int("f", 0, 10).is_err());
    }
}
