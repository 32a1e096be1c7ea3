//! Preview 1's numbers as this host uses them: errno values, file types,
//! rights, and the one mapping from the workspace tree's errors to errno.
//!
//! Guarantees: every [`TreeError`] has exactly one errno (the match is
//! exhaustive, so a new error cannot go unmapped); a descriptor in a
//! read-only tree never carries a right to change it.

use crate::memtree::TreeError;

// errno values of preview 1.
pub(super) const ESUCCESS: i32 = 0;
pub(super) const EBADF: i32 = 8;
pub(super) const EEXIST: i32 = 20;
pub(super) const EFAULT: i32 = 21;
pub(super) const EFBIG: i32 = 22;
pub(super) const EILSEQ: i32 = 25;
pub(super) const EINVAL: i32 = 28;
pub(super) const EISDIR: i32 = 31;
pub(super) const EMFILE: i32 = 33;
pub(super) const ENAMETOOLONG: i32 = 37;
pub(super) const ENOENT: i32 = 44;
pub(super) const ENOSPC: i32 = 51;
pub(super) const ENOTDIR: i32 = 54;
pub(super) const ENOTEMPTY: i32 = 55;
pub(super) const ENOTSOCK: i32 = 57;
pub(super) const ENOTSUP: i32 = 58;
pub(super) const EPERM: i32 = 63;
pub(super) const EROFS: i32 = 69;
pub(super) const ESPIPE: i32 = 70;

// filetype
pub(super) const FT_UNKNOWN: u8 = 0;
pub(super) const FT_DIRECTORY: u8 = 3;
pub(super) const FT_REGULAR: u8 = 4;

// rights
pub(super) const RIGHT_FD_READ: u64 = 1 << 1;
pub(super) const RIGHT_FD_WRITE: u64 = 1 << 6;
pub(super) const ALL_RIGHTS: u64 = (1 << 30) - 1;
/// What a read-only tree lets a descriptor opened in it do.
pub(super) const READ_ONLY_RIGHTS: u64 = ALL_RIGHTS
    & !(RIGHT_FD_WRITE
        | 1 << 0 // datasync
        | 1 << 4 // sync
        | 1 << 8 // allocate
        | 1 << 9 // path_create_directory
        | 1 << 10 // path_create_file
        | 1 << 11 | 1 << 12 // links
        | 1 << 16 | 1 << 17 // renames
        | 1 << 19 | 1 << 20 // path set size / times
        | 1 << 22 | 1 << 23 // fd set size / times
        | 1 << 24 | 1 << 25 | 1 << 26); // symlink, rmdir, unlink

pub(super) fn tree_errno(e: TreeError) -> i32 {
    match e {
        TreeError::NotFound => ENOENT,
        TreeError::Exists => EEXIST,
        TreeError::NotDirectory => ENOTDIR,
        TreeError::IsDirectory => EISDIR,
        TreeError::NotEmpty => ENOTEMPTY,
        TreeError::NoSpace => ENOSPC,
        TreeError::NameTooLong => ENAMETOOLONG,
        TreeError::Invalid => EINVAL,
        TreeError::NotPermitted => EPERM,
        TreeError::BadHandle => EBADF,
        TreeError::TooManyHandles => EMFILE,
        TreeError::FileTooLarge => EFBIG,
    }
}
