//! The fleet's registry in Redis: which boot of which node is alive, which
//! drained or is handing its sessions over, where a caller's session went,
//! and the sealed sessions left for another node (`Shared`'s second half;
//! the quota checks are in [`super::shared`]).
//!
//! Everything here comes back from Redis, a peer the fleet trusts only so
//! far (SECURITY.md): epochs and tags are parsed or dropped, a handed-over
//! session is length-checked before it is read, and what Redis says
//! decides only where to look, never whose a session is.

use super::shared::{DRAINED_TTL_SECS, Down, REGISTRY_TTL_MS, Shared, key};
use super::{Lost, Whereabouts};

impl Shared {
    /// Renews this node's registry entry (every second).
    /// With `agent` (this node's agent-check address, when it is a
    /// routable one), the nodes that stay can tell at once that this one
    /// died, before its entry expires.
    pub async fn register(&self, agent: Option<std::net::SocketAddr>) -> Result<(), Down> {
        let mut c = self.conn.clone();
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(format!("pl:node:{}", self.node.tag_hex()))
            .arg(self.node.epoch_hex())
            .arg("PX")
            .arg(REGISTRY_TTL_MS)
            .ignore()
            .cmd("SADD")
            .arg("pl:nodes")
            .arg(self.node.tag_hex())
            .ignore();
        if let Some(a) = agent.filter(|a| !a.ip().is_unspecified()) {
            pipe.cmd("SET")
                .arg(format!("pl:agent:{}", self.node.tag_hex()))
                .arg(a.to_string())
                .arg("PX")
                .arg(REGISTRY_TTL_MS)
                .ignore();
        }
        self.run_as(true, pipe.query_async::<()>(&mut c)).await
    }

    /// Says for 10 minutes that this boot of this node drained.
    pub async fn mark_drained(&self) -> Result<(), Down> {
        self.mark("drained").await
    }

    /// Says for 10 minutes that this boot of this node is handing its
    /// sessions over: a node called for one of them waits for it.
    pub async fn mark_migrating(&self) -> Result<(), Down> {
        self.mark("migrating").await
    }

    async fn mark(&self, what: &str) -> Result<(), Down> {
        let mut c = self.conn.clone();
        let cmd = redis::cmd("SET")
            .arg(format!(
                "pl:{what}:{}:{}",
                self.node.tag_hex(),
                self.node.epoch_hex()
            ))
            .arg(1)
            .arg("EX")
            .arg(DRAINED_TTL_SECS)
            .to_owned();
        self.run(cmd.query_async::<()>(&mut c)).await
    }

    /// Whether boot `epoch` of node `tag` is handing its sessions over
    /// (and has not drained yet).
    pub async fn migrating(&self, tag: u16, epoch: u16) -> Result<bool, Down> {
        let mut c = self.conn.clone();
        let mut pipe = redis::pipe();
        pipe.cmd("EXISTS")
            .arg(format!("pl:migrating:{tag:04x}:{epoch:04x}"))
            .cmd("EXISTS")
            .arg(format!("pl:drained:{tag:04x}:{epoch:04x}"));
        let (m, d): (bool, bool) = self.run(pipe.query_async(&mut c)).await?;
        Ok(m && !d)
    }

    /// Leaves `caller`'s session `fingerprint`, sealed, to be picked up
    /// (an empty `sealed`: it could not be handed over).
    pub async fn put_moved(
        &self,
        caller: &str,
        fingerprint: &str,
        sealed: &[u8],
    ) -> Result<(), Down> {
        let mut c = self.bulk.clone();
        let cmd = redis::cmd("SET")
            .arg(key(caller, &format!("moved:{fingerprint}")))
            .arg(sealed)
            .arg("EX")
            .arg(DRAINED_TTL_SECS)
            .to_owned();
        self.run_bulk(cmd.query_async::<()>(&mut c)).await
    }

    /// Takes `caller`'s handed-over session `fingerprint`, once: `None`
    /// when there is none (or another node took it first).
    ///
    /// One longer than `max` bytes is deleted unread and answered as an
    /// empty one (it could not be handed over): its length is asked first,
    /// so that an honest Redis holding an oversized value never makes this
    /// node allocate it. (A compromised Redis can still send what it likes
    /// in answer to the GETDEL; SECURITY.md says so.)
    pub async fn take_moved(
        &self,
        caller: &str,
        fingerprint: &str,
        max: usize,
    ) -> Result<Option<Vec<u8>>, Down> {
        let mut c = self.bulk.clone();
        let k = key(caller, &format!("moved:{fingerprint}"));
        let len: u64 = self
            .run_bulk(redis::cmd("STRLEN").arg(&k).query_async(&mut c))
            .await?;
        if len > max as u64 {
            let _ = self
                .run_bulk(redis::cmd("DEL").arg(&k).query_async::<i64>(&mut c))
                .await;
            return Ok(Some(Vec::new()));
        }
        let cmd = redis::cmd("GETDEL").arg(&k).to_owned();
        let v = self
            .run_bulk(cmd.query_async::<Option<Vec<u8>>>(&mut c))
            .await?;
        // Replaced by a longer one between the two calls: not opened.
        Ok(v.map(|b| if b.len() > max { Vec::new() } else { b }))
    }

    /// Says that `caller`'s session `fingerprint` now lives on this node,
    /// for `ms` (its lifetime left).
    pub async fn set_at(&self, caller: &str, fingerprint: &str, ms: u64) -> Result<(), Down> {
        let mut c = self.conn.clone();
        let cmd = redis::cmd("SET")
            .arg(key(caller, &format!("at:{fingerprint}")))
            .arg(self.node.tag_hex())
            .arg("PX")
            .arg(ms.max(1))
            .to_owned();
        self.run(cmd.query_async::<()>(&mut c)).await
    }

    /// The node a handed-over session of `caller` now lives on, if any.
    pub async fn at(&self, caller: &str, fingerprint: &str) -> Result<Option<u16>, Down> {
        let mut c = self.conn.clone();
        let cmd = redis::cmd("GET")
            .arg(key(caller, &format!("at:{fingerprint}")))
            .to_owned();
        let v: Option<String> = self.run(cmd.query_async(&mut c)).await?;
        Ok(v.and_then(|t| u16::from_str_radix(&t, 16).ok()))
    }

    /// Forgets where a handed-over session lives (it closed).
    pub async fn clear_at(&self, caller: &str, fingerprint: &str) -> Result<(), Down> {
        let mut c = self.conn.clone();
        let cmd = redis::cmd("DEL")
            .arg(key(caller, &format!("at:{fingerprint}")))
            .to_owned();
        self.run(cmd.query_async::<i64>(&mut c)).await.map(|_| ())
    }

    /// Whether node `tag` is alive now, with which boot.
    pub async fn live_epoch(&self, tag: u16) -> Result<Option<u16>, Down> {
        let mut c = self.conn.clone();
        let cmd = redis::cmd("GET")
            .arg(format!("pl:node:{tag:04x}"))
            .to_owned();
        let v: Option<String> = self.run(cmd.query_async(&mut c)).await?;
        Ok(v.and_then(|e| u16::from_str_radix(&e, 16).ok()))
    }

    /// What the node and boot `(tag, epoch)` of a session id that is not
    /// open here tell: decided from the registry alone, never from
    /// whether such a session exists or whose it is.
    /// With it, the agent address the node registered (for
    /// [`Whereabouts::Elsewhere`]: whether it still answers).
    pub async fn whereabouts(
        &self,
        tag: u16,
        epoch: u16,
    ) -> Result<(Whereabouts, Option<std::net::SocketAddr>), Down> {
        let mut c = self.conn.clone();
        let tag_hex = format!("{tag:04x}");
        let mut pipe = redis::pipe();
        pipe.cmd("GET")
            .arg(format!("pl:node:{tag_hex}"))
            .cmd("SISMEMBER")
            .arg("pl:nodes")
            .arg(&tag_hex)
            .cmd("EXISTS")
            .arg(format!("pl:drained:{tag_hex}:{epoch:04x}"))
            .cmd("GET")
            .arg(format!("pl:agent:{tag_hex}"));
        let (live, known, drained, agent): (Option<String>, bool, bool, Option<String>) =
            self.run(pipe.query_async(&mut c)).await?;
        let live = live.and_then(|e| u16::from_str_radix(&e, 16).ok());
        let agent = agent.and_then(|a| a.parse().ok());
        Ok((classify(live, known, drained, epoch), agent))
    }
}

/// The registry's word on a session of boot `epoch`: its node's live
/// epoch, whether its tag ever registered, whether that boot drained.
/// A drained boot comes first: its node marks it once its sessions are
/// over, while its registry entry may live on for a moment.
pub fn classify(live: Option<u16>, known: bool, drained: bool, epoch: u16) -> Whereabouts {
    match live {
        _ if drained => Whereabouts::Lost(Lost::NodeDrained),
        Some(e) if e == epoch => Whereabouts::Elsewhere,
        Some(_) => Whereabouts::Lost(Lost::NodeRestarted),
        None if known => Whereabouts::Lost(Lost::NodeLost),
        None => Whereabouts::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_decides_and_nothing_else() {
        assert_eq!(classify(Some(7), true, false, 7), Whereabouts::Elsewhere);
        assert_eq!(
            classify(Some(7), true, true, 7),
            Whereabouts::Lost(Lost::NodeDrained)
        );
        assert_eq!(
            classify(Some(8), true, false, 7),
            Whereabouts::Lost(Lost::NodeRestarted)
        );
        assert_eq!(
            classify(None, true, true, 7),
            Whereabouts::Lost(Lost::NodeDrained)
        );
        assert_eq!(
            classify(None, true, false, 7),
            Whereabouts::Lost(Lost::NodeLost)
        );
        assert_eq!(classify(None, false, false, 7), Whereabouts::Unknown);
    }
}
