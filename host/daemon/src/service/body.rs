//! Request bodies within budgets: every wire reads its body here, so that
//! one caller's uploads can hold at most its share of the host's in-flight
//! body budget, and no body more than the largest a request may have, or
//! longer than the body timeout.

use super::App;
use crate::callers::Caller;
use crate::error::ApiError;
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, header};
use http_body_util::BodyExt;
use std::sync::Arc;

/// One caller's share of the in-flight body budget, in KiB: the budget
/// divided among the callers, but at least one largest body, and never
/// more than the budget.
pub fn body_share_kib(budget_bytes: u64, max_body: usize, callers: usize) -> usize {
    let budget = budget_bytes / 1024;
    let one_body = (max_body as u64) / 1024 + 1;
    let share = (budget / callers.max(1) as u64).max(one_body).min(budget);
    usize::try_from(share)
        .unwrap_or(usize::MAX)
        .clamp(1, tokio::sync::Semaphore::MAX_PERMITS)
}

/// What a request's body holds of the body budgets until the request is
/// done: its caller's share and the host-wide budget, in KiB, for the
/// bytes actually received.
pub struct BodyPermit {
    share: Option<tokio::sync::OwnedSemaphorePermit>,
    global: Option<tokio::sync::OwnedSemaphorePermit>,
    kib: u32,
}

impl BodyPermit {
    fn none() -> Self {
        BodyPermit {
            share: None,
            global: None,
            kib: 0,
        }
    }

    fn take(
        kib: u32,
        share: &Arc<tokio::sync::Semaphore>,
        global: &Arc<tokio::sync::Semaphore>,
    ) -> Result<
        (
            tokio::sync::OwnedSemaphorePermit,
            tokio::sync::OwnedSemaphorePermit,
        ),
        &'static str,
    > {
        let s = share
            .clone()
            .try_acquire_many_owned(kib)
            .map_err(|_| "caller")?;
        let g = global
            .clone()
            .try_acquire_many_owned(kib)
            .map_err(|_| "host")?;
        Ok((s, g))
    }

    /// Grows the reservation to cover `bytes` received so far. Fails,
    /// holding what it had, when the caller's share or the host's budget
    /// has no room: the caller waits on itself, never on others.
    fn cover(
        &mut self,
        bytes: usize,
        most: usize,
        share: &Arc<tokio::sync::Semaphore>,
        global: &Arc<tokio::sync::Semaphore>,
    ) -> Result<(), &'static str> {
        let kib = |b: usize| u32::try_from(b / 1024 + 1).unwrap_or(u32::MAX);
        let need = kib(bytes);
        if need <= self.kib {
            return Ok(());
        }
        // Reserve ahead in steps of 64 KiB, so that a large body takes a
        // few dozen reservations rather than one per frame; never past
        // the largest body a request may have.
        let exact = need - self.kib;
        let ahead = exact
            .max(64)
            .min(kib(most).saturating_sub(self.kib))
            .max(exact);
        // Ahead if there is room, else exactly what arrived.
        let (s, g, more) = match Self::take(ahead, share, global) {
            Ok((s, g)) => (s, g, ahead),
            Err(_) if ahead > exact => {
                let (s, g) = Self::take(exact, share, global)?;
                (s, g, exact)
            }
            Err(e) => return Err(e),
        };
        match &mut self.share {
            Some(p) => p.merge(s),
            None => self.share = Some(s),
        }
        match &mut self.global {
            Some(p) => p.merge(g),
            None => self.global = Some(g),
        }
        self.kib += more;
        Ok(())
    }
}

/// Reads `caller`'s body of at most `max` bytes within `timeout`. Only
/// JSON (or no content type) is accepted. What it receives is reserved, as
/// it arrives, against the caller's share of the in-flight budget and the
/// host-wide budget (a declared `Content-Length` reserves nothing: a slow
/// upload holds only what it has sent); the permit holds both until the
/// request is done.
pub async fn read_body(
    app: &App,
    caller: &Caller,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Bytes, BodyPermit), ApiError> {
    read_body_of(app, caller, headers, body, "application/json", app.max_body).await
}

/// [`read_body`] of a body of content type `media` (or none) and at most
/// `max` bytes (a snapshot archive: `application/octet-stream`), within
/// the same budgets.
pub async fn read_body_of(
    app: &App,
    caller: &Caller,
    headers: &HeaderMap,
    body: Body,
    media: &str,
    max: usize,
) -> Result<(Bytes, BodyPermit), ApiError> {
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or("");
        let essence = ct.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case(media) {
            return Err(ApiError::new(
                "unsupported_media_type",
                format!("the body must be {media}"),
            ));
        }
    }
    let too_large = || {
        ApiError::new(
            "body_too_large",
            format!("the body is larger than {max} bytes"),
        )
    };
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && len > max as u64
    {
        return Err(too_large());
    }
    let Some(share) = app.body_shares.get(&caller.id).cloned() else {
        return Err(ApiError::new("forbidden", "unknown caller"));
    };
    let mut permit = BodyPermit::none();
    let mut buf = bytes::BytesMut::new();
    let mut body = body;
    let read = async {
        while let Some(frame) = body.frame().await {
            let frame = frame
                .map_err(|_| ApiError::new("invalid_request", "the body could not be read"))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if buf.len().saturating_add(data.len()) > max {
                return Err(too_large());
            }
            if let Err(whose) = permit.cover(buf.len() + data.len(), max, &share, &app.bodies) {
                app.metrics.shed("bodies_in_flight");
                return Err(ApiError::new(
                    "busy",
                    if whose == "caller" {
                        "this caller's request bodies in flight are at its share of the budget; try again shortly"
                    } else {
                        "too many request bodies are being received; try again shortly"
                    },
                )
                .retry_after(1));
            }
            buf.extend_from_slice(&data);
        }
        Ok(())
    };
    match tokio::time::timeout(app.body_timeout, read).await {
        Err(_) => Err(ApiError::new(
            "request_timeout",
            "the body did not arrive in time",
        )),
        Ok(Err(e)) => Err(e),
        Ok(Ok(())) => Ok((buf.freeze(), permit)),
    }
}
