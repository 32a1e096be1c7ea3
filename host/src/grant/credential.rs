//! Credentials: what the broker adds to an upstream request so that the
//! guest never holds it.
//!
//! A static credential is read once at start-up from an environment
//! variable or a file of the host. A JWT credential is minted per run: an
//! HS256 token signed with the profile's secret, naming the caller and
//! living no longer than the run. Secret bytes live in [`Secret`], which
//! zeroizes its memory when dropped and never prints its contents.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use zeroize::Zeroizing;

/// The shortest JWT signing secret accepted, in bytes.
pub const MIN_JWT_SECRET_BYTES: usize = 32;
/// Extra lifetime a minted token gets past the run's wall time.
pub const JWT_GRACE: Duration = Duration::from_secs(5);

/// Secret bytes. Zeroized on drop; `Debug` never shows them.
#[derive(Clone)]
pub struct Secret(Zeroizing<Vec<u8>>);

impl Secret {
    /// Wraps secret bytes.
    pub fn new(bytes: Vec<u8>) -> Self {
        Secret(Zeroizing::new(bytes))
    }

    /// The bytes. Callers must not copy them anywhere that outlives the
    /// call (logs, errors, results).
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// How a profile's credential is produced.
#[derive(Debug, Clone)]
pub enum CredentialSource {
    /// The same token for every run.
    Static(Secret),
    /// A short-lived HS256 JWT minted for each run.
    Jwt(JwtIssuer),
}

/// The settings of a JWT credential.
#[derive(Debug, Clone)]
pub struct JwtIssuer {
    pub secret: Secret,
    pub ttl: Duration,
    pub issuer: String,
    pub audience: String,
    pub key_id: Option<String>,
    pub scopes: Vec<String>,
}

impl CredentialSource {
    /// The credential for one run of `caller` whose wall time is
    /// `run_budget`: the static token, or a freshly minted JWT living
    /// `min(ttl, run_budget + 5 s)`.
    pub fn credential_for(&self, caller: &str, run_budget: Duration) -> Secret {
        match self {
            CredentialSource::Static(s) => s.clone(),
            CredentialSource::Jwt(j) => j.mint(caller, run_budget, SystemTime::now()),
        }
    }
}

impl JwtIssuer {
    /// Mints a token for `caller` at time `now`.
    pub fn mint(&self, caller: &str, run_budget: Duration, now: SystemTime) -> Secret {
        let iat = now
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let life = self
            .ttl
            .min(run_budget.saturating_add(JWT_GRACE))
            .as_secs()
            .max(1);
        let mut jti = [0u8; 16];
        // A jti that is not random is still unique enough per run; it only
        // lets an upstream reject replays.
        if getrandom::fill(&mut jti).is_err() {
            jti[..8].copy_from_slice(&iat.to_le_bytes());
        }
        let mut header = serde_json::json!({"alg": "HS256", "typ": "JWT"});
        if let Some(kid) = &self.key_id {
            header["kid"] = serde_json::Value::String(kid.clone());
        }
        let claims = serde_json::json!({
            "sub": caller,
            "iat": iat,
            "nbf": iat,
            "exp": iat + life,
            "jti": hex::encode(jti),
            "iss": self.issuer,
            "aud": self.audience,
            "scope": self.scopes.join(" "),
        });
        let signing_input = Zeroizing::new(format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        ));
        // HMAC accepts keys of any length; `new_from_slice` cannot fail.
        let sig = match Hmac::<Sha256>::new_from_slice(self.secret.expose()) {
            Ok(mut mac) => {
                mac.update(signing_input.as_bytes());
                URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
            }
            Err(_) => String::new(),
        };
        Secret::new(format!("{}.{}", signing_input.as_str(), sig).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issuer() -> JwtIssuer {
        JwtIssuer {
            secret: Secret::new(vec![7; 32]),
            ttl: Duration::from_secs(300),
            issuer: "plimsoll".into(),
            audience: "orders-api".into(),
            key_id: Some("k1".into()),
            scopes: vec!["orders:read".into(), "orders:write".into()],
        }
    }

    #[test]
    fn minted_tokens_verify_and_carry_the_claims() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let tok = issuer().mint("alice", Duration::from_secs(10), now);
        let text = String::from_utf8(tok.expose().to_vec()).expect("utf8");
        let parts: Vec<&str> = text.split('.').collect();
        assert_eq!(parts.len(), 3);
        let mut mac = Hmac::<Sha256>::new_from_slice(&[7; 32]).expect("key");
        mac.update(format!("{}.{}", parts[0], parts[1]).as_bytes());
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).expect("b64");
        assert!(mac.verify_slice(&sig).is_ok());
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
        assert_eq!(claims["sub"], "alice");
        assert_eq!(claims["iss"], "plimsoll");
        assert_eq!(claims["aud"], "orders-api");
        assert_eq!(claims["scope"], "orders:read orders:write");
        assert_eq!(claims["iat"], 1_700_000_000u64);
        // min(ttl 300 s, run 10 s + 5 s)
        assert_eq!(claims["exp"], 1_700_000_015u64);
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).expect("b64")).expect("json");
        assert_eq!(header["alg"], "HS256");
        assert_eq!(header["kid"], "k1");
        // Each run gets its own token.
        assert_ne!(
            issuer()
                .mint("alice", Duration::from_secs(10), now)
                .expose(),
            tok.expose()
        );
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let s = Secret::new(b"hunter2-hunter2".to_vec());
        assert!(!format!("{s:?}").contains("hunter2"));
        assert!(!format!("{:?}", issuer()).contains("\\u{7}"));
    }
}
