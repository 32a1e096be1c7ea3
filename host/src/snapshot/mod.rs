//! Session snapshots: a live session's exact state between two
//! evaluations, and a fresh session set to it.

pub mod access;
pub mod archive;
pub mod core_access;
pub mod image;
pub mod instrument;
pub mod prologue;
pub mod store;

/// A session that cannot be snapshotted (the message says why): a
/// compiled agent component's, a provider's that has none, an instance
/// holding files or streams of its own.
pub const UNAVAILABLE: &str = "snapshot_unavailable";
/// A snapshot of other guests than this daemon runs (another build), or
/// whose guests start differently here.
pub const GUEST_MISMATCH: &str = "snapshot_guest_mismatch";
/// An archive that is not a valid snapshot: truncated, altered, of
/// another format.
pub const INVALID: &str = "snapshot_invalid";
/// A snapshot larger than the envelope allows (memory, files).
pub const TOO_LARGE: &str = "snapshot_too_large";
/// A caller's snapshots would pass its count or byte quota, or the
/// host's.
pub const QUOTA: &str = "snapshot_quota";
/// No snapshot of that id for this caller.
pub const UNKNOWN: &str = "unknown_snapshot";
