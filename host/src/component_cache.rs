//! An on-disk cache of precompiled components, keyed by the component's
//! content hash and the engine's compatibility digest.
//!
//! Compiling the Python interpreter takes seconds; loading its precompiled
//! form from this cache takes milliseconds (it is memory-mapped). The cache
//! holds native code, so it must be private to this host: the directory is
//! created with mode 0700 (a looser mode is tightened) and refused if
//! another user owns it.

use crate::engine::SandboxEngine;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;

/// Largest component accepted, in bytes.
pub const MAX_COMPONENT_BYTES: usize = 256 << 20;

/// Largest core module accepted (the scientific guest's snapshot, an
/// operator-installed file), in bytes.
pub const MAX_MODULE_BYTES: usize = 1 << 30;

/// What the cache holds: compiled components or core modules.
pub(crate) trait Compiled: Sized {
    /// The largest input accepted.
    const MAX_BYTES: usize;
    fn compile(engine: &wasmtime::Engine, bytes: &[u8]) -> wasmtime::Result<Self>;
    /// # Safety
    /// `path` must hold what [`Compiled::serialize`] wrote for an engine
    /// of the same configuration (wasmtime checks the configuration).
    unsafe fn load_file(engine: &wasmtime::Engine, path: &Path) -> wasmtime::Result<Self>;
    fn serialize(&self) -> wasmtime::Result<Vec<u8>>;
    /// `bytes` instrumented for session snapshots
    /// ([`crate::snapshot::instrument`]), or `None` when it cannot be (it
    /// is then compiled as it is, and has no snapshots).
    fn instrumented(bytes: &[u8]) -> Option<Vec<u8>>;
}

/// Which form of a guest is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The bytes as they are.
    Plain,
    /// Instrumented so that a live instance's state can be read and
    /// written (interpreters, whose sessions can be snapshotted). Cached
    /// under its own name; the guest's identity stays the hash of the
    /// bytes as given.
    Snapshots,
}

impl Variant {
    fn suffix(self) -> String {
        match self {
            Variant::Plain => String::new(),
            Variant::Snapshots => {
                format!("-s{}", crate::snapshot::instrument::INSTRUMENTATION_VERSION)
            }
        }
    }
}

impl Compiled for Component {
    const MAX_BYTES: usize = MAX_COMPONENT_BYTES;
    fn compile(engine: &wasmtime::Engine, bytes: &[u8]) -> wasmtime::Result<Self> {
        Component::new(engine, bytes)
    }
    unsafe fn load_file(engine: &wasmtime::Engine, path: &Path) -> wasmtime::Result<Self> {
        // SAFETY: the caller's contract.
        unsafe { Component::deserialize_file(engine, path) }
    }
    fn serialize(&self) -> wasmtime::Result<Vec<u8>> {
        Component::serialize(self)
    }
    fn instrumented(bytes: &[u8]) -> Option<Vec<u8>> {
        crate::snapshot::instrument::instrument(bytes)
            .ok()
            .map(|(b, _)| b)
    }
}

impl Compiled for wasmtime::Module {
    const MAX_BYTES: usize = MAX_MODULE_BYTES;
    fn compile(engine: &wasmtime::Engine, bytes: &[u8]) -> wasmtime::Result<Self> {
        wasmtime::Module::new(engine, bytes)
    }
    unsafe fn load_file(engine: &wasmtime::Engine, path: &Path) -> wasmtime::Result<Self> {
        // SAFETY: the caller's contract.
        unsafe { wasmtime::Module::deserialize_file(engine, path) }
    }
    fn instrumented(bytes: &[u8]) -> Option<Vec<u8>> {
        crate::snapshot::instrument::instrument_module(bytes).ok()
    }
    fn serialize(&self) -> wasmtime::Result<Vec<u8>> {
        wasmtime::Module::serialize(self)
    }
}

/// Why a component could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("the component is {0} bytes; at most {max} are accepted", max = MAX_COMPONENT_BYTES)]
    TooLarge(usize),
    #[error(
        "precompiled artifacts are never accepted from outside the host; pass the .wasm component"
    )]
    Precompiled,
    #[error("not a valid WebAssembly component: {0}")]
    Invalid(String),
    /// A precompiled image this host wrote cannot be loaded by this engine:
    /// it was built for another CPU level or engine configuration. The
    /// message puts wasmtime's reason first (which setting differs).
    #[error("{0}")]
    IncompatibleImage(String),
    #[error("the component does not fit plimsoll's worlds: {0}")]
    WrongWorld(String),
    #[error("component cache directory {path}: {why}")]
    UnsafeCache { path: PathBuf, why: String },
    #[error("component cache I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The precompiled-component cache. `None` directory means no caching.
#[derive(Debug, Clone)]
pub struct ComponentCache {
    dir: Option<PathBuf>,
    /// Caches read but never written: a build's own (make compiles the
    /// guests into `target/test-cache`), so that what it compiled is found
    /// without a setting. Each passed the same ownership check as `dir`.
    also: Vec<PathBuf>,
    /// Told before a load compiles (seconds to minutes).
    notice: Option<CompileNotice>,
}

/// What to do before a guest is compiled: the CLI prints a line, since a
/// first run may take minutes. Called with a label for what compiles and
/// its size in bytes.
#[derive(Clone)]
pub struct CompileNotice(pub std::sync::Arc<NoticeFn>);

/// What a [`CompileNotice`] calls: a label and a size in bytes.
pub type NoticeFn = dyn Fn(&str, u64) + Send + Sync;

impl std::fmt::Debug for CompileNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompileNotice")
    }
}

/// Whether `dir` is a directory this process's user owns that nobody else
/// may write: only such a cache's native code is ever loaded.
fn private_to_me(dir: &Path) -> Result<(), String> {
    let md = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !md.is_dir() {
        return Err("not a directory".into());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if md.uid() != me {
        return Err(format!(
            "owned by uid {}, not by this process (uid {me})",
            md.uid()
        ));
    }
    if md.permissions().mode() & 0o022 != 0 {
        return Err("writable by group or others".into());
    }
    Ok(())
}

/// The SHA-256 of a component's bytes, hex.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl ComponentCache {
    /// No on-disk cache: every load compiles.
    pub fn disabled() -> Self {
        ComponentCache {
            dir: None,
            also: Vec::new(),
            notice: None,
        }
    }

    /// Also reads compiled guests from `dirs` (never writes there). A
    /// directory that is missing, or that another user owns or may write,
    /// is skipped: its native code would be anyone's.
    pub fn reading_also(mut self, dirs: &[PathBuf]) -> Self {
        for d in dirs {
            match private_to_me(d) {
                Ok(()) => self.also.push(d.clone()),
                Err(why) if d.exists() => {
                    tracing::warn!("not reading compiled guests from {}: {why}", d.display())
                }
                Err(_) => {}
            }
        }
        self
    }

    /// Calls `notice` before every compile.
    pub fn with_notice(mut self, notice: Option<CompileNotice>) -> Self {
        self.notice = notice;
        self
    }

    /// The directories a compiled guest is looked for in, written one
    /// first.
    fn dirs(&self) -> impl Iterator<Item = &PathBuf> {
        self.dir.iter().chain(self.also.iter())
    }

    /// A cache in `dir`, created with mode 0700 if missing. Refused if the
    /// directory is owned by another user or writable by group or others.
    pub fn open(dir: &Path) -> Result<Self, LoadError> {
        std::fs::create_dir_all(dir)?;
        let unsafe_cache = |why: String| LoadError::UnsafeCache {
            path: dir.to_path_buf(),
            why,
        };
        let md = std::fs::symlink_metadata(dir)?;
        if !md.is_dir() {
            return Err(unsafe_cache("not a directory".into()));
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if md.uid() != me {
            return Err(unsafe_cache(format!(
                "owned by uid {}, not by this process (uid {me})",
                md.uid()
            )));
        }
        if md.permissions().mode() & 0o077 != 0 {
            // Tighten a directory we own rather than fail: it was most
            // likely just created with the default umask. Nobody else may
            // even read it: the entries tell which guests this host runs.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(ComponentCache {
            dir: Some(dir.to_path_buf()),
            also: Vec::new(),
            notice: None,
        })
    }

    /// Compiles `bytes`, or loads the precompiled form from the cache.
    /// Returns the component and its content hash.
    pub fn load(
        &self,
        engine: &SandboxEngine,
        bytes: &[u8],
    ) -> Result<(Component, String), LoadError> {
        self.load_compiled(engine, bytes, Variant::Plain)
    }

    /// [`ComponentCache::load`] of the `variant` form.
    pub fn load_variant(
        &self,
        engine: &SandboxEngine,
        bytes: &[u8],
        variant: Variant,
    ) -> Result<(Component, String), LoadError> {
        self.load_compiled(engine, bytes, variant)
    }

    /// [`ComponentCache::load`] for components or core modules.
    pub(crate) fn load_compiled<C: Compiled>(
        &self,
        engine: &SandboxEngine,
        bytes: &[u8],
        variant: Variant,
    ) -> Result<(C, String), LoadError> {
        self.load_compiled_as(engine, bytes, "a component", variant)
    }

    /// [`ComponentCache::load_compiled`], naming what compiles `label` in
    /// the notice.
    fn load_compiled_as<C: Compiled>(
        &self,
        engine: &SandboxEngine,
        bytes: &[u8],
        label: &str,
        variant: Variant,
    ) -> Result<(C, String), LoadError> {
        if bytes.len() > C::MAX_BYTES {
            return Err(LoadError::TooLarge(bytes.len()));
        }
        // Precompiled artifacts are native code: accepting one from a caller
        // would let it run anything in the host.
        if wasmtime::Engine::detect_precompiled(bytes).is_some() {
            return Err(LoadError::Precompiled);
        }
        let hash = content_hash(bytes);
        let name = format!(
            "{hash}-{}{}.cwasm",
            engine.compatibility_digest(),
            variant.suffix()
        );
        for (i, d) in self.dirs().enumerate() {
            let path = d.join(&name);
            if !path.is_file() {
                continue;
            }
            // SAFETY: the file is in a directory only this user can write
            // (checked in `open` and `reading_also`), and it was written by
            // `store` below from `Component::serialize` of this engine
            // configuration (the name carries the engine's compatibility
            // digest).
            match unsafe { C::load_file(engine.engine(), &path) } {
                Ok(c) => return Ok((c, hash)),
                // Only the cache this process writes is repaired.
                Err(e) if i == 0 && self.dir.is_some() => {
                    tracing::warn!("dropping unreadable cache entry {}: {e:#}", path.display());
                    let _ = std::fs::remove_file(&path);
                }
                Err(e) => tracing::warn!("cannot load {}: {e:#}", path.display()),
            }
        }
        if let Some(n) = &self.notice {
            (n.0)(label, bytes.len() as u64);
        }
        let instrumented = match variant {
            Variant::Plain => None,
            Variant::Snapshots => C::instrumented(bytes),
        };
        let source = instrumented.as_deref().unwrap_or(bytes);
        let Some(dir) = &self.dir else {
            let c = C::compile(engine.engine(), source)
                .map_err(|e| LoadError::Invalid(format!("{e:#}")))?;
            return Ok((c, hash));
        };
        let path = dir.join(&name);
        let c = C::compile(engine.engine(), source)
            .map_err(|e| LoadError::Invalid(format!("{e:#}")))?;
        if let Err(e) = store(dir, &path, &c) {
            // A cache that cannot be written only costs time.
            tracing::warn!("could not write cache entry {}: {e}", path.display());
        }
        Ok((c, hash))
    }
}

impl ComponentCache {
    /// Like [`ComponentCache::load`] for a file, without reading or hashing
    /// it when an earlier load of the same file (same path, device, inode,
    /// size and modification time) is in the cache. Hashing a 27 MB
    /// interpreter component costs more than loading its precompiled form.
    pub fn load_file(
        &self,
        engine: &SandboxEngine,
        path: &Path,
    ) -> Result<(Component, String), LoadError> {
        self.load_compiled_file(engine, path, Variant::Plain)
    }

    /// [`ComponentCache::load_file`] of the `variant` form.
    pub fn load_file_variant(
        &self,
        engine: &SandboxEngine,
        path: &Path,
        variant: Variant,
    ) -> Result<(Component, String), LoadError> {
        self.load_compiled_file(engine, path, variant)
    }

    /// [`ComponentCache::load_file`] for components or core modules.
    pub(crate) fn load_compiled_file<C: Compiled>(
        &self,
        engine: &SandboxEngine,
        path: &Path,
        variant: Variant,
    ) -> Result<(C, String), LoadError> {
        let md = std::fs::metadata(path)?;
        if md.len() > C::MAX_BYTES as u64 {
            return Err(LoadError::TooLarge(
                usize::try_from(md.len()).unwrap_or(usize::MAX),
            ));
        }
        let Some(dir) = &self.dir else {
            return self.load_compiled_as(engine, &std::fs::read(path)?, &label_of(path), variant);
        };
        let abs = std::fs::canonicalize(path)?;
        let key = format!(
            "{}\0{}\0{}\0{}\0{}.{}",
            abs.display(),
            md.dev(),
            md.ino(),
            md.len(),
            md.mtime(),
            md.mtime_nsec()
        );
        let index_name = content_hash(key.as_bytes());
        let index = dir.join("by-file").join(&index_name);
        for d in self.dirs() {
            if let Ok(hash) = std::fs::read_to_string(d.join("by-file").join(&index_name))
                && hash.len() == 64
                && hash.bytes().all(|b| b.is_ascii_hexdigit())
            {
                let cwasm = d.join(format!(
                    "{hash}-{}{}.cwasm",
                    engine.compatibility_digest(),
                    variant.suffix()
                ));
                if cwasm.is_file() {
                    // SAFETY: as in `load`: a file this user wrote into a
                    // private directory, named by the engine's digest.
                    if let Ok(c) = unsafe { C::load_file(engine.engine(), &cwasm) } {
                        return Ok((c, hash));
                    }
                }
            }
        }
        let loaded =
            self.load_compiled_as::<C>(engine, &std::fs::read(path)?, &label_of(path), variant)?;
        let write_index = || -> std::io::Result<()> {
            std::fs::create_dir_all(dir.join("by-file"))?;
            let mut tmp = tempfile::NamedTempFile::new_in(dir.join("by-file"))?;
            tmp.write_all(loaded.1.as_bytes())?;
            tmp.persist(&index).map_err(|e| e.error)?;
            Ok(())
        };
        if let Err(e) = write_index() {
            tracing::warn!("could not index {}: {e}", path.display());
        }
        Ok(loaded)
    }
}

/// What a notice calls the file at `path`: its name.
fn label_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "a component".into())
}

fn store<C: Compiled>(dir: &Path, path: &Path, c: &C) -> std::io::Result<()> {
    let bytes = c
        .serialize()
        .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(&bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
