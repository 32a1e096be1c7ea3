//! The WebAssembly component: binds the `shell` world, runs `eval` over
//! `/work` with WASI stdio, and links `programs` to the host's import.

mod bindings {
    // The world includes the WASI 0.2 imports, which Rust's std for
    // wasm32-wasip2 already binds; `generate_all` generates them rather
    // than asking for a `with` mapping of each, and as nothing calls them
    // the linker drops them again.
    wit_bindgen::generate!({
        path: "../../wit",
        world: "shell",
        generate_all,
    });
}

use crate::programs::{Completion, Invocation, Programs};
use bindings::plimsoll::sandbox::programs as host;
use std::cell::RefCell;
use std::io::{BufWriter, Write};
use std::rc::Rc;

/// `programs.run` through the host import.
struct HostPrograms;

impl Programs for HostPrograms {
    fn run(&self, inv: Invocation) -> Result<Completion, String> {
        let c = host::run(&host::Invocation {
            program: inv.program,
            args: inv.args,
            cwd: inv.cwd,
            env: inv.env,
            stdin: inv.stdin,
        })?;
        Ok(Completion {
            exit_code: c.exit_code,
            stdout: c.stdout,
            stderr: c.stderr,
            stdout_truncated: c.stdout_truncated,
            stderr_truncated: c.stderr_truncated,
            timed_out: c.timed_out,
        })
    }
}

struct Shell;

impl bindings::Guest for Shell {
    fn eval(script: String) -> Result<String, String> {
        let stdout: Rc<RefCell<dyn Write>> = Rc::new(RefCell::new(BufWriter::with_capacity(
            64 * 1024,
            std::io::stdout(),
        )));
        let stderr: Rc<RefCell<dyn Write>> = Rc::new(RefCell::new(BufWriter::with_capacity(
            8 * 1024,
            std::io::stderr(),
        )));
        let status = crate::eval(
            script.as_bytes(),
            crate::Config {
                root: "/work".into(),
                programs: Rc::new(HostPrograms),
                stdin: Box::new(std::io::stdin()),
                stdout: stdout.clone(),
                stderr: stderr.clone(),
                stack: crate::limits::STACK_BUDGET,
            },
        );
        let _ = stdout.borrow_mut().flush();
        let _ = stderr.borrow_mut().flush();
        Ok(status.to_string())
    }
}

bindings::export!(Shell with_types_in bindings);
