//! The run request as a client sends it (JSON): it parses or is refused
//! with an error, and whatever limits it carries never raise the
//! operator's envelope.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plimsoll::{Envelope, RunRequest};

fuzz_target!(|data: &[u8]| {
    let Ok(req) = serde_json::from_slice::<RunRequest>(data) else {
        return;
    };
    let operator = Envelope::default();
    if let Ok(env) = operator.lowered_by(&req.limits) {
        assert!(env.is_within(&operator), "a request raised the envelope");
    }
});
