//! A real HTTP upstream on loopback that records everything it receives,
//! and grant profiles that point at it.
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use plimsoll::grant::GrantProfiles;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const STATIC_TOKEN: &str = "sk-static-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
pub const JWT_SECRET: &str = "jwt-signing-secret-0123456789abcdef0123456789";
pub const CANARY: &str = "canary-from-upstream-5a5a5a";

/// One request as the upstream saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body_len: usize,
}

#[derive(Clone, Default)]
pub struct Upstream {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Where it listens.
    pub addr: Option<SocketAddr>,
}

impl Upstream {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
    pub fn clear(&self) {
        if let Ok(mut s) = self.seen.lock() {
            s.clear();
        }
    }
}

async fn answer(
    up: Upstream,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let method = req.method().to_string();
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let auth = req
        .headers()
        .get("authorization")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
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
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    if let Ok(mut s) = up.seen.lock() {
        s.push(Seen {
            method,
            target: target.clone(),
            headers,
            body_len: body.len(),
        });
    }
    let path = target.split('?').next().unwrap_or("").to_owned();
    let resp = |status: u16, body: Bytes| {
        hyper::Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .header("set-cookie", "session=upstream-cookie")
            .body(Full::new(body))
            .unwrap_or_default()
    };
    Ok(match path.as_str() {
        "/slow/1" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            resp(200, Bytes::from_static(b"late"))
        }
        "/big/over" => resp(200, Bytes::from(vec![b'b'; (4 << 20) + 1])),
        "/big/exact" => resp(200, Bytes::from(vec![b'b'; 4 << 20])),
        "/big/five" => resp(200, Bytes::from(vec![b'b'; 5 << 20])),
        "/limited/1" => hyper::Response::builder()
            .status(429)
            .header("retry-after", "2")
            .body(Full::new(Bytes::from_static(b"slow down")))
            .unwrap_or_default(),
        "/moved/1" => hyper::Response::builder()
            .status(302)
            .header("location", "/v1/admin")
            .body(Full::new(Bytes::new()))
            .unwrap_or_default(),
        // A redirect to wherever `?to=` says (another origin, in tests).
        "/moved/away" => hyper::Response::builder()
            .status(302)
            .header(
                "location",
                target.split_once("?to=").map(|(_, to)| to).unwrap_or("/"),
            )
            .body(Full::new(Bytes::new()))
            .unwrap_or_default(),
        p if p.starts_with("/v1/echo/") => echo(&p["/v1/echo/".len()..], &auth),
        p if p.starts_with("/v1/orders") => resp(
            200,
            Bytes::from(format!(r#"{{"order":"{p}","note":"{CANARY}"}}"#)),
        ),
        _ => resp(404, Bytes::from_static(b"not found")),
    })
}

/// The ways `/v1/echo/{mode}` hands the request's `Authorization` back,
/// as upstreams that echo requests do.
pub const ECHO_MODES: &[&str] = &[
    "raw",
    "header",
    "header-name",
    "base64",
    "base64url",
    "base64-line",
    "percent",
    "json",
    "json-html",
    "gzip",
    "signature",
];

fn echo(mode: &str, auth: &str) -> hyper::Response<Full<Bytes>> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let token = auth.strip_prefix("Bearer ").unwrap_or(auth);
    let ok = |body: String| {
        hyper::Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap_or_default()
    };
    let pct: String = auth
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    match mode {
        "raw" => ok(format!("{{\"headers\":{{\"Authorization\":\"{auth}\"}}}}")),
        "header" => hyper::Response::builder()
            .status(200)
            .header("x-echo-authorization", auth)
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap_or_default(),
        "header-name" => hyper::Response::builder()
            .status(200)
            .header(
                format!("x-{}", token.replace(['.', '+', '/', '='], "-")),
                "1",
            )
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap_or_default(),
        "base64" => ok(format!(
            "{{\"b\":\"{}\"}}",
            STANDARD.encode(format!("Authorization: {auth}"))
        )),
        "base64url" => ok(format!(
            "{{\"b\":\"{}\"}}",
            URL_SAFE_NO_PAD.encode(format!("x{auth}y"))
        )),
        "base64-line" => {
            ok(STANDARD.encode(format!("GET / HTTP/1.1\r\nauthorization: {auth}\r\n\r\n")))
        }
        "percent" => ok(format!("{{\"url\":\"https://log.example/?a={pct}\"}}")),
        "json" => ok(serde_json::json!({"echo": auth})
            .to_string()
            .replace('/', "\\/")),
        "json-html" => ok(format!(
            "{{\"echo\":\"{}\"}}",
            auth.replace('+', "\\u002b")
                .replace('=', "\\u003d")
                .replace('/', "\\/")
        )),
        "gzip" => hyper::Response::builder()
            .status(200)
            .header("content-encoding", "gzip")
            .body(Full::new(Bytes::from_static(b"\x1f\x8b not really")))
            .unwrap_or_default(),
        "signature" => ok(format!(
            "{{\"sig\":\"{}\"}}",
            token.rsplit('.').next().unwrap_or_default()
        )),
        _ => ok("{}".into()),
    }
}

pub async fn start_upstream() -> (Upstream, SocketAddr) {
    let up = Upstream::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut up = up;
    up.addr = Some(addr);
    let served = up.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let up = served.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| answer(up.clone(), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (up, addr)
}

pub fn profiles(addr: SocketAddr) -> GrantProfiles {
    let json = format!(
        r#"{{"profiles": {{
            "orders": {{"base_url": "http://{addr}", "allow": ["GET /v1/orders/*", "POST /v1/orders", "GET /slow/*", "GET /big/*", "GET /limited/*", "GET /moved/*", "GET /v1/echo/*"],
                        "token": {{"type": "static", "env": "ORDERS_TOKEN"}}, "max_calls": 100, "allow_headers": ["x-request-id"]}},
            "minted": {{"base_url": "http://{addr}", "allow": ["GET /v1/orders/*", "GET /v1/echo/*"], "scopes": ["orders:read"],
                        "allowed_callers": ["alice"],
                        "token": {{"type": "jwt", "secret_env": "JWT_SECRET", "ttl_sec": 600, "issuer": "plimsoll-test", "audience": "orders", "key_id": "k1"}}}},
            "tiny": {{"base_url": "http://{addr}", "allow": ["GET /v1/orders/*"], "token": {{"type": "static", "env": "ORDERS_TOKEN"}}, "max_calls": 3}}
        }}}}"#
    );
    GrantProfiles::from_json(&json, &|k| match k {
        "ORDERS_TOKEN" => Some(STATIC_TOKEN.to_owned()),
        "JWT_SECRET" => Some(JWT_SECRET.to_owned()),
        _ => None,
    })
    .expect("grants")
}
