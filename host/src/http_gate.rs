//! `wasi:http/outgoing-handler` through the same gate as the broker.
//!
//! Guests built with ordinary HTTP clients (Rust `wstd`/`waki`, anything
//! that speaks `wasi:http`) make requests with a full URL. The gate picks
//! the run's grant whose origin is that URL's scheme and authority, and then
//! hands the call to the run's [`RunBroker`]: the same budget, canonical-path,
//! route, header and size checks, the same credential injection, the same
//! CallTrace row. A request to any other origin is denied and traced;
//! nothing else reaches the network.

use crate::bindings::broker::{CallError, Request};
use crate::broker::RunBroker;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use std::future::Future;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// The hooks object wasmtime-wasi-http calls for every outgoing request.
pub(crate) struct HttpGate {
    pub(crate) broker: RunBroker,
    pub(crate) request_cap: u64,
}

type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;
type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), HttpError>> + Send>;

/// Headers the host sets itself (framing, routing); a guest's copy is
/// dropped rather than refused, because HTTP client libraries add them.
/// `accept-encoding` too: the host asks for an unencoded answer, which it
/// can check for a reflected credential.
const HOST_OWNED: [&str; 4] = [
    "host",
    "content-length",
    "transfer-encoding",
    "accept-encoding",
];

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> SendFuture {
        let broker = self.broker.clone();
        let cap = usize::try_from(self.request_cap).unwrap_or(usize::MAX);
        Box::new(async move {
            let (parts, body) = request.into_parts();
            let scheme = parts.uri.scheme_str().unwrap_or("https").to_owned();
            let authority = parts
                .uri
                .authority()
                .map(|a| a.as_str().to_owned())
                .unwrap_or_default();
            // An origin with no grant gets a name no grant can have, so the
            // broker denies and traces it like any unknown grant.
            let api = broker
                .grant_for_origin(&scheme, &authority)
                .unwrap_or_else(|| " no grant for this origin".to_owned());
            // Read at most one byte past the cap; a longer body is handed to
            // the broker as cap + 1 bytes, which it refuses (and traces) as
            // too large before anything is sent. A body the guest's own
            // stream failed to produce is a protocol error, not "too large".
            let body = match Limited::new(body, cap.saturating_add(1)).collect().await {
                Ok(b) => b.to_bytes().to_vec(),
                Err(e)
                    if e.downcast_ref::<http_body_util::LengthLimitError>()
                        .is_some() =>
                {
                    vec![0; cap.saturating_add(1)]
                }
                Err(_) => return Err(HttpError::HttpProtocolError),
            };
            let mut headers = Vec::with_capacity(parts.headers.len());
            for (name, value) in &parts.headers {
                if HOST_OWNED.contains(&name.as_str()) {
                    continue;
                }
                let Ok(v) = value.to_str() else {
                    return Err(HttpError::HttpRequestDenied);
                };
                headers.push((name.as_str().to_owned(), v.to_owned()));
            }
            let path = parts
                .uri
                .path_and_query()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_else(|| "/".into());
            let req = Request {
                method: parts.method.as_str().to_owned(),
                path,
                headers,
                body,
            };
            match broker.call(&api, req).await {
                Ok(resp) => {
                    let mut builder = http::Response::builder().status(resp.status);
                    for (n, v) in &resp.headers {
                        builder = builder.header(n.as_str(), v.as_str());
                    }
                    let body: WasiBody = Full::new(Bytes::from(resp.body))
                        .map_err(|never| match never {})
                        .boxed_unsync();
                    let response = builder
                        .body(body)
                        .map_err(|_| HttpError::HttpProtocolError)?;
                    let io: IoFuture = Box::new(async { Ok(()) });
                    Ok((response, io))
                }
                Err(CallError::Denied(_)) | Err(CallError::BudgetExhausted) => {
                    Err(HttpError::HttpRequestDenied)
                }
                Err(CallError::RequestTooLarge) => Err(HttpError::HttpRequestBodySize(None)),
                Err(CallError::ResponseTooLarge) => Err(HttpError::HttpResponseBodySize(None)),
                Err(CallError::Timeout) => Err(HttpError::ConnectionTimeout),
                Err(CallError::Upstream(_)) => Err(HttpError::DestinationUnavailable),
            }
        })
    }
}
