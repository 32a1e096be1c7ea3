//! A node's identity: its tag (`PLIMSOLL_NODE_TAG`, 4 lowercase hex
//! digits, in Kubernetes the StatefulSet pod's index) and a boot epoch
//! drawn at start. Every session id this node makes begins with them (8 of
//! its 32 hex digits; the other 96 bits stay random), so a balancer routes
//! a session's calls by its id alone, and a node can tell a session of a
//! lost or restarted node from one that never existed.

/// One node of a fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    pub tag: u16,
    pub epoch: u16,
}

/// Why `PLIMSOLL_NODE_TAG` is refused.
#[derive(Debug, Clone, thiserror::Error)]
#[error("PLIMSOLL_NODE_TAG must be 4 lowercase hex digits (the node's ordinal, e.g. 0001)")]
pub struct BadTag;

impl Node {
    /// The node tagged `tag`, with a fresh boot epoch (never 0, so an id
    /// made without a fleet — whose first digits are random — is unlikely
    /// to look like this boot's).
    pub fn new(tag: &str) -> Result<Node, BadTag> {
        if tag.len() != 4 || !tag.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(BadTag);
        }
        let tag = u16::from_str_radix(tag, 16).map_err(|_| BadTag)?;
        let mut b = [0u8; 2];
        let _ = getrandom::fill(&mut b);
        let epoch = u16::from_le_bytes(b).max(1);
        Ok(Node { tag, epoch })
    }

    /// The 4 bytes every session id of this node starts with.
    pub fn prefix(&self) -> [u8; 4] {
        let t = self.tag.to_be_bytes();
        let e = self.epoch.to_be_bytes();
        [t[0], t[1], e[0], e[1]]
    }

    /// The tag as the registry and the balancer name it.
    pub fn tag_hex(&self) -> String {
        format!("{:04x}", self.tag)
    }

    /// The epoch, hex.
    pub fn epoch_hex(&self) -> String {
        format!("{:04x}", self.epoch)
    }

    /// The (tag, epoch) a session id names, if it has the shape of one.
    pub fn of_id(id: &str) -> Option<(u16, u16)> {
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let tag = u16::from_str_radix(id.get(0..4)?, 16).ok()?;
        let epoch = u16::from_str_radix(id.get(4..8)?, 16).ok()?;
        Some((tag, epoch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_names_its_node_and_boot() {
        let n = Node::new("00a1").expect("tag");
        assert_eq!(n.tag, 0xa1);
        let id = format!("{}{}", hex::encode(n.prefix()), "0".repeat(24));
        assert_eq!(Node::of_id(&id), Some((n.tag, n.epoch)));
        assert_eq!(n.tag_hex(), "00a1");
        for bad in ["1", "00A1", "zzzz", "00001"] {
            assert!(Node::new(bad).is_err(), "{bad}");
        }
        assert_eq!(Node::of_id("short"), None);
    }
}
