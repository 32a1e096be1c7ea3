//! Hostile: tries to reach files outside `/work`. Prints one line per
//! attempt, `blocked <what>` or `LEAK <what>`, and leaves a symlink to
//! `/etc/passwd` in `/work/out` for the host to refuse.
use std::fs;

/// Creates a symlink `link` (relative to `/work`) pointing at `target`,
/// through WASI directly (std has no stable symlink call on WASI).
fn symlink(target: &str, link: &str) -> Result<(), String> {
    let dirs = wasip2::filesystem::preopens::get_directories();
    let Some((work, _)) = dirs.iter().find(|(_, p)| p == "/work") else {
        return Err("no /work preopen".into());
    };
    work.symlink_at(target, link).map_err(|e| format!("{e:?}"))
}

/// Creates a hard link `link` to `target`, both relative to `/work`.
fn hardlink(target: &str, link: &str) -> Result<(), String> {
    let dirs = wasip2::filesystem::preopens::get_directories();
    let Some((work, _)) = dirs.iter().find(|(_, p)| p == "/work") else {
        return Err("no /work preopen".into());
    };
    work.link_at(
        wasip2::filesystem::types::PathFlags::empty(),
        target,
        work,
        link,
    )
    .map_err(|e| format!("{e:?}"))
}

fn attempt(what: &str, r: std::io::Result<String>) {
    match r {
        Ok(s) if s.contains("root:") => println!("LEAK {what}"),
        Ok(_) => println!("blocked {what} (read something that is not the host's)"),
        Err(_) => println!("blocked {what}"),
    }
}

fn main() {
    attempt("absolute /etc/passwd", fs::read_to_string("/etc/passwd"));
    attempt(
        "relative ../../../../etc/passwd",
        fs::read_to_string("../../../../etc/passwd"),
    );
    attempt(
        "/work/../etc/passwd",
        fs::read_to_string("/work/../etc/passwd"),
    );
    attempt(
        "/work/../../../../etc/passwd",
        fs::read_to_string("/work/../../../../etc/passwd"),
    );
    attempt(
        "/proc/self/environ",
        fs::read_to_string("/proc/self/environ"),
    );
    match symlink("/etc/passwd", "out/abs-link") {
        Ok(()) => attempt("absolute symlink", fs::read_to_string("/work/out/abs-link")),
        Err(_) => println!("blocked creating an absolute symlink"),
    }
    match symlink("../../../../../etc/passwd", "out/rel-link") {
        Ok(()) => attempt("relative symlink", fs::read_to_string("/work/out/rel-link")),
        Err(_) => println!("blocked creating an escaping symlink"),
    }
    match symlink("../in.txt", "out/inner-link") {
        Ok(()) => println!("made an in-workspace symlink"),
        Err(_) => println!("blocked creating an in-workspace symlink"),
    }
    match hardlink("../../../../etc/passwd", "out/hard-link") {
        Ok(()) => attempt(
            "escaping hard link",
            fs::read_to_string("/work/out/hard-link"),
        ),
        Err(_) => println!("blocked creating an escaping hard link"),
    }
    let listed = fs::read_dir("/").map(|d| d.count());
    match listed {
        Ok(n) => println!("listed / with {n} entries"),
        Err(_) => println!("blocked listing /"),
    }
    match fs::write("/tmp/plimsoll-escape-mark", b"x") {
        Ok(()) => println!("LEAK wrote /tmp"),
        Err(_) => println!("blocked writing /tmp"),
    }
    match fs::write("/work/../plimsoll-escape-mark", b"x") {
        Ok(()) => println!("LEAK wrote outside /work"),
        Err(_) => println!("blocked writing outside /work"),
    }
}
