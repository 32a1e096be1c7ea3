//! Runs a script natively over a directory standing for `/work`:
//! `cargo run -p plimsoll-shell --example run -- 'SCRIPT' [ROOT]` (or
//! `-f FILE` for the script).
//! Interpreters (`python3`, `node`) are not available here.

use std::cell::RefCell;
use std::rc::Rc;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut script = args.next().unwrap_or_default().into_bytes();
    if script == b"-f" {
        script = std::fs::read(args.next().unwrap_or_default()).unwrap_or_default();
    }
    let root = args.next().unwrap_or_else(|| ".".into());
    let status = plimsoll_shell::eval(
        &script,
        plimsoll_shell::Config {
            root: root.into(),
            programs: Rc::new(plimsoll_shell::programs::NoPrograms),
            stdin: Box::new(std::io::stdin()),
            stdout: Rc::new(RefCell::new(std::io::stdout())),
            stderr: Rc::new(RefCell::new(std::io::stderr())),
            // The main thread's 8 MiB stack.
            stack: 6 << 20,
        },
    );
    std::process::exit(status);
}
