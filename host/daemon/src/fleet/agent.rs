//! The agent-check port (`PLIMSOLL_AGENT_ADDR`): a balancer (HAProxy's
//! `agent-check`) connects and reads one word — `ready`, `drain` (no new
//! work, but calls on this node's open sessions still come here) or
//! `down` — and the connection closes. It reads nothing and holds
//! nothing: a connection costs one write.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the node tells its balancer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    Ready = 0,
    Drain = 1,
    Down = 2,
}

/// The node's word, shared with the daemon's lifecycle.
#[derive(Debug, Default, Clone)]
pub struct Word(Arc<AtomicU8>);

impl Word {
    pub fn set(&self, s: State) {
        self.0.store(s as u8, Ordering::Release);
    }

    pub fn get(&self) -> State {
        match self.0.load(Ordering::Acquire) {
            0 => State::Ready,
            1 => State::Drain,
            _ => State::Down,
        }
    }
}

/// Answers every connection to `listener` with the word, until the task
/// is dropped.
pub async fn serve(listener: tokio::net::TcpListener, word: Word) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            continue;
        };
        let w = match word.get() {
            State::Ready => &b"ready\n"[..],
            State::Drain => &b"drain\n"[..],
            State::Down => &b"down\n"[..],
        };
        tokio::spawn(async move {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), async {
                let _ = s.write_all(w).await;
                let _ = s.shutdown().await;
            })
            .await;
        });
    }
}

/// What a node's agent port said when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// It answered with its word.
    Said(State),
    /// Nothing listens there: the node is gone.
    Refused,
    /// No clear answer in time (a slow network, a busy node): nothing is
    /// concluded.
    Unclear,
}

/// How long [`probe`] waits.
pub const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(300);

/// Asks the agent port at `addr` for its word (one connection, at most 16
/// bytes read, [`PROBE_TIMEOUT`] in all).
pub async fn probe(addr: std::net::SocketAddr) -> Probe {
    let asked = tokio::time::timeout(PROBE_TIMEOUT, async {
        let mut s = match tokio::net::TcpStream::connect(addr).await {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Probe::Refused,
            Err(_) => return Probe::Unclear,
        };
        let mut buf = [0u8; 16];
        let mut n = 0;
        while n < buf.len() {
            match s.read(&mut buf[n..]).await {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        match buf.get(..n).map(|b| b.trim_ascii()) {
            Some(b"ready") => Probe::Said(State::Ready),
            Some(b"drain") => Probe::Said(State::Drain),
            Some(b"down") => Probe::Said(State::Down),
            _ => Probe::Unclear,
        }
    })
    .await;
    asked.unwrap_or(Probe::Unclear)
}
