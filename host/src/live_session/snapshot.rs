//! Snapshots of a [`LocalSession`], and a session resumed from one
//! ([`crate::snapshot`] has the design).
//!
//! Guarantees: a snapshot is taken between two evaluations (the session
//! table holds the session's turn) and reads, never writes, the
//! instances and the workspace; it is refused, typed and with the reason,
//! rather than partial: an instance that holds host resources its
//! prologue did not leave (an open file, a listing, a stream), a guest
//! not compiled for snapshots, or any read that fails. A resumed session
//! starts every instance fresh (never from the warm pool), with the same
//! prologue on an empty workspace — so it starts as the guest's base did
//! — and only then gets its state and its files; a guest whose base here
//! differs from the snapshot's, or an instance that does not hold what
//! the snapshot's held, is refused before any state is written.

use super::{LiveInstance, LocalSession, err, start_with};
use crate::envelope::Envelope;
use crate::executor::Live;
use crate::guest::Guest;
use crate::run::ErrorInfo;
use crate::runtime::Runtime;
use crate::snapshot::access::{InstanceState, StateShape};
use crate::snapshot::archive::{GuestImage, InstanceImage, SessionImage};
use crate::snapshot::image::{self, Base};
use crate::snapshot::{UNAVAILABLE, prologue};
use crate::tier::Isolation;
use crate::workspace::Workspace;
use std::sync::Arc;

fn unavailable(why: impl Into<String>) -> ErrorInfo {
    err(UNAVAILABLE, why)
}

fn language_of(guest: &Guest) -> &str {
    match guest.family() {
        "python-wasm" => "Python",
        "quickjs-wasm" => "JavaScript",
        crate::run::SCIENTIFIC_FAMILY => "scientific Python",
        _ => "session's",
    }
}

impl LocalSession {
    /// The session's state; it goes on unchanged.
    pub(crate) async fn take_snapshot(
        &mut self,
        env: &Envelope,
        isolation: &Isolation,
    ) -> Result<SessionImage, ErrorInfo> {
        let mut guests = Vec::with_capacity(self.guests.len());
        for (i, guest) in self.guests.iter().enumerate() {
            let fresh = self.fresh.get(i).copied().unwrap_or(false);
            let inst = self.instances.get_mut(i).and_then(Option::as_mut);
            let (instance, base_sha256) = match (fresh, inst) {
                (false, Some(inst)) => {
                    let (image, base) = capture(&self.rt, guest, env, inst).await?;
                    (Some(image), base)
                }
                _ => (None, String::new()),
            };
            guests.push(GuestImage {
                identity: guest.identity().to_owned(),
                base_sha256,
                instance,
            });
        }
        let workspace = self.workspace.tree().export();
        Ok(SessionImage {
            created_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(0),
            taken_at: isolation.tier.as_str().to_owned(),
            provider: isolation.provider.clone(),
            keep_on_failure: self.keep_on_failure,
            guests,
            workspace,
        })
    }

    /// A session of `guests` (the snapshot's, in its order) set to `image`.
    pub(crate) async fn resume(
        rt: &Runtime,
        guests: Vec<Guest>,
        env: &Envelope,
        image: &SessionImage,
    ) -> Result<LocalSession, ErrorInfo> {
        if guests.len() != image.guests.len() {
            return Err(err(
                crate::snapshot::GUEST_MISMATCH,
                "the snapshot's session has other guests than this daemon offers",
            ));
        }
        let _busy = rt.warm().busy();
        // Every instance starts on an empty workspace, as its base did;
        // the files come after.
        let workspace = Arc::new(Workspace::new(env));
        let fresh: Vec<bool> = guests
            .iter()
            .map(|g| g.kind() == crate::guest::GuestKind::Shell)
            .collect();
        let mut instances: Vec<Option<LiveInstance>> = guests.iter().map(|_| None).collect();
        for (i, (guest, gi)) in guests.iter().zip(&image.guests).enumerate() {
            if guest.identity() != gi.identity {
                return Err(err(
                    crate::snapshot::GUEST_MISMATCH,
                    format!(
                        "the snapshot was taken with another build of the {} guest than this daemon runs",
                        language_of(guest)
                    ),
                ));
            }
            let Some(ii) = &gi.instance else { continue };
            let base = base_of(rt, guest, env).await?;
            if base.sha256 != gi.base_sha256 {
                return Err(err(
                    crate::snapshot::GUEST_MISMATCH,
                    format!(
                        "a fresh {} interpreter starts differently on this daemon than where the snapshot was taken",
                        language_of(guest)
                    ),
                ));
            }
            let mut inst = start_with(rt, guest, env, workspace.clone(), false).await?;
            let held = inst.held.as_deref().map(prologue::describe);
            if !matches!(&inst.live, Live::Core(_)) && held.as_deref() != Some(ii.held.as_str()) {
                return Err(err(
                    crate::snapshot::GUEST_MISMATCH,
                    format!(
                        "a fresh {} interpreter here does not hold what the snapshot's held",
                        language_of(guest)
                    ),
                ));
            }
            write_state(guest, &mut inst, ii, &base).await?;
            // Its next evaluation is not its first.
            inst.cells = 1;
            instances[i] = Some(inst);
        }
        let mut tree = workspace.tree();
        // A fresh workspace has an empty `out/`; the snapshot's files
        // (with its own `out/`, if it kept one) replace it.
        let _ = tree.rmdir(crate::memtree::ROOT, crate::workspace::OUT_DIR);
        let filled = tree.fill(&image.workspace);
        drop(tree);
        filled.map_err(|e| match e {
            crate::memtree::TreeError::NoSpace => err(
                crate::snapshot::TOO_LARGE,
                "the snapshot's files do not fit this envelope's workspace",
            ),
            _ => err(
                crate::snapshot::INVALID,
                "the snapshot's files are not a valid tree",
            ),
        })?;
        Ok(LocalSession {
            rt: rt.clone(),
            guests,
            keep_on_failure: image.keep_on_failure,
            fresh,
            workspace,
            instances,
        })
    }
}

/// One instance's state, relative to its guest's base (and the base's
/// digest).
async fn capture(
    rt: &Runtime,
    guest: &Guest,
    env: &Envelope,
    inst: &mut LiveInstance,
) -> Result<(InstanceImage, String), ErrorInfo> {
    if !guest.has_snapshots() {
        return Err(unavailable(format!(
            "the {} guest was not compiled for snapshots",
            language_of(guest)
        )));
    }
    let held = match &inst.live {
        Live::Core(_) => {
            if crate::scientific::CoreLive::holds_files(&inst.prepared.store) {
                return Err(unavailable(format!(
                    "the {} interpreter holds open files; close them and try again",
                    language_of(guest)
                )));
            }
            String::new()
        }
        _ => {
            let Some(expected) = &inst.held else {
                return Err(unavailable(format!(
                    "the {} interpreter started without the prologue snapshots need",
                    language_of(guest)
                )));
            };
            if prologue::held(&mut inst.prepared.store) != *expected {
                return Err(unavailable(format!(
                    "the {} interpreter holds open files, listings or streams of its own; close them and try again",
                    language_of(guest)
                )));
            }
            prologue::describe(expected)
        }
    };
    let base = base_of(rt, guest, env).await?;
    let mut image = read_diff(guest, inst, &base).await?;
    if image.tables != base.tables {
        return Err(unavailable(format!(
            "a table of the {} interpreter grew since it started",
            language_of(guest)
        )));
    }
    image.held = held;
    Ok((image, base.sha256.clone()))
}

/// The instance's state as pages that differ from `base`, read chunk by
/// chunk (never a whole copy of its memory).
async fn read_diff(
    guest: &Guest,
    inst: &mut LiveInstance,
    base: &Base,
) -> Result<InstanceImage, ErrorInfo> {
    let failed = |_| unavailable("the interpreter's state could not be read");
    let mut d = image::Differ::new(base);
    let mut sink = |m: usize, size: u64, offset: u64, bytes: &[u8]| d.chunk(m, size, offset, bytes);
    let state = match &inst.live {
        Live::Interpreter(il) => {
            let access = guest
                .state_access()
                .ok_or_else(|| unavailable("the guest was not compiled for snapshots"))?;
            access
                .read_into(&mut inst.prepared.store, &il.instance, &mut sink)
                .await
                .map_err(failed)?
        }
        Live::Core(c) => {
            let access = guest
                .core_state_access()
                .ok_or_else(|| unavailable("the guest was not compiled for snapshots"))?;
            access
                .read_into(&mut inst.prepared.store, &c.instance, &c.memory, &mut sink)
                .map_err(failed)?
        }
        _ => {
            return Err(unavailable(
                "a compiled agent component's session has no snapshots",
            ));
        }
    };
    Ok(d.finish(&state))
}

async fn read_state(guest: &Guest, inst: &mut LiveInstance) -> Result<InstanceState, ErrorInfo> {
    let failed = |_| unavailable("the interpreter's state could not be read");
    match &inst.live {
        Live::Interpreter(il) => {
            let access = guest
                .state_access()
                .ok_or_else(|| unavailable("the guest was not compiled for snapshots"))?;
            access
                .read(&mut inst.prepared.store, &il.instance)
                .await
                .map_err(failed)
        }
        Live::Core(c) => {
            let access = guest
                .core_state_access()
                .ok_or_else(|| unavailable("the guest was not compiled for snapshots"))?;
            access
                .read(&mut inst.prepared.store, &c.instance, &c.memory)
                .map_err(failed)
        }
        _ => Err(unavailable(
            "a compiled agent component's session has no snapshots",
        )),
    }
}

async fn write_state(
    guest: &Guest,
    inst: &mut LiveInstance,
    image: &InstanceImage,
    base: &Base,
) -> Result<(), ErrorInfo> {
    let runs = image::restore_runs(image, base, image.globals.len());
    let runs: Vec<Vec<(u64, &[u8])>> = runs
        .iter()
        .map(|r| r.iter().map(|(at, b)| (*at, b.as_slice())).collect())
        .collect();
    let shape = StateShape {
        memory_bytes: image.memories.iter().map(|m| m.bytes).collect(),
        tables: image.tables.clone(),
    };
    let failed = |e: wasmtime::Error| {
        err(
            crate::snapshot::TOO_LARGE,
            format!("the snapshot's state could not be set: {}", first_line(&e)),
        )
    };
    match &inst.live {
        Live::Interpreter(il) => {
            let access = guest
                .state_access()
                .ok_or_else(|| unavailable("the guest was not compiled for snapshots"))?;
            access
                .write(
                    &mut inst.prepared.store,
                    &il.instance,
                    &shape,
                    &runs,
                    &image.globals,
                )
                .await
                .map_err(failed)
        }
        Live::Core(c) => {
            let access = guest
                .core_state_access()
                .ok_or_else(|| unavailable("the guest was not compiled for snapshots"))?;
            access
                .write(
                    &mut inst.prepared.store,
                    &c.instance,
                    &c.memory,
                    &shape,
                    &runs,
                    &image.globals,
                )
                .map_err(failed)
        }
        _ => Err(unavailable(
            "a compiled agent component's session has no snapshots",
        )),
    }
}

fn first_line(e: &wasmtime::Error) -> String {
    format!("{e}")
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect()
}

/// What a fresh instance of `guest` holds after its prologue, captured
/// once per guest from two fresh instances (the pages they disagree on
/// are always written on a resume).
pub(crate) async fn base_of(
    rt: &Runtime,
    guest: &Guest,
    env: &Envelope,
) -> Result<Arc<Base>, ErrorInfo> {
    let got = guest
        .base_cell()
        .get_or_init(|| async {
            let mut states = Vec::with_capacity(2);
            for _ in 0..2 {
                let ws = Arc::new(Workspace::new(env));
                let mut inst = start_with(rt, guest, env, ws, false)
                    .await
                    .map_err(|e| e.message)?;
                let state = read_state(guest, &mut inst).await.map_err(|e| e.message)?;
                states.push(state);
                crate::reaper::reap_instance(inst);
            }
            let b = states.pop().ok_or("no base")?;
            let a = states.pop().ok_or("no base")?;
            Ok::<_, String>(Arc::new(Base::of(a, &b)))
        })
        .await;
    got.clone().map_err(|m| {
        unavailable(format!(
            "the {} guest's fresh state could not be read: {m}",
            language_of(guest)
        ))
    })
}
