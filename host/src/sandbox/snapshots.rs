//! Session snapshots at the sandbox ([`crate::snapshot`]): a live
//! session's archive, a new session resumed from one, and forks.
//!
//! Guarantees: a snapshot belongs to the session's caller and is taken in
//! the session's turn; an archive is verified whole (every part's digest,
//! every size within this sandbox's envelope, the guests' identities)
//! before any instance is started for it; a resumed session is opened
//! under the caller's caps and the host's, at this provider's tier,
//! checked against the floor immediately before; no grant or credential
//! is in a snapshot (grants belong to evaluations and stay host-side).

use super::Sandbox;
use crate::guest::Guest;
use crate::run::{ErrorInfo, Language, RunRequest};
use crate::session::{SessionInfo, SessionOptions};
use crate::snapshot::archive::{self, Archive, Caps, SessionImage};
use crate::snapshot::{GUEST_MISMATCH, INVALID, UNAVAILABLE};

/// The most forks one call makes.
pub const MAX_FORKS: usize = 16;
/// zstd's level for archives: fast (snapshots are on a session's path).
const LEVEL: i32 = 1;

fn err(code: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo {
        code: code.into(),
        message: message.into(),
    }
}

/// What an open session has left, handed over with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms {
    /// Its lifetime still to run.
    pub lifetime_left: std::time::Duration,
    /// Its idle timeout.
    pub idle_timeout: std::time::Duration,
}

/// A snapshot just taken.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub archive: Archive,
    /// The session's guests' identities, in its order.
    pub identities: Vec<String>,
    pub created_unix_ms: u64,
    /// The tier the session ran at.
    pub taken_at: String,
}

impl Sandbox {
    /// Snapshots `caller`'s session `session_id`: its exact state, as an
    /// archive. The session goes on unchanged.
    pub async fn snapshot_session(
        &self,
        caller: &str,
        session_id: &str,
    ) -> Result<Snapshot, ErrorInfo> {
        let image = self.snapshot_image(caller, session_id).await?;
        let identities = image.guests.iter().map(|g| g.identity.clone()).collect();
        let (created_unix_ms, taken_at) = (image.created_unix_ms, image.taken_at.clone());
        let archive = tokio::task::spawn_blocking(move || archive::encode(&image, LEVEL))
            .await
            .map_err(|_| err(UNAVAILABLE, "the snapshot could not be written"))?
            .map_err(|e| err(UNAVAILABLE, e.to_string()))?;
        Ok(Snapshot {
            archive,
            identities,
            created_unix_ms,
            taken_at,
        })
    }

    async fn snapshot_image(
        &self,
        caller: &str,
        session_id: &str,
    ) -> Result<SessionImage, ErrorInfo> {
        let (image, _) = self
            .sessions
            .snapshot(caller, session_id, &self.envelope, self.isolation())
            .await?;
        Ok(image)
    }

    /// The limits an archive is read within, for a session of `req`'s
    /// envelope.
    pub fn snapshot_caps(&self, req: &RunRequest) -> Result<Caps, ErrorInfo> {
        let env = self
            .envelope
            .lowered_by(&req.limits)
            .map_err(|e| err("invalid_limits", e.to_string()))?;
        Ok(Caps::for_envelope(&env))
    }

    /// Opens a new session for `caller` from the archive `bytes`, with the
    /// envelope and floor of `req` (`limits`, `minimum_isolation`).
    pub async fn resume_session(
        &self,
        caller: &str,
        bytes: Vec<u8>,
        req: &RunRequest,
    ) -> Result<SessionInfo, ErrorInfo> {
        let caps = self.snapshot_caps(req)?;
        let (_, image) = tokio::task::spawn_blocking(move || archive::decode(&bytes, &caps))
            .await
            .map_err(|_| err(INVALID, "the snapshot could not be read"))?
            .map_err(|e| err(INVALID, e.to_string()))?;
        self.resume_image(caller, &image, req, None).await
    }

    /// Opens `caller`'s session `id` here from the archive `bytes`, with
    /// what it had left (`terms`): the session a fleet's draining node
    /// snapshotted and handed over, under the id its caller holds. The
    /// archive is verified whole as for [`Sandbox::resume_session`]; the
    /// session is opened under every cap, at this provider's tier, checked
    /// against the floor immediately before; an id already in this
    /// sandbox's table is refused.
    pub async fn adopt_session(
        &self,
        caller: &str,
        id: &str,
        bytes: Vec<u8>,
        terms: Terms,
        req: &RunRequest,
    ) -> Result<SessionInfo, ErrorInfo> {
        let caps = self.snapshot_caps(req)?;
        let (_, image) = tokio::task::spawn_blocking(move || archive::decode(&bytes, &caps))
            .await
            .map_err(|_| err(INVALID, "the snapshot could not be read"))?
            .map_err(|e| err(INVALID, e.to_string()))?;
        self.resume_image(caller, &image, req, Some((id, terms)))
            .await
    }

    /// What `caller`'s open session `id` has left (`None` for an unknown
    /// id and another caller's alike).
    pub fn session_terms(&self, caller: &str, id: &str) -> Option<Terms> {
        self.sessions
            .terms(caller, id)
            .map(|(lifetime_left, idle_timeout)| Terms {
                lifetime_left,
                idle_timeout,
            })
    }

    /// Forks `caller`'s session `session_id` `n` times: one snapshot, `n`
    /// new sessions from it that share nothing afterwards.
    pub async fn fork_session(
        &self,
        caller: &str,
        session_id: &str,
        n: usize,
        req: &RunRequest,
    ) -> Result<Vec<SessionInfo>, ErrorInfo> {
        if n == 0 || n > MAX_FORKS {
            return Err(err(
                "invalid_request",
                format!("a fork makes 1 to {MAX_FORKS} sessions"),
            ));
        }
        let image = self.snapshot_image(caller, session_id).await?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            match self.resume_image(caller, &image, req, None).await {
                Ok(info) => out.push(info),
                Err(e) => {
                    // All or nothing: the forks already open are closed.
                    for info in &out {
                        self.close_session(caller, &info.session_id);
                    }
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// The guest of this sandbox with `identity`: the same build only.
    async fn guest_with_identity(
        &self,
        identity: &str,
        req: &RunRequest,
    ) -> Result<Guest, ErrorInfo> {
        let deadline = self.deadline_of(req);
        let candidates = [
            (Language::Python, None),
            (Language::Javascript, None),
            (Language::Shell, None),
            (Language::Python, Some("scientific")),
            (Language::Python, Some("standard")),
        ];
        for (language, guest) in candidates {
            if let Ok(g) = self.interpreter_by(language, guest, deadline).await
                && g.identity() == identity
            {
                return Ok(g);
            }
        }
        Err(err(
            GUEST_MISMATCH,
            "the snapshot was taken with a guest build this daemon does not run",
        ))
    }

    async fn resume_image(
        &self,
        caller: &str,
        image: &SessionImage,
        req: &RunRequest,
        adopt: Option<(&str, Terms)>,
    ) -> Result<SessionInfo, ErrorInfo> {
        let env = self
            .envelope
            .lowered_by(&req.limits)
            .map_err(|e| err("invalid_limits", e.to_string()))?;
        let mut guests = Vec::with_capacity(image.guests.len());
        for g in &image.guests {
            guests.push(self.guest_with_identity(&g.identity, req).await?);
        }
        if guests.is_empty() {
            return Err(err(INVALID, "the snapshot's session has no guest"));
        }
        self.provider.ready(self.deadline_of(req)).await?;
        // The floor, immediately before the instances start.
        self.check_provider(req)?;
        let mut opts = SessionOptions {
            guests,
            start: Vec::new(),
            keep_on_failure: image.keep_on_failure,
            lifetime: None,
            idle_timeout: None,
            owner: None,
        };
        if let Some(cap) = self.provider.session_lifetime_cap() {
            opts.lifetime = Some(cap);
        }
        let Some((id, terms)) = adopt else {
            return self
                .sessions
                .open_resumed(self.provider.as_ref(), caller, &opts, &env, image)
                .await;
        };
        // What the session had left, never more than this sandbox allows.
        opts.lifetime = Some(
            opts.lifetime
                .map_or(terms.lifetime_left, |l| l.min(terms.lifetime_left)),
        );
        opts.idle_timeout = Some(terms.idle_timeout);
        self.sessions
            .open_adopted(self.provider.as_ref(), caller, id, &opts, &env, image)
            .await
    }
}
