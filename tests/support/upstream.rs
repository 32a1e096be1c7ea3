//! A real HTTP upstream on loopback that records everything it receives,
//! and grant profiles that point at it.
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
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

type Body = BoxBody<Bytes, Infallible>;

async fn answer(
    up: Upstream,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Body>, Infallible> {
    if req.uri().path().starts_with("/v1/echo/") {
        let auth = req
            .headers()
            .get("authorization")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        let mode = req.uri().path()["/v1/echo/".len()..].to_owned();
        let _ = record(&up, req).await;
        return Ok(echo(&mode, &auth));
    }
    Ok(answer_plain(up, req).await.map(|b| b.boxed()))
}

/// Records `req` as seen; returns its target and `Authorization`.
async fn record(up: &Upstream, req: hyper::Request<hyper::body::Incoming>) -> (String, String) {
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
    (target, auth)
}

async fn answer_plain(
    up: Upstream,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let (target, _auth) = record(&up, req).await;
    let path = target.split('?').next().unwrap_or("").to_owned();
    let resp = |status: u16, body: Bytes| {
        hyper::Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .header("set-cookie", "session=upstream-cookie")
            .body(Full::new(body))
            .unwrap_or_default()
    };
    match path.as_str() {
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
        p if p.starts_with("/v1/orders") => resp(
            200,
            Bytes::from(format!(r#"{{"order":"{p}","note":"{CANARY}"}}"#)),
        ),
        _ => resp(404, Bytes::from_static(b"not found")),
    }
}

/// The ways `/v1/echo/{mode}` hands the request's `Authorization` back,
/// as upstreams that echo requests do: raw and in every fixed re-encoding
/// a guest can undo, in the body, in headers, in trailers, and under every
/// transfer and content coding (issue #34). Each answer must be withheld
/// as `credential_reflected`.
pub const ECHO_MODES: &[&str] = &[
    "raw",
    "header",
    "header-name",
    "base64",
    "base64url",
    "base64-line",
    "base64-76",
    "base64-64",
    "percent",
    "percent-all",
    "json",
    "json-html",
    "json-u",
    "hex",
    "hex-upper",
    "base32",
    "html-dec",
    "html-hex",
    "utf16le",
    "utf16be",
    "gzip",
    "deflate",
    "br",
    "zstd",
    "stacked",
    "te-gzip",
    "gzip-no-header",
    "zlib-inside",
    "zlib-small-window",
    "gzip-nested",
    "set-cookie",
    "location",
    "www-authenticate",
    "signature",
];

/// Echo modes in a coding the host cannot decode (or bytes invalid in the
/// coding named): withheld as `undecodable`.
pub const UNDECODABLE_MODES: &[&str] = &["compress", "bad-gzip"];

/// Echo modes without the credential, compressed: delivered byte-exact
/// (their bodies are [`clean_body`]).
pub const CLEAN_MODES: &[&str] = &["clean-gzip", "clean-targz"];

/// What a clean mode's answer body is, byte for byte.
pub fn clean_body(mode: &str) -> Vec<u8> {
    use plimsoll::grant::reflection::codings::encode;
    match mode {
        "clean-gzip" => encode::gzip(b"{\"ok\": true, \"clean\": \"no credential here\"}"),
        _ => encode::gzip(&[7u8; 50_000]),
    }
}

/// `data` as zlib with the smallest window (CMF 0x08 | 1 << 4) and its
/// Adler-32: the raw deflate stream of small text never reaches back
/// more than 512 bytes.
fn small_window_zlib(data: &[u8]) -> Vec<u8> {
    use plimsoll::grant::reflection::codings::encode;
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    let cmf: u8 = 0x18;
    let flg: u8 = (31 - ((u16::from(cmf) * 256) % 31) as u8) % 31;
    let mut z = vec![cmf, flg];
    z.extend_from_slice(&encode::raw_deflate(data));
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    z
}

fn base64_wrapped(text: &str, width: usize, eol: &str) -> String {
    use base64::Engine as _;
    let enc = base64::engine::general_purpose::STANDARD.encode(text);
    enc.as_bytes()
        .chunks(width)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join(eol)
}

fn base32(data: &[u8]) -> String {
    const A: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut g = [0u8; 5];
        g[..chunk.len()].copy_from_slice(chunk);
        let bits = g.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
        for i in 0..(chunk.len() * 8).div_ceil(5) {
            out.push(A[((bits >> (35 - i * 5)) & 31) as usize] as char);
        }
    }
    out
}

fn echo(mode: &str, auth: &str) -> hyper::Response<Body> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use plimsoll::grant::reflection::codings::encode;
    let token = auth.strip_prefix("Bearer ").unwrap_or(auth);
    let raw_json = format!("{{\"headers\":{{\"Authorization\":\"{auth}\"}}}}");
    let with = |status: u16, headers: &[(&str, String)], body: Vec<u8>| {
        let mut b = hyper::Response::builder().status(status);
        for (n, v) in headers {
            b = b.header(*n, v.as_str());
        }
        b.body(Full::new(Bytes::from(body)).boxed())
            .unwrap_or_default()
    };
    let ok = |body: String| {
        with(
            200,
            &[("content-type", "application/json".into())],
            body.into_bytes(),
        )
    };
    let coded =
        |coding: &str, body: Vec<u8>| with(200, &[("content-encoding", coding.into())], body);
    let pct = |all: bool| -> String {
        auth.bytes()
            .map(|b| {
                if !all && (b.is_ascii_alphanumeric() || b"-._~".contains(&b)) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    };
    match mode {
        "raw" => ok(raw_json),
        "header" => with(
            200,
            &[("x-echo-authorization", auth.into())],
            b"{}".to_vec(),
        ),
        "header-name" => with(
            200,
            &[(
                Box::leak(
                    format!("x-{}", token.replace(['.', '+', '/', '='], "-")).into_boxed_str(),
                ),
                "1".into(),
            )],
            b"{}".to_vec(),
        ),
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
        "base64-76" => ok(base64_wrapped(
            &format!(
                "GET /v1/some/longer/path HTTP/1.1\r\nhost: upstream\r\nauthorization: {auth}\r\n\r\n"
            ),
            76,
            "\r\n",
        )),
        "base64-64" => ok(base64_wrapped(&format!("-----\n{auth}\n-----"), 64, "\n")),
        "percent" => ok(format!(
            "{{\"url\":\"https://log.example/?a={}\"}}",
            pct(false)
        )),
        "percent-all" => ok(format!("a={}", pct(true))),
        "json" => ok(serde_json::json!({"echo": auth})
            .to_string()
            .replace('/', "\\/")),
        "json-html" => ok(format!(
            "{{\"echo\":\"{}\"}}",
            auth.replace('+', "\\u002b")
                .replace('=', "\\u003d")
                .replace('/', "\\/")
        )),
        "json-u" => ok(format!(
            "{{\"echo\":\"{}\"}}",
            auth.bytes()
                .map(|b| format!("\\u{b:04x}"))
                .collect::<String>()
        )),
        "hex" => ok(auth.bytes().map(|b| format!("{b:02x}")).collect()),
        "hex-upper" => ok(auth.bytes().map(|b| format!("{b:02X}")).collect()),
        "base32" => ok(base32(auth.as_bytes())),
        "html-dec" => ok(auth.bytes().map(|b| format!("&#{b};")).collect()),
        "html-hex" => ok(auth.bytes().map(|b| format!("&#x{b:x};")).collect()),
        "utf16le" => with(
            200,
            &[],
            auth.encode_utf16().flat_map(u16::to_le_bytes).collect(),
        ),
        "utf16be" => with(
            200,
            &[],
            auth.encode_utf16().flat_map(u16::to_be_bytes).collect(),
        ),
        "gzip" => coded("gzip", encode::gzip(raw_json.as_bytes())),
        "deflate" => coded("deflate", encode::zlib(raw_json.as_bytes())),
        "br" => coded("br", encode::brotli(raw_json.as_bytes())),
        "zstd" => coded("zstd", encode::zstd(raw_json.as_bytes())),
        "stacked" => coded(
            "gzip, br",
            encode::brotli(&encode::gzip(raw_json.as_bytes())),
        ),
        // hyper adds `, chunked` and frames the body.
        "te-gzip" => with(
            200,
            &[("transfer-encoding", "gzip".into())],
            encode::gzip(raw_json.as_bytes()),
        ),
        "gzip-no-header" => with(200, &[], encode::gzip(raw_json.as_bytes())),
        "zlib-inside" => {
            let mut b = b"binary prefix \x00\x01 ".to_vec();
            b.extend_from_slice(&encode::zlib(raw_json.as_bytes()));
            b.extend_from_slice(b" trailing bytes");
            with(200, &[], b)
        }
        // zlib with a 512-byte window (its header starts 0x18, not 0x78),
        // which Python's `zlib.decompress` reads.
        "zlib-small-window" => {
            let mut b = b"binary prefix ".to_vec();
            b.extend_from_slice(&small_window_zlib(raw_json.as_bytes()));
            with(200, &[], b)
        }
        // Five gzips inside each other, no header saying so.
        "gzip-nested" => {
            let mut b = raw_json.clone().into_bytes();
            for _ in 0..5 {
                b = encode::gzip(&b);
            }
            with(200, &[], b)
        }
        "set-cookie" => with(
            200,
            &[("set-cookie", format!("session={token}; Path=/; HttpOnly"))],
            b"{}".to_vec(),
        ),
        "location" => with(
            302,
            &[("location", format!("https://elsewhere.example/?t={token}"))],
            Vec::new(),
        ),
        "www-authenticate" => with(
            401,
            &[("www-authenticate", format!("Bearer realm=\"{token}\""))],
            Vec::new(),
        ),
        // Not in ECHO_MODES: hyper sends trailers only to a client that
        // asked for them (`TE: trailers`), which the broker never does;
        // trailers are searched all the same (reflection/inspect.rs tests).
        "trailer" => {
            let mut trailers = http::HeaderMap::new();
            if let Ok(v) = http::HeaderValue::from_str(auth) {
                trailers.insert("x-echo", v);
            }
            let frames: Vec<Result<Frame<Bytes>, Infallible>> = vec![
                Ok(Frame::data(Bytes::from_static(b"{\"data\": 1}"))),
                Ok(Frame::trailers(trailers)),
            ];
            hyper::Response::builder()
                .status(200)
                .header("trailer", "x-echo")
                .body(StreamBody::new(futures::stream::iter(frames)).boxed())
                .unwrap_or_default()
        }
        "signature" => ok(format!(
            "{{\"sig\":\"{}\"}}",
            token.rsplit('.').next().unwrap_or_default()
        )),
        "compress" => coded("compress", encode::gzip(raw_json.as_bytes())),
        "bad-gzip" => coded("gzip", b"\x1f\x8b not really".to_vec()),
        "clean-gzip" => coded("gzip", clean_body(mode)),
        "clean-targz" => with(
            200,
            &[("content-type", "application/gzip".into())],
            clean_body(mode),
        ),
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
