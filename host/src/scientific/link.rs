//! Linking the scientific guest: the linker of core guests (preview 1
//! and the door), the pre-instance with its files, its identity, and the
//! bundle a worker loads it from.
//!
//! Guarantees: the identity hashes the snapshot and the standard library
//! zip (both decide what a run does); a worker's bundle holds the very
//! trees this guest was loaded with, so a worker runs exactly the guest
//! whose identity the supervisor reports, and its name carries a digest
//! of every tree so a bundle of other trees is never reused; a bundle is
//! only readable by the workers (0755 directories, 0644 files).

use super::door::door_call;
use super::files::Artifacts;
use super::{
    BUNDLE_MODULE, FAMILY, MPL_DATA_DIR, MPL_GUEST_DIR, STDLIB_FILE, ZIP_GUEST_DIR, ZIP_NAME,
};
use crate::component_cache::LoadError;
use crate::state::RunState;
use crate::wasip1::fds::{Layout, PreopenKind};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use wasmtime::{Caller, InstancePre, Linker, Module};

/// A linked scientific guest, ready for cheap instances.
pub(crate) struct CorePre {
    pub(super) pre: InstancePre<RunState>,
    pub(super) layout: Arc<Layout>,
    /// The linear memory the snapshot starts with, in bytes: allowed on
    /// top of the run's `memory_bytes`.
    pub(super) base_memory: u64,
}

/// The linker of core guests: preview 1 and the door.
pub(crate) fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<RunState>> {
    let mut linker = Linker::new(engine);
    crate::wasip1::add_to_linker(&mut linker)?;
    linker.func_wrap_async(
        "host",
        "call",
        |mut c: Caller<'_, RunState>, (ptr, len, out_ptr, out_len): (i32, i32, i32, i32)| {
            Box::new(async move { door_call(&mut c, ptr, len, out_ptr, out_len).await })
        },
    )?;
    Ok(linker)
}

/// Links `module` (the snapshot) with `artifacts`' files and works out
/// its identity.
pub(crate) fn link(
    linker: &Linker<RunState>,
    module: &Module,
    module_hash: &str,
    artifacts: &Artifacts,
) -> Result<(CorePre, String), LoadError> {
    let content_hash = hex::encode(Sha256::digest(
        format!(
            "{FAMILY}\nsnapshot {module_hash}\nstdlib {}\n",
            artifacts.zip_hash
        )
        .as_bytes(),
    ));
    Ok((link_as(linker, module, artifacts)?, content_hash))
}

/// Links `module` with `artifacts`' files (its identity is the caller's
/// to know: [`link`] works it out, a worker is told it).
pub(crate) fn link_as(
    linker: &Linker<RunState>,
    module: &Module,
    artifacts: &Artifacts,
) -> Result<CorePre, LoadError> {
    for (name, ok) in [
        (
            "turn",
            matches!(
                module.get_export("turn"),
                Some(wasmtime::ExternType::Func(_))
            ),
        ),
        (
            "host_alloc",
            matches!(
                module.get_export("host_alloc"),
                Some(wasmtime::ExternType::Func(_))
            ),
        ),
        (
            "memory",
            matches!(
                module.get_export("memory"),
                Some(wasmtime::ExternType::Memory(_))
            ),
        ),
    ] {
        if !ok {
            return Err(LoadError::WrongWorld(format!(
                "the scientific guest exports no `{name}`"
            )));
        }
    }
    let base_memory = module
        .exports()
        .find_map(|e| match e.ty() {
            wasmtime::ExternType::Memory(m) if e.name() == "memory" => Some(m.minimum()),
            _ => None,
        })
        .unwrap_or(0)
        .saturating_mul(65536);
    let pre = linker.instantiate_pre(module).map_err(|e| {
        LoadError::WrongWorld(format!(
            "it imports something plimsoll does not provide: {e:#}"
        ))
    })?;
    Ok(CorePre {
        pre,
        layout: artifacts.layout.clone(),
        base_memory,
    })
}

/// A digest of every read-only tree `pre` was loaded with (the zip and
/// `mpl-data`, names and bytes), hex, 16 digits: part of a worker image's
/// name, so that a bundle written from other trees is never reused for
/// this guest (its identity hashes the zip, not matplotlib's data).
pub(crate) fn trees_digest(pre: &CorePre) -> String {
    let mut h = Sha256::new();
    for p in &pre.layout.preopens {
        if let PreopenKind::Static(t) = &p.kind {
            h.update(p.guest_path.as_bytes());
            h.update([0]);
            for (path, bytes) in t.files() {
                h.update((path.len() as u64).to_le_bytes());
                h.update(path.as_bytes());
                h.update((bytes.len() as u64).to_le_bytes());
                h.update(&bytes);
            }
        }
    }
    hex::encode(&h.finalize()[..8])
}

/// Writes what a worker needs to load this guest into `dir` (which must
/// exist and be empty): the precompiled module ([`BUNDLE_MODULE`]) and
/// the very trees this guest was loaded with (the zip, `mpl-data/`), so
/// that a worker runs exactly the guest whose identity the supervisor
/// reports. Directories get mode 0755 and files 0644: workers run as
/// another uid and only read them.
pub(crate) fn write_bundle(pre: &CorePre, dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let write = |path: &Path, bytes: &[u8]| -> std::io::Result<()> {
        std::fs::write(path, bytes)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
    };
    let mkdir = |path: &Path| -> std::io::Result<()> {
        std::fs::create_dir_all(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
    };
    mkdir(dir)?;
    let module = pre
        .pre
        .module()
        .serialize()
        .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
    write(&dir.join(BUNDLE_MODULE), &module)?;
    drop(module);
    let tree = |guest_path: &str| {
        pre.layout.preopens.iter().find_map(|p| match &p.kind {
            PreopenKind::Static(t) if p.guest_path == guest_path => Some(t.clone()),
            _ => None,
        })
    };
    let lib = tree(ZIP_GUEST_DIR)
        .ok_or_else(|| std::io::Error::other("the guest's layout has no library tree"))?;
    let zip = lib
        .files()
        .into_iter()
        .find(|(p, _)| p == ZIP_NAME)
        .ok_or_else(|| std::io::Error::other("the guest's layout has no standard-library zip"))?;
    write(&dir.join(STDLIB_FILE), &zip.1)?;
    let mpl_dir = dir.join(MPL_DATA_DIR);
    mkdir(&mpl_dir)?;
    if let Some(mpl) = tree(MPL_GUEST_DIR) {
        for (path, bytes) in mpl.files() {
            // The tree's names came from a directory listing of the build's
            // output (no `..`, no links): relative by construction.
            let mut at = mpl_dir.clone();
            let names: Vec<&str> = path.split('/').collect();
            for (i, name) in names.iter().enumerate() {
                at.push(name);
                if i + 1 < names.len() && !at.is_dir() {
                    mkdir(&at)?;
                }
            }
            write(&at, &bytes)?;
        }
    }
    Ok(())
}
