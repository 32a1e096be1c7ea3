//! Listeners: accept loops with a connection cap, a TLS handshake timeout,
//! a request-head timeout (slowloris), and graceful shutdown.

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsAcceptor;

/// Per-listener limits.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Open connections; more are closed at accept.
    pub max_connections: usize,
    /// Time to send the request head (and to finish a TLS handshake).
    pub header_timeout: Duration,
}

/// Serves `router` on `listener` until `stop` turns true, then waits up to
/// `drain` for open connections to finish their requests.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    router: axum::Router,
    limits: ConnLimits,
    mut stop: watch::Receiver<bool>,
    drain: Duration,
) {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.wait_for(|s| *s) => break,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Over the connection cap: close at once.
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let svc = TowerToHyperService::new(router.clone());
        let watcher = graceful.watcher();
        let tls = tls.clone();
        let header_timeout = limits.header_timeout;
        tokio::spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_buf_size(64 * 1024)
                .keep_alive(true);
            match tls {
                None => {
                    let conn = builder.serve_connection(TokioIo::new(stream), svc);
                    let _ = watcher.watch(conn).await;
                }
                Some(acc) => {
                    let Ok(Ok(tls_stream)) =
                        tokio::time::timeout(header_timeout, acc.accept(stream)).await
                    else {
                        return;
                    };
                    let conn = builder.serve_connection(TokioIo::new(tls_stream), svc);
                    let _ = watcher.watch(conn).await;
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(drain, graceful.shutdown()).await;
}
