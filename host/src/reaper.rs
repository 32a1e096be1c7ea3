//! Drops finished runs' leftovers off the hot path.
//!
//! Removing a workspace directory and resetting an instance's pool slot
//! take longer than the run itself for small guests. The caller does not
//! need to wait for either, so a background thread does it. The queue is
//! bounded: when it is full, the caller drops the value itself, so a burst
//! of runs slows down instead of piling up garbage.

use std::sync::OnceLock;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};

/// Items waiting to be dropped, at most.
const QUEUE: usize = 256;

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
    let Some(tx) = sender() else { return };
    match tx.try_send(Box::new(value)) {
        Ok(()) => {}
        Err(TrySendError::Full(item)) | Err(TrySendError::Disconnected(item)) => drop(item),
    }
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
}
