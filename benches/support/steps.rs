//! The Workspace client's fixed shell steps, shared by the benches that
//! send them (shell, daemon).
#![allow(dead_code)]

/// The Workspace client's fixed steps (plimsoll-client 0.23.0,
/// `workspace.py`), byte for byte: what reaches the library for
/// `Workspace.exec`, `read` and `write(bytes)`.
pub const EXEC_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; pwd > "$__plimsoll_s/root"; [ -f "$__plimsoll_s/env" ] && . "$__plimsoll_s/env"; [ -f "$__plimsoll_s/cwd" ] && cd "$(cat "$__plimsoll_s/cwd")" 2>/dev/null; . "$__plimsoll_s/cmd"; __plimsoll_rc=$?; export -p | grep -Ev '^export (PWD|OLDPWD|__plimsoll_)' > "$__plimsoll_s/env.new"; mv "$__plimsoll_s/env.new" "$__plimsoll_s/env"; pwd > "$__plimsoll_s/cwd"; exit $__plimsoll_rc"#;
pub const READ_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; head -c "$(cat "$__plimsoll_s/a2")" -- "$(cat "$__plimsoll_s/a1")" > "$__plimsoll_s/out""#;
pub const WRITE_B64_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; __plimsoll_p="$(cat "$__plimsoll_s/a1")"; mkdir -p "$(dirname "$__plimsoll_p")" && base64 -d "$__plimsoll_s/in.b64" > "$__plimsoll_p""#;
