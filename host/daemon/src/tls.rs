//! TLS for the API listener, with rustls (TLS 1.2 and 1.3, ring).

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("TLS certificate {path}: {message}")]
    Cert { path: String, message: String },
    #[error("TLS key {path}: {message}")]
    Key { path: String, message: String },
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// An acceptor serving the PEM certificate chain and key in `cert` and
/// `key`. HTTP/1.1 is advertised over ALPN.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::Cert {
            path: cert.display().to_string(),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Cert {
            path: cert.display().to_string(),
            message: "no certificate in the file".into(),
        });
    }
    // The key's own parse error is not echoed: it could quote key material.
    let key = PrivateKeyDer::from_pem_file(key).map_err(|_| TlsError::Key {
        path: key.display().to_string(),
        message: "no PEM private key could be read from the file".into(),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
