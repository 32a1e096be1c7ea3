//! The one wasmtime engine of a process, and its epoch ticker.
//!
//! Compiling is expensive and instantiating must be cheap, so everything that
//! can be decided once is decided here: Cranelift, the pooling allocator with
//! copy-on-write memory images, epoch interruption for wall time, and
//! (optionally) fuel for deterministic CPU accounting.

use crate::cpu::CpuTarget;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How the process-wide engine is built. Configuration is data: the CLI,
/// the daemon and embedders fill this in and never touch wasmtime's config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineOptions {
    /// Count fuel so that CPU is accounted deterministically and a run can
    /// end as `cpu_exhausted`. Costs 5–45 % on CPU-bound guests.
    pub fuel: bool,
    /// Use the pooling allocator (pre-reserved slots, copy-on-write images).
    /// Off means wasmtime's on-demand allocator (used by benchmarks to
    /// compare).
    pub pooling: bool,
    /// Instances that may be alive at once (pool slots). Runs beyond this
    /// fail fast with `busy` instead of queueing without bound.
    pub max_live_instances: u32,
    /// The largest linear memory a pool slot can hold, in bytes. Must be at
    /// least the operator's `memory_bytes`.
    pub max_memory_bytes: u64,
    /// Native stack wasm may use before a stack-overflow trap, in bytes.
    pub max_wasm_stack: usize,
    /// Period of the epoch ticker. Wall-time limits are enforced at this
    /// granularity.
    pub epoch_tick: Duration,
    /// Bytes of each pool slot's linear memory that stay mapped between
    /// instances (wasmtime's `linear_memory_keep_resident`).
    ///
    /// This is not state kept between runs: when an instance ends, wasmtime
    /// finds the pages it wrote (`PAGEMAP_SCAN`) and copies the component's
    /// original image back over them, up to this many bytes; what the guest
    /// dirtied beyond that is unmapped and faults back in from the image.
    /// Either way the next instance sees exactly the image. Keeping pages
    /// mapped spares the next run the page faults of re-touching them, at
    /// the cost of up to that much resident memory per warm slot. `PLIMSOLL_KEEP_RESIDENT_MIB`
    /// sets it (read by `SandboxConfig::from_env`); 0 unmaps everything.
    pub keep_resident_bytes: u64,
    /// Pre-instantiated instances kept ready per interpreter guest (see
    /// [`crate::warm`]). A run that finds one skips instantiation, which is
    /// most of an interpreter's fresh-instance cost; a background thread
    /// makes the next one. Each holds a pool slot and the memory its
    /// instantiation touched. 0 turns it off. `PLIMSOLL_WARM_INSTANCES`
    /// sets it (read by `SandboxConfig::from_env`).
    pub warm_instances: u32,
    /// The instruction set compiled code may use ([`crate::cpu`]):
    /// `Native` on the machine that runs it; a fixed x86-64 level when the
    /// code runs on another CPU (a microVM's), so that it loads there.
    pub cpu: CpuTarget,
    /// Compile without Cranelift's optimizations: several times faster to
    /// compile, slower to run. For code that runs once (the scientific
    /// guest's initialization before its snapshot); its compatibility
    /// digest differs, so nothing it compiles is taken for a normal build.
    pub quick_compile: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            fuel: true,
            pooling: true,
            max_live_instances: 256,
            max_memory_bytes: 4 << 30,
            // CPython's recursion guard counts frames, not bytes; deep
            // recursion through C code needs more than wasmtime's 512 KiB
            // default to end in RecursionError rather than a trap.
            max_wasm_stack: 4 << 20,
            epoch_tick: Duration::from_millis(10),
            keep_resident_bytes: DEFAULT_KEEP_RESIDENT,
            warm_instances: DEFAULT_WARM_INSTANCES,
            cpu: CpuTarget::Native,
            quick_compile: false,
        }
    }
}

/// Names the [`EngineOptions::keep_resident_bytes`] override, in MiB.
pub const KEEP_RESIDENT_ENV: &str = "PLIMSOLL_KEEP_RESIDENT_MIB";

/// The default [`EngineOptions::keep_resident_bytes`]: 16 MiB. With
/// `PAGEMAP_SCAN` only the pages an instance wrote are copied back (at
/// most 32 runs of them; the rest of the slot is unmapped as without it),
/// and the pages it only read stay mapped: a JavaScript fresh `1+1` p50
/// 0.32 → 0.20 ms, Python unchanged within noise (docs/benchmarks.md).
/// Costs at most this much resident memory per unused warm pool slot,
/// mostly the shared page cache of the component's image.
pub const DEFAULT_KEEP_RESIDENT: u64 = 16 << 20;

/// Bytes of each pooled table reset with `memset` rather than `madvise`
/// (wasmtime's `table_keep_resident`): 64 KiB, 8,192 entries; at most
/// this much stays resident per table slot.
pub const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// Names the [`EngineOptions::warm_instances`] override.
pub const WARM_INSTANCES_ENV: &str = "PLIMSOLL_WARM_INSTANCES";

/// The default [`EngineOptions::warm_instances`]: one per interpreter, which
/// is enough for a caller that runs one thing at a time (the refill takes
/// less time than a run) and costs one pool slot per interpreter.
pub const DEFAULT_WARM_INSTANCES: u32 = 1;

/// Why the engine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid engine option: {0}")]
    InvalidOption(String),
    #[error("wasmtime refused the engine configuration: {0}")]
    Wasmtime(String),
    /// The engine was asked for a CPU level this machine cannot run.
    #[error(
        "CPU level {target} needs {missing}, which this CPU does not have",
        missing = .missing.join(", ")
    )]
    Cpu {
        target: CpuTarget,
        missing: Vec<&'static str>,
    },
}

/// The engine plus the ticker thread that advances its epoch.
///
/// Dropping the last clone stops the ticker.
#[derive(Clone)]
pub struct SandboxEngine {
    inner: Arc<EngineInner>,
}

struct EngineInner {
    engine: Engine,
    options: EngineOptions,
    stop: Arc<AtomicBool>,
}

impl Drop for EngineInner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl SandboxEngine {
    /// Builds the engine and starts its epoch ticker.
    pub fn new(options: EngineOptions) -> Result<Self, EngineError> {
        if options.max_live_instances == 0 {
            return Err(EngineError::InvalidOption(
                "max_live_instances must be at least 1".into(),
            ));
        }
        if options.epoch_tick.is_zero() || options.epoch_tick > Duration::from_secs(1) {
            return Err(EngineError::InvalidOption(
                "epoch_tick must be between 1 ns and 1 s".into(),
            ));
        }
        if options.max_memory_bytes > 4 << 30 {
            return Err(EngineError::InvalidOption(
                "max_memory_bytes is at most 4 GiB (wasm32)".into(),
            ));
        }
        let mut config = Config::new();
        if options.quick_compile {
            config.cranelift_opt_level(wasmtime::OptLevel::None);
        }
        config
            .epoch_interruption(true)
            .consume_fuel(options.fuel)
            .max_wasm_stack(options.max_wasm_stack)
            // The async fiber stack must hold the wasm stack plus host frames.
            .async_stack_size(options.max_wasm_stack + (1 << 20))
            .memory_init_cow(true)
            .wasm_component_model(true)
            .parallel_compilation(true);
        if let Some(features) = options.cpu.features() {
            if !cfg!(target_arch = "x86_64") {
                return Err(EngineError::InvalidOption(format!(
                    "cpu level {} is for x86-64 hosts only",
                    options.cpu
                )));
            }
            let missing = options.cpu.missing_here();
            if !missing.is_empty() {
                return Err(EngineError::Cpu {
                    target: options.cpu,
                    missing,
                });
            }
            // Naming the host triple turns Cranelift's detection of this
            // CPU off: the engine starts from the x86-64 baseline and gets
            // exactly the level's features.
            config
                .target(&target_lexicon::HOST.to_string())
                .map_err(|e| EngineError::Wasmtime(format!("{e:#}")))?;
            for (setting, _) in features {
                // SAFETY: each setting is a CPU feature this CPU has
                // (`missing_here` is empty), so code using it runs here;
                // the detector below keeps wasmtime from loading code
                // that uses anything outside the level.
                unsafe {
                    config.cranelift_flag_enable(setting);
                }
            }
            // SAFETY: the detector answers yes only where the CPU itself
            // does (`cpu::detect`), narrowed to the level.
            unsafe {
                config.detect_host_feature(options.cpu.detector());
            }
        }
        if options.pooling {
            let n = options.max_live_instances;
            let mut pool = PoolingAllocationConfig::new();
            pool.total_component_instances(n)
                // Interpreter components hold a few dozen core instances.
                .total_core_instances(n.saturating_mul(32))
                .max_core_instances_per_component(64)
                .total_memories(n.saturating_mul(2))
                .max_memories_per_component(4)
                .total_tables(n.saturating_mul(4))
                .max_tables_per_component(8)
                .table_elements(100_000)
                .total_stacks(n)
                .max_memory_size(options.max_memory_bytes as usize)
                .max_core_instance_size(16 << 20)
                .max_component_instance_size(1 << 20)
                // Either way a slot is reset to the image before anyone
                // else sees it; see `keep_resident_bytes`.
                .linear_memory_keep_resident(options.keep_resident_bytes as usize)
                .pagemap_scan(wasmtime::Enabled::Auto)
                // A table is zeroed with `memset` up to this size instead
                // of `madvise`: the syscall's cross-CPU TLB shootdown was
                // most of a small run's cost (Rust `hello` p50 37.8 →
                // 14.8–19.2 µs, docs/benchmarks.md, #40). Still zeroed
                // before any other run sees the slot.
                .table_keep_resident(TABLE_KEEP_RESIDENT);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        } else {
            config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
        }
        let engine = Engine::new(&config).map_err(|e| EngineError::Wasmtime(format!("{e:#}")))?;
        let stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), options.epoch_tick, stop.clone())
            .map_err(|e| EngineError::Wasmtime(format!("could not start the epoch ticker: {e}")))?;
        Ok(SandboxEngine {
            inner: Arc::new(EngineInner {
                engine,
                options,
                stop,
            }),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The options it was built with.
    pub fn options(&self) -> &EngineOptions {
        &self.inner.options
    }

    /// Epoch ticks that cover `d`, rounded up, at least one.
    pub fn ticks_for(&self, d: Duration) -> u64 {
        let tick = self.inner.options.epoch_tick.as_nanos().max(1);
        let n = d.as_nanos().div_ceil(tick);
        u64::try_from(n).unwrap_or(u64::MAX).max(1)
    }

    /// A hex digest of everything that makes a precompiled artifact valid for
    /// this engine (wasmtime version, target, compiler flags, features).
    pub fn compatibility_digest(&self) -> String {
        use sha2::{Digest, Sha256};
        use std::hash::{Hash, Hasher};
        // `precompile_compatibility_hash` is a `Hash`; feed it to a hasher
        // that writes into SHA-256 so that the key is stable for the
        // process's wasmtime build.
        struct ShaHasher(Sha256);
        impl Hasher for ShaHasher {
            fn finish(&self) -> u64 {
                0
            }
            fn write(&mut self, bytes: &[u8]) {
                self.0.update(bytes);
            }
        }
        let mut h = ShaHasher(Sha256::new());
        self.inner
            .engine
            .precompile_compatibility_hash()
            .hash(&mut h);
        h.0.update(env!("CARGO_PKG_VERSION").as_bytes());
        // The level narrows what the engine accepts beyond its flags.
        h.0.update(self.inner.options.cpu.as_str().as_bytes());
        hex::encode(&h.0.finalize()[..16])
    }
}

fn spawn_ticker(engine: Engine, tick: Duration, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    // A plain thread, not a tokio task: the ticker must keep running when
    // the async runtime is saturated by guests, or wall-time limits would
    // stop being enforced exactly when they matter. Without it no wall-time
    // limit holds, so failing to start it fails the engine.
    std::thread::Builder::new()
        .name("plimsoll-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                engine.increment_epoch();
            }
        })
        .map(|_| ())
}
