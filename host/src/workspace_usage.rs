//! What a workspace measurement found: data, shared by the workspace that
//! measures and the change tracker (`tree_changes`) that remembers the
//! last measurement, so that neither imports the other for it.

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
