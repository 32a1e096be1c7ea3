//! Drops finished runs' leftovers off the hot path.
//!
//! Removing a workspace directory and resetting an instance's pool slot
//! take longer than the run itself for small guests (a Python instance's
//! teardown alone is about 0.5 ms here). The caller does not need to wait
//! for either, so a background thread does it. The queue is bounded: when
//! it is full, the caller drops the value itself, so a burst of runs slows
//! down instead of piling up garbage. Instances have a tighter bound of
//! their own ([`PENDING_INSTANCES`]): each holds a pool slot and the memory
//! it dirtied until it is dropped.
//!
//! Nothing a dropped instance held can reach another run in the meantime:
//! its slot is not free until the drop has reset it, and a run that finds
//! no free slot waits for this queue ([`flush`]) before it gives up.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};

/// Items waiting to be dropped, at most.
const QUEUE: usize = 256;

/// Instances waiting to be dropped, at most; past this the caller drops
/// its own, so that a burst of runs cannot hold more slots and memory than
/// this in teardown.
pub const PENDING_INSTANCES: usize = 4;

static INSTANCES: Bounded = Bounded::new(PENDING_INSTANCES);

/// A count of values queued for dropping, with a bound.
struct Bounded {
    pending: AtomicUsize,
    max: usize,
}

impl Bounded {
    const fn new(max: usize) -> Self {
        Bounded {
            pending: AtomicUsize::new(0),
            max,
        }
    }

    /// Queues `value` on the reaper if fewer than `max` are pending; else
    /// drops it here.
    fn reap<T: Send + 'static>(&'static self, value: T) {
        self.reap_into(value, reap);
    }

    /// [`Bounded::reap`] with the queue given (`queue` receives the value
    /// wrapped so that it stays counted until it is dropped).
    fn reap_into<T>(&'static self, value: T, queue: impl FnOnce(Pending<T>)) {
        if self.pending.fetch_add(1, Ordering::AcqRel) >= self.max {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            drop(value);
            return;
        }
        queue(Pending {
            value: Some(value),
            count: &self.pending,
        });
    }
}

/// A value counted as pending until it has been dropped.
struct Pending<T> {
    value: Option<T>,
    count: &'static AtomicUsize,
}

impl<T> Drop for Pending<T> {
    fn drop(&mut self) {
        // The value first: the count must not fall before the slot is free.
        drop(self.value.take());
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

type Item = Box<dyn Send>;

fn sender() -> Option<&'static SyncSender<Item>> {
    static TX: OnceLock<Option<SyncSender<Item>>> = OnceLock::new();
    TX.get_or_init(|| {
        let (tx, rx) = sync_channel::<Item>(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("plimsoll-reaper".into())
            .spawn(move || {
                // Each received item is dropped at the end of the loop body.
                while let Ok(item) = rx.recv() {
                    drop(item);
                }
            });
        // Without a reaper thread every drop happens inline: slower, never
        // wrong.
        spawned.ok().map(|_| tx)
    })
    .as_ref()
}

/// Drops `value` on the reaper thread, or right here if the queue is full
/// or the thread could not be started.
pub fn reap<T: Send + 'static>(value: T) {
    let Some(tx) = sender() else {
        drop(value);
        return;
    };
    match tx.try_send(Box::new(value)) {
        Ok(()) => {}
        Err(TrySendError::Full(item)) | Err(TrySendError::Disconnected(item)) => drop(item),
    }
}

/// Drops a finished instance (its store, with anything that must go after
/// it) on the reaper thread, or right here when [`PENDING_INSTANCES`] are
/// already waiting or the queue is full.
pub fn reap_instance<T: Send + 'static>(value: T) {
    INSTANCES.reap(value);
}

/// Hands the heap's free pages back to the system (glibc's `malloc_trim`):
/// after a burst of sessions closes, a process that freed their memory
/// would otherwise keep it mapped. Cheap when there is nothing to return;
/// call it when the process goes idle, not per run.
pub fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Keeps large buffers (a workspace file, a session's output) in mappings
/// of their own, which go back to the system the moment they are freed,
/// instead of letting glibc raise its mmap threshold after the first ones
/// and serve later ones from heaps it never shrinks. Call once at start.
pub fn map_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes glibc's allocation thresholds.
    unsafe {
        // 128 KiB, glibc's own default; setting it turns its dynamic
        // adjustment off.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Instances queued by [`reap_instance`] and not yet dropped.
pub fn pending_instances() -> usize {
    INSTANCES.pending.load(Ordering::Acquire)
}

/// Waits (at most `timeout`) until everything reaped so far has been
/// dropped. Call before a process exits, or its last workspaces stay on
/// disk. Returns whether the queue drained in time.
pub fn flush(timeout: std::time::Duration) -> bool {
    struct Marker(std::sync::mpsc::SyncSender<()>);
    impl Drop for Marker {
        fn drop(&mut self) {
            let _ = self.0.try_send(());
        }
    }
    let Some(tx) = sender() else { return true };
    let (done_tx, done_rx) = sync_channel(1);
    // A blocking send: the marker must go behind everything queued.
    if tx.send(Box::new(Marker(done_tx))).is_err() {
        return true;
    }
    done_rx.recv_timeout(timeout).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn everything_reaped_is_dropped() {
        let n = Arc::new(AtomicUsize::new(0));
        for _ in 0..1000 {
            reap(Counted(n.clone()));
        }
        assert!(flush(std::time::Duration::from_secs(10)));
        assert_eq!(n.load(Ordering::SeqCst), 1000);
    }

    #[test]
    fn values_waiting_under_a_bound_are_bounded() {
        // Its own bound and its own queue (a Vec), so that nothing else
        // using the reaper affects the counts.
        let bound: &'static Bounded = Box::leak(Box::new(Bounded::new(3)));
        let n = Arc::new(AtomicUsize::new(0));
        let mut queue = Vec::new();
        for i in 0..6 {
            bound.reap_into(Counted(n.clone()), |p| queue.push(p));
            let pending = bound.pending.load(Ordering::SeqCst);
            assert_eq!(pending, queue.len());
            assert_eq!(pending, (i + 1).min(3));
            // Past the bound a value is dropped right away.
            assert_eq!(n.load(Ordering::SeqCst), (i + 1).saturating_sub(3));
        }
        // A queued value counts until its drop has finished.
        drop(queue.pop());
        assert_eq!(bound.pending.load(Ordering::SeqCst), 2);
        assert_eq!(n.load(Ordering::SeqCst), 4);
        bound.reap_into(Counted(n.clone()), |p| queue.push(p));
        assert_eq!(bound.pending.load(Ordering::SeqCst), 3);
        queue.clear();
        assert_eq!(bound.pending.load(Ordering::SeqCst), 0);
        assert_eq!(n.load(Ordering::SeqCst), 7);
    }
}
