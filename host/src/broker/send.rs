//! Sending a checked call upstream, and what comes back: the response's
//! headers filtered, its body inspected for the credential, and the
//! `Retry-After` breakers an answer of 429 or 503 trips.
//!
//! Guarantees: the run's lock is not held while waiting; only allowed
//! response headers pass, at most [`MAX_RESPONSE_HEADERS`]; an answer that
//! reflects the credential, or cannot be decoded to check, is withheld
//! (its error starts [`REFLECTED_PREFIX`] or [`UNDECODABLE_PREFIX`]); a
//! breaker is keyed by caller and profile, so one caller's guest sheds
//! only its own calls, for at most [`MAX_RETRY_AFTER`], with at most
//! [`MAX_BREAKERS`] kept.

use super::check::Checked;
use super::{
    Broker, DEFAULT_RETRY_AFTER, MAX_BREAKERS, MAX_RETRY_AFTER, REFLECTED_PREFIX, RunBroker,
    UNDECODABLE_PREFIX,
};
use crate::bindings::broker::{CallError, Response};
use crate::grant::headers::{MAX_RESPONSE_HEADERS, response_header_passes};
use crate::grant::reflection::Withheld;
use crate::upstream::UpstreamError;
use std::time::{Duration, Instant};

impl Broker {
    /// Whether `caller`'s calls under `profile` are shed now.
    pub(super) fn breaker_open(&self, caller: &str, profile: &str) -> bool {
        let mut b = self.breakers.lock().unwrap_or_else(|p| p.into_inner());
        let key = (caller.to_owned(), profile.to_owned());
        match b.get(&key) {
            Some(until) if Instant::now() < *until => true,
            Some(_) => {
                b.remove(&key);
                false
            }
            None => false,
        }
    }

    /// Sheds `caller`'s calls under `profile` for `pause` (at most
    /// [`MAX_RETRY_AFTER`]).
    fn trip(&self, caller: &str, profile: &str, pause: Duration) {
        let mut b = self.breakers.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if b.len() >= MAX_BREAKERS {
            b.retain(|_, until| *until > now);
            if b.len() >= MAX_BREAKERS
                && let Some(k) = b.iter().min_by_key(|(_, u)| **u).map(|(k, _)| k.clone())
            {
                b.remove(&k);
            }
        }
        b.insert(
            (caller.to_owned(), profile.to_owned()),
            now + pause.min(MAX_RETRY_AFTER),
        );
    }
}

/// The pause an answer asks for (`Retry-After` in seconds), else
/// [`DEFAULT_RETRY_AFTER`].
fn retry_after(headers: &http::HeaderMap) -> Duration {
    headers
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_RETRY_AFTER)
}

/// Answers at least this large are inspected on a blocking thread: their
/// decoding may take milliseconds, which must not stall the runtime's
/// other tasks.
const INSPECT_INLINE_MAX: usize = 256 * 1024;

/// [`crate::grant::reflection::inspect`] of an answer, off the async
/// runtime's threads when the answer is large.
async fn inspect_off_the_runtime(
    grant: std::sync::Arc<crate::grant::Grant>,
    headers: http::HeaderMap,
    trailers: Option<http::HeaderMap>,
    body: bytes::Bytes,
    cap: usize,
) -> Result<Vec<u8>, Withheld> {
    let small = body.len() < INSPECT_INLINE_MAX;
    let run = move || {
        crate::grant::reflection::inspect(
            grant.reflection(),
            &headers,
            trailers.as_ref(),
            body.to_vec(),
            cap,
        )
    };
    if small {
        return run();
    }
    tokio::task::spawn_blocking(run)
        .await
        .unwrap_or(Err(Withheld::Undecodable(
            "the answer could not be checked",
        )))
}

impl RunBroker {
    /// Sends a checked call; the run's lock is not held while waiting.
    pub(super) async fn send(&self, c: Checked) -> Result<Response, CallError> {
        match self
            .broker
            .upstream
            .send(c.request, c.response_cap, c.timeout)
            .await
        {
            Ok(resp) => {
                if resp.status == 429 || resp.status == 503 {
                    self.broker
                        .trip(&c.caller, &c.profile, retry_after(&resp.headers));
                }
                let headers: Vec<(String, String)> = resp
                    .headers
                    .iter()
                    .filter(|(n, _)| response_header_passes(n.as_str()))
                    .filter_map(|(n, v)| {
                        v.to_str()
                            .ok()
                            .map(|v| (n.as_str().to_owned(), v.to_owned()))
                    })
                    .take(MAX_RESPONSE_HEADERS)
                    .collect();
                let cap = usize::try_from(c.response_cap).unwrap_or(usize::MAX);
                let body =
                    inspect_off_the_runtime(c.grant, resp.headers, resp.trailers, resp.body, cap)
                        .await
                        .map_err(|w| match w {
                            Withheld::Reflected(why) => {
                                CallError::Upstream(format!("{REFLECTED_PREFIX}{why}"))
                            }
                            Withheld::Undecodable(why) => {
                                CallError::Upstream(format!("{UNDECODABLE_PREFIX}{why}"))
                            }
                            Withheld::TooLarge => CallError::ResponseTooLarge,
                        })?;
                Ok(Response {
                    status: resp.status,
                    headers,
                    body,
                })
            }
            Err(UpstreamError::Timeout) => Err(CallError::Timeout),
            Err(UpstreamError::TooLarge) => Err(CallError::ResponseTooLarge),
            Err(UpstreamError::Failed(why)) => Err(CallError::Upstream(why.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_bounded() {
        let broker = Broker::new();
        broker.trip("alice", "p", Duration::from_secs(3600));
        assert!(broker.breaker_open("alice", "p"));
        // Another caller of the same profile is not shed.
        assert!(!broker.breaker_open("bob", "p"));
        let key = ("alice".to_owned(), "p".to_owned());
        let until = broker.breakers.lock().map(|b| b[&key]).expect("lock");
        assert!(until <= Instant::now() + MAX_RETRY_AFTER);
        for i in 0..MAX_BREAKERS + 10 {
            broker.trip(&format!("c{i}"), "p", Duration::from_secs(5));
        }
        assert!(broker.breakers.lock().map(|b| b.len()).unwrap_or(0) <= MAX_BREAKERS);
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("7"),
        );
        assert_eq!(retry_after(&h), Duration::from_secs(7));
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), DEFAULT_RETRY_AFTER);
    }
}
