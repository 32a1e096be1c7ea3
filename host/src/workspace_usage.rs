//! What a workspace holds: data the workspace reports from its tree's
//! exact charges.

/// Space the workspace uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkspaceUsage {
    /// Sum of file lengths (apparent size: a sparse file counts in full).
    pub bytes: u64,
    /// Directory entries.
    pub entries: u64,
    /// `out/` was seen to be a directory with nothing in it: there are no
    /// artifacts to collect (the run's caller skips that second walk).
    pub out_empty: bool,
}
