//! plimsoll's shell guest: a POSIX `sh` with the bash habits models type,
//! its utilities built in, over the run's workspace.
//!
//! The interpreter is a library with a configurable root for `/work`, so its
//! tests run natively on a temporary directory; the `programs` import sits
//! behind [`programs::Programs`]. Built for `wasm32-wasip2`, the crate is a
//! component of the `shell` world in `wit/sandbox.wit` (see `component`).
//!
//! - [`parse`]: text to syntax trees, with a nesting limit.
//! - [`exec`]: the evaluator and its state; `expand`: word expansion.
//! - [`builtins`]: commands that change the shell; [`util`]: the utilities.
//! - [`fs`]: path resolution inside `/work`; [`io`]: streams and pipes.
//! - [`limits`]: the guest's own caps.

pub mod arith;
pub mod builtins;
pub mod bytes;
pub mod exec;
mod expand;
pub mod fs;
pub mod glob;
pub mod io;
pub mod limits;
pub mod parse;
pub mod pattern;
pub mod programs;
pub mod util;

#[cfg(target_arch = "wasm32")]
mod component;

use exec::{Ctl, Shell};
use io::{Input, Io, Sink};
use std::cell::RefCell;
use std::io::{Read, Write};
use std::rc::Rc;

/// What a shell needs from its host.
pub struct Config {
    /// The directory standing for `/work`.
    pub root: std::path::PathBuf,
    /// Starts `python3`/`node`.
    pub programs: Rc<dyn programs::Programs>,
    /// The shell's own standard input (read on first use).
    pub stdin: Box<dyn Read>,
    /// Where standard output goes (write errors are ignored).
    pub stdout: Rc<RefCell<dyn Write>>,
    /// Where standard error goes (write errors are ignored).
    pub stderr: Rc<RefCell<dyn Write>>,
    /// Bytes of stack the shell's recursion may use below `eval`'s frame
    /// ([`limits::STACK_BUDGET`] in the component; a native caller gives
    /// what its thread can spare).
    pub stack: usize,
}

/// Runs `script` as `sh -c` would, from `/work`, in a fresh shell: returns
/// the exit status. The `trap … EXIT` command runs before it returns, also
/// after `exit`; output is flushed at the end.
pub fn eval(script: &[u8], cfg: Config) -> i32 {
    let _stack = limits::stack::scope(cfg.stack);
    let out = Rc::new(RefCell::new(Sink::Real(cfg.stdout)));
    let err = Rc::new(RefCell::new(Sink::Real(cfg.stderr)));
    let io = Io::new(Input::lazy(cfg.stdin), out.clone(), err.clone());
    let mut sh = Shell::new(fs::Fs::new(cfg.root), cfg.programs, io.clone());
    let status = match sh.run_script(script, &io, "sh: -c") {
        Ok(s) => s,
        Err(Ctl::Exit(s)) | Err(Ctl::Abort(s)) | Err(Ctl::Return(s)) | Err(Ctl::Fatal(s)) => s,
        Err(Ctl::Break(_)) | Err(Ctl::Continue(_)) => sh.status,
    };
    // The trap runs from the top, whatever limit ended the script.
    sh.depth = 0;
    sh.fatal.set(None);
    let status = match sh.run_exit_trap(&io, status) {
        Ok(s) => s,
        Err(Ctl::Fatal(s)) => s,
        Err(_) => status,
    };
    drop(sh);
    out.borrow_mut().flush();
    err.borrow_mut().flush();
    status & 0xff
}
