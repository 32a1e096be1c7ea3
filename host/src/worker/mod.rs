//! The worker split: `plimsoll-worker` runs the wasm engine and nothing
//! else, inside an outer boundary (a [`crate::wrapper`]); the supervisor
//! (library, CLI or daemon) keeps grants, credentials, audit and metrics.
//!
//! * [`protocol`]: length-prefixed, versioned JSON frames over the worker's
//!   stdin/stdout.
//! * [`observe`]: what a worker sees of its own boundary (the smoke test).
//! * [`serve`]: the worker's side: load guests, run one request, proxy broker
//!   calls to the supervisor.
//! * [`pool`]: the supervisor's side: a warm pool of workers, one run per
//!   worker, a dead or lying worker failing only its own run.
//! * [`vm_init`]: the worker as a microVM's `/init`: set up the VM, open
//!   the virtio-serial port, drop root.

pub mod observe;
pub mod pool;
pub mod protocol;
pub mod serve;
pub mod vm_init;
