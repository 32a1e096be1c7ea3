//! The client's fixed step texts, byte-exact (plimsoll-client 0.23.0,
//! workspace.py; research doc section a.2).
#![allow(dead_code)]

/// `_ROOT_STEP` (89 bytes).
pub const ROOT_STEP: &str =
    r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; pwd > "$__plimsoll_s/root""#;

/// `_EXEC_STEP` (437 bytes).
pub const EXEC_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; pwd > "$__plimsoll_s/root"; [ -f "$__plimsoll_s/env" ] && . "$__plimsoll_s/env"; [ -f "$__plimsoll_s/cwd" ] && cd "$(cat "$__plimsoll_s/cwd")" 2>/dev/null; . "$__plimsoll_s/cmd"; __plimsoll_rc=$?; export -p | grep -Ev '^export (PWD|OLDPWD|__plimsoll_)' > "$__plimsoll_s/env.new"; mv "$__plimsoll_s/env.new" "$__plimsoll_s/env"; pwd > "$__plimsoll_s/cwd"; exit $__plimsoll_rc"#;

/// `_TRUE_STEP` (4 bytes).
pub const TRUE_STEP: &str = r#"true"#;

/// `_READ_STEP` (151 bytes).
pub const READ_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; head -c "$(cat "$__plimsoll_s/a2")" -- "$(cat "$__plimsoll_s/a1")" > "$__plimsoll_s/out""#;

/// `_WRITE_B64_STEP` (196 bytes).
pub const WRITE_B64_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; __plimsoll_p="$(cat "$__plimsoll_s/a1")"; mkdir -p "$(dirname "$__plimsoll_p")" && base64 -d "$__plimsoll_s/in.b64" > "$__plimsoll_p""#;

/// `_APPEND_B64_STEP` (126 bytes).
pub const APPEND_B64_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; base64 -d "$__plimsoll_s/in.b64" >> "$(cat "$__plimsoll_s/a1")""#;

/// `_GLOB_SHELL_STEP` (237 bytes).
pub const GLOB_SHELL_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; cd "$(cat "$__plimsoll_s/a2")" || exit 2; for __plimsoll_f in $(cat "$__plimsoll_s/a1"); do [ -e "$__plimsoll_f" ] && printf '%s\n' "$__plimsoll_f"; done | sort | head -n 200"#;

/// `_GLOB_FIND_STEP` (290 bytes).
pub const GLOB_FIND_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; cd "$(cat "$__plimsoll_s/a2")" || exit 2; find . \( -path "$(cat "$__plimsoll_s/a1")" -o -path "$(cat "$__plimsoll_s/a3")" \) -not -path "./.plimsoll-shell" -not -path "./.plimsoll-shell/*" | sed 's#^\./##' | sort | head -n 200"#;

/// `_GREP_STEP` (135 bytes).
pub const GREP_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; grep -rnHE -e "$(cat "$__plimsoll_s/a1")" -- "$(cat "$__plimsoll_s/a2")""#;

/// `_PERSIST_STEP` (167 bytes).
pub const PERSIST_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; tar -cf "$__plimsoll_s/ws.tar" --exclude="./.plimsoll-shell" --exclude="./.plimsoll-shell/*" -C "$PWD" ."#;

/// `_HYDRATE_STEP` (135 bytes).
pub const HYDRATE_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; tar -xf "$__plimsoll_s/ws.tar" -C "$PWD" && rm -f "$__plimsoll_s/ws.tar""#;
