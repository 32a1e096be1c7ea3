//! The Rust SDK's conformance agent: the reference the other SDKs' agents
//! are held to. It speaks conformance/README.md's protocol and does every
//! command through `plimsoll_guest`'s public API or Rust's std.

use plimsoll_guest::broker::{self, CallError, Request, Response};
use std::io::{Read, Write};

fn hex(b: &[u8]) -> String {
    if b.is_empty() {
        return "-".into();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s == "-" {
        return Some(Vec::new());
    }
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn text(s: &str) -> Option<String> {
    String::from_utf8(unhex(s)?).ok()
}

fn headers(s: &str) -> Option<Vec<(String, String)>> {
    if s == "-" {
        return Some(Vec::new());
    }
    s.split(',')
        .map(|pair| {
            let (n, v) = pair.split_once(':')?;
            Some((text(n)?, text(v)?))
        })
        .collect()
}

fn body(s: &str) -> Option<Vec<u8>> {
    if s == "-" {
        return Some(Vec::new());
    }
    if let Some(h) = s.strip_prefix("hex:") {
        return unhex(h);
    }
    let (n, byte) = s.strip_prefix("fill:")?.split_once(':')?;
    let byte = *unhex(byte)?.first()?;
    Some(vec![byte; n.parse().ok()?])
}

fn request(method: &str, path: &str, hs: &str, b: &str) -> Option<Request> {
    Some(Request {
        method: method.to_owned(),
        path: text(path)?,
        headers: headers(hs)?,
        body: body(b)?,
    })
}

/// The protocol's rendering of a call's outcome.
fn result(r: Result<Response, CallError>) -> String {
    match r {
        Ok(resp) => {
            let mut out = format!("ok {} {}", resp.status, hex(&resp.body));
            for (n, v) in &resp.headers {
                let n = n.to_ascii_lowercase();
                if n.starts_with("x-conformance") {
                    out.push_str(&format!("\nheader {n} {}", hex(v.as_bytes())));
                }
            }
            out
        }
        Err(e) => match &e {
            CallError::Denied(m) | CallError::Upstream(m) => {
                format!("err {} {}", broker::error_tag(&e), hex(m.as_bytes()))
            }
            _ => format!("err {}", broker::error_tag(&e)),
        },
    }
}

fn clock_ok() -> bool {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let a = std::time::Instant::now();
    let b = std::time::Instant::now();
    wall > 1_600_000_000 && b >= a
}

fn random_ok() -> bool {
    // std has no public random API; WASI's is the source it uses itself.
    let a = wasip2::random::random::get_random_bytes(16);
    let b = wasip2::random::random::get_random_bytes(16);
    a.len() == 16 && a != b && a != [0; 16] && b != [0; 16]
}

fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "bad" }
}

/// Performs one command; `Some` is what it prints on stdout (possibly
/// nothing), `None` a malformed command.
fn perform(f: &[&str], stdin_len: usize) -> Option<Option<String>> {
    Some(match f {
        ["print", h] => {
            let mut o = std::io::stdout();
            let _ = o.write_all(&unhex(h)?);
            let _ = o.write_all(b"\n");
            None
        }
        ["eprint", h] => {
            let mut e = std::io::stderr();
            let _ = e.write_all(&unhex(h)?);
            let _ = e.write_all(b"\n");
            None
        }
        ["stdin"] => Some(format!("stdin {stdin_len}")),
        ["env"] => Some(format!("env {}", std::env::vars_os().count())),
        ["args"] => Some(format!(
            "args {}",
            std::env::args_os().count().saturating_sub(1)
        )),
        ["clock"] => Some(format!("clock {}", verdict(clock_ok()))),
        ["random"] => Some(format!("random {}", verdict(random_ok()))),
        ["write", p, d] => {
            let (p, d) = (text(p)?, unhex(d)?);
            Some(match std::fs::write(&p, &d) {
                Ok(()) => format!("wrote {}", d.len()),
                Err(_) => "err io".into(),
            })
        }
        ["read", p] => Some(match std::fs::read(text(p)?) {
            Ok(d) => format!("read {}", hex(&d)),
            Err(_) => "err io".into(),
        }),
        ["call", api, m, p, hs, b] => {
            Some(result(broker::call(&text(api)?, &request(m, p, hs, b)?)))
        }
        ["origin", o, t, m, p, hs, b] => {
            let timeout = if *t == "-" {
                None
            } else {
                Some(t.parse().ok()?)
            };
            let req = request(m, p, hs, b)?;
            Some(result(broker::call_origin(&text(o)?, &req, timeout)))
        }
        ["exit", code] => {
            let _ = std::io::stdout().flush();
            let _ = std::io::stderr().flush();
            std::process::exit(code.parse().unwrap_or(1));
        }
        [word, ..] => Some(format!("unsupported {word}")),
        [] => None,
    })
}

fn main() {
    let mut input = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut input);
    let commands = String::from_utf8_lossy(&input).into_owned();
    let mut out = std::io::stdout().lock();
    for line in commands.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        match perform(&fields, input.len()) {
            Some(Some(text)) => {
                let _ = writeln!(out, "{text}");
            }
            Some(None) => {}
            None => eprintln!("malformed command: {}", fields.first().unwrap_or(&"")),
        }
    }
    let _ = out.flush();
}
