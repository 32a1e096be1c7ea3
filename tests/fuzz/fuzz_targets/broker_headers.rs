//! The broker's header gate: any list of guest headers is accepted or
//! refused without a panic, and an accepted list has only allowed,
//! lower-case, unique names and values without control bytes.
//!
//! Input: lines of `name: value`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plimsoll::grant::headers::{check_request_headers, response_header_passes};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let headers: Vec<(String, String)> = text
        .split('\n')
        .map(|l| match l.split_once(':') {
            Some((n, v)) => (n.to_owned(), v.trim_start().to_owned()),
            None => (l.to_owned(), String::new()),
        })
        .collect();
    if let Ok(ok) = check_request_headers(&headers) {
        let mut seen = std::collections::HashSet::new();
        for (n, v) in &ok {
            assert_eq!(n, &n.to_ascii_lowercase());
            assert!(n != "authorization" && n != "host" && n != "cookie", "{n}");
            assert!(seen.insert(n.clone()), "duplicate {n}");
            assert!(!v.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f));
        }
    }
    for (n, _) in &headers {
        let _ = response_header_passes(&n.to_ascii_lowercase());
    }
});
