//! `wasi_snapshot_preview1` for core-module guests, over plimsoll's own
//! parts: the in-memory workspace ([`crate::memtree`]), shared read-only
//! trees ([`static_tree`]), the capped output streams and the run's
//! deadline.
//!
//! wasmtime-wasi's own preview-1 layer serves host directories through
//! host descriptors, and its table is private; a guest here must see the
//! same workspace a component sees, with the same exact caps and no host
//! descriptor per file. So this module implements the preview-1 calls a
//! WASI libc makes, each over a bounded table ([`fds`]):
//!
//! - files: the workspace at `/work` and the layout's read-only trees;
//!   links and symlinks are refused (`EPERM`), times are ignored;
//! - stdio: stdin from the request, stdout and stderr into the run's
//!   capped streams (a write past the cap ends the run `output_limit`);
//! - clocks, entropy and sleeps: the host's, except while a snapshot is
//!   taken ([`fds::P1State::frozen`]): then fixed clocks and a fixed
//!   generator, so that the snapshot holds nothing of the build machine;
//! - no sockets (`ENOTSOCK`), no processes; `proc_exit` ends the call.
//!
//! Every pointer the guest passes is checked against its memory; every
//! count is bounded before anything is allocated for it.
//!
//! The calls are grouped by family, one module each: `environ` (argv,
//! environ, clocks, entropy), `fd` (calls on a descriptor), `path` (calls
//! on a path under a directory descriptor), `process` (polling, exit,
//! sockets refused); beneath them `io` (reading and writing through a
//! descriptor), `memory` (the guest's memory, bounds-checked) and `abi`
//! (preview 1's numbers and the mapping of tree errors to errno).

mod abi;
mod environ;
mod fd;
pub mod fds;
mod io;
mod memory;
mod path;
mod process;
pub mod static_tree;

use crate::state::RunState;
use abi::EBADF;
pub use fds::Door;
use wasmtime::Linker;

/// The import module every preview-1 call is linked under.
const MODULE: &str = "wasi_snapshot_preview1";

/// Adds every `wasi_snapshot_preview1` function a WASI libc imports.
pub fn add_to_linker(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    environ::add_args_env_clocks(linker)?;
    fd::add_fd_calls(linker)?;
    path::add_path_calls(linker)?;
    process::add_poll_and_process(linker)?;
    Ok(())
}

/// The run's workspace, or `EBADF` for a run without one.
fn workspace(
    ws: &Option<std::sync::Arc<crate::workspace::Workspace>>,
) -> Result<&crate::workspace::Workspace, i32> {
    ws.as_deref().ok_or(EBADF)
}
