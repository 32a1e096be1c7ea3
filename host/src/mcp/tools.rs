//! The tools' descriptions and input schemas.
//!
//! Guarantees: a schema names only the languages and guests the backend
//! really offers (both languages when none is built, so a call gets the
//! sandbox's own refusal), the isolation tier runs get, and the
//! operator's wall-time cap.

use super::backend::{Backend, Offered};
use rmcp::model::Tool;
use serde_json::{Value, json};
use std::sync::Arc;

/// The tools, with schemas naming only the guests `b` really has.
pub fn tools_of(b: &dyn Backend) -> Vec<Tool> {
    tools(&b.offered(), &b.isolation(), b.max_wall_time_ms())
}

/// The guests' language names and whether a scientific guest is there.
fn languages(offered: &[Offered]) -> (Vec<&'static str>, bool) {
    let mut langs: Vec<&'static str> = offered.iter().map(|o| o.language).collect();
    langs.sort_unstable();
    langs.dedup();
    if langs.is_empty() {
        // No guest is built: the schema still names the languages, and a
        // call is answered with the sandbox's own refusal.
        langs = vec!["javascript", "python"];
    }
    let scientific = offered.iter().any(|o| o.guest == Some("scientific"));
    (langs, scientific)
}

/// `v`'s fields as a schema object (empty for anything else).
fn object(v: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    })
}

/// The four tools, for the guests `offered` at `iso`, within `max_ms`.
fn tools(offered: &[Offered], iso: &crate::tier::Isolation, max_ms: u64) -> Vec<Tool> {
    let (langs, scientific) = languages(offered);
    let tier = format!(
        "Runs at isolation tier `{}` (provider {}); every answer names the tier it ran at.",
        iso.tier, iso.provider
    );
    let guest_schema = if scientific {
        json!({"type": "string", "enum": ["standard", "scientific"],
            "description": "For python: `scientific` runs CPython with numpy, pandas, scipy, scikit-learn, statsmodels and matplotlib already imported (figures left open come back as PNG images); `standard` is a smaller, faster CPython with the standard library only. Absent: the operator's default."})
    } else {
        json!({"type": "string", "enum": ["standard"], "description": "The interpreter guest; only `standard` is present on this host."})
    };
    let files_schema = json!({"type": "object", "additionalProperties": {"type": "string"},
        "description": "Files to place in the working directory first: relative path → UTF-8 contents (no `..`, no absolute paths). Files the code writes under `out/` come back as artifacts."});
    let run_code = json!({
        "type": "object",
        "properties": {
            "language": {"type": "string", "enum": langs, "description": "The language of `code`."},
            "code": {"type": "string", "description": "The program. Python and JavaScript cells print the value of a trailing expression, as a notebook does. `sh` is a POSIX shell with its utilities built in (grep, sed, find, tar, awk, …; `python3` and `node` run the interpreters above), over the same files; no host program runs."},
            "files": files_schema,
            "stdin": {"type": "string", "description": "Standard input for the program."},
            "grants": {"type": "array", "items": {"type": "string"}, "description": "Names of the operator's grant profiles this run may call (an HTTP API through the host, which adds the credential; the code never sees it). Python: `import plimsoll; plimsoll.get(name, path)`; JavaScript: `plimsoll.get(name, path)`."},
            "timeout_ms": {"type": "integer", "minimum": 1, "description": format!("Wall-time limit in milliseconds; at most {max_ms} (the default), a longer one is cut to it.")},
            "guest": guest_schema,
        },
        "required": ["language", "code"],
        "additionalProperties": false,
    });
    let open_session = json!({
        "type": "object",
        "properties": {
            "language": {"type": "string", "enum": langs, "description": "The session's language."},
            "guest": guest_schema,
        },
        "required": ["language"],
        "additionalProperties": false,
    });
    let run_cell = json!({
        "type": "object",
        "properties": {
            "session": {"type": "string", "description": "The id `open_session` returned."},
            "code": {"type": "string", "description": "The cell. Names defined by earlier cells are still there; the trailing expression's value is printed. (In an `sh` session each cell is a line of a persistent shell: files, the working directory and exported variables carry over.)"},
            "files": files_schema,
        },
        "required": ["session", "code"],
        "additionalProperties": false,
    });
    let close_session = json!({
        "type": "object",
        "properties": {"session": {"type": "string"}},
        "required": ["session"],
        "additionalProperties": false,
    });
    let snapshot_session = json!({
        "type": "object",
        "properties": {"session": {"type": "string", "description": "The id `open_session` returned."}},
        "required": ["session"],
        "additionalProperties": false,
    });
    let resume_session = json!({
        "type": "object",
        "properties": {"snapshot": {"type": "string", "description": "The id `snapshot_session` returned."}},
        "required": ["snapshot"],
        "additionalProperties": false,
    });
    let fork_session = json!({
        "type": "object",
        "properties": {
            "session": {"type": "string", "description": "The id `open_session` returned."},
            "count": {"type": "integer", "minimum": 1, "maximum": 8, "description": "How many new sessions (default 1)."},
        },
        "required": ["session"],
        "additionalProperties": false,
    });
    vec![
        Tool::new(
            "run_code",
            format!(
                "Run code in a fresh, isolated WebAssembly sandbox and return its status, stdout, stderr, trailing value and artifacts. Nothing persists between calls; there is no network except the grants named. Languages here: {}. {tier}",
                langs.join(", ")
            ),
            object(run_code),
        ),
        Tool::new(
            "open_session",
            format!(
                "Open a session: an interpreter whose globals and files persist across `run_cell` calls, like a notebook kernel. It is closed by `close_session`, when idle too long, or when this connection ends. {tier}"
            ),
            object(open_session),
        ),
        Tool::new(
            "run_cell",
            "Run a cell in a session opened by `open_session`. An exception keeps the session; a timeout or memory exhaustion may end its interpreter.",
            object(run_cell),
        ),
        Tool::new(
            "close_session",
            "Close a session opened by `open_session`.",
            object(close_session),
        ),
        Tool::new(
            "snapshot_session",
            "Snapshot a session: its exact state (variables, imported modules, generators, files) kept as a snapshot id. The session goes on unchanged; `resume_session` opens a new session from the id, even on another connection, later.",
            object(snapshot_session),
        ),
        Tool::new(
            "resume_session",
            "Open a new session from a snapshot id `snapshot_session` returned: it starts exactly where the snapshot was taken (no cell is run again).",
            object(resume_session),
        ),
        Tool::new(
            "fork_session",
            "Fork a session: one snapshot, then `count` new sessions from it, each independent of the others and of the original (to try several plans from one point).",
            object(fork_session),
        ),
    ]
}
