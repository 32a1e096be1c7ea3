//! Makes plain `wasi:http` requests (as an ordinary HTTP client library
//! would) and prints how each ended. One request per stdin line:
//! `SCHEME<TAB>AUTHORITY<TAB>PATH[<TAB>header: value]…`. Prints
//! `ok <status> <body-bytes> <first 200 bytes>` or `err <error-code>`.
use std::io::Read;
use wasip2::http::outgoing_handler::handle;
use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};

fn request(scheme: &str, authority: &str, path: &str, headers: &[(&str, &str)]) -> String {
    let fields = Fields::new();
    for (n, v) in headers {
        if fields.append(n, v.as_bytes()).is_err() {
            return "err header-rejected".into();
        }
    }
    let req = OutgoingRequest::new(fields);
    let _ = req.set_method(&Method::Get);
    let scheme = if scheme == "http" {
        Scheme::Http
    } else {
        Scheme::Https
    };
    let _ = req.set_scheme(Some(&scheme));
    let _ = req.set_authority(Some(authority));
    let _ = req.set_path_with_query(Some(path));
    let future = match handle(req, None) {
        Ok(f) => f,
        Err(e) => return format!("err {e:?}"),
    };
    future.subscribe().block();
    let resp = match future.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return format!("err {e:?}"),
        _ => return "err no-response".into(),
    };
    let status = resp.status();
    let mut body = Vec::new();
    if let Ok(incoming) = resp.consume()
        && let Ok(stream) = incoming.stream()
    {
        while let Ok(chunk) = stream.blocking_read(65536) {
            body.extend_from_slice(&chunk);
        }
    }
    let head: String = String::from_utf8_lossy(&body).chars().take(200).collect();
    format!("ok {status} {} {}", body.len(), head.replace('\n', " "))
}

fn main() {
    let mut input = String::new();
    let _ = std::io::stdin().read_to_string(&mut input);
    for line in input.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let headers: Vec<(&str, &str)> = f
            .iter()
            .skip(3)
            .filter_map(|h| h.split_once(": "))
            .collect();
        println!(
            "{}",
            request(
                f.first().copied().unwrap_or(""),
                f.get(1).copied().unwrap_or(""),
                f.get(2).copied().unwrap_or(""),
                &headers
            )
        );
    }
}
