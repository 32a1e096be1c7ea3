//! Sessions: interpreter instances kept alive for many evaluations, so
//! that a notebook's globals persist between cells.
//!
//! A session holds one or more interpreters over **one workspace**: a file
//! a Python cell writes is there for the next JavaScript cell. It belongs
//! to the caller that opened it: its id is 128 random bits, and a lookup by
//! anyone else answers exactly as for an id that does not exist. Each
//! evaluation is a run of its own, with its own envelope, grants, outputs,
//! CallTrace and deadline; only the instances' memory and the workspace
//! persist. Evaluations of one session run one at a time, in arrival order
//! when the caller asks to wait ([`Turn::Wait`]).
//!
//! A session ends when its owner closes it, when it has been idle for its
//! idle timeout, when it reaches its lifetime, when a newer session of the
//! same owner replaces it, or — unless it keeps going on failure
//! ([`SessionOptions::keep_on_failure`]) — when an evaluation leaves its
//! instance unusable (a trap, a timeout). A notebook session loses only
//! that interpreter instead; the next cell starts a fresh one. A session
//! that ended by itself leaves a tombstone for [`TOMBSTONE_TTL`], so its
//! owner learns why ([`SessionTable::ended`]).

use crate::envelope::Envelope;
use crate::grant::GrantSet;
use crate::guest::Guest;
pub use crate::live_session::{LiveSession, SessionEnd, SessionOptions};
use crate::provider::Provider;
use crate::run::{ErrorInfo, Language, RunRequest, RunResult};
use crate::tier::Isolation;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Limits on sessions, set by the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Open sessions one caller may hold (`SANDBOX_MAX_SESSIONS_PER_CALLER`).
    pub per_caller: usize,
    /// Open sessions in all.
    pub total: usize,
    /// A session unused this long is closed.
    pub idle_timeout: Duration,
    /// A session this old is closed, however busy.
    pub lifetime: Duration,
    /// The first 4 bytes (8 hex digits) of every new session id: a fleet
    /// node's tag and boot epoch, so that a balancer can route a session's
    /// calls and a lost session can be told from an unknown one
    /// (docs/operations.md, "A fleet"). The other 96 bits stay random.
    pub id_prefix: Option<[u8; 4]>,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            per_caller: 4,
            total: 64,
            idle_timeout: Duration::from_secs(600),
            lifetime: Duration::from_secs(3600),
            id_prefix: None,
        }
    }
}

/// What a caller learns about a session it opened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionInfo {
    /// The session's id (unguessable; useless to anyone but its owner).
    pub session_id: String,
    /// The identity of the guest it runs.
    pub guest: String,
    /// Seconds of idleness after which it is closed.
    pub idle_timeout_sec: u64,
    /// Seconds after opening at which it is closed.
    pub lifetime_sec: u64,
    /// The idle timeout in milliseconds (not in the JSON form).
    #[serde(skip)]
    pub idle_timeout_ms: u64,
    /// The lifetime in milliseconds (not in the JSON form).
    #[serde(skip)]
    pub lifetime_ms: u64,
}

/// How long a session that ended by itself is remembered.
pub const TOMBSTONE_TTL: Duration = Duration::from_secs(600);

/// Tombstones kept at most, across callers; the oldest go first.
pub const MAX_TOMBSTONES: usize = 4096;

/// Tombstones one caller may hold at most; its oldest go first, so one
/// caller churning sessions cannot push out another's.
pub const MAX_TOMBSTONES_PER_CALLER: usize = 256;

/// Whether an evaluation that finds its session busy waits its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Refuse with `session_busy`.
    Refuse,
    /// Wait, in arrival order, until the session is free (at most until its
    /// lifetime ends).
    Wait,
}

/// An evaluation's result with what happened to its interpreter.
#[derive(Debug, Clone)]
pub struct Evaluated {
    /// The evaluation, as a run.
    pub result: RunResult,
    /// This evaluation is the first of its interpreter instance: nothing an
    /// earlier cell defined exists in it.
    pub interpreter_started: bool,
    /// The instance ended during this evaluation; the next starts afresh.
    pub interpreter_ended: bool,
}

struct Slot {
    owner: String,
    tag: Option<String>,
    guests: Vec<Guest>,
    created: Instant,
    lifetime: Duration,
    idle_timeout: Duration,
    last_used: Mutex<Instant>,
    /// The interpreters and workspace, wherever the provider keeps them;
    /// `None` once the session has ended.
    state: tokio::sync::Mutex<Option<Box<dyn LiveSession>>>,
}

impl Slot {
    /// Past its lifetime, or idle past its idle timeout. A session with an
    /// evaluation in progress is not idle, however long it runs.
    fn expired(&self, now: Instant) -> bool {
        let idle = now
            .saturating_duration_since(*self.last_used.lock().unwrap_or_else(|p| p.into_inner()));
        let busy = self.state.try_lock().is_err();
        (!busy && idle >= self.idle_timeout)
            || now.saturating_duration_since(self.created) >= self.lifetime
    }
}

struct Tombstone {
    owner: String,
    end: SessionEnd,
    at: Instant,
}

/// The open sessions of a sandbox.
pub(crate) struct SessionTable {
    limits: SessionLimits,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    tombstones: Mutex<HashMap<String, Tombstone>>,
    /// Opens in progress, per caller: each holds its place under both caps
    /// from the moment it was checked until its session is in `slots` (or
    /// it failed), so that a burst of concurrent opens never passes a cap.
    /// Keyed by caller and owner tag. Locked only while `slots` is held.
    opening: Mutex<HashMap<(String, Option<String>), usize>>,
}

/// A session taken out of the table to make room under its owner's cap
/// (its id and slot), to be ended as `Replaced`.
type Replaced = (String, Arc<Slot>);

/// A place under the caps, held by an open in progress; given back when
/// dropped, or turned into the session by [`Reservation::commit`].
struct Reservation<'a> {
    table: &'a SessionTable,
    key: (String, Option<String>),
}

impl Reservation<'_> {
    /// Puts the session in the table and gives the place back, at once.
    /// Puts the session in the table under `id`; `false` (and nothing
    /// changed) when `id` is already there, open or ended.
    fn commit(self, id: String, slot: Arc<Slot>) -> bool {
        let mut map = self.table.lock();
        if map.contains_key(&id) || self.table.graves().contains_key(&id) {
            return false;
        }
        map.insert(id, slot);
        // `self` is dropped here, with `slots` still locked: no open can
        // see the session counted twice or not at all.
        drop(self);
        drop(map);
        true
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut opening = self.table.opening.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = opening.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                opening.remove(&self.key);
            }
        }
    }
}

fn unknown(run_id: String, iso: Isolation) -> RunResult {
    RunResult::refused(
        run_id,
        iso,
        "unknown_session",
        "no session with that id is open for this caller",
    )
}

fn err(code: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo {
        code: code.into(),
        message: message.into(),
    }
}

mod snapshot;

impl SessionTable {
    pub(crate) fn new(limits: SessionLimits) -> Self {
        SessionTable {
            limits,
            slots: Mutex::new(HashMap::new()),
            tombstones: Mutex::new(HashMap::new()),
            opening: Mutex::new(HashMap::new()),
        }
    }

    /// Checks every cap counting the opens in progress, and holds a place
    /// for one more of `caller`'s, atomically (under `slots`' lock). With
    /// `owner` (an end user's tag and its cap): at that owner's cap, its
    /// least recently used session with no evaluation in progress is taken
    /// out of the table in the same step and returned, to be ended as
    /// `Replaced`; when every one is busy (or still opening), the open is
    /// refused.
    fn reserve(
        &self,
        caller: &str,
        owner: Option<(&str, usize)>,
    ) -> Result<(Reservation<'_>, Option<Replaced>), ErrorInfo> {
        let mut map = self.lock();
        let mut opening = self.opening.lock().unwrap_or_else(|p| p.into_inner());
        let opening_of = |opening: &HashMap<(String, Option<String>), usize>, tag: Option<&str>| {
            opening
                .iter()
                .filter(|((c, t), _)| {
                    c == caller && tag.is_none_or(|tag| t.as_deref() == Some(tag))
                })
                .map(|(_, n)| *n)
                .sum::<usize>()
        };
        let mut victim = None;
        if let Some((tag, cap)) = owner {
            let theirs: Vec<(&String, &Arc<Slot>)> = map
                .iter()
                .filter(|(_, s)| s.owner == caller && s.tag.as_deref() == Some(tag))
                .collect();
            if theirs.len() + opening_of(&opening, Some(tag)) >= cap.max(1) {
                victim = theirs
                    .into_iter()
                    .filter(|(_, s)| s.state.try_lock().is_ok())
                    .min_by_key(|(_, s)| *s.last_used.lock().unwrap_or_else(|p| p.into_inner()))
                    .map(|(id, _)| id.clone());
                if victim.is_none() {
                    return Err(err(
                        "session_limit",
                        "every session of this owner is evaluating; try again when one is free",
                    ));
                }
            }
        }
        let freed = usize::from(victim.is_some());
        let mine = map.values().filter(|s| s.owner == caller).count() + opening_of(&opening, None);
        if mine - freed >= self.limits.per_caller {
            return Err(err(
                "session_limit",
                format!(
                    "this caller already has {} open sessions",
                    self.limits.per_caller
                ),
            ));
        }
        let all = map.len() + opening.values().sum::<usize>();
        if all - freed >= self.limits.total {
            return Err(err("busy", "the host has no room for another session"));
        }
        let key = (caller.to_owned(), owner.map(|(t, _)| t.to_owned()));
        *opening.entry(key.clone()).or_insert(0) += 1;
        let victim = victim.and_then(|id| map.remove(&id).map(|slot| (id, slot)));
        Ok((Reservation { table: self, key }, victim))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn graves(&self) -> std::sync::MutexGuard<'_, HashMap<String, Tombstone>> {
        self.tombstones.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers that `id` of `owner` ended by itself, within the caps.
    fn bury(&self, id: String, owner: &str, end: SessionEnd) {
        let now = Instant::now();
        let mut graves = self.graves();
        graves.retain(|_, t| now.saturating_duration_since(t.at) < TOMBSTONE_TTL);
        let oldest = |graves: &HashMap<String, Tombstone>, of: Option<&str>| {
            graves
                .iter()
                .filter(|(_, t)| of.is_none_or(|o| t.owner == o))
                .min_by_key(|(_, t)| t.at)
                .map(|(k, _)| k.clone())
        };
        if graves.values().filter(|t| t.owner == owner).count() >= MAX_TOMBSTONES_PER_CALLER
            && let Some(k) = oldest(&graves, Some(owner))
        {
            graves.remove(&k);
        }
        if graves.len() >= MAX_TOMBSTONES
            && let Some(k) = oldest(&graves, None)
        {
            graves.remove(&k);
        }
        graves.insert(
            id,
            Tombstone {
                owner: owner.to_owned(),
                end,
                at: now,
            },
        );
    }

    /// Why `caller`'s session `id` ended, if it ended by itself within the
    /// last [`TOMBSTONE_TTL`]; `None` for an open one, an unknown one and
    /// another caller's alike.
    pub(crate) fn ended(&self, caller: &str, id: &str) -> Option<SessionEnd> {
        let graves = self.graves();
        graves
            .get(id)
            .filter(|t| t.owner == caller && t.at.elapsed() < TOMBSTONE_TTL)
            .map(|t| t.end)
    }

    /// Whether `caller`'s session `id` is open.
    pub(crate) fn is_open(&self, caller: &str, id: &str) -> bool {
        self.lock().get(id).is_some_and(|s| s.owner == caller)
    }

    /// Closes sessions that are idle too long or too old. Their instances
    /// are dropped outside the table's lock.
    pub(crate) fn sweep(&self) {
        let now = Instant::now();
        let expired: Vec<(String, Arc<Slot>)> = {
            let mut map = self.lock();
            let ids: Vec<String> = map
                .iter()
                .filter(|(_, s)| s.expired(now))
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| map.remove(&id).map(|s| (id, s)))
                .collect()
        };
        // Torn down off this caller's path (sweeps run before every
        // evaluation and open), like a finished run's instance.
        for (id, slot) in expired {
            self.bury(id, &slot.owner, SessionEnd::Expired);
            crate::reaper::reap_instance(slot);
        }
    }

    /// The limits this table enforces.
    pub(crate) fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// Closes every session; instances are dropped outside the lock.
    pub(crate) fn close_all(&self) {
        let all: Vec<(String, Arc<Slot>)> = self.lock().drain().collect();
        for (id, slot) in &all {
            self.bury(id.clone(), &slot.owner, SessionEnd::Shutdown);
        }
        drop(all);
    }

    /// Open sessions of `caller`.
    pub(crate) fn count_for(&self, caller: &str) -> usize {
        self.lock().values().filter(|s| s.owner == caller).count()
    }

    /// Open sessions of `caller` opened for the owner `tag`.
    pub(crate) fn count_for_owner(&self, caller: &str, tag: &str) -> usize {
        self.lock()
            .values()
            .filter(|s| s.owner == caller && s.tag.as_deref() == Some(tag))
            .count()
    }

    /// What `caller`'s open session `id` has left: its lifetime and its
    /// idle timeout (`None` for an unknown id and another caller's alike).
    pub(crate) fn terms(&self, caller: &str, id: &str) -> Option<(Duration, Duration)> {
        let map = self.lock();
        let s = map.get(id).filter(|s| s.owner == caller)?;
        Some((
            s.lifetime.saturating_sub(s.created.elapsed()),
            s.idle_timeout,
        ))
    }

    /// Every open session: its caller and id.
    pub(crate) fn open_ids(&self) -> Vec<(String, String)> {
        self.lock()
            .iter()
            .map(|(id, s)| (s.owner.clone(), id.clone()))
            .collect()
    }

    /// Open sessions in all.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Opens a session for `caller`.
    pub(crate) async fn open(
        &self,
        provider: &dyn Provider,
        caller: &str,
        opts: &SessionOptions,
        env: &Envelope,
    ) -> Result<SessionInfo, ErrorInfo> {
        self.open_as(caller, opts, None, provider.open_session(caller, opts, env))
            .await
    }

    /// Opens a session for `caller` whose live half `live` makes, under
    /// every cap (the place is held before `live` is awaited).
    /// With `given`, the session takes that id (a session another node of
    /// a fleet handed over): refused when it is already in the table.
    async fn open_as(
        &self,
        caller: &str,
        opts: &SessionOptions,
        given: Option<&str>,
        live: futures::future::BoxFuture<'_, Result<Box<dyn LiveSession>, ErrorInfo>>,
    ) -> Result<SessionInfo, ErrorInfo> {
        self.sweep();
        if opts.guests.is_empty() {
            return Err(err("invalid_request", "a session needs an interpreter"));
        }
        // The place is held before the open is awaited: concurrent opens
        // count each other, under every cap.
        let (reservation, replaced) =
            self.reserve(caller, opts.owner.as_ref().map(|(t, c)| (t.as_str(), *c)))?;
        if let Some((id, slot)) = replaced {
            self.bury(id, caller, SessionEnd::Replaced);
            crate::reaper::reap_instance(slot);
        }
        if let Some(id) = given
            && (!crate::run::is_run_id(id) || self.lock().contains_key(id))
        {
            return Err(err("invalid_request", "that session id cannot be taken"));
        }
        let live = live.await?;
        let id = match (given, self.limits.id_prefix) {
            (Some(id), _) => id.to_owned(),
            (None, Some(prefix)) => {
                let random = crate::run::new_run_id();
                format!("{}{}", hex::encode(prefix), &random[8..])
            }
            (None, None) => crate::run::new_run_id(),
        };
        let now = Instant::now();
        let lifetime = opts
            .lifetime
            .map_or(self.limits.lifetime, |l| l.min(self.limits.lifetime));
        let idle_timeout = opts.idle_timeout.map_or(self.limits.idle_timeout, |l| {
            l.min(self.limits.idle_timeout)
        });
        let slot = Arc::new(Slot {
            owner: caller.to_owned(),
            tag: opts.owner.as_ref().map(|(t, _)| t.clone()),
            guests: opts.guests.clone(),
            created: now,
            lifetime,
            idle_timeout,
            last_used: Mutex::new(now),
            state: tokio::sync::Mutex::new(Some(live)),
        });
        if !reservation.commit(id.clone(), slot.clone()) {
            crate::reaper::reap_instance(slot);
            return Err(err("invalid_request", "that session id cannot be taken"));
        }
        Ok(SessionInfo {
            session_id: id,
            guest: opts.guests[0].identity().to_owned(),
            idle_timeout_sec: idle_timeout.as_secs(),
            lifetime_sec: lifetime.as_secs(),
            idle_timeout_ms: u64::try_from(idle_timeout.as_millis()).unwrap_or(u64::MAX),
            lifetime_ms: u64::try_from(lifetime.as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// Closes `caller`'s session `id`. Returns whether there was one.
    pub(crate) fn close(&self, caller: &str, id: &str) -> bool {
        self.end(caller, id, SessionEnd::Closed)
    }

    /// Ends `caller`'s session `id` for `why`; anything but a close leaves
    /// a tombstone. Returns whether there was one.
    pub(crate) fn end(&self, caller: &str, id: &str, why: SessionEnd) -> bool {
        let removed = {
            let mut map = self.lock();
            match map.get(id) {
                Some(s) if s.owner == caller => map.remove(id),
                _ => None,
            }
        };
        match removed {
            Some(slot) => {
                if why != SessionEnd::Closed {
                    self.bury(id.to_owned(), caller, why);
                }
                crate::reaper::reap_instance(slot);
                true
            }
            None => false,
        }
    }

    /// Evaluates `req.code` in `caller`'s session `id`, under `env` and
    /// `grants`, with the interpreter for `req.language` (which may be left
    /// out when the session has one).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn eval(
        &self,
        caller: &str,
        id: &str,
        req: &RunRequest,
        env: &Envelope,
        grants: GrantSet,
        isolation: Isolation,
        run_id: String,
        turn: Turn,
    ) -> Evaluated {
        let plain = |result: RunResult| Evaluated {
            result,
            interpreter_started: false,
            interpreter_ended: false,
        };
        self.sweep();
        let started = Instant::now();
        let slot = match self.lock().get(id) {
            Some(s) if s.owner == caller => s.clone(),
            _ => return plain(unknown(run_id, isolation)),
        };
        let mut guard = match turn {
            Turn::Refuse => match slot.state.try_lock() {
                Ok(g) => g,
                Err(_) => {
                    return plain(RunResult::refused(
                        run_id,
                        isolation,
                        "session_busy",
                        "the session is already evaluating; wait for it to finish",
                    ));
                }
            },
            Turn::Wait => {
                // tokio's mutex is fair: waiters get it in arrival order.
                let left = slot.lifetime.saturating_sub(slot.created.elapsed());
                match tokio::time::timeout(left, slot.state.lock()).await {
                    Ok(g) => g,
                    Err(_) => {
                        self.sweep();
                        return plain(unknown(run_id, isolation));
                    }
                }
            }
        };
        // Closed, replaced or expired while this call waited: the slot is
        // no longer the session's.
        let current = self.lock().get(id).is_some_and(|s| Arc::ptr_eq(s, &slot));
        if !current || guard.is_none() {
            return plain(unknown(run_id, isolation));
        }
        // Which of the session's interpreters: the one `language` names, or
        // its only one.
        let index = match req.language {
            Some(language) => slot
                .guests
                .iter()
                .position(|g| Language::from_identity(g.identity()) == Some(language)),
            None if slot.guests.len() == 1 => Some(0),
            None => None,
        };
        let Some(index) = index else {
            let families: Vec<&str> = slot.guests.iter().map(|g| g.family()).collect();
            let mut r = RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                format!(
                    "`language` does not apply: this session runs {}; name one of them",
                    families.join(" and ")
                ),
            );
            // The audit line names the session's guest, not the claim.
            r.guest = slot.guests.first().map(|g| g.identity().to_owned());
            return plain(r);
        };
        let guest = slot.guests[index].clone();
        // A session evaluation cannot switch guests: a request that names
        // one must name the session's.
        if let Some(want) = &req.require_identity
            && want != guest.identity()
        {
            return plain(RunResult::refused(
                run_id,
                isolation,
                "identity_mismatch",
                format!(
                    "`require_identity` names another guest; the session runs {}",
                    guest.identity()
                ),
            ));
        }
        if req.component.is_some() {
            return plain(RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                "a session evaluation runs the session's guest; leave out `component`",
            ));
        }
        if !req.stdin.is_empty() {
            return plain(RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                "a session evaluation takes no stdin",
            ));
        }
        if req
            .code
            .as_ref()
            .is_some_and(|c| c.len() as u64 > env.code_bytes)
        {
            return plain(RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                format!("the code is longer than {} bytes", env.code_bytes),
            ));
        }
        let Some(live) = guard.as_mut() else {
            return plain(unknown(run_id, isolation));
        };
        let step = live.eval(index, req, env, grants, isolation, run_id).await;
        let mut r = step.result;
        r.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        r.session_id = Some(id.to_owned());
        if r.guest.is_none() {
            r.guest = Some(guest.identity().to_owned());
        }
        *slot.last_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        if let Some(why) = step.end {
            // The session ends with its interpreters (or its boundary).
            let dead = guard.take();
            drop(guard);
            if self.end(caller, id, why) {
                r.session_closed = true;
            }
            crate::reaper::reap_instance(dead);
        }
        let (interpreter_started, interpreter_ended) =
            (step.interpreter_started, step.interpreter_ended);
        Evaluated {
            result: r,
            interpreter_started,
            interpreter_ended,
        }
    }
}
