//! Run records, version 4: the digests a client recomputes from what it
//! sent and what it received (plimsoll-client's `_record.py`).
//!
//! Every digest is lowercase hex SHA-256 over a length-prefixed encoding:
//! the domain, then for each field its name and its value, each as an
//! 8-byte big-endian length and the bytes. Integers are their decimal
//! text, booleans `true`/`false`. The daemon hashes; it signs nothing, so a
//! record proves only that the answer and the request agree with what the
//! daemon states — a compromised daemon can state anything.
//!
//! No secret is ever an input: requests carry no credential (the broker
//! injects those on the host), and the session id enters only as its
//! fingerprint.

use sha2::{Digest, Sha256};

/// The record encoding version.
pub const VERSION: u32 = 4;

/// The length-prefixed encoder.
pub struct Encoder(Sha256);

impl Encoder {
    /// An encoder for `domain`.
    pub fn new(domain: &str) -> Encoder {
        let mut e = Encoder(Sha256::new());
        e.value(domain.as_bytes());
        e
    }

    fn value(&mut self, b: &[u8]) {
        self.0.update((b.len() as u64).to_be_bytes());
        self.0.update(b);
    }

    /// A bytes field.
    pub fn bytes(&mut self, name: &str, v: &[u8]) {
        self.value(name.as_bytes());
        self.value(v);
    }

    /// A string field.
    pub fn str(&mut self, name: &str, v: &str) {
        self.bytes(name, v.as_bytes());
    }

    /// An integer field.
    pub fn int(&mut self, name: &str, v: impl std::fmt::Display) {
        self.str(name, &v.to_string());
    }

    /// A boolean field.
    pub fn bool(&mut self, name: &str, v: bool) {
        self.str(name, if v { "true" } else { "false" });
    }

    /// A list of doubles, as 8-byte big-endian IEEE 754 each.
    pub fn floats(&mut self, name: &str, vs: &[f64]) {
        let b: Vec<u8> = vs.iter().flat_map(|v| v.to_be_bytes()).collect();
        self.bytes(name, &b);
    }

    /// The digest, hex.
    pub fn sum(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// SHA-256 of a string, hex: a session's fingerprint.
pub use crate::service::fingerprint;

/// A software rule as a record states it: `exact:<identity>` for one
/// identity, else `approved:sha256:` over the identities sorted bytewise
/// and joined by a zero byte.
pub fn software_rule_id(identities: &[String]) -> String {
    match identities {
        [one] => format!("exact:{one}"),
        _ => {
            let mut ids: Vec<&[u8]> = identities.iter().map(|s| s.as_bytes()).collect();
            ids.sort();
            format!(
                "approved:sha256:{}",
                hex::encode(Sha256::digest(ids.join(&0u8)))
            )
        }
    }
}

/// One run record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunRecord {
    pub version: u32,
    pub request_sha256: String,
    pub result_sha256: String,
    pub unanswered: String,
    pub provider: String,
    pub isolation: String,
    pub environment: String,
    pub policy: String,
    pub software_identity: String,
    pub software_rule_id: String,
    pub instance: String,
    pub started_unix_ms: i64,
    pub ended_unix_ms: i64,
    pub session: String,
    pub sequence: u64,
    pub previous_sha256: String,
    pub record_sha256: String,
}

impl RunRecord {
    /// The record's own digest over the version-4 fields, in order.
    pub fn digest(&self) -> String {
        let mut e = Encoder::new(&format!("plimsoll.run-record.v{}", self.version));
        e.str("request_sha256", &self.request_sha256);
        e.str("result_sha256", &self.result_sha256);
        e.str("unanswered", &self.unanswered);
        e.str("provider", &self.provider);
        e.str("isolation", &self.isolation);
        e.str("environment", &self.environment);
        e.str("policy", &self.policy);
        e.str("software_identity", &self.software_identity);
        e.str("software_rule_id", &self.software_rule_id);
        e.str("instance", &self.instance);
        e.int("started_unix_ms", self.started_unix_ms);
        e.int("ended_unix_ms", self.ended_unix_ms);
        e.str("session", &self.session);
        e.int("sequence", self.sequence);
        e.str("previous_sha256", &self.previous_sha256);
        e.sum()
    }

    /// Sets `record_sha256` from the other fields.
    pub fn seal(mut self) -> RunRecord {
        self.record_sha256 = self.digest();
        self
    }

    /// The proto3 JSON form: lowerCamel names, zero values left out,
    /// 64-bit integers as strings.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        let mut s = |k: &str, v: &str| {
            if !v.is_empty() {
                m.insert(k.into(), v.into());
            }
        };
        s("requestSha256", &self.request_sha256);
        s("resultSha256", &self.result_sha256);
        s("unanswered", &self.unanswered);
        s("provider", &self.provider);
        s("isolation", &self.isolation);
        s("environment", &self.environment);
        s("policy", &self.policy);
        s("softwareIdentity", &self.software_identity);
        s("softwareRuleId", &self.software_rule_id);
        s("instance", &self.instance);
        s("session", &self.session);
        s("previousSha256", &self.previous_sha256);
        s("recordSha256", &self.record_sha256);
        if self.version != 0 {
            m.insert("version".into(), self.version.into());
        }
        for (k, v) in [
            ("startedUnixMs", self.started_unix_ms),
            ("endedUnixMs", self.ended_unix_ms),
        ] {
            if v != 0 {
                m.insert(k.into(), v.to_string().into());
            }
        }
        if self.sequence != 0 {
            m.insert("sequence".into(), self.sequence.to_string().into());
        }
        serde_json::Value::Object(m)
    }
}

/// A file of a project or a cell, as sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub content: String,
}

/// A request's payload, as parsed with zero values for what is absent.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Javascript {
        code: String,
        grant_profile: String,
    },
    Cell {
        language: String,
        code: String,
        files: Vec<File>,
    },
    Project {
        grant_profile: String,
        files: Vec<File>,
        steps: Vec<String>,
        artifacts: Vec<String>,
    },
    Module {
        model: String,
        end_time: f64,
        step: f64,
        rows: Vec<Vec<f64>>,
    },
    None,
}

/// What a request digest covers.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestFacts {
    pub protocol: u32,
    pub minimum_isolation: String,
    /// As sent, before any clamping.
    pub timeout_ms: i32,
    /// The software rule, `None` when absent.
    pub software: Option<(String, Vec<String>)>,
    pub payload: Payload,
}

impl RequestFacts {
    /// The request digest (`plimsoll.run-request.v2`; v1 for protocol 1).
    pub fn digest(&self) -> String {
        let first = self.protocol < 2;
        let mut e = Encoder::new(if first {
            "plimsoll.run-request.v1"
        } else {
            "plimsoll.run-request.v2"
        });
        e.int("protocol", self.protocol);
        e.str("minimum_isolation", &self.minimum_isolation);
        e.int("timeout_ms", self.timeout_ms);
        if !first {
            let (mode, ids) = match &self.software {
                Some((mode, ids)) => (mode.as_str(), ids.as_slice()),
                None => ("", &[][..]),
            };
            e.str("software_mode", mode);
            e.int("software_identities", ids.len());
            for i in ids {
                e.str("software_identity", i);
            }
        }
        let files = |e: &mut Encoder, files: &[File]| {
            e.int("files", files.len());
            for f in files {
                e.str("file_path", &f.path);
                e.str("file_content", &f.content);
            }
        };
        match &self.payload {
            Payload::Javascript {
                code,
                grant_profile,
            } => {
                e.str("kind", "javascript");
                e.str("code", code);
                e.str("grant_profile", grant_profile);
            }
            Payload::Cell {
                language,
                code,
                files: fs,
            } => {
                e.str("kind", "cell");
                e.str("language", language);
                e.str("code", code);
                files(&mut e, fs);
            }
            Payload::Project {
                grant_profile,
                files: fs,
                steps,
                artifacts,
            } => {
                e.str("kind", "project");
                e.str("grant_profile", grant_profile);
                files(&mut e, fs);
                e.int("steps", steps.len());
                for s in steps {
                    e.str("step_command", s);
                }
                e.int("artifacts", artifacts.len());
                for a in artifacts {
                    e.str("artifact_path", a);
                }
            }
            Payload::Module {
                model,
                end_time,
                step,
                rows,
            } => {
                e.str("kind", "module");
                e.str("model", model);
                e.floats("end_time", &[*end_time]);
                e.floats("step", &[*step]);
                e.int("rows", rows.len());
                for r in rows {
                    e.floats("row_values", r);
                }
            }
            Payload::None => e.str("kind", ""),
        }
        e.sum()
    }
}

/// A JavaScript run's or a cell's output, as the result digest sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    pub exit_code: i32,
    pub timed_out: bool,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

/// One project step's result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Step {
    pub command: String,
    pub output: Output,
    pub duration_ms: i64,
}

/// A result, as the result digest sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultFacts {
    Javascript(Output),
    Cell {
        output: Output,
        interpreter_started: bool,
        interpreter_ended: bool,
    },
    Project {
        outcome: i32,
        outcome_detail: String,
        artifacts_truncated: bool,
        steps: Vec<Step>,
        artifacts: Vec<(String, Vec<u8>)>,
    },
}

impl ResultFacts {
    /// The result digest (`plimsoll.run-result.v1`).
    pub fn digest(&self) -> String {
        let mut e = Encoder::new("plimsoll.run-result.v1");
        let out = |e: &mut Encoder, o: &Output| {
            e.int("exit_code", o.exit_code);
            e.bool("timed_out", o.timed_out);
            e.bytes("stdout", &o.stdout);
            e.bytes("stderr", &o.stderr);
            e.bool("stdout_truncated", o.stdout_truncated);
            e.bool("stderr_truncated", o.stderr_truncated);
        };
        match self {
            ResultFacts::Cell {
                output,
                interpreter_started,
                interpreter_ended,
            } => {
                e.str("kind", "cell");
                out(&mut e, output);
                e.bool("interpreter_started", *interpreter_started);
                e.bool("interpreter_ended", *interpreter_ended);
            }
            ResultFacts::Javascript(o) => {
                e.str("kind", "javascript");
                out(&mut e, o);
            }
            ResultFacts::Project {
                outcome,
                outcome_detail,
                artifacts_truncated,
                steps,
                artifacts,
            } => {
                e.str("kind", "project");
                e.int("outcome", outcome);
                e.str("outcome_detail", outcome_detail);
                e.bool("artifacts_truncated", *artifacts_truncated);
                e.int("steps", steps.len());
                for s in steps {
                    e.str("step_command", &s.command);
                    e.int("step_exit_code", s.output.exit_code);
                    e.bool("step_timed_out", s.output.timed_out);
                    e.bytes("step_stdout", &s.output.stdout);
                    e.bytes("step_stderr", &s.output.stderr);
                    e.bool("step_stdout_truncated", s.output.stdout_truncated);
                    e.bool("step_stderr_truncated", s.output.stderr_truncated);
                }
                e.int("artifacts", artifacts.len());
                for (path, content) in artifacts {
                    e.str("artifact_path", path);
                    e.bytes("artifact_content", content);
                }
            }
        }
        e.sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors computed with plimsoll-client 0.23.0's own functions
    // (`_record.request_digest`, `result_digest`, `record_digest`,
    // `session_fingerprint`, `SoftwareRule.rule_id`); see docs/protocol.md.

    #[test]
    fn fingerprint_matches_the_client() {
        assert_eq!(
            fingerprint("00112233445566778899aabbccddeeff"),
            "5947d7c33d783f94b3b4c1a96ebc8991ed28f1b069b71e03376cba8caa98a720"
        );
    }

    #[test]
    fn request_digest_matches_the_client() {
        let r = RequestFacts {
            protocol: 4,
            minimum_isolation: "process".into(),
            timeout_ms: 10000,
            software: None,
            payload: Payload::Javascript {
                code: "console.log(6*7)".into(),
                grant_profile: String::new(),
            },
        };
        assert_eq!(
            r.digest(),
            "c682c95914ef83646c38cb2c24a6d81b1cc92d4565f21e429aef1225b042a771"
        );
    }

    #[test]
    fn result_digest_matches_the_client() {
        let r = ResultFacts::Javascript(Output {
            stdout: b"42\n".to_vec(),
            ..Output::default()
        });
        assert_eq!(
            r.digest(),
            "9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5"
        );
    }

    #[test]
    fn more_vectors_from_the_client() {
        let cell = RequestFacts {
            protocol: 4,
            minimum_isolation: String::new(),
            timeout_ms: 2500,
            software: Some(("approved".into(), vec!["b:x".into(), "a:y".into()])),
            payload: Payload::Cell {
                language: "python".into(),
                code: "1+1".into(),
                files: vec![File {
                    path: "a.txt".into(),
                    content: "h\u{e9}".into(),
                }],
            },
        };
        assert_eq!(
            cell.digest(),
            "55b641052af0fbe1e8cb7a27d1a63d6870a2875ac00e52c1e3528985d17d0d6e"
        );
        let project = RequestFacts {
            protocol: 4,
            minimum_isolation: "kernel".into(),
            timeout_ms: 30000,
            software: None,
            payload: Payload::Project {
                grant_profile: String::new(),
                files: vec![File {
                    path: ".plimsoll/code.py".into(),
                    content: "print(6*7)".into(),
                }],
                steps: vec!["python3 -c 'x'".into()],
                artifacts: vec!["out.txt".into()],
            },
        };
        assert_eq!(
            project.digest(),
            "c4030a1ce2742d9e7750065e02de4d0b4c0b31a2623d169b247252f6b9dd6fc0"
        );
        let result = ResultFacts::Project {
            outcome: 1,
            outcome_detail: String::new(),
            artifacts_truncated: false,
            steps: vec![Step {
                command: "c".into(),
                output: Output {
                    exit_code: 1,
                    stdout: b"42\n".to_vec(),
                    ..Output::default()
                },
                duration_ms: 5,
            }],
            artifacts: vec![("out.txt".into(), b"hi".to_vec())],
        };
        assert_eq!(
            result.digest(),
            "b4e27607ffeadb372a994a7cafbf95ecdc6d0fef2c696988561a6788ea5ab0bb"
        );
        let cell = ResultFacts::Cell {
            output: Output {
                exit_code: 124,
                timed_out: true,
                stderr: b"x".to_vec(),
                ..Output::default()
            },
            interpreter_started: true,
            interpreter_ended: true,
        };
        assert_eq!(
            cell.digest(),
            "29df44896da72ae63d6eb679765b1d00fb42ca6ea43f7a7423b033e35e5cf114"
        );
        let r = RunRecord {
            version: 4,
            request_sha256: "a".repeat(64),
            result_sha256: "b".repeat(64),
            provider: "wasm".into(),
            isolation: "process".into(),
            environment: "quickjs-wasm:sha256:00".into(),
            software_identity: "quickjs-wasm:sha256:00".into(),
            software_rule_id: "exact:quickjs-wasm:sha256:00".into(),
            started_unix_ms: 1_700_000_000_000,
            ended_unix_ms: 1_700_000_000_005,
            session: "c".repeat(64),
            sequence: 2,
            previous_sha256: "d".repeat(64),
            ..RunRecord::default()
        };
        assert_eq!(
            r.digest(),
            "8092a4b7333adc5e156fd4277f94a021a6c9a99ba793e30bcba074cd1fc0abdb"
        );
        assert_eq!(
            software_rule_id(&["b:x".into(), "a:y".into()]),
            "approved:sha256:02b2703aae905779c26261373bc0ee9593d0174df862d76b4f70a77b0bfcf1d1"
        );
    }
}
