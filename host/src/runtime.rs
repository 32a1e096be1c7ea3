//! The runtime: the engine, the linker with everything a guest may import,
//! the component cache and the workspace root. One per process.

use crate::bindings;
use crate::broker::Broker;
use crate::component_cache::{ComponentCache, LoadError};
use crate::engine::{EngineError, EngineOptions, SandboxEngine};
use crate::guest::Guest;
use crate::state::RunState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime::component::{HasSelf, Linker};

/// How to build a [`Runtime`].
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Engine options.
    pub engine: EngineOptions,
    /// Where precompiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Caches read but never written (a build's `target/test-cache`), each
    /// used only if this user owns it and nobody else may write it.
    pub cache_also: Vec<PathBuf>,
    /// Told before a guest is compiled (the CLI prints a line).
    pub compile_notice: Option<crate::component_cache::CompileNotice>,
    /// Where run workspaces are created.
    pub workspace_dir: PathBuf,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            engine: EngineOptions::default(),
            cache_dir: None,
            cache_also: Vec::new(),
            compile_notice: None,
            workspace_dir: crate::paths::default_work_dir(&crate::paths::default_state_dir()),
        }
    }
}

/// Why the runtime could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Cache(#[from] LoadError),
    #[error("could not link the host interfaces: {0}")]
    Link(String),
    #[error("workspace directory {path}: {source}")]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub(crate) struct RuntimeInner {
    pub(crate) engine: SandboxEngine,
    pub(crate) broker: Arc<Broker>,
    pub(crate) linker: Linker<RunState>,
    /// [`RuntimeInner::linker`] plus `programs`, for the shell guest.
    pub(crate) shell_linker: Linker<RunState>,
    pub(crate) cache: ComponentCache,
    pub(crate) workspace_dir: PathBuf,
    pub(crate) warm: crate::warm::WarmPool,
}

/// The engine, linker and caches shared by every run. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeInner>,
}

impl Runtime {
    /// Builds the engine and links the host interfaces: WASI 0.2 (with the
    /// deny-everything context each run gets) and the broker.
    pub fn new(config: RuntimeConfig) -> Result<Self, RuntimeError> {
        let warm = crate::warm::WarmPool::new(config.engine.warm_instances);
        let engine = SandboxEngine::new(config.engine)?;
        let linker = base_linker(&engine, LinkFor::Guests)?;
        // The shell guest alone is linked with `programs`, and without the
        // broker and `wasi:http`, which its world does not import (its
        // `python3` and `node` are instances of their own, linked with
        // `linker`).
        let shell_linker = base_linker(&engine, LinkFor::Shell)?;
        let cache = match &config.cache_dir {
            Some(dir) => ComponentCache::open(dir)?,
            None => ComponentCache::disabled(),
        }
        .reading_also(&config.cache_also)
        .with_notice(config.compile_notice.clone());
        create_private_dir(&config.workspace_dir).map_err(|source| RuntimeError::Workspace {
            path: config.workspace_dir.clone(),
            source,
        })?;
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                engine,
                broker: Arc::new(Broker::new()),
                linker,
                shell_linker,
                cache,
                workspace_dir: config.workspace_dir,
                warm,
            }),
        })
    }

    /// The linker a guest of identity family `family` is linked with: the
    /// shell's (with `programs`) for [`crate::guest::SHELL_FAMILY`] only.
    fn linker_for(&self, family: &str) -> &Linker<RunState> {
        if family == crate::guest::SHELL_FAMILY {
            &self.inner.shell_linker
        } else {
            &self.inner.linker
        }
    }

    /// The engine.
    pub fn engine(&self) -> &SandboxEngine {
        &self.inner.engine
    }

    /// The pre-instantiated interpreter instances.
    pub(crate) fn warm(&self) -> &crate::warm::WarmPool {
        &self.inner.warm
    }

    /// Asks the warm pool to refill `guest`'s instances, made by this
    /// runtime (held weakly by the pool's thread).
    pub(crate) fn refill_warm(&self, guest: &Guest) {
        let weak: std::sync::Weak<RuntimeInner> = Arc::downgrade(&self.inner);
        let maker: std::sync::Weak<dyn crate::warm::Maker> = weak;
        self.inner.warm.refill(maker, guest);
    }

    /// How many runs so far used a pre-instantiated instance instead of
    /// instantiating their own (see [`crate::warm`]).
    pub fn warm_instances_claimed(&self) -> u64 {
        self.inner.warm.claimed()
    }

    /// Pre-instantiated instances ready now, over all guests.
    pub fn warm_instances_ready(&self) -> usize {
        self.inner.warm.ready()
    }

    /// The process-wide broker (HTTP client, `Retry-After` breakers).
    pub fn broker(&self) -> &Arc<Broker> {
        &self.inner.broker
    }

    /// Compiles (or loads from the cache) and links a component.
    pub fn load(&self, bytes: &[u8]) -> Result<Guest, LoadError> {
        self.load_as(bytes, "component")
    }

    /// Like [`Runtime::load`], with the identity's family name given
    /// (`python-wasm`, `quickjs-wasm`, …).
    pub fn load_as(&self, bytes: &[u8], family: &str) -> Result<Guest, LoadError> {
        let (component, hash) =
            self.inner
                .cache
                .load_variant(&self.inner.engine, bytes, variant_for(family))?;
        Guest::link(self.linker_for(family), &component, hash, family)
    }

    /// Reads and loads a component file.
    pub fn load_file(&self, path: &Path) -> Result<Guest, LoadError> {
        self.load_file_as(path, "component")
    }

    /// Reads and loads a component file with the identity family `family`.
    pub fn load_file_as(&self, path: &Path, family: &str) -> Result<Guest, LoadError> {
        let (component, hash) =
            self.inner
                .cache
                .load_file_variant(&self.inner.engine, path, variant_for(family))?;
        Guest::link(self.linker_for(family), &component, hash, family)
    }

    /// Loads the scientific Python guest from its directory: the snapshot
    /// (compiled, or loaded from the cache), the standard-library zip and
    /// matplotlib's data ([`crate::scientific`]).
    pub fn load_scientific(&self, dir: &Path) -> Result<Guest, LoadError> {
        self.load_scientific_with(dir, &self.inner.cache)
    }

    /// [`Runtime::load_scientific`] through `cache` (a build filling a
    /// cache for later runs).
    pub fn load_scientific_with(
        &self,
        dir: &Path,
        cache: &ComponentCache,
    ) -> Result<Guest, LoadError> {
        let artifacts = crate::scientific::load_artifacts(dir)?;
        let (module, hash) = cache.load_compiled_file::<wasmtime::Module>(
            &self.inner.engine,
            &dir.join(crate::scientific::SNAPSHOT_FILE),
            crate::component_cache::Variant::Snapshots,
        )?;
        let linker = crate::scientific::linker(self.engine().engine())
            .map_err(|e| LoadError::WrongWorld(format!("{e:#}")))?;
        Guest::core(&linker, &module, &hash, &artifacts)
    }

    /// Loads a precompiled image that this host's supervisor wrote (a
    /// worker's guests). Never call this with a file a caller supplied:
    /// precompiled images are native code.
    pub fn load_trusted_image(
        &self,
        path: &Path,
        hash: &str,
        family: &str,
    ) -> Result<Guest, LoadError> {
        // SAFETY: the supervisor wrote this file from `Component::serialize`
        // for an engine with the same settings, and the worker's file system
        // holds it read-only; deserialisation also checks the engine's
        // compatibility and refuses a mismatch.
        let c = unsafe {
            wasmtime::component::Component::deserialize_file(self.engine().engine(), path)
        }
        .map_err(|e| self.incompatible(path, &e))?;
        Guest::link(self.linker_for(family), &c, hash.to_owned(), family)
    }

    /// Loads a core-module guest's bundle that this host's supervisor
    /// wrote ([`Runtime::write_image`]): its precompiled module and its
    /// trees, under the content hash the supervisor gives. Never call this
    /// with a directory a caller supplied: precompiled modules are native
    /// code.
    pub fn load_trusted_core(&self, dir: &Path, hash: &str) -> Result<Guest, LoadError> {
        let file = dir.join(crate::scientific::BUNDLE_MODULE);
        // SAFETY: as for `load_trusted_image`: the supervisor wrote this
        // file from `Module::serialize` for an engine with the same
        // settings, the worker's file system holds it read-only, and
        // deserialisation refuses an incompatible engine.
        let module = unsafe { wasmtime::Module::deserialize_file(self.engine().engine(), &file) }
            .map_err(|e| self.incompatible(&file, &e))?;
        let artifacts = crate::scientific::load_artifacts(dir)?;
        let linker = crate::scientific::linker(self.engine().engine())
            .map_err(|e| LoadError::WrongWorld(format!("{e:#}")))?;
        Guest::core_as(&linker, &module, hash, &artifacts)
    }

    /// Writes `guest`'s precompiled image into `dir` unless it is there,
    /// named by content hash and engine digest, and returns its name: a
    /// component's `.cwasm` file (mode 0644), or a core-module guest's
    /// directory (`.core`, mode 0755, [`crate::scientific::write_bundle`]).
    /// Either appears whole or not at all (written aside, then renamed).
    pub fn write_image(&self, guest: &Guest, dir: &Path) -> std::io::Result<String> {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        // The instrumented form of a guest (its sessions have snapshots)
        // is another image than the plain one of the same bytes.
        let stem = format!(
            "{}-{}{}",
            guest.content_hash(),
            self.engine().compatibility_digest(),
            if guest.has_snapshots() {
                format!("-s{}", crate::snapshot::instrument::INSTRUMENTATION_VERSION)
            } else {
                String::new()
            }
        );
        if let crate::guest::GuestPre::Core(pre) = guest.pre() {
            let name = format!("{stem}-{}.core", crate::scientific::trees_digest(pre));
            let path = dir.join(&name);
            if path.join(crate::scientific::BUNDLE_MODULE).is_file() {
                return Ok(name);
            }
            let tmp = tempfile::Builder::new().prefix(".core-").tempdir_in(dir)?;
            crate::scientific::write_bundle(pre, tmp.path())?;
            match std::fs::rename(tmp.path(), &path) {
                Ok(()) => {
                    // Renamed away: nothing is left for the guard to remove.
                    let _ = tmp.keep();
                }
                // Another writer got there first with the same bytes.
                Err(_) if path.join(crate::scientific::BUNDLE_MODULE).is_file() => {}
                Err(e) => return Err(e),
            }
            return Ok(name);
        }
        let name = format!("{stem}.cwasm");
        let path = dir.join(&name);
        if path.is_file() {
            return Ok(name);
        }
        let bytes = guest
            .component()
            .ok_or_else(|| std::io::Error::other("this guest has no component image"))?
            .serialize()
            .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&bytes)?;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(name)
    }

    /// Why a precompiled image at `path` did not load, with the cause
    /// first: wasmtime's chain reads outermost first ("failed to load code
    /// for: <path>: ... : <the setting>"), and the reason is the root.
    fn incompatible(&self, path: &Path, e: &wasmtime::Error) -> LoadError {
        let mut chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
        let cause = chain.pop().unwrap_or_default();
        LoadError::IncompatibleImage(format!(
            "{cause} (this engine compiles for CPU level {}; image {}: {})",
            self.engine().options().cpu,
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            chain.join(": ")
        ))
    }

    /// Where workspaces are created.
    pub fn workspace_dir(&self) -> &Path {
        &self.inner.workspace_dir
    }
}

/// Every interface a guest may import but `programs`: WASI 0.2 (the
/// deny-everything context each run gets), `wasi:http` through the gate,
/// the broker, and `/work` in host memory.
/// The form a guest of identity family `family` is compiled in: the
/// interpreters' sessions can be snapshotted, so they are instrumented.
fn variant_for(family: &str) -> crate::component_cache::Variant {
    use crate::component_cache::Variant;
    match family {
        "python-wasm" | "quickjs-wasm" => Variant::Snapshots,
        _ => Variant::Plain,
    }
}

/// Which guests a linker is for: each gets what its worlds import and
/// nothing more (`runtime::tests` keeps the two in step).
#[derive(Clone, Copy, PartialEq, Eq)]
enum LinkFor {
    /// `agent`, `agent-http`, `interpreter`: WASI, `wasi:http` and the
    /// broker.
    Guests,
    /// `shell`: WASI and `programs`.
    Shell,
}

fn base_linker(engine: &SandboxEngine, guests: LinkFor) -> Result<Linker<RunState>, RuntimeError> {
    let link = |e: wasmtime::Error| RuntimeError::Link(format!("{e:#}"));
    let mut linker: Linker<RunState> = Linker::new(engine.engine());
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(link)?;
    match guests {
        LinkFor::Guests => {
            // Standard HTTP clients go through the same gate as the broker.
            wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(link)?;
            bindings::broker::add_to_linker::<RunState, HasSelf<RunState>>(&mut linker, |s| s)
                .map_err(link)?;
        }
        LinkFor::Shell => {
            bindings::shell::programs::add_to_linker::<RunState, HasSelf<RunState>>(
                &mut linker,
                |s| s,
            )
            .map_err(link)?;
        }
    }
    // `/work` in host memory, in place of wasmtime-wasi's filesystem.
    crate::memfs::add_to_linker(&mut linker).map_err(link)?;
    Ok(linker)
}

fn create_private_dir(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(p)
}

#[cfg(test)]
mod tests {
    //! The published worlds and what the host links stay in step.
    use super::*;
    use crate::worlds::{Published, RUNNABLE_WORLDS, check::compatible};
    use wasm_encoder::{
        ComponentImportSection, ComponentTypeRef, ComponentTypeSection, InstanceType,
    };

    /// What a probe looks for in an instance: one of its functions, or
    /// one of its resources.
    enum Item {
        Func(String),
        Resource(String),
    }

    /// A component importing instance `name` with `item` in it. (wasmtime
    /// treats an instance the linker lacks like an empty one, so a probe
    /// must ask for something inside it.)
    fn probe(name: &str, item: &Item) -> Vec<u8> {
        let mut c = wasm_encoder::Component::new();
        let mut instance = InstanceType::new();
        match item {
            Item::Func(f) => {
                instance
                    .ty()
                    .function()
                    .params(std::iter::empty::<(&str, wasm_encoder::ComponentValType)>())
                    .result(None);
                instance.export(f.as_str(), ComponentTypeRef::Func(0));
            }
            Item::Resource(r) => {
                instance.export(
                    r.as_str(),
                    ComponentTypeRef::Type(wasm_encoder::TypeBounds::SubResource),
                );
            }
        }
        let mut types = ComponentTypeSection::new();
        types.instance(&instance);
        c.section(&types);
        let mut imports = ComponentImportSection::new();
        imports.import(name, ComponentTypeRef::Instance(0));
        c.section(&imports);
        c.finish()
    }

    /// Whether `linker` defines `item` of instance `name` (with whatever
    /// type: a probe's `func()` may not be the real one).
    fn links(engine: &SandboxEngine, linker: &Linker<RunState>, name: &str, item: &Item) -> bool {
        let component = wasmtime::component::Component::new(engine.engine(), probe(name, item))
            .expect("a probe component compiles");
        match linker.instantiate_pre(&component) {
            Ok(_) => true,
            Err(e) => !format!("{e:#}").contains("implementation is missing"),
        }
    }

    /// Something `name` defines: a freestanding function, else a resource.
    fn item_of(published: &Published, name: &str) -> Option<Item> {
        let r = &published.resolve;
        let (_, iface) = r
            .interfaces
            .iter()
            .find(|(id, _)| r.id_of(*id).as_deref() == Some(name))?;
        if let Some(f) = iface.functions.keys().find(|f| !f.starts_with('[')) {
            return Some(Item::Func(f.clone()));
        }
        iface.types.iter().find_map(|(n, t)| {
            matches!(r.types[*t].kind, wit_parser::TypeDefKind::Resource)
                .then(|| Item::Resource(n.clone()))
        })
    }

    /// Every interface of `wit/` (WASI's included) that the host links is
    /// imported by a published world, and every import of those worlds is
    /// linked: a component built for a published world loads, and nothing
    /// the host hands a guest is missing from the worlds (0.1.2's `agent`
    /// lacked the `wasi:http` the host linked).
    #[test]
    fn what_the_host_links_is_what_the_worlds_publish() {
        let engine = SandboxEngine::new(EngineOptions::default()).expect("engine");
        let base = base_linker(&engine, LinkFor::Guests).expect("linker");
        let shell = base_linker(&engine, LinkFor::Shell).expect("linker");
        let published = Published::load().expect("wit");
        let nothing = Item::Func("get-nothing".into());
        assert!(!links(
            &engine,
            &base,
            "nobody:nothing/here@1.0.0",
            &nothing
        ));
        let stdout = Item::Func("get-stdout".into());
        assert!(links(&engine, &base, "wasi:cli/stdout@0.2.12", &stdout));
        let world_imports = |names: &[&str]| -> Vec<String> {
            names
                .iter()
                .flat_map(|w| published.imports(published.world(w).expect("world")))
                .collect()
        };
        let guest_worlds: Vec<&str> = RUNNABLE_WORLDS
            .iter()
            .copied()
            .filter(|w| *w != "shell")
            .collect();
        for (linker, worlds) in [(&base, guest_worlds), (&shell, vec!["shell"])] {
            let offered = world_imports(&worlds);
            for name in &offered {
                let Some(item) = item_of(&published, name) else {
                    continue;
                };
                assert!(
                    links(&engine, linker, name, &item),
                    "{name} is imported by one of {worlds:?} but the host does not link it"
                );
            }
            let every: Vec<String> = published
                .resolve
                .interfaces
                .iter()
                .filter_map(|(id, _)| published.resolve.id_of(id))
                .collect();
            assert!(every.len() > 30, "{every:?}");
            let mut linked = 0;
            for name in every {
                let Some(item) = item_of(&published, &name) else {
                    continue;
                };
                if links(&engine, linker, &name, &item) {
                    linked += 1;
                    assert!(
                        offered.iter().any(|o| compatible(&name, o)),
                        "the host links {name} for a guest of {worlds:?}, but none of those \
                         worlds imports it: publish it in wit/sandbox.wit"
                    );
                }
            }
            // WASI's cli, clocks, filesystem, io, random and sockets at least.
            assert!(
                linked >= 25,
                "only {linked} interfaces linked for {worlds:?}"
            );
        }
        let run = Item::Func("run".into());
        assert!(
            !links(&engine, &base, "plimsoll:sandbox/programs@0.1.3", &run),
            "programs is the shell guest's alone"
        );
        assert!(links(
            &engine,
            &shell,
            "plimsoll:sandbox/programs@0.1.3",
            &run
        ));
    }
}
