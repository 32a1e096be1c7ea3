//! What every run and session call states besides its payload: the
//! floor, the timeout, the trace id and the software rule.

use super::*;

/// What every run and session call states besides its payload.
pub(super) struct Envelope {
    pub(super) minimum_isolation: String,
    pub(super) floor: Option<Tier>,
    pub(super) timeout_ms: i32,
    pub(super) trace_id: Option<String>,
    pub(super) software: Option<(String, Vec<String>)>,
}

impl Envelope {
    pub(super) fn read(m: &Msg<'_>) -> Result<Envelope, ConnectError> {
        let bad = |e: json::Invalid| invalid(e.0);
        let minimum_isolation = m.str("minimumIsolation").map_err(bad)?;
        let floor = match minimum_isolation.as_str() {
            "" => None,
            s => Some(s.parse::<Tier>().map_err(|_| {
                invalid("minimumIsolation must be process, container, kernel or vm")
            })?),
        };
        let timeout_ms = m
            .int("timeoutMs", i32::MIN.into(), i32::MAX.into())
            .map_err(bad)? as i32;
        // An invalid trace id is dropped, never echoed.
        let trace_id = Some(m.str("traceId").map_err(bad)?).filter(|t| {
            !t.is_empty()
                && t.len() <= 64
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
        });
        let software = match m.msg("softwareRule").map_err(bad)? {
            None => None,
            Some(r) => {
                let mode = r.str("mode").map_err(bad)?;
                let ids = r.strs("identities").map_err(bad)?;
                let ok_count = match mode.as_str() {
                    "exact" => ids.len() == 1,
                    "approved" => (1..=32).contains(&ids.len()),
                    _ => false,
                };
                let mut seen = std::collections::BTreeSet::new();
                let ok_ids = ids.iter().all(|i| {
                    !i.is_empty()
                        && i.len() <= 256
                        && i.bytes().all(|b| {
                            b.is_ascii_alphanumeric()
                                || matches!(b, b'.' | b'_' | b':' | b'/' | b'@' | b'+' | b'-')
                        })
                        && seen.insert(i.as_str())
                });
                if !ok_count || !ok_ids {
                    return Err(invalid(
                        "softwareRule needs exact with one identity or approved with 1 to 32 distinct identities of [A-Za-z0-9._:/@+-], each at most 256 bytes",
                    ));
                }
                Some((mode, ids))
            }
        };
        Ok(Envelope {
            minimum_isolation,
            floor,
            timeout_ms,
            trace_id,
            software,
        })
    }

    /// What the request digest covers: this envelope as sent (the timeout
    /// before clamping) and `payload`.
    pub(super) fn facts(&self, payload: &Payload) -> RequestFacts {
        RequestFacts {
            protocol: PROTOCOL,
            minimum_isolation: self.minimum_isolation.clone(),
            timeout_ms: self.timeout_ms,
            software: self.software.clone(),
            payload: payload.clone(),
        }
    }

    pub(super) fn rule_id(&self) -> String {
        self.software
            .as_ref()
            .map(|(_, ids)| record::software_rule_id(ids))
            .unwrap_or_default()
    }

    /// Refuses, before dispatch, software the rule does not allow.
    pub(super) fn check_software(&self, identity: &str) -> Result<(), ConnectError> {
        match &self.software {
            Some((_, ids)) if !ids.iter().any(|i| i == identity) => Err(ConnectError::refused(
                "failed_precondition",
                Reason::Environment,
                format!(
                    "the software rule does not allow the software that would run ({identity})"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The run's wall time: the caller's envelope when none is asked for,
    /// else the ask clamped to it (never refused).
    pub(super) fn limits(&self, caller: &Caller) -> Limits {
        let most = caller.envelope.wall_time_ms;
        let ms = if self.timeout_ms <= 0 {
            most
        } else {
            (self.timeout_ms as u64).min(most)
        };
        Limits {
            wall_time_ms: Some(ms),
            ..Limits::default()
        }
    }
}
