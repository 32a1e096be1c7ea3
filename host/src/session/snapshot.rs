//! The session table's half of snapshots: a snapshot waits its turn like
//! an evaluation and belongs to the session's caller; a resumed session
//! is opened under every cap, like any other.

use super::{SessionInfo, SessionOptions, SessionTable, err, unknown};
use crate::envelope::Envelope;
use crate::guest::Guest;
use crate::provider::Provider;
use crate::run::ErrorInfo;
use crate::snapshot::archive::SessionImage;
use crate::tier::Isolation;
use std::sync::Arc;
use std::time::Instant;

impl SessionTable {
    /// The state of `caller`'s session `id`, taken in the session's turn
    /// (after the evaluations already waiting); the session goes on
    /// unchanged. Another caller's session answers as an unknown one.
    pub(crate) async fn snapshot(
        &self,
        caller: &str,
        id: &str,
        env: &Envelope,
        isolation: Isolation,
    ) -> Result<(SessionImage, Vec<Guest>), ErrorInfo> {
        let unknown_session = || {
            let r = unknown(String::new(), isolation.clone());
            r.error
                .unwrap_or_else(|| err("unknown_session", "no such session"))
        };
        self.sweep();
        let slot = match self.lock().get(id) {
            Some(s) if s.owner == caller => s.clone(),
            _ => return Err(unknown_session()),
        };
        let left = slot.lifetime.saturating_sub(slot.created.elapsed());
        let mut guard = match tokio::time::timeout(left, slot.state.lock()).await {
            Ok(g) => g,
            Err(_) => return Err(unknown_session()),
        };
        let current = self.lock().get(id).is_some_and(|s| Arc::ptr_eq(s, &slot));
        let Some(live) = guard.as_mut().filter(|_| current) else {
            return Err(unknown_session());
        };
        let mut image = live.snapshot(env, isolation.clone()).await?;
        // Where it was taken is this table's provider's word, not what a
        // worker wrote into the archive.
        image.taken_at = isolation.tier.as_str().to_owned();
        image.provider = isolation.provider.clone();
        *slot.last_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        Ok((image, slot.guests.clone()))
    }

    /// Opens a session for `caller` set to `image`.
    pub(crate) async fn open_resumed(
        &self,
        provider: &dyn Provider,
        caller: &str,
        opts: &SessionOptions,
        env: &Envelope,
        image: &SessionImage,
    ) -> Result<SessionInfo, ErrorInfo> {
        self.open_as(
            caller,
            opts,
            None,
            provider.resume_session(caller, opts, env, image),
        )
        .await
    }

    /// Opens a session for `caller` set to `image` under the id `id` (a
    /// session a fleet's draining node handed over); refused when `id` is
    /// already in the table.
    pub(crate) async fn open_adopted(
        &self,
        provider: &dyn Provider,
        caller: &str,
        id: &str,
        opts: &SessionOptions,
        env: &Envelope,
        image: &SessionImage,
    ) -> Result<SessionInfo, ErrorInfo> {
        self.open_as(
            caller,
            opts,
            Some(id),
            provider.resume_session(caller, opts, env, image),
        )
        .await
    }
}
