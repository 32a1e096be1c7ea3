//! Makes broker calls described on stdin and prints how each ended.
//!
//! One call per line, fields separated by TAB:
//! `METHOD<TAB>API<TAB>PATH[<TAB>header: value]…[<TAB>body=N]`.
//! Fields may use the escapes `\r`, `\n`, `\t`, `\\` and `\xHH` so that
//! tests can send any bytes. Each call prints one line:
//! `ok <status> <body-bytes> <first 200 bytes of the body>` or `err <kind>`.
//!
//! A line `DUMP` writes the guest's whole linear memory to
//! `/work/out/memory.bin`, so that tests can search it for credentials.
use plimsoll_guest::broker::{self, CallError};
use std::io::Read;

fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            match b[i + 1] {
                b'r' => out.push(b'\r'),
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'\\' => out.push(b'\\'),
                b'x' if i + 3 < b.len() => {
                    let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap_or("3f");
                    out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                    i += 4;
                    continue;
                }
                other => {
                    out.push(b'\\');
                    out.push(other);
                }
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn text(s: &str) -> String {
    // WIT strings must be UTF-8; invalid bytes become U+FFFD.
    String::from_utf8_lossy(&unescape(s)).into_owned()
}

/// Copies linear memory 0 into `/work/out/memory.bin`.
fn dump_memory() {
    #[cfg(target_arch = "wasm32")]
    {
        let bytes = core::arch::wasm32::memory_size(0) * 65536;
        let mut copy = vec![0u8; bytes];
        // Byte 0 stays 0: address 0 is the null pointer in Rust.
        for (addr, slot) in copy.iter_mut().enumerate().skip(1) {
            // SAFETY: every address below the memory's size is readable in
            // wasm, and volatile reads are not optimised away.
            *slot = unsafe { std::ptr::read_volatile(addr as *const u8) };
        }
        match std::fs::write("/work/out/memory.bin", &copy) {
            Ok(()) => println!("dumped {bytes}"),
            Err(e) => println!("err dump {e}"),
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    println!("err dump not wasm");
}

fn main() {
    let mut input = String::new();
    if std::io::stdin().read_to_string(&mut input).is_err() {
        println!("err stdin");
        return;
    }
    for line in input.lines().filter(|l| !l.trim().is_empty()) {
        if line == "DUMP" {
            dump_memory();
            continue;
        }
        let mut fields = line.split('\t');
        let method = text(fields.next().unwrap_or(""));
        let api = text(fields.next().unwrap_or(""));
        let path = text(fields.next().unwrap_or(""));
        let mut req = broker::request(&method, &path, Vec::new());
        for f in fields {
            if let Some(n) = f.strip_prefix("body=") {
                let n: usize = n.parse().unwrap_or(0);
                req.body = vec![b'a'; n];
            } else if let Some((k, v)) = f.split_once(": ") {
                req.headers.push((text(k), text(v)));
            }
        }
        match broker::call(&api, &req) {
            Ok(resp) => {
                let head: String = resp.text().chars().take(200).collect();
                println!(
                    "ok {} {} {}",
                    resp.status,
                    resp.body.len(),
                    head.replace('\n', " ")
                );
            }
            Err(e) => {
                let kind = match e {
                    CallError::Denied(_) => "denied",
                    CallError::BudgetExhausted => "budget_exhausted",
                    CallError::RequestTooLarge => "request_too_large",
                    CallError::ResponseTooLarge => "response_too_large",
                    CallError::Timeout => "timeout",
                    CallError::Upstream(_) => "upstream",
                };
                println!("err {kind}");
            }
        }
    }
}
