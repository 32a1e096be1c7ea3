//! The protocol's parsing, mapping and limits, without a daemon.

use super::session::session_id;
use super::*;

/// Everything a request goes through before dispatch, on one body.
fn read_all(body: &[u8]) {
    if let Ok(m) = json::parse(body) {
        let _ = m.int("protocol", 0, u32::MAX.into());
        let _ = Envelope::read(&m);
        let _ = payload(&m);
        let _ = session_id(&m);
        let _ = m.strs("languages");
    }
}

#[test]
fn mangled_requests_are_refused_never_a_panic() {
    let good = format!(
        r#"{{"protocol":4,"minimumIsolation":"process","timeoutMs":"30000","traceId":"t-1","softwareRule":{{"mode":"approved","identities":["a:b","c:d"]}},"sessionId":"00112233445566778899aabbccddeeff","project":{{"files":[{{"path":"a/b.txt","content":"x"}}],"steps":["{}"],"artifacts":["out.txt"]}},"cell":{{"language":"python","code":"1","files":[]}},"module":{{"rows":[{{"values":[1,"NaN"]}}],"endTime":1e308}}}}"#,
        PYTHON_STEP.replace('"', "\\\"")
    );
    let good = good.as_bytes();
    assert!(json::parse(good).is_ok());
    // Every prefix.
    for n in 0..good.len() {
        read_all(&good[..n]);
    }
    // Byte flips and splices, from a fixed seed.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let alphabet = b"{}[]\":,0123456789-eE.nulltruefalse\\u00\xff ";
    for _ in 0..20_000 {
        let mut b = good.to_vec();
        for _ in 0..(next() % 4 + 1) {
            let i = (next() as usize) % b.len();
            b[i] = alphabet[(next() as usize) % alphabet.len()];
        }
        read_all(&b);
    }
    // Deep nesting stops at the parser's depth limit.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(json::parse(deep.as_bytes()).is_err());
}

#[test]
fn the_request_id_is_echoed_only_when_exactly_one_is_valid() {
    let mut h = HeaderMap::new();
    assert!(request_id(&h).is_none());
    h.append(
        REQUEST_ID,
        HeaderValue::from_static("0123456789abcdef0123456789abcdef"),
    );
    assert!(request_id(&h).is_some());
    h.append(
        REQUEST_ID,
        HeaderValue::from_static("0123456789abcdef0123456789abcdef"),
    );
    assert!(request_id(&h).is_none(), "two values");
    let mut h = HeaderMap::new();
    h.append(
        REQUEST_ID,
        HeaderValue::from_static("0123456789ABCDEF0123456789ABCDEF"),
    );
    assert!(request_id(&h).is_none(), "upper case");
}

#[test]
fn timeouts_are_defaulted_and_clamped_never_refused() {
    let env =
        |t: &str| Envelope::read(&json::parse(t.as_bytes()).expect("json")).expect("envelope");
    assert_eq!(env(r#"{"timeoutMs": 30000}"#).timeout_ms, 30000);
    assert_eq!(env(r#"{}"#).timeout_ms, 0);
    assert!(Envelope::read(&json::parse(br#"{"timeoutMs": 2147483648}"#).expect("json")).is_err());
    assert!(
        env(r#"{"traceId": "bad id!"}"#).trace_id.is_none(),
        "dropped, not refused"
    );
}
