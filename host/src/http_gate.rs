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
            // The broker routes by origin and drops the headers client
            // libraries add themselves (framing, routing).
            match broker.call_origin(&scheme, &authority, req, None).await {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::Broker;
    use crate::envelope::Envelope;
    use crate::grant::{GrantProfiles, GrantSet};
    use crate::trace::CallOutcome;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    const TOKEN: &str = "gate-test-token-0123456789abcdef";

    type Seen = Arc<Mutex<Vec<Vec<(String, String)>>>>;

    /// A real upstream on loopback that records each request's headers and
    /// answers with its path.
    async fn upstream() -> (std::net::SocketAddr, Seen) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen: Seen = Arc::default();
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let record = record.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let headers = req
                                .headers()
                                .iter()
                                .map(|(n, v)| {
                                    (
                                        n.to_string(),
                                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                                    )
                                })
                                .collect();
                            if let Ok(mut s) = record.lock() {
                                s.push(headers);
                            }
                            let path = req.uri().path().to_owned();
                            async move {
                                Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                                    Bytes::from(path),
                                )))
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        (addr, seen)
    }

    fn empty() -> WasiBody {
        Full::new(Bytes::new())
            .map_err(|never| match never {})
            .boxed_unsync()
    }

    async fn send(
        gate: &mut HttpGate,
        uri: &str,
        headers: &[(&str, &str)],
    ) -> Result<(u16, Vec<u8>), HttpError> {
        let mut b = http::Request::builder().method("GET").uri(uri);
        for (n, v) in headers {
            b = b.header(*n, *v);
        }
        let req = b.body(empty()).expect("request");
        let io: IoFuture = Box::new(async { Ok(()) });
        let (resp, _io) = Box::into_pin(gate.send_request(req, None, io)).await?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map(|c| c.to_bytes().to_vec())
            .unwrap_or_default();
        Ok((status, body))
    }

    /// A run's broker holding the grant `api`: `GET /v1/items/*` on the
    /// upstream at `addr`, with a static credential.
    fn granted_broker(addr: std::net::SocketAddr) -> RunBroker {
        granted_broker_with(addr, &["api"])
    }

    /// [`granted_broker`] holding the grants `names` (`api`, `api2`), both
    /// on the same origin.
    fn granted_broker_with(addr: std::net::SocketAddr, names: &[&str]) -> RunBroker {
        let json = format!(
            r#"{{"profiles": {{"api": {{"base_url": "http://{addr}", "allow": ["GET /v1/items/*"], "token": {{"type": "static", "env": "T"}}}},
                "api2": {{"base_url": "http://{addr}", "allow": ["GET /v1/items/*"]}}}}}}"#
        );
        let profiles = GrantProfiles::from_json(&json, &|k| (k == "T").then(|| TOKEN.to_owned()))
            .expect("profiles");
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let grants =
            GrantSet::resolve(&profiles, &names, "tester", Duration::from_secs(5)).expect("grants");
        RunBroker::new(
            Arc::new(Broker::new()),
            grants,
            &Envelope::default(),
            Instant::now() + Duration::from_secs(5),
        )
    }

    /// `send_request` against a real upstream: routed by origin to the
    /// grant, checked like a broker call, sent with the credential (and the
    /// host's own framing and encoding headers), traced; everything else
    /// denied without reaching the upstream.
    #[tokio::test]
    async fn send_request_routes_by_origin_checks_and_injects() {
        let (addr, seen) = upstream().await;
        let broker = granted_broker(addr);
        let mut gate = HttpGate {
            broker: broker.clone(),
            request_cap: 1024,
        };
        let origin = format!("http://{addr}");
        let ok = send(
            &mut gate,
            &format!("{origin}/v1/items/7?x=1"),
            &[
                ("user-agent", "t"),
                ("accept-encoding", "gzip"),
                ("content-length", "0"),
            ],
        )
        .await
        .expect("the granted route is delivered");
        assert_eq!(ok, (200, b"/v1/items/7".to_vec()));
        for (uri, headers) in [
            (format!("{origin}/v1/admin"), vec![]),
            (format!("{origin}/v1/items/%2e%2e"), vec![]),
            (
                format!("{origin}/v1/items/8"),
                vec![("authorization", "Bearer stolen")],
            ),
            (
                format!("{origin}/v1/items/9"),
                vec![("x-remote-user", "admin")],
            ),
            ("http://127.0.0.1:9/v1/items/7".to_owned(), vec![]),
        ] {
            let r = send(&mut gate, &uri, &headers).await;
            assert!(
                matches!(r, Err(HttpError::HttpRequestDenied)),
                "{uri}: {r:?}"
            );
        }
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(seen.len(), 1, "only the granted request left: {seen:?}");
        let h = &seen[0];
        let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(
            get("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(get("accept-encoding"), Some("identity"));
        assert_eq!(get("user-agent"), Some("t"));
        let trace = broker.trace();
        assert_eq!(trace.total(), 6);
        assert_eq!(trace.count(CallOutcome::Delivered), 1);
        assert_eq!(trace.count(CallOutcome::Denied), 5);
    }

    /// A call by URL (the interpreters' standard clients): routed by
    /// origin, the client libraries' own framing headers dropped rather
    /// than refused, anything that is not a granted origin denied with a
    /// reason that says so, and traced; nothing but the granted call
    /// reaches the upstream.
    #[tokio::test]
    async fn a_call_by_url_is_routed_by_origin_and_denied_elsewhere() {
        let (addr, seen) = upstream().await;
        let broker = granted_broker(addr);
        let get = |path: &str, headers: &[(&str, &str)]| Request {
            method: "GET".into(),
            path: path.into(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
        };
        let library_headers = [
            ("Host", "elsewhere.example"),
            ("Connection", "keep-alive"),
            ("Accept-Encoding", "gzip, deflate"),
            ("Content-Length", "0"),
            ("User-Agent", "python-requests/2.32"),
        ];
        let ok = broker
            .call_url(
                &format!("HTTP://{addr}"),
                get("/v1/items/7", &library_headers),
                Some(Duration::from_secs(2)),
            )
            .await
            .expect("the granted route is delivered");
        assert_eq!((ok.status, ok.body), (200, b"/v1/items/7".to_vec()));
        for origin in [
            "http://127.0.0.1:9".to_owned(),
            format!("http://user:pw@{addr}"),
            format!("http://{addr}/v1"),
            format!("ftp://{addr}"),
            "not a url".to_owned(),
        ] {
            let r = broker
                .call_url(&origin, get("/v1/items/7", &[]), None)
                .await;
            match r {
                Err(CallError::Denied(why)) => assert_eq!(why, "no grant covers this origin"),
                other => panic!("{origin}: {other:?}"),
            }
        }
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(seen.len(), 1, "only the granted request left: {seen:?}");
        let h = &seen[0];
        let header = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(
            header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(header("accept-encoding"), Some("identity"));
        assert_eq!(header("host"), Some(addr.to_string().as_str()));
        assert_eq!(header("user-agent"), Some("python-requests/2.32"));
        let trace = broker.trace();
        assert_eq!(trace.total(), 6);
        assert_eq!(trace.count(CallOutcome::Delivered), 1);
        assert_eq!(trace.count(CallOutcome::Denied), 5);
    }

    /// An origin two of the run's grants have is not sent under either:
    /// the call is denied with a reason that says to name the grant.
    #[tokio::test]
    async fn a_call_by_url_to_an_origin_two_grants_have_is_denied() {
        let (addr, seen) = upstream().await;
        let broker = granted_broker_with(addr, &["api", "api2"]);
        let req = Request {
            method: "GET".into(),
            path: "/v1/items/1".into(),
            headers: Vec::new(),
            body: Vec::new(),
        };
        match broker.call_url(&format!("http://{addr}"), req, None).await {
            Err(CallError::Denied(why)) => assert!(why.starts_with("more than one"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(seen.lock().map(|s| s.is_empty()).unwrap_or(false));
        assert_eq!(broker.trace().count(CallOutcome::Denied), 1);
    }
}
