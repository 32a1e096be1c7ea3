//! The interpreter guests a sandbox serves, each ready, loading or failed.
//!
//! Loading a guest compiles it (seconds for CPython, minutes for the
//! scientific guest) unless the component cache holds it. A daemon cannot
//! wait for that before it listens, so a shelf can be filled in the
//! background ([`Shelf::fill_in_background`]): every configured guest has a
//! slot from the start; a request for one that is still loading waits for
//! it, bounded by its own deadline, and is refused as `warming_up` when the
//! deadline comes first. A guest that failed to load is refused with the
//! reason, never silently replaced by another.

use crate::guest::Guest;
use crate::run::{ErrorInfo, Language};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A guest the sandbox serves by name (not a registered component).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Shelved {
    /// The interpreter for a language (for Python, the standard one).
    Interpreter(Language),
    /// The scientific Python guest.
    Scientific,
}

impl Shelved {
    /// The name `/v1/info`, `/readyz` and the log use: `python`,
    /// `javascript`, `python/scientific`.
    pub fn name(self) -> String {
        match self {
            Shelved::Interpreter(l) => l.as_str().to_owned(),
            Shelved::Scientific => format!("python/{}", crate::scientific::GUEST_NAME),
        }
    }
}

/// Where a guest stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Loaded: runs use it.
    Ready,
    /// Still compiling (or waiting its turn to).
    Loading,
    /// Loaded the first time a request needs it.
    OnDemand,
    /// It could not be loaded; the reason.
    Failed(String),
}

impl Readiness {
    /// `ready`, `loading` or `failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::Loading => "loading",
            Readiness::OnDemand => "on_demand",
            Readiness::Failed(_) => "failed",
        }
    }
}

enum Slot {
    /// Not loaded yet; loaded the first time a request needs it.
    Pending(Loader),
    Loading,
    Ready(Guest),
    Failed(String),
}

/// The guests and their states, behind one lock; waiters are woken on
/// every change.
pub(crate) struct Shelf {
    slots: Mutex<BTreeMap<Shelved, Slot>>,
    changed: tokio::sync::watch::Sender<u64>,
}

/// What a load of one shelved guest does.
pub(crate) type Loader = Box<dyn FnOnce() -> Result<Guest, String> + Send>;

impl Shelf {
    /// A shelf whose every guest in `keys` is loading.
    pub(crate) fn loading(keys: impl IntoIterator<Item = Shelved>) -> Shelf {
        let (changed, _) = tokio::sync::watch::channel(0);
        Shelf {
            slots: Mutex::new(keys.into_iter().map(|k| (k, Slot::Loading)).collect()),
            changed,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Shelved, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts a loaded guest (or why it failed) in its slot.
    pub(crate) fn set(&self, key: Shelved, loaded: Result<Guest, String>) {
        self.lock().insert(
            key,
            match loaded {
                Ok(g) => Slot::Ready(g),
                Err(e) => Slot::Failed(e),
            },
        );
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// A shelf whose guests load the first time a request needs them.
    pub(crate) fn on_demand(loads: Vec<(Shelved, Loader)>) -> Shelf {
        let (changed, _) = tokio::sync::watch::channel(0);
        Shelf {
            slots: Mutex::new(
                loads
                    .into_iter()
                    .map(|(k, l)| (k, Slot::Pending(l)))
                    .collect(),
            ),
            changed,
        }
    }

    /// Starts loading `key` on a thread of its own if it is pending.
    fn load_if_pending(self: &Arc<Self>, key: Shelved) {
        let loader = {
            let mut slots = self.lock();
            match slots.get_mut(&key) {
                Some(slot @ Slot::Pending(_)) => match std::mem::replace(slot, Slot::Loading) {
                    Slot::Pending(l) => Some(l),
                    _ => None,
                },
                _ => None,
            }
        };
        let Some(load) = loader else { return };
        let shelf = self.clone();
        let spawned = std::thread::Builder::new()
            .name("plimsoll-guest".into())
            .spawn(move || shelf.set(key, load()));
        if let Err(e) = spawned {
            self.set(key, Err(format!("could not start the loading thread: {e}")));
        }
    }

    /// Whether the shelf has a slot for `key` at all.
    pub(crate) fn has(&self, key: Shelved) -> bool {
        self.lock().contains_key(&key)
    }

    /// The guest for `key` now: `Ok(None)` when there is no such guest,
    /// `Err` while it loads or after it failed.
    pub(crate) fn get(self: &Arc<Self>, key: Shelved) -> Result<Option<Guest>, ErrorInfo> {
        let r = self.peek(key);
        if matches!(&r, Err(e) if e.code == WARMING_UP) {
            self.load_if_pending(key);
        }
        r
    }

    fn peek(&self, key: Shelved) -> Result<Option<Guest>, ErrorInfo> {
        match self.lock().get(&key) {
            None => Ok(None),
            Some(Slot::Ready(g)) => Ok(Some(g.clone())),
            Some(Slot::Loading | Slot::Pending(_)) => Err(warming_up(key)),
            Some(Slot::Failed(why)) => Err(ErrorInfo {
                code: "guest_unavailable".into(),
                message: format!("the {} guest could not be loaded: {why}", key.name()),
            }),
        }
    }

    /// [`Shelf::get`], waiting for a guest that is loading until
    /// `deadline` (then `warming_up`).
    pub(crate) async fn get_by(
        self: &Arc<Self>,
        key: Shelved,
        deadline: Instant,
    ) -> Result<Option<Guest>, ErrorInfo> {
        let mut rx = self.changed.subscribe();
        loop {
            match self.get(key) {
                Err(e) if e.code == WARMING_UP => {}
                other => return other,
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(warming_up(key));
            }
            // A change may have come between `get` and `subscribe`: the
            // timeout bounds the wait either way.
            let _ = tokio::time::timeout(left.min(Duration::from_millis(500)), rx.changed()).await;
        }
    }

    /// Every guest with where it stands, by name.
    pub(crate) fn readiness(&self) -> Vec<(String, Readiness)> {
        self.lock()
            .iter()
            .map(|(k, s)| {
                (
                    k.name(),
                    match s {
                        Slot::Ready(_) => Readiness::Ready,
                        Slot::Loading => Readiness::Loading,
                        Slot::Pending(_) => Readiness::OnDemand,
                        Slot::Failed(e) => Readiness::Failed(e.clone()),
                    },
                )
            })
            .collect()
    }

    /// The guests that are ready, by key.
    pub(crate) fn ready(&self) -> Vec<(Shelved, Guest)> {
        self.lock()
            .iter()
            .filter_map(|(k, s)| match s {
                Slot::Ready(g) => Some((*k, g.clone())),
                _ => None,
            })
            .collect()
    }

    /// Loads each of `loads` in order on a thread of its own, logging each
    /// guest's time, and calls `then` with each guest loaded.
    pub(crate) fn fill_in_background(
        self: &Arc<Self>,
        loads: Vec<(Shelved, Loader)>,
        then: impl Fn(&Guest) + Send + 'static,
    ) {
        let shelf = self.clone();
        let spawned = std::thread::Builder::new()
            .name("plimsoll-guests".into())
            .spawn(move || {
                for (key, load) in loads {
                    let started = Instant::now();
                    let loaded = load();
                    let secs = started.elapsed().as_secs_f64();
                    match &loaded {
                        Ok(g) => {
                            tracing::info!("guest {} ready in {secs:.1} s", key.name());
                            then(g);
                        }
                        Err(e) => {
                            tracing::error!(
                                "guest {} failed to load after {secs:.1} s: {e}",
                                key.name()
                            )
                        }
                    }
                    shelf.set(key, loaded);
                }
            });
        if let Err(e) = spawned {
            let keys: Vec<Shelved> = self.lock().keys().copied().collect();
            for k in keys {
                self.set(k, Err(format!("could not start the loading thread: {e}")));
            }
        }
    }
}

/// The code of a refusal for a guest that is still loading.
pub const WARMING_UP: &str = "warming_up";

fn warming_up(key: Shelved) -> ErrorInfo {
    ErrorInfo {
        code: WARMING_UP.into(),
        message: format!(
            "the {} guest is still being compiled for this machine; try again shortly",
            key.name()
        ),
    }
}
