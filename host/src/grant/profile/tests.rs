//! Tests of grant profiles: origins, a complete file, and every error
//! naming its profile and field.

#[test]
fn origins_compare_with_default_ports_and_guest_origins_are_strict() {
    use super::{Origin, same_origin};
    assert!(same_origin(
        "https",
        "api.example.com:443",
        "HTTPS",
        "API.example.com"
    ));
    assert!(same_origin("http", "127.0.0.1", "http", "127.0.0.1:80"));
    assert!(!same_origin("http", "127.0.0.1:8080", "http", "127.0.0.1"));
    assert!(!same_origin("https", "a.example", "http", "a.example"));
    assert!(!same_origin("https", "a.example:80", "https", "a.example"));
    let o = Origin::parse_guest("HTTP://Example.COM:8080/").expect("origin");
    assert_eq!(
        (o.scheme.as_str(), o.authority.as_str()),
        ("http", "example.com:8080")
    );
    for bad in [
        "http://u:p@example.com",
        "http://example.com/v1",
        "http://example.com/?q",
        "http://example.com#f",
        "ftp://example.com",
        "example.com",
        "",
    ] {
        assert!(Origin::parse_guest(bad).is_none(), "{bad}");
    }
}
use super::*;

fn env(k: &str) -> Option<String> {
    match k {
        "TOKEN" => Some("static-token-value".into()),
        "JWT_SECRET" => Some("x".repeat(32)),
        "SHORT" => Some("short".into()),
        _ => None,
    }
}

fn parse(json: &str) -> Result<GrantProfiles, GrantsFileError> {
    GrantProfiles::from_json(json, &env)
}

fn profile(body: &str) -> String {
    format!(r#"{{"profiles": {{"orders": {body}}}}}"#)
}

#[test]
fn a_complete_file_parses() {
    let p = parse(&profile(
        r#"{"base_url": "https://api.example.com", "allow": ["GET /v1/orders/*", "post /v1/orders"],
            "allowed_callers": ["alice"], "scopes": ["orders:read"],
            "token": {"type": "jwt", "secret_env": "JWT_SECRET", "ttl_sec": 60, "issuer": "plimsoll", "audience": "orders"},
            "max_calls": 5}"#,
    ))
    .expect("valid");
    let o = p.get("orders").expect("profile");
    assert_eq!(o.origin.url(), "https://api.example.com");
    assert_eq!(o.routes.len(), 2);
    assert_eq!(o.max_calls, 5);
    let loopback = parse(&profile(
        r#"{"base_url": "http://127.0.0.1:8080", "allow": ["GET /x"], "token": {"type": "static", "env": "TOKEN"}}"#,
    ))
    .expect("loopback http is allowed");
    assert_eq!(
        loopback.get("orders").map(|p| p.max_calls),
        Some(DEFAULT_MAX_CALLS)
    );
}

#[test]
fn every_error_names_the_profile_and_the_field() {
    let cases = [
        (
            r#"{"base_url": "http://api.example.com", "allow": ["GET /x"]}"#,
            "base_url",
        ),
        (
            r#"{"base_url": "https://api.example.com/v1", "allow": ["GET /x"]}"#,
            "base_url",
        ),
        (
            r#"{"base_url": "https://u:p@api.example.com", "allow": ["GET /x"]}"#,
            "base_url",
        ),
        (
            r#"{"base_url": "ftp://api.example.com", "allow": ["GET /x"]}"#,
            "base_url",
        ),
        (
            r#"{"base_url": "https://api.example.com?x=1", "allow": ["GET /x"]}"#,
            "base_url",
        ),
        (
            r#"{"base_url": "https://api.example.com", "allow": []}"#,
            "allow",
        ),
        (
            r#"{"base_url": "https://api.example.com", "allow": ["GET /a/../b"]}"#,
            "allow[0]",
        ),
        (
            r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "max_calls": 0}"#,
            "max_calls",
        ),
        (
            r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "token": {"type": "static", "env": "MISSING"}}"#,
            "token.env",
        ),
        (
            r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "token": {"type": "jwt", "secret_env": "SHORT", "ttl_sec": 60, "issuer": "i", "audience": "a"}}"#,
            "token.secret_env",
        ),
        (
            r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "token": {"type": "jwt", "secret_env": "JWT_SECRET", "ttl_sec": 0, "issuer": "i", "audience": "a"}}"#,
            "token.ttl_sec",
        ),
        (
            r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "alow": []}"#,
            "(profile)",
        ),
        (
            r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "token": {"type": "static", "env": "TOKEN", "extra": 1}}"#,
            "(profile)",
        ),
        (
            r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "allowed_callers": ["a b"]}"#,
            "allowed_callers[0]",
        ),
    ];
    for (body, field) in cases {
        let e = parse(&profile(body)).expect_err(body);
        assert_eq!(e.profile.as_deref(), Some("orders"), "{body}");
        assert_eq!(e.field, field, "{body}: {e}");
        let shown = e.to_string();
        assert!(
            shown.contains("\"orders\"") && shown.contains(field),
            "{shown}"
        );
        assert!(!shown.contains("static-token-value") && !shown.contains(&"x".repeat(32)));
    }
    let e = parse(
        r#"{"profiles": {"bad name": {"base_url": "https://a.example", "allow": ["GET /x"]}}}"#,
    )
    .expect_err("bad name");
    assert_eq!(e.field, "name");
    assert_eq!(
        parse(r#"{"profile": {}}"#)
            .expect_err("unknown top-level field")
            .field,
        "file"
    );
    assert_eq!(parse("not json").expect_err("malformed").field, "file");
}
