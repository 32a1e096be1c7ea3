//! The guest SDK conformance kit (conformance/README.md): every case of
//! `conformance/cases.json` against every SDK's conformance agent, each a
//! real `plimsoll run --provider wasm --json` with a real upstream on
//! loopback. Failures are reported as `language:case`; an agent that is
//! missing fails (build it with `make sdk-agents`), it is never skipped.
//!
//! `PLIMSOLL_SDK_ONLY=go,c` narrows the run to those SDKs.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::conformance::*;

/// Every SDK with a conformance agent; Rust is the reference.
const LANGUAGES: &[&str] = &["rust", "js", "python", "c", "go"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn agent(lang: &str) -> PathBuf {
    repo().join(format!("target/sdk/{lang}/conformance.wasm"))
}

fn plimsoll() -> Command {
    Command::new(env!("CARGO_BIN_EXE_plimsoll"))
}

struct Kit {
    orders: Upstream,
    once: Upstream,
    /// A live upstream no grant names: it must receive nothing.
    ungranted: Upstream,
    grants: PathBuf,
    state: PathBuf,
    dir: tempfile::TempDir,
}

fn kit(rt: &tokio::runtime::Runtime) -> Kit {
    let orders = start(rt);
    let once = start(rt);
    let down = closed_origin();
    let ungranted = start(rt);
    let dir = tempfile::tempdir().expect("tempdir");
    let token = r#"{"type": "static", "env": "CONFORMANCE_TOKEN"}"#;
    let grants = serde_json::from_str::<Value>(&format!(
        r#"{{"profiles": {{
          "orders": {{"base_url": "{}", "token": {token}, "allow_headers": ["x-conformance-in"],
            "allow": ["GET /v1/orders/*", "POST /v1/echo", "POST /v1/size", "GET /v1/binary", "GET /v1/slow", "GET /v1/huge"]}},
          "once": {{"base_url": "{}", "token": {token}, "allow": ["GET /v1/orders/*"], "max_calls": 1}},
          "down": {{"base_url": "{down}", "allow": ["GET /v1/orders/*"]}}
        }}}}"#,
        orders.origin(),
        once.origin()
    ))
    .expect("grants json");
    let path = dir.path().join("grants.json");
    std::fs::write(&path, grants.to_string()).expect("write grants");
    let state = repo().join("target/sdk/test-cache");
    std::fs::create_dir_all(&state).expect("state dir");
    Kit {
        orders,
        once,
        ungranted,
        grants: path,
        state,
        dir,
    }
}

/// The world `plimsoll check` says the agent targets.
fn world_of(path: &Path) -> Result<String, String> {
    let out = plimsoll()
        .arg("check")
        .arg("--json")
        .arg(path)
        .output()
        .map_err(|e| format!("cannot start plimsoll check: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "plimsoll check refused it: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("check's JSON: {e}"))?;
    v["world"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "check printed no world".into())
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("base64")
            .and_then(Value::as_str)
            .map(|b| {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .unwrap_or_default();
                String::from_utf8_lossy(&bytes).into_owned()
            })
            .unwrap_or_default(),
        _ => String::new(),
    }
}

fn lines_match(what: &str, want: &[String], got: &str) -> Result<(), String> {
    let got_lines: Vec<&str> = got.lines().collect();
    for (i, w) in want.iter().enumerate() {
        match got_lines.get(i) {
            Some(g) if line_matches(w, g) => {}
            Some(g) => {
                return Err(format!(
                    "{what} line {}: want `{w}`, got `{}`",
                    i + 1,
                    clip(g)
                ));
            }
            None => return Err(format!("{what} line {}: want `{w}`, got nothing", i + 1)),
        }
    }
    if got_lines.len() > want.len() {
        return Err(format!(
            "{what}: {} more line(s) than expected, from `{}`",
            got_lines.len() - want.len(),
            clip(got_lines[want.len()])
        ));
    }
    Ok(())
}

fn clip(s: &str) -> String {
    if s.len() > 160 {
        format!("{}…", &s[..s.floor_char_boundary(160)])
    } else {
        s.to_owned()
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `case` against the agent at `path`.
fn run_case(kit: &Kit, path: &Path, case: &Value) -> Result<(), String> {
    let subst = |s: &str| {
        s.replace("{upstream}", &kit.orders.origin())
            .replace("{ungranted}", &kit.ungranted.origin())
    };
    let mut stdin = String::new();
    for cmd in case["commands"].as_array().ok_or("no commands")? {
        stdin.push_str(&encode(cmd, &subst)?);
        stdin.push('\n');
    }
    let stdin_file = kit.dir.path().join("stdin");
    std::fs::write(&stdin_file, &stdin).map_err(|e| format!("write stdin: {e}"))?;
    let seen = || kit.orders.requests() + kit.once.requests() + kit.ungranted.requests();
    let before = seen();
    let mut cmd = plimsoll();
    cmd.args(["run", "--provider", "wasm", "--json"])
        .arg("--state-dir")
        .arg(&kit.state)
        .arg("--grants-file")
        .arg(&kit.grants)
        .args(["--grant", "orders", "--grant", "once", "--grant", "down"])
        .arg("--stdin")
        .arg(&stdin_file)
        .env("CONFORMANCE_TOKEN", TOKEN);
    if let Some(ms) = case["limits"]["broker_call_ms"].as_u64() {
        cmd.arg("--broker-call-ms").arg(ms.to_string());
    }
    let out = cmd
        .arg(path)
        .output()
        .map_err(|e| format!("cannot start plimsoll run: {e}"))?;
    let raw = String::from_utf8_lossy(&out.stdout);
    if raw.contains(TOKEN) || String::from_utf8_lossy(&out.stderr).contains(TOKEN) {
        return Err("the credential reached the run's output".into());
    }
    let r: Value = serde_json::from_str(&raw).map_err(|e| {
        format!(
            "plimsoll run printed no JSON result ({e}); stderr: {}",
            clip(String::from_utf8_lossy(&out.stderr).trim())
        )
    })?;
    let stdout = text_of(&r["stdout"]);
    let stderr = text_of(&r["stderr"]);
    let want_exit = case["exit_code"].as_i64().unwrap_or(0);
    let want_status = if want_exit == 0 { "ok" } else { "error" };
    let status = r["status"].as_str().unwrap_or("?");
    if status != want_status || r["exit_code"].as_i64() != Some(want_exit) {
        return Err(format!(
            "status {status} exit {} (want {want_status} exit {want_exit}); error: {}; stderr: {}",
            r["exit_code"],
            r["error"],
            clip(stderr.trim())
        ));
    }
    let want_out: Vec<String> = strings(case.get("stdout"))
        .into_iter()
        .map(|l| l.replace("{stdin_len}", &stdin.len().to_string()))
        .collect();
    lines_match("stdout", &want_out, &stdout)?;
    if case.get("stderr").is_some() {
        lines_match("stderr", &strings(case.get("stderr")), &stderr)?;
    }
    if let Some(want) = case["artifacts"].as_object() {
        for (name, content) in want {
            let found = r["artifacts"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["path"].as_str() == Some(name.as_str()));
            match found {
                Some(a) if text_of(&a["content"]) == content.as_str().unwrap_or("") => {}
                Some(a) => {
                    return Err(format!(
                        "artifact {name}: got `{}`",
                        clip(&text_of(&a["content"]))
                    ));
                }
                None => return Err(format!("artifact {name} missing: {}", r["artifacts"])),
            }
        }
    }
    if let Some(want) = case["calls"].as_array() {
        let rows = r["calls"]["rows"].as_array().cloned().unwrap_or_default();
        let got: Vec<(String, String)> = rows
            .iter()
            .map(|row| {
                (
                    row["grant"].as_str().unwrap_or("").to_owned(),
                    row["outcome"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = want
            .iter()
            .filter_map(|w| {
                let p = w.as_array()?;
                Some((
                    p.first()?.as_str()?.to_owned(),
                    p.get(1)?.as_str()?.to_owned(),
                ))
            })
            .collect();
        let same = got.len() == want.len()
            && got
                .iter()
                .zip(&want)
                .all(|(g, w)| (w.0 == "*" || g.0 == w.0) && g.1 == w.1);
        if !same {
            return Err(format!("CallTrace {got:?}, want {want:?}"));
        }
    }
    if let Some(n) = case["upstream_requests"].as_u64() {
        let got = seen() - before;
        if got as u64 != n {
            return Err(format!("the upstream received {got} request(s), want {n}"));
        }
    }
    Ok(())
}

#[test]
fn every_case_against_every_sdk() {
    let cases: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("conformance/cases.json")).expect("cases.json"),
    )
    .expect("cases.json is JSON");
    let cases = cases["cases"].as_array().cloned().expect("cases");
    let only: Option<Vec<String>> = std::env::var("PLIMSOLL_SDK_ONLY")
        .ok()
        .map(|s| s.split(',').map(|l| l.trim().to_owned()).collect());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let kit = kit(&rt);
    let mut failures = Vec::new();
    let mut ran: std::collections::BTreeMap<String, usize> = Default::default();
    for lang in LANGUAGES {
        if only.as_ref().is_some_and(|o| !o.iter().any(|l| l == lang)) {
            continue;
        }
        let path = agent(lang);
        if !path.exists() {
            failures.push(format!(
                "{lang}: {} is missing; build the agents with `make sdk-agents`",
                path.display()
            ));
            continue;
        }
        let world = match world_of(&path) {
            Ok(w) => w,
            Err(e) => {
                failures.push(format!("{lang}: {e}"));
                continue;
            }
        };
        eprintln!("{lang}: {} targets `{world}`", path.display());
        for case in &cases {
            let name = case["name"].as_str().unwrap_or("?");
            let case_world = case["world"].as_str().unwrap_or("agent");
            if case_world == "agent-http" && world != "agent-http" {
                continue;
            }
            *ran.entry(name.to_owned()).or_default() += 1;
            let t = std::time::Instant::now();
            match run_case(&kit, &path, case) {
                Ok(()) => eprintln!("  ok   {lang}:{name} ({} ms)", t.elapsed().as_millis()),
                Err(e) => {
                    eprintln!("  FAIL {lang}:{name}: {e}");
                    failures.push(format!("{lang}:{name}: {e}"));
                }
            }
        }
    }
    if only.is_none() {
        for case in &cases {
            let name = case["name"].as_str().unwrap_or("?");
            if !ran.contains_key(name) {
                failures.push(format!("*:{name}: no SDK's agent targets the case's world"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} conformance failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn commands_encode_as_the_protocol_says() {
    let id = |s: &str| s.to_owned();
    let c = serde_json::json!({"call": "orders", "method": "POST", "path": "/a",
        "headers": [["x-a", "b"]], "body_fill": [3, "61"]});
    assert_eq!(
        encode(&c, &id).expect("encode"),
        "call 6f7264657273 POST 2f61 782d61:62 fill:3:61"
    );
    let o = serde_json::json!({"origin": "{u}", "timeout_ms": 5, "method": "GET", "path": "/"});
    assert_eq!(
        encode(&o, &|s: &str| s.replace("{u}", "x")).expect("encode"),
        "origin 78 5 GET 2f - -"
    );
    assert!(encode(&serde_json::json!({"nope": 1}), &id).is_err());
    assert!(line_matches("err denied *", "err denied 6e6f"));
    assert!(!line_matches("err denied *", "err upstream 6e6f"));
    assert!(line_matches("ok 200 -", "ok 200 -"));
}

/// `plimsoll check` on real components: each reference agent's world, a
/// core module, and a component importing what no world offers.
#[test]
fn check_names_the_world_or_the_import() {
    let rust = std::fs::read(agent("rust")).expect("build the agents with `make sdk-agents`");
    assert_eq!(world_of(&agent("rust")).as_deref(), Ok("agent"));
    let dir = tempfile::tempdir().expect("tempdir");
    // The same component with one import renamed (same length, so still
    // well-formed): no world offers `preopenz`.
    let from = b"wasi:filesystem/preopens@";
    let to = b"wasi:filesystem/preopenz@";
    let mut renamed = rust.clone();
    let mut hits = 0;
    for i in 0..renamed.len().saturating_sub(from.len()) {
        if &renamed[i..i + from.len()] == from {
            renamed[i..i + from.len()].copy_from_slice(to);
            hits += 1;
        }
    }
    assert!(hits > 0, "the Rust agent imports wasi:filesystem/preopens");
    let bad = dir.path().join("renamed.wasm");
    std::fs::write(&bad, &renamed).expect("write");
    let out = plimsoll().arg("check").arg(&bad).output().expect("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`wasi:filesystem/preopenz@0.2.12`, which no world of plimsoll:sandbox@"),
        "{err}"
    );
    // A core module is named as one, with the way out.
    let core = dir.path().join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").expect("write");
    let out = plimsoll().arg("check").arg(&core).output().expect("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("plimsoll componentize"), "{err}");
    // And `plimsoll run` refuses the renamed one before running anything.
    let out = plimsoll()
        .args([
            "run",
            "--provider",
            "wasm",
            "--json",
            "--stdin",
            "/dev/null",
        ])
        .arg(&bad)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("wasi:filesystem/preopenz@0.2.12"), "{err}");
}
