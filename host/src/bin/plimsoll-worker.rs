//! `plimsoll-worker`: runs the wasm engine for a supervisor, inside an outer
//! boundary. It speaks the worker protocol on stdin/stdout and is not meant
//! to be started by hand. Started as pid 1 (the `/init` of a microVM), it
//! first sets up the VM and drops root (`worker::vm_init`).

fn main() -> std::process::ExitCode {
    if plimsoll::worker::vm_init::is_vm_init()
        && let Err(e) = plimsoll::worker::vm_init::prepare()
    {
        // stderr is the VM's console; the supervisor reads the reason from
        // the port if it came up.
        eprintln!("plimsoll-worker: VM set-up failed: {e}");
        plimsoll::worker::vm_init::report_failure(&e);
        return std::process::ExitCode::from(4);
    }
    plimsoll::worker::serve::main()
}
