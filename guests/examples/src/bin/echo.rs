//! Copies stdin to stdout, and every top-level file of `/work` to
//! `/work/out/<name>`, so that files in come back as artifacts.
use std::io::{Read, Write};

fn main() {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("reading stdin failed: {e}");
        std::process::exit(1);
    }
    if let Err(e) = std::io::stdout().write_all(&input) {
        eprintln!("writing stdout failed: {e}");
        std::process::exit(1);
    }
    let entries = match std::fs::read_dir("/work") {
        Ok(e) => e,
        Err(e) => {
            eprintln!("cannot list /work: {e}");
            std::process::exit(1);
        }
    };
    let mut copied = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        let Some(name) = path.file_name() else {
            continue;
        };
        let dest = std::path::Path::new("/work/out").join(name);
        if let Err(e) = std::fs::copy(&path, &dest) {
            eprintln!("copy {} failed: {e}", path.display());
            std::process::exit(1);
        }
        copied += 1;
    }
    eprintln!("copied {copied} files");
}
