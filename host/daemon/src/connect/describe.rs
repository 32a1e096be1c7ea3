//! `Describe`: what this daemon offers a caller, in the protocol's terms
//! (the provider, tier, environments, languages, session limits).

use super::*;

/// The software a session runs: its interpreters, as one identity.
pub(super) fn session_identity(app: &App) -> String {
    let mut ids: Vec<String> = [Language::Python, Language::Javascript, Language::Shell]
        .into_iter()
        .filter_map(|l| identity_of(app, l))
        .collect();
    ids.sort();
    let joined = ids.join("\0");
    format!(
        "plimsoll-interpreters:sha256:{}",
        record::fingerprint(&joined)
    )
}

/// The identity of the guest that runs `language` here: the operator's
/// default (for Python, the scientific guest under
/// `PLIMSOLL_PYTHON_GUEST=scientific`), as every run of the protocol uses.
pub(super) fn identity_of(app: &App, language: Language) -> Option<String> {
    app.sandbox
        .interpreter_for(language, None)
        .ok()
        .map(|g| g.identity().to_owned())
}

pub(super) fn environment(identity: &str, max_timeout_ms: u64, languages: &[&str]) -> Value {
    let mut m = serde_json::Map::new();
    if !identity.is_empty() {
        m.insert("identity".into(), identity.into());
        m.insert("softwareIdentity".into(), identity.into());
    }
    m.insert(
        "maxTimeoutMs".into(),
        max_timeout_ms.min(u32::MAX.into()).into(),
    );
    if !languages.is_empty() {
        m.insert("languages".into(), json!(languages));
    }
    Value::Object(m)
}

pub(super) fn describe(app: &App, caller: &Caller) -> Value {
    let iso = app.sandbox.isolation();
    let env = &caller.envelope;
    let runs = iso.provider != "disabled";
    let js = identity_of(app, Language::Javascript).filter(|_| runs);
    let py = identity_of(app, Language::Python).filter(|_| runs);
    let grants = !app.sandbox.grant_profiles().is_empty()
        && caller.grant_profiles.as_ref().is_none_or(|s| !s.is_empty());
    let shell = identity_of(app, Language::Shell).filter(|_| runs);
    let sessions = app.sandbox.supports_sessions() && js.is_some() && py.is_some();
    let limits = app.sandbox.session_limits();
    // A project runs CodeExecutor's exact Python and JavaScript steps
    // with their interpreters, and any other steps in the shell.
    let mut project_languages: Vec<&str> = Vec::new();
    if js.is_some() {
        project_languages.push("javascript");
    }
    if py.is_some() {
        project_languages.push("python");
    }
    // Every project runs under this one identity (the interpreters and
    // the shell together), whichever of them runs its steps.
    let project_identity = if py.is_some() || js.is_some() || shell.is_some() {
        session_identity(app)
    } else {
        String::new()
    };
    let mut v = json!({
        "sandbox": iso.provider,
        "isolation": iso.tier.as_str(),
        "protocol": PROTOCOL,
        "supportsProject": py.is_some() || js.is_some() || shell.is_some(),
        "supportsJavascriptGrants": js.is_some() && grants,
        "supportsProjectGrants": py.is_some() && grants,
        "supportsSessions": sessions,
        "javascriptEnvironment": environment(js.as_deref().unwrap_or(""), env.wall_time_ms, &[]),
        "projectEnvironment": environment(&project_identity, env.wall_time_ms, &project_languages),
        "resources": {
            "memoryMb": env.memory_bytes / (1 << 20),
            "cpus": 1.0,
            "diskMb": env.workspace_bytes / (1 << 20),
        },
    });
    if sessions {
        v["sessionLifetimeMs"] = json!(
            u64::try_from(limits.lifetime.as_millis())
                .unwrap_or(u64::MAX)
                .min(u32::MAX.into())
        );
        v["sessionIdleTimeoutMs"] = json!(
            u64::try_from(limits.idle_timeout.as_millis())
                .unwrap_or(u64::MAX)
                .min(u32::MAX.into())
        );
        v["sessionEnvironment"] = environment(
            &session_identity(app),
            env.wall_time_ms,
            &["javascript", "python"],
        );
        v["maxSessionsPerCaller"] = json!(caller.max_sessions);
        if app.max_sessions_per_owner > 0 {
            v["maxSessionsPerOwner"] = json!(app.max_sessions_per_owner);
        }
    }
    v
}
