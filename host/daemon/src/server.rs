//! Listeners: accept loops with a connection cap, a TLS handshake timeout,
//! a request-head timeout (slowloris), a bound on connections that have
//! not authenticated yet, and graceful shutdown.
//!
//! **Connections that have not authenticated** cost the daemon a slot and
//! a descriptor without having shown a token, so they are held to less
//! than the whole cap: at most [`ConnLimits::max_unauthenticated_per_peer`]
//! from one peer address, and at most three quarters of
//! [`ConnLimits::max_connections`] in all, so a quarter of the slots is
//! always left to authenticated connections. A connection that would pass
//! either bound replaces the oldest unauthenticated one (of its peer, or of
//! all), rather than being refused: a client that holds idle connections
//! cannot keep a new one out, it only loses its own oldest. An
//! unauthenticated connection must authenticate (send a request whose
//! token the listener's check accepts) within the head timeout from its
//! accept, or it is closed.

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot, watch};
use tokio_rustls::TlsAcceptor;

/// The default [`ConnLimits::max_unauthenticated_per_peer`].
pub const DEFAULT_UNAUTHENTICATED_PER_PEER: usize = 128;

/// Per-listener limits.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Open connections; more are closed at accept.
    pub max_connections: usize,
    /// Time to send the request head (and to finish a TLS handshake); also
    /// the time an unauthenticated connection has to authenticate.
    pub header_timeout: Duration,
    /// Connections one peer address may hold before authenticating
    /// (`PLIMSOLL_MAX_UNAUTHENTICATED_PER_PEER`).
    pub max_unauthenticated_per_peer: usize,
}

/// Whether a request's headers carry a valid token: the listener's test
/// for "this connection has authenticated". `None`: every connection
/// counts as authenticated (a listener without tokens, e.g. metrics).
pub type Authenticates = Option<Arc<dyn Fn(&http::HeaderMap) -> bool + Send + Sync>>;

/// The unauthenticated connections, oldest first.
#[derive(Default)]
struct Pending {
    next: u64,
    order: VecDeque<PendingConn>,
    per_peer: HashMap<IpAddr, usize>,
}

struct PendingConn {
    id: u64,
    peer: IpAddr,
    evict: oneshot::Sender<()>,
}

impl Pending {
    /// Registers a new connection from `peer`, first evicting the oldest
    /// of that peer's (at `per_peer`) or of all (at `total`).
    /// Also says whether it evicted one (whose slot is about to be free).
    fn admit(
        &mut self,
        peer: IpAddr,
        per_peer: usize,
        total: usize,
    ) -> (u64, oneshot::Receiver<()>, bool) {
        let mut evicted = false;
        if self.per_peer.get(&peer).copied().unwrap_or(0) >= per_peer.max(1) {
            if let Some(i) = self.order.iter().position(|p| p.peer == peer) {
                self.evict_at(i);
                evicted = true;
            }
        } else if self.order.len() >= total.max(1) {
            self.evict_at(0);
            evicted = true;
        }
        let id = self.next;
        self.next += 1;
        let (tx, rx) = oneshot::channel();
        self.order.push_back(PendingConn {
            id,
            peer,
            evict: tx,
        });
        *self.per_peer.entry(peer).or_insert(0) += 1;
        (id, rx, evicted)
    }

    fn evict_at(&mut self, i: usize) {
        if let Some(p) = self.order.remove(i) {
            self.uncount(p.peer);
            let _ = p.evict.send(());
        }
    }

    fn uncount(&mut self, peer: IpAddr) {
        if let Some(n) = self.per_peer.get_mut(&peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_peer.remove(&peer);
            }
        }
    }

    /// The connection authenticated or ended: it is no longer pending.
    fn leave(&mut self, id: u64) {
        if let Some(i) = self.order.iter().position(|p| p.id == id)
            && let Some(p) = self.order.remove(i)
        {
            self.uncount(p.peer);
        }
    }
}

fn lock(p: &Mutex<Pending>) -> std::sync::MutexGuard<'_, Pending> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// Serves `router` on `listener` until `stop` turns true, then waits up to
/// `drain` for open connections to finish their requests.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    router: axum::Router,
    limits: ConnLimits,
    authenticates: Authenticates,
    mut stop: watch::Receiver<bool>,
    drain: Duration,
) {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let pending = Arc::new(Mutex::new(Pending::default()));
    // A quarter of the slots is kept for authenticated connections.
    let max_pending = limits.max_connections - limits.max_connections / 4;
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.wait_for(|s| *s) => break,
        };
        let (stream, peer) = match accepted {
            Ok(sp) => sp,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        // Register first: an eviction frees a slot for this connection.
        let mut evicted = false;
        let registered = authenticates.as_ref().map(|_| {
            let (id, rx, e) =
                lock(&pending).admit(peer.ip(), limits.max_unauthenticated_per_peer, max_pending);
            evicted = e;
            (id, rx)
        });
        let slot = match slots.clone().try_acquire_owned() {
            Ok(s) => s,
            Err(_) if !evicted => {
                if let Some((id, _)) = &registered {
                    lock(&pending).leave(*id);
                }
                drop(stream);
                continue;
            }
            Err(_) => {
                // The evicted connection gives its slot back as its task
                // ends; give it a moment rather than refuse at once.
                match tokio::time::timeout(Duration::from_millis(50), slots.clone().acquire_owned())
                    .await
                {
                    Ok(Ok(s)) => s,
                    _ => {
                        if let Some((id, _)) = &registered {
                            lock(&pending).leave(*id);
                        }
                        drop(stream);
                        continue;
                    }
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let watcher = graceful.watcher();
        let tls = tls.clone();
        let header_timeout = limits.header_timeout;
        let (authed_tx, authed_rx) = watch::channel(registered.is_none());
        let inner = TowerToHyperService::new(router.clone());
        let check = authenticates.clone();
        let seen = Arc::new(AtomicBool::new(registered.is_none()));
        let svc = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            if !seen.load(Ordering::Relaxed)
                && let Some(check) = &check
                && check(req.headers())
            {
                seen.store(true, Ordering::Relaxed);
                let _ = authed_tx.send(true);
            }
            hyper::service::Service::call(&inner, req)
        });
        let pending = pending.clone();
        tokio::spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_buf_size(64 * 1024)
                .keep_alive(true);
            let gate = Gate {
                registered,
                authed: authed_rx,
                deadline: header_timeout,
                pending: &pending,
            };
            match tls {
                None => {
                    let conn = builder.serve_connection(TokioIo::new(stream), svc);
                    gate.run(watcher.watch(conn)).await;
                }
                Some(acc) => {
                    let Ok(Ok(tls_stream)) =
                        tokio::time::timeout(header_timeout, acc.accept(stream)).await
                    else {
                        if let Some((id, _)) = &gate.registered {
                            lock(&pending).leave(*id);
                        }
                        return;
                    };
                    let conn = builder.serve_connection(TokioIo::new(tls_stream), svc);
                    gate.run(watcher.watch(conn)).await;
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(drain, graceful.shutdown()).await;
}

/// Runs a connection; while it has not authenticated, it is also ended by
/// its deadline or by an eviction.
struct Gate<'a> {
    registered: Option<(u64, oneshot::Receiver<()>)>,
    authed: watch::Receiver<bool>,
    deadline: Duration,
    pending: &'a Mutex<Pending>,
}

impl Gate<'_> {
    async fn run<F: std::future::Future>(self, conn: F) {
        let Some((id, mut evicted)) = self.registered else {
            conn.await;
            return;
        };
        let mut authed = self.authed;
        tokio::pin!(conn);
        let deadline = tokio::time::sleep(self.deadline);
        tokio::pin!(deadline);
        let authenticated = loop {
            tokio::select! {
                _ = &mut conn => {
                    lock(self.pending).leave(id);
                    return;
                }
                _ = &mut deadline => break false,
                _ = &mut evicted => break false,
                changed = authed.changed() => {
                    if changed.is_err() || *authed.borrow() {
                        break true;
                    }
                }
            }
        };
        lock(self.pending).leave(id);
        if authenticated {
            conn.await;
        }
        // Otherwise the connection is dropped here, which closes it.
    }
}
