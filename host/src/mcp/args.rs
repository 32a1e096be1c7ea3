//! A tool call's arguments, parsed strictly.
//!
//! Guarantees: unknown fields and wrong types are MCP errors naming the
//! field (`invalid_params`), and the server keeps serving; code longer
//! than [`MAX_CODE_BYTES`] is refused before it is copied anywhere; at
//! most [`MAX_FILES`] files per call (their paths are checked by the
//! sandbox, as for every request).

use super::{MAX_CODE_BYTES, MAX_FILES};
use crate::blob::Blob;
use crate::run::{InputFile, Language};
use rmcp::ErrorData;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RunCodeArgs {
    pub(super) language: String,
    pub(super) code: String,
    #[serde(default)]
    pub(super) files: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) stdin: Option<String>,
    #[serde(default)]
    pub(super) grants: Vec<String>,
    #[serde(default)]
    pub(super) timeout_ms: Option<u64>,
    #[serde(default)]
    pub(super) guest: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OpenSessionArgs {
    pub(super) language: String,
    #[serde(default)]
    pub(super) guest: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RunCellArgs {
    pub(super) session: String,
    pub(super) code: String,
    #[serde(default)]
    pub(super) files: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CloseSessionArgs {
    pub(super) session: String,
}

/// An `invalid_params` error saying `message`.
fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SnapshotSessionArgs {
    pub session: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResumeSessionArgs {
    pub snapshot: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ForkSessionArgs {
    pub session: String,
    #[serde(default)]
    pub count: Option<usize>,
}

/// The arguments of a call to `tool`.
pub(super) fn parse<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: Option<serde_json::Map<String, Value>>,
) -> Result<T, ErrorData> {
    serde_json::from_value(Value::Object(args.unwrap_or_default())).map_err(|e| {
        // serde's message names the field and the expected type; the
        // values it quotes are dropped (no answer repeats the request).
        invalid(format!(
            "{tool}: {}",
            crate::redact::serde_message(&e.to_string())
        ))
    })
}

/// The language `name` names.
pub(super) fn language(name: &str) -> Result<Language, ErrorData> {
    name.parse::<Language>()
        .map_err(|_| invalid("language: expected \"python\", \"javascript\" or \"sh\""))
}

/// Refuses code longer than [`MAX_CODE_BYTES`].
pub(super) fn check_code(code: &str) -> Result<(), ErrorData> {
    if code.len() > MAX_CODE_BYTES {
        return Err(invalid(format!(
            "code: {} bytes, more than the {MAX_CODE_BYTES} accepted",
            code.len()
        )));
    }
    Ok(())
}

/// The files a call places, at most [`MAX_FILES`].
pub(super) fn input_files(files: BTreeMap<String, String>) -> Result<Vec<InputFile>, ErrorData> {
    if files.len() > MAX_FILES {
        return Err(invalid(format!(
            "files: {} given, at most {MAX_FILES}",
            files.len()
        )));
    }
    // Paths are checked by the sandbox (the same rules as every request).
    Ok(files
        .into_iter()
        .map(|(path, content)| InputFile {
            path,
            content: Blob::from(content),
        })
        .collect())
}

/// The guest a request names: `standard` and `scientific` pass through as
/// given (an absent one is the operator's default).
pub(super) fn guest_name(guest: Option<String>) -> Option<String> {
    guest
}
