//! `plimsoll-worker`: runs the wasm engine for a supervisor, inside an outer
//! boundary. It speaks the worker protocol on stdin/stdout and is not meant
//! to be started by hand.

fn main() -> std::process::ExitCode {
    plimsoll::worker::serve::main()
}
