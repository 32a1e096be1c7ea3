//! The HTTP client the broker uses to reach upstream APIs.
//!
//! HTTP/1.1 over rustls (system roots) or plain HTTP for loopback origins;
//! no redirects are followed; the response body is read up to a cap and
//! abandoned past it; every call has a timeout. Errors are a closed set of
//! descriptions that never contain a URL, a header or a body.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::OnceLock;
use std::time::Duration;

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// How a call to the upstream failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamError {
    /// No answer within the timeout.
    Timeout,
    /// The body was larger than the cap.
    TooLarge,
    /// Connecting, TLS or HTTP failed; the text is generic.
    Failed(&'static str),
}

/// An upstream's answer, body complete and within the cap.
#[derive(Debug)]
pub struct UpstreamResponse {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
    /// Trailers, when the answer had any (never given to the guest; they
    /// are searched for the credential like headers).
    pub trailers: Option<http::HeaderMap>,
}

/// A shared HTTP client. Built on first use (reading the system's root
/// certificates takes a few milliseconds that a host without grants never
/// needs to spend).
#[derive(Default)]
pub struct Upstream {
    client: OnceLock<Result<Client<Https, Full<Bytes>>, &'static str>>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Upstream")
    }
}

fn build_client() -> Result<Client<Https, Full<Bytes>>, &'static str> {
    let provider = rustls::crypto::ring::default_provider();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(provider)
        .map_err(|_| "no usable TLS root certificates on this host")?
        .https_or_http()
        .enable_http1()
        .build();
    Ok(Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(8)
        .build(https))
}

impl Upstream {
    /// A client that connects on first use.
    pub fn new() -> Self {
        Upstream::default()
    }

    /// Sends `req`, reads at most `cap` bytes of body, all within `timeout`.
    pub async fn send(
        &self,
        req: http::Request<Full<Bytes>>,
        cap: u64,
        timeout: Duration,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let client = self
            .client
            .get_or_init(build_client)
            .as_ref()
            .map_err(|e| UpstreamError::Failed(e))?;
        let call = async {
            let resp = client.request(req).await.map_err(|e| {
                if e.is_connect() {
                    UpstreamError::Failed("could not connect to the upstream")
                } else {
                    UpstreamError::Failed("the upstream's answer was not valid HTTP")
                }
            })?;
            let declared = resp
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > cap) {
                return Err(UpstreamError::TooLarge);
            }
            let (parts, body) = resp.into_parts();
            let limit = usize::try_from(cap).unwrap_or(usize::MAX);
            let body = Limited::new(body, limit).collect().await.map_err(|e| {
                if e.downcast_ref::<LengthLimitError>().is_some() {
                    UpstreamError::TooLarge
                } else {
                    UpstreamError::Failed("the upstream's body could not be read")
                }
            })?;
            let trailers = body.trailers().cloned();
            Ok(UpstreamResponse {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body: body.to_bytes(),
                trailers,
            })
        };
        match tokio::time::timeout(timeout, call).await {
            Ok(r) => r,
            Err(_) => Err(UpstreamError::Timeout),
        }
    }
}
