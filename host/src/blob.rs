//! Bytes that travel in JSON: as a string when they are UTF-8 text, as
//! `{"base64": "…"}` otherwise.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Opaque bytes with a JSON form that stays readable for text.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Blob(pub Vec<u8>);

impl fmt::Debug for Blob {
    // Never print contents: a blob may be a caller's file or a guest's
    // output, and debug output ends up in logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Blob({} bytes)", self.0.len())
    }
}

impl Blob {
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Vec<u8>> for Blob {
    fn from(v: Vec<u8>) -> Self {
        Blob(v)
    }
}
impl From<&[u8]> for Blob {
    fn from(v: &[u8]) -> Self {
        Blob(v.to_vec())
    }
}
impl From<&str> for Blob {
    fn from(v: &str) -> Self {
        Blob(v.as_bytes().to_vec())
    }
}
impl From<String> for Blob {
    fn from(v: String) -> Self {
        Blob(v.into_bytes())
    }
}

/// The OpenAPI form: a string, or an object with one `base64` string.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Blob {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, OneOfBuilder, Type};
        OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some("the bytes, when they are UTF-8 text")),
            )
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .property(
                        "base64",
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .description(Some("the bytes, base64 (standard alphabet, padded)")),
                    )
                    .required("base64")
                    .additional_properties(Some(AdditionalProperties::FreeForm(false))),
            )
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Blob {}

impl Serialize for Blob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("base64", &STANDARD.encode(&self.0))?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Blob;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a string, or {"base64": "..."}"#)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Blob, E> {
                Ok(Blob(v.as_bytes().to_vec()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Blob, E> {
                Ok(Blob(v.into_bytes()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Blob, A::Error> {
                let mut out = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "base64" || out.is_some() {
                        return Err(de::Error::custom(r#"expected exactly one key, "base64""#));
                    }
                    let text: String = map.next_value()?;
                    let bytes = STANDARD
                        .decode(text.as_bytes())
                        .map_err(|_| de::Error::custom("invalid base64"))?;
                    out = Some(Blob(bytes));
                }
                out.ok_or_else(|| de::Error::custom(r#"missing key "base64""#))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_binary_round_trip() {
        for bytes in [b"hello".to_vec(), vec![0xff, 0x00, 0x80]] {
            let json = serde_json::to_string(&Blob(bytes.clone())).unwrap_or_default();
            let back: Blob = serde_json::from_str(&json).unwrap_or_default();
            assert_eq!(back.0, bytes);
        }
        assert_eq!(
            serde_json::to_string(&Blob::from("hi")).ok().as_deref(),
            Some("\"hi\"")
        );
    }

    #[test]
    fn rejects_bad_shapes() {
        assert!(serde_json::from_str::<Blob>(r#"{"hex": "00"}"#).is_err());
        assert!(serde_json::from_str::<Blob>(r#"{"base64": "!!"}"#).is_err());
        assert!(serde_json::from_str::<Blob>("12").is_err());
    }
}
