//! The guest's files: the build's output directory read into the layout
//! every run of the guest sees.
//!
//! Guarantees: the layout (argv, environment, the preopens at 3, 4, 5) is
//! the same when the snapshot is taken and at every run; the standard
//! library and matplotlib's data are read-only trees shared by every run;
//! at most [`MAX_DATA_FILES`] files are read, no link followed.

use super::{MPL_DATA_DIR, MPL_GUEST_DIR, STDLIB_FILE, WORK_GUEST_DIR, ZIP_GUEST_DIR, ZIP_NAME};
use crate::component_cache::LoadError;
use crate::wasip1::fds::{Layout, Preopen, PreopenKind};
use crate::wasip1::static_tree::StaticTree;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// The guest's layout: argv, environment, and the preopens at 3, 4, 5.
/// It must be the same when the snapshot is taken and at every run:
/// the interpreter keeps what it read of it.
fn layout(zip: Arc<[u8]>, mpl: StaticTree) -> Layout {
    let mut lib = StaticTree::default();
    lib.insert(ZIP_NAME, zip);
    Layout {
        preopens: vec![
            Preopen {
                guest_path: ZIP_GUEST_DIR.into(),
                kind: PreopenKind::Static(Arc::new(lib)),
            },
            Preopen {
                guest_path: MPL_GUEST_DIR.into(),
                kind: PreopenKind::Static(Arc::new(mpl)),
            },
            Preopen {
                guest_path: WORK_GUEST_DIR.into(),
                kind: PreopenKind::Workspace,
            },
        ],
        args: vec!["python".into()],
        env: vec![
            "HOME=/work".into(),
            "MPLBACKEND=Agg".into(),
            "MPLCONFIGDIR=/work/.matplotlib".into(),
            "LANG=C.UTF-8".into(),
            "OMP_NUM_THREADS=1".into(),
        ],
    }
}

/// The precompiled module's file name in a worker's bundle
/// ([`super::write_bundle`]).
pub const BUNDLE_MODULE: &str = "module.cwasm";

/// The read-only files of the guest's directory: the zip and
/// matplotlib's data.
pub struct Artifacts {
    pub(crate) layout: Arc<Layout>,
    pub(super) zip_hash: String,
}

/// Reads `dir`'s zip and `mpl-data/` (at most [`MAX_DATA_FILES`] files,
/// no links followed).
pub fn load_artifacts(dir: &Path) -> Result<Artifacts, LoadError> {
    let zip: Arc<[u8]> = Arc::from(std::fs::read(dir.join(STDLIB_FILE))?);
    let zip_hash = hex::encode(Sha256::digest(&zip));
    let mut mpl = StaticTree::default();
    let mut count = 0usize;
    read_tree(&dir.join(MPL_DATA_DIR), "", &mut mpl, &mut count)?;
    Ok(Artifacts {
        layout: Arc::new(layout(zip, mpl)),
        zip_hash,
    })
}

/// Most files read into the data tree.
pub const MAX_DATA_FILES: usize = 4096;

/// Reads `dir` into `tree` under `prefix`, counting files in `count`.
fn read_tree(
    dir: &Path,
    prefix: &str,
    tree: &mut StaticTree,
    count: &mut usize,
) -> Result<(), LoadError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = format!("{prefix}{name}");
        let ft = e.file_type()?;
        if ft.is_dir() {
            read_tree(&e.path(), &format!("{path}/"), tree, count)?;
        } else if ft.is_file() {
            *count += 1;
            if *count > MAX_DATA_FILES {
                return Err(LoadError::Invalid(format!(
                    "{} holds more than {MAX_DATA_FILES} files",
                    dir.display()
                )));
            }
            tree.insert(&path, Arc::from(std::fs::read(e.path())?));
        }
    }
    Ok(())
}
