//! The broker's search for a reflected credential (grant/reflection.rs)
//! on a 4 MiB response, against the floor of one `memchr::memmem` search
//! for the raw credential alone and a naive per-byte window compare, in
//! the same run.
//!
//! Run with `cargo bench -p plimsoll --bench reflection`. Figures are in
//! docs/benchmarks.md.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use plimsoll::grant::reflection::{ReflectionGuard, patterns};
use std::hint::black_box;

const TOKEN: &[u8] = b"sk-live/4f+9a8b7c6d5e4f3a2b1c0=aa11bb22cc33";

/// 4 MiB of JSON-looking text without the credential (the worst case: the
/// whole body is searched).
fn body() -> Vec<u8> {
    let row =
        br#"{"id":12345,"name":"widget","tags":["a","b"],"note":"lorem ipsum dolor sit amet"},"#;
    row.iter().copied().cycle().take(4 << 20).collect()
}

fn bench(c: &mut Criterion) {
    let hay = body();
    let guard = ReflectionGuard::for_credential(TOKEN);
    assert!(!guard.found_in(&hay));
    let forms = patterns(TOKEN).len();
    let mut g = c.benchmark_group("reflection_4MiB");
    g.throughput(Throughput::Bytes(hay.len() as u64));
    g.bench_function(format!("guard_{forms}_forms"), |b| {
        b.iter(|| black_box(guard.found_in(black_box(&hay))))
    });
    let finder = memchr_floor(TOKEN);
    g.bench_function("floor_memmem_raw_only", |b| {
        b.iter(|| black_box(finder(black_box(&hay))))
    });
    g.sample_size(10);
    g.bench_function("naive_windows_raw_only", |b| {
        b.iter(|| black_box(hay.windows(TOKEN.len()).any(|w| w == TOKEN)))
    });
    g.finish();
    let build = std::time::Instant::now();
    for _ in 0..100 {
        black_box(ReflectionGuard::for_credential(black_box(TOKEN)));
    }
    eprintln!(
        "building one guard ({forms} forms): {:.1} µs",
        build.elapsed().as_secs_f64() * 1e6 / 100.0
    );
}

/// One aho-corasick search for the raw credential alone: what a single
/// `memmem` costs (aho-corasick's prefilter is memchr's).
fn memchr_floor(needle: &'static [u8]) -> impl Fn(&[u8]) -> bool {
    let ac = aho_corasick::AhoCorasick::new([needle]).expect("one pattern");
    move |h| ac.is_match(h)
}

criterion_group!(benches, bench);
criterion_main!(benches);
