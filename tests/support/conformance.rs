//! The conformance kit's parts: its loopback upstream and the encoding of
//! `conformance/cases.json` commands into the agents' line protocol
//! (conformance/README.md).
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The credential the `orders` and `once` grants carry.
pub const TOKEN: &str = "sk-conformance-4c0ffee4c0ffee4c0ffee";

/// An upstream on loopback answering conformance/README.md's routes and
/// counting what it received.
#[derive(Clone)]
pub struct Upstream {
    pub addr: SocketAddr,
    seen: Arc<AtomicUsize>,
}

impl Upstream {
    pub fn requests(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Starts one on `rt`.
pub fn start(rt: &tokio::runtime::Runtime) -> Upstream {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind the upstream");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    rt.spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| {
                    let counter = counter.clone();
                    async move {
                        counter.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, Infallible>(answer(req).await)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Upstream { addr, seen }
}

async fn answer(req: hyper::Request<hyper::body::Incoming>) -> hyper::Response<Full<Bytes>> {
    let method = req.method().as_str().to_owned();
    let path = req.uri().path().to_owned();
    let auth_ok = req
        .headers()
        .get("authorization")
        .is_some_and(|v| v.as_bytes() == format!("Bearer {TOKEN}").as_bytes());
    let echo_in = req.headers().get("x-conformance-in").cloned();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let ok = |b: Bytes| {
        hyper::Response::builder()
            .status(200)
            .body(Full::new(b))
            .unwrap_or_default()
    };
    match (method.as_str(), path.as_str()) {
        ("GET", p) if p.starts_with("/v1/orders/") => {
            let mut r = ok(Bytes::from(format!(
                r#"{{"order":"{}"}}"#,
                &p["/v1/orders/".len()..]
            )));
            if auth_ok {
                r.headers_mut().insert(
                    "x-conformance-auth",
                    hyper::header::HeaderValue::from_static("ok"),
                );
            }
            r
        }
        ("POST", "/v1/echo") => {
            let mut r = ok(body);
            if let Some(v) = echo_in {
                r.headers_mut().insert("x-conformance-echo", v);
            }
            r
        }
        ("POST", "/v1/size") => ok(Bytes::from(body.len().to_string())),
        ("GET", "/v1/binary") => ok(Bytes::from_static(b"\x00\xff\xfe\x80\xc3\x28\x0a\x00")),
        ("GET", "/v1/slow") => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            ok(Bytes::from_static(b"late"))
        }
        ("GET", "/v1/huge") => ok(Bytes::from(vec![b'h'; (4 << 20) + 1])),
        _ => hyper::Response::builder()
            .status(404)
            .body(Full::new(Bytes::from_static(b"no such route")))
            .unwrap_or_default(),
    }
}

/// A loopback origin nothing listens on (bound, then closed).
pub fn closed_origin() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    drop(l);
    format!("http://{addr}")
}

/// Lowercase hex; `-` for nothing.
pub fn hex(b: &[u8]) -> String {
    if b.is_empty() {
        return "-".into();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The protocol's command words; a case command is the object holding one.
pub const COMMANDS: &[&str] = &[
    "print", "eprint", "stdin", "env", "args", "clock", "random", "write", "read", "exit", "call",
    "origin", "fetch",
];

/// Encodes one case command as a protocol line, `subst` applied to its
/// strings. `Err` names what is malformed in cases.json.
pub fn encode(cmd: &Value, subst: &dyn Fn(&str) -> String) -> Result<String, String> {
    let obj = cmd.as_object().ok_or("a command must be an object")?;
    let s = |k: &str| -> Result<String, String> {
        obj.get(k)
            .and_then(Value::as_str)
            .map(subst)
            .ok_or_else(|| format!("`{k}` must be a string in {cmd}"))
    };
    let h = |k: &str| -> Result<String, String> { Ok(hex(s(k)?.as_bytes())) };
    let headers = || -> Result<String, String> {
        let Some(list) = obj.get("headers") else {
            return Ok("-".into());
        };
        let list = list.as_array().ok_or("`headers` must be a list")?;
        let mut out = Vec::new();
        for pair in list {
            let (n, v) = pair
                .as_array()
                .and_then(|p| Some((p.first()?.as_str()?, p.get(1)?.as_str()?)))
                .ok_or("a header must be [name, value]")?;
            out.push(format!("{}:{}", hex(n.as_bytes()), hex(v.as_bytes())));
        }
        Ok(if out.is_empty() {
            "-".into()
        } else {
            out.join(",")
        })
    };
    let body = || -> Result<String, String> {
        if let Some(b) = obj.get("body").and_then(Value::as_str) {
            return Ok(if b.is_empty() {
                "-".into()
            } else {
                format!("hex:{}", hex(b.as_bytes()))
            });
        }
        if let Some(b) = obj.get("body_hex").and_then(Value::as_str) {
            return Ok(format!("hex:{b}"));
        }
        if let Some(f) = obj.get("body_fill").and_then(Value::as_array) {
            let n = f
                .first()
                .and_then(Value::as_u64)
                .ok_or("body_fill: [n, byte-hex]")?;
            let b = f
                .get(1)
                .and_then(Value::as_str)
                .ok_or("body_fill: [n, byte-hex]")?;
            return Ok(format!("fill:{n}:{b}"));
        }
        Ok("-".into())
    };
    let method = || s("method").map(|m| m.to_owned());
    let word = COMMANDS
        .iter()
        .find(|w| obj.contains_key(**w))
        .ok_or_else(|| format!("no command word in {cmd}"))?;
    Ok(match *word {
        "print" | "eprint" => format!("{word} {}", h(word)?),
        "stdin" | "env" | "args" | "clock" | "random" => (*word).to_owned(),
        "write" => format!("write {} {}", h("write")?, h("data")?),
        "read" => format!("read {}", h("read")?),
        "exit" => format!(
            "exit {}",
            obj.get("exit")
                .and_then(Value::as_i64)
                .ok_or("exit: a number")?
        ),
        "call" => format!(
            "call {} {} {} {} {}",
            h("call")?,
            method()?,
            h("path")?,
            headers()?,
            body()?
        ),
        "origin" => format!(
            "origin {} {} {} {} {} {}",
            h("origin")?,
            obj.get("timeout_ms")
                .and_then(Value::as_u64)
                .map(|t| t.to_string())
                .unwrap_or_else(|| "-".into()),
            method()?,
            h("path")?,
            headers()?,
            body()?
        ),
        "fetch" => format!("fetch {} {} {}", h("fetch")?, method()?, body()?),
        other => return Err(format!("command `{other}` has no encoding")),
    })
}

/// Whether `got` is `want`, where a `want` ending in ` *` matches any line
/// with that prefix.
pub fn line_matches(want: &str, got: &str) -> bool {
    match want.strip_suffix('*') {
        Some(prefix) if prefix.ends_with(' ') => got.starts_with(prefix),
        _ => want == got,
    }
}
