//! Route templates and request targets: neither parser panics, and a
//! target the broker accepts is canonical (no empty, `.` or `..` segment,
//! no encoded dot, slash, backslash or percent), so a template can only
//! ever be matched against a canonical path.
//!
//! Input: `TEMPLATE\nTARGET`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plimsoll::grant::route::{RouteTemplate, canonical_target};

include!("../../support/path_oracle.rs");

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let (template, target) = s.split_once('\n').unwrap_or((s, "/"));
    let accepted = canonical_target(target);
    if accepted.is_ok() {
        let path = target.split('?').next().unwrap_or("");
        assert!(
            is_canonical_path(path),
            "accepted a non-canonical target {target:?}"
        );
    }
    if let Ok(t) = RouteTemplate::parse(template)
        && let Ok(c) = &accepted
    {
        let _ = t.matches(t.method(), c);
    }
});
