//! The envelope: every resource limit of one run.
//!
//! The operator configures an [`Envelope`]; a request may carry [`Limits`]
//! that lower individual values. A request can never raise a limit: a value
//! above the operator's is a typed error, not a silent clamp, so a caller
//! learns that it asked for more than it may have.

use serde::{Deserialize, Serialize};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// The default of [`Envelope::open_files`].
pub const DEFAULT_OPEN_FILES: u64 = 1024;

fn default_open_files() -> u64 {
    DEFAULT_OPEN_FILES
}

/// The resource limits of one run.
///
/// Every field is a hard cap that the host enforces; see `SECURITY.md` for
/// how each one is enforced and its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// Wall-clock time for the whole run, in milliseconds.
    pub wall_time_ms: u64,
    /// CPU budget in wasmtime fuel units (roughly one per wasm instruction).
    /// Enforced only when the engine has fuel enabled.
    pub fuel: u64,
    /// Total linear memory of all the guest's memories, in bytes.
    pub memory_bytes: u64,
    /// Elements per table.
    pub table_elements: u64,
    /// Core and component instances the guest may create.
    pub instances: u64,
    /// Captured stdout, in bytes; more ends the run as `output_truncated`.
    pub stdout_bytes: u64,
    /// Captured stderr, in bytes; more ends the run as `output_truncated`.
    pub stderr_bytes: u64,
    /// An interpreter's `result` value, in bytes; a longer value is cut and
    /// the run ends as `output_truncated`.
    pub result_bytes: u64,
    /// Bytes of stdin the request may carry.
    pub stdin_bytes: u64,
    /// Bytes of code the request may carry (interpreters).
    pub code_bytes: u64,
    /// Number of files the request may place in the workspace.
    pub files: u64,
    /// Total bytes of the files the request places in the workspace.
    pub file_bytes: u64,
    /// Bytes the whole workspace may hold while the guest runs.
    pub workspace_bytes: u64,
    /// Directory entries the whole workspace may hold while the guest runs.
    pub workspace_entries: u64,
    /// Files, directories and streams of the workspace the guest may hold
    /// open at once; past it an open fails (the guest's call, not the run).
    #[serde(default = "default_open_files")]
    pub open_files: u64,
    /// Number of artifacts returned from `/work/out`.
    pub artifact_files: u64,
    /// Total bytes of artifacts returned from `/work/out`.
    pub artifact_bytes: u64,
    /// Broker calls per run.
    pub broker_calls: u64,
    /// Bytes of one broker request body.
    pub request_bytes: u64,
    /// Bytes of one broker response body.
    pub response_bytes: u64,
    /// Time one broker call may take, in milliseconds (always also bounded
    /// by what is left of the run's wall time).
    pub broker_call_ms: u64,
}

impl Default for Envelope {
    /// Conservative defaults for a shared host.
    fn default() -> Self {
        Envelope {
            wall_time_ms: 10_000,
            fuel: 20_000_000_000,
            memory_bytes: 256 * MIB,
            table_elements: 100_000,
            instances: 64,
            stdout_bytes: MIB,
            stderr_bytes: MIB,
            result_bytes: MIB,
            stdin_bytes: 8 * MIB,
            code_bytes: MIB,
            files: 64,
            file_bytes: 16 * MIB,
            workspace_bytes: 64 * MIB,
            workspace_entries: 4_096,
            open_files: DEFAULT_OPEN_FILES,
            artifact_files: 64,
            artifact_bytes: 16 * MIB,
            broker_calls: 256,
            request_bytes: MIB,
            response_bytes: 4 * MIB,
            broker_call_ms: 10_000,
        }
    }
}

/// A request's lowering of the envelope. Absent fields keep the operator's
/// value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub wall_time_ms: Option<u64>,
    pub fuel: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub table_elements: Option<u64>,
    pub instances: Option<u64>,
    pub stdout_bytes: Option<u64>,
    pub stderr_bytes: Option<u64>,
    pub result_bytes: Option<u64>,
    pub stdin_bytes: Option<u64>,
    pub code_bytes: Option<u64>,
    pub files: Option<u64>,
    pub file_bytes: Option<u64>,
    pub workspace_bytes: Option<u64>,
    pub workspace_entries: Option<u64>,
    #[serde(default)]
    pub open_files: Option<u64>,
    pub artifact_files: Option<u64>,
    pub artifact_bytes: Option<u64>,
    pub broker_calls: Option<u64>,
    pub request_bytes: Option<u64>,
    pub response_bytes: Option<u64>,
    pub broker_call_ms: Option<u64>,
}

/// Why an envelope or a request's limits were rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// A limit of zero would make every run fail; it is almost always a
    /// mistake, so it is refused rather than honoured.
    #[error("limit `{field}` must be at least 1")]
    Zero { field: &'static str },
    /// The request asked for more than the operator allows.
    #[error(
        "limit `{field}` = {requested} exceeds the operator's {allowed}; a request may only lower limits"
    )]
    AboveOperator {
        field: &'static str,
        requested: u64,
        allowed: u64,
    },
    /// The operator's own value is beyond what the host can enforce.
    #[error("limit `{field}` = {value} is above the host's hard maximum {max}")]
    AboveHardMax {
        field: &'static str,
        value: u64,
        max: u64,
    },
}

/// Applies `f` to every (name, envelope field, limits field, hard max) row.
/// One table keeps validation, lowering and documentation in step.
macro_rules! for_each_limit {
    ($m:ident) => {
        $m!(wall_time_ms, 24 * 3600 * 1000);
        $m!(fuel, 1_000_000_000_000_000);
        $m!(memory_bytes, 4 * GIB);
        $m!(table_elements, 10_000_000);
        $m!(instances, 10_000);
        $m!(stdout_bytes, GIB);
        $m!(stderr_bytes, GIB);
        $m!(result_bytes, GIB);
        $m!(stdin_bytes, GIB);
        $m!(code_bytes, 64 * MIB);
        $m!(files, 100_000);
        $m!(file_bytes, 16 * GIB);
        $m!(workspace_bytes, 64 * GIB);
        $m!(workspace_entries, 1_000_000);
        $m!(open_files, 65_536);
        $m!(artifact_files, 100_000);
        $m!(artifact_bytes, 16 * GIB);
        $m!(broker_calls, 1_000_000);
        $m!(request_bytes, GIB);
        $m!(response_bytes, GIB);
        $m!(broker_call_ms, 300_000);
    };
}

impl Envelope {
    /// Checks that every value is non-zero and within what the host can
    /// enforce. Called once on operator configuration.
    pub fn validate(&self) -> Result<(), EnvelopeError> {
        macro_rules! check {
            ($f:ident, $max:expr) => {
                if self.$f == 0 {
                    return Err(EnvelopeError::Zero {
                        field: stringify!($f),
                    });
                }
                if self.$f > $max {
                    return Err(EnvelopeError::AboveHardMax {
                        field: stringify!($f),
                        value: self.$f,
                        max: $max,
                    });
                }
            };
        }
        for_each_limit!(check);
        Ok(())
    }

    /// The envelope for one run: `self` lowered by the request's `limits`.
    ///
    /// Every requested value must be at least 1 and at most the operator's.
    pub fn lowered_by(&self, limits: &Limits) -> Result<Envelope, EnvelopeError> {
        let mut out = *self;
        macro_rules! lower {
            ($f:ident, $max:expr) => {
                if let Some(v) = limits.$f {
                    if v == 0 {
                        return Err(EnvelopeError::Zero {
                            field: stringify!($f),
                        });
                    }
                    if v > self.$f {
                        return Err(EnvelopeError::AboveOperator {
                            field: stringify!($f),
                            requested: v,
                            allowed: self.$f,
                        });
                    }
                    out.$f = v;
                }
            };
        }
        for_each_limit!(lower);
        Ok(out)
    }

    /// Every value of `self` as a request's [`Limits`]: lowering any
    /// envelope at least as large by these gives exactly `self`.
    pub fn as_limits(&self) -> Limits {
        let mut out = Limits::default();
        macro_rules! set {
            ($f:ident, $max:expr) => {
                out.$f = Some(self.$f);
            };
        }
        for_each_limit!(set);
        out
    }

    /// Whether every limit of `self` is at most the same limit of `other`.
    pub fn is_within(&self, other: &Envelope) -> bool {
        let mut ok = true;
        macro_rules! within {
            ($f:ident, $max:expr) => {
                ok &= self.$f <= other.$f;
            };
        }
        for_each_limit!(within);
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_envelope_is_valid() {
        assert_eq!(Envelope::default().validate(), Ok(()));
    }

    #[test]
    fn a_request_may_lower_a_limit() {
        let op = Envelope::default();
        let run = op
            .lowered_by(&Limits {
                memory_bytes: Some(MIB),
                ..Limits::default()
            })
            .expect("lowering is allowed");
        assert_eq!(run.memory_bytes, MIB);
        assert_eq!(run.wall_time_ms, op.wall_time_ms);
        assert!(run.is_within(&op));
    }

    #[test]
    fn a_request_may_not_raise_a_limit() {
        let op = Envelope::default();
        let err = op
            .lowered_by(&Limits {
                wall_time_ms: Some(op.wall_time_ms + 1),
                ..Limits::default()
            })
            .unwrap_err();
        assert!(matches!(
            err,
            EnvelopeError::AboveOperator {
                field: "wall_time_ms",
                ..
            }
        ));
    }

    #[test]
    fn zero_and_absurd_limits_are_refused() {
        let op = Envelope::default();
        let zero = Limits {
            stdout_bytes: Some(0),
            ..Limits::default()
        };
        assert!(matches!(
            op.lowered_by(&zero),
            Err(EnvelopeError::Zero { .. })
        ));
        let absurd = Envelope {
            memory_bytes: u64::MAX,
            ..op
        };
        assert!(matches!(
            absurd.validate(),
            Err(EnvelopeError::AboveHardMax { .. })
        ));
    }

    #[test]
    fn unknown_limit_fields_are_rejected() {
        let r: Result<Limits, _> = serde_json::from_str(r#"{"memory_mb": 3}"#);
        assert!(r.is_err());
    }
}
