//! A session handed from a draining node to the next that is called for
//! it: its snapshot archive and what it had left, sealed with the fleet's
//! key (`PLIMSOLL_FLEET_KEY_FILE`) so that the shared state that carries
//! it (Redis) reads none of it and can forge none of it.
//!
//! The seal is ChaCha20-Poly1305 (ring) with a fresh random nonce; its
//! associated data names the caller and the session's fingerprint, so a
//! sealed session opens only for the caller that owns it and only as the
//! session it was (a blob moved under another key fails to open). A
//! compromised Redis can drop a handover (the session is lost, as without
//! one) or hand the same one out again within its 10 minutes (the state
//! resumes once more, for its own caller only); it cannot read, alter or
//! redirect one.

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use serde::{Deserialize, Serialize};

/// The format's first byte.
const VERSION: u8 = 1;
/// The longest header a sealed session may carry.
const MAX_HEADER: usize = 64 << 10;

/// What travels with a session besides its archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Its lifetime still to run, and its idle timeout, milliseconds.
    pub lifetime_left_ms: u64,
    pub idle_timeout_ms: u64,
    /// A protocol session's place in its chain of records.
    pub chain: Option<ChainState>,
    /// The tier it ran at: it never moves to a node of a lower one.
    pub tier: String,
}

/// A protocol session's chain, so that its next record follows its last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainState {
    pub calls: u64,
    pub last: String,
    pub software_identity: String,
}

/// The fleet's key.
pub struct Key(LessSafeKey);

/// Why a key file or a sealed session was refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HandoverError {
    #[error("PLIMSOLL_FLEET_KEY_FILE must hold 64 hex digits (a 32-byte key)")]
    BadKey,
    #[error("the handed-over session does not open with this fleet's key for this caller")]
    Unsealed,
    #[error("the handed-over session could not be sealed")]
    Seal,
}

fn aad(caller: &str, fingerprint: &str) -> Vec<u8> {
    let mut a = b"plimsoll-handover-v1\0".to_vec();
    a.extend_from_slice(caller.as_bytes());
    a.push(0);
    a.extend_from_slice(fingerprint.as_bytes());
    a
}

impl Key {
    /// The key in `text` (64 hex digits; surrounding whitespace ignored).
    pub fn parse(text: &str) -> Result<Key, HandoverError> {
        let raw = hex::decode(text.trim()).map_err(|_| HandoverError::BadKey)?;
        if raw.len() != 32 {
            return Err(HandoverError::BadKey);
        }
        let k = UnboundKey::new(&CHACHA20_POLY1305, &raw).map_err(|_| HandoverError::BadKey)?;
        Ok(Key(LessSafeKey::new(k)))
    }

    /// Seals `caller`'s session `fingerprint`: `header` and `archive`.
    pub fn seal(
        &self,
        caller: &str,
        fingerprint: &str,
        header: &Header,
        archive: &[u8],
    ) -> Result<Vec<u8>, HandoverError> {
        let head = serde_json::to_vec(header).map_err(|_| HandoverError::Seal)?;
        let head_len = u32::try_from(head.len()).map_err(|_| HandoverError::Seal)?;
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| HandoverError::Seal)?;
        let mut body = Vec::with_capacity(4 + head.len() + archive.len() + 16);
        body.extend_from_slice(&head_len.to_le_bytes());
        body.extend_from_slice(&head);
        body.extend_from_slice(archive);
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(caller, fingerprint)),
                &mut body,
            )
            .map_err(|_| HandoverError::Seal)?;
        let mut out = Vec::with_capacity(1 + NONCE_LEN + body.len());
        out.push(VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Opens what [`Key::seal`] sealed for `caller`'s `fingerprint`: the
    /// header and the archive. Anything else — another caller, another
    /// session, another key, a changed byte — is refused.
    pub fn open(
        &self,
        caller: &str,
        fingerprint: &str,
        mut sealed: Vec<u8>,
    ) -> Result<(Header, Vec<u8>), HandoverError> {
        if sealed.len() < 1 + NONCE_LEN || sealed[0] != VERSION {
            return Err(HandoverError::Unsealed);
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&sealed[1..1 + NONCE_LEN]);
        let mut body = sealed.split_off(1 + NONCE_LEN);
        let plain = self
            .0
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(caller, fingerprint)),
                &mut body,
            )
            .map_err(|_| HandoverError::Unsealed)?;
        let len_bytes: [u8; 4] = plain
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or(HandoverError::Unsealed)?;
        let head_len = u32::from_le_bytes(len_bytes) as usize;
        if head_len > MAX_HEADER || plain.len() < 4 + head_len {
            return Err(HandoverError::Unsealed);
        }
        let header: Header =
            serde_json::from_slice(&plain[4..4 + head_len]).map_err(|_| HandoverError::Unsealed)?;
        let archive = plain[4 + head_len..].to_vec();
        Ok((header, archive))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> Key {
        Key::parse(&hex::encode([b; 32])).expect("key")
    }

    #[test]
    fn a_sealed_session_opens_only_for_its_caller_and_fingerprint_and_key() {
        let h = Header {
            lifetime_left_ms: 5,
            idle_timeout_ms: 6,
            chain: Some(ChainState {
                calls: 3,
                last: "ab".into(),
                software_identity: "x".into(),
            }),
            tier: "process".into(),
        };
        let sealed = key(1).seal("alice", "fp", &h, b"archive").expect("seal");
        assert!(!sealed.windows(7).any(|w| w == b"archive"));
        let (h2, a) = key(1).open("alice", "fp", sealed.clone()).expect("open");
        assert_eq!((h2, a.as_slice()), (h, &b"archive"[..]));
        assert!(key(1).open("bob", "fp", sealed.clone()).is_err());
        assert!(key(1).open("alice", "other", sealed.clone()).is_err());
        assert!(key(2).open("alice", "fp", sealed.clone()).is_err());
        let mut flipped = sealed.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(key(1).open("alice", "fp", flipped).is_err());
        assert!(key(1).open("alice", "fp", vec![1, 2, 3]).is_err());
        for bad in ["", "zz", &"a".repeat(62)] {
            assert!(Key::parse(bad).is_err());
        }
    }
}
