//! Helpers shared by the benchmarks.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where `make guests` leaves the guest components.
pub fn guests_dir() -> PathBuf {
    std::env::var_os("PLIMSOLL_GUESTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests"))
}

/// Times `n` single calls of `one` and prints p50/p90/p99 in `unit`
/// ("µs" or "ms").
pub fn percentiles(label: &str, n: usize, unit: &str, mut one: impl FnMut()) {
    let times: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            one();
            t.elapsed()
        })
        .collect();
    print_percentiles(label, unit, times);
}

/// Prints p50/p90/p99 of `times` in `unit` ("µs" or "ms").
pub fn print_percentiles(label: &str, unit: &str, mut times: Vec<Duration>) {
    times.sort();
    let scale = if unit == "ms" { 1e3 } else { 1e6 };
    let p = |q: f64| {
        times[((times.len() as f64 * q) as usize).min(times.len() - 1)].as_secs_f64() * scale
    };
    println!(
        "{label}: p50 {:.3} {unit}, p90 {:.3} {unit}, p99 {:.3} {unit} over {} runs",
        p(0.5),
        p(0.9),
        p(0.99),
        times.len()
    );
}

/// Store data for the bare-wasmtime floors: a WASI context with memory
/// pipes and its resource table, nothing of plimsoll's.
pub struct BareState {
    ctx: wasmtime_wasi::WasiCtx,
    table: wasmtime::component::ResourceTable,
}

impl BareState {
    /// A context whose stdout and stderr are 4 KiB memory pipes.
    pub fn new() -> Self {
        use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
        BareState {
            ctx: wasmtime_wasi::WasiCtx::builder()
                .stdout(MemoryOutputPipe::new(4096))
                .stderr(MemoryOutputPipe::new(4096))
                .build(),
            table: wasmtime::component::ResourceTable::new(),
        }
    }
}

impl wasmtime_wasi::WasiView for BareState {
    fn ctx(&mut self) -> wasmtime_wasi::WasiCtxView<'_> {
        wasmtime_wasi::WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

/// Private (not shared) resident bytes of this process, from
/// /proc/self/smaps_rollup: what one more session really costs, unlike RSS,
/// which counts the shared copy-on-write image in every mapping.
pub fn private_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with("Private_Clean:") || l.starts_with("Private_Dirty:"))
        .filter_map(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum::<u64>()
        * 1024
}
