//! An instance's state as a snapshot keeps it: only the pages that differ
//! from what a fresh instance of the same guest holds (its *base*), and
//! the runs of bytes that set a fresh instance back to it.
//!
//! Guarantees: [`diff`] keeps every page of the state that differs from
//! the base (past the base's end, from zero), as its XOR with the base's
//! page (so what the session left unchanged in a page is zeros); [`restore_runs`] writes
//! those pages, the base's *volatile* pages (the few that differed
//! between two fresh instances, so a fresh target may not hold the base's
//! bytes there) and the pages the globals' transfer passes through — so a
//! fresh instance written with them holds exactly the state, byte for
//! byte, whatever the next fresh instance happened to put in its volatile
//! pages.

use super::access::InstanceState;
use super::archive::{InstanceImage, MemoryImage, PAGE};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// What a fresh instance of a guest holds (after its prologue).
#[derive(Debug, Clone)]
pub struct Base {
    pub memories: Vec<Vec<u8>>,
    /// Per memory: pages that differed between two fresh instances.
    pub volatile: Vec<BTreeSet<u32>>,
    pub tables: Vec<u32>,
    /// SHA-256 of the memories with their volatile pages zeroed, and of
    /// the volatile page numbers: two hosts whose fresh instances agree
    /// have the same digest.
    pub sha256: String,
}

impl Base {
    /// The base of two fresh instances' states.
    pub fn of(a: InstanceState, b: &InstanceState) -> Base {
        let mut volatile = Vec::new();
        let mut h = Sha256::new();
        let mut memories = a.memories;
        for (m, mem) in memories.iter_mut().enumerate() {
            let other = b.memories.get(m).map(Vec::as_slice).unwrap_or(&[]);
            let mut v = BTreeSet::new();
            for (p, page) in mem.chunks_mut(PAGE).enumerate() {
                let theirs = other.get(p * PAGE..(p * PAGE + page.len()));
                if theirs != Some(&*page) {
                    v.insert(p as u32);
                }
            }
            let mut zeroed = mem.clone();
            for p in &v {
                let at = *p as usize * PAGE;
                let end = (at + PAGE).min(zeroed.len());
                zeroed[at..end].fill(0);
            }
            h.update((mem.len() as u64).to_le_bytes());
            h.update(&zeroed);
            for p in &v {
                h.update(p.to_le_bytes());
            }
            volatile.push(v);
        }
        for t in &a.tables {
            h.update(t.to_le_bytes());
        }
        Base {
            memories,
            volatile,
            tables: a.tables,
            sha256: hex::encode(h.finalize()),
        }
    }

    /// The base's page `p` of memory `m` (zeros past its end).
    fn page(&self, m: usize, p: u32) -> &[u8] {
        static ZERO: [u8; PAGE] = [0; PAGE];
        let at = p as usize * PAGE;
        self.memories
            .get(m)
            .and_then(|mem| mem.get(at..at + PAGE))
            .unwrap_or(&ZERO)
    }
}

/// Collects the pages that differ from a base as chunks of memory arrive
/// ([`super::access::StateAccess::read_into`]).
pub struct Differ<'a> {
    base: &'a Base,
    pub memories: Vec<MemoryImage>,
}

impl<'a> Differ<'a> {
    pub fn new(base: &'a Base) -> Differ<'a> {
        Differ {
            base,
            memories: Vec::new(),
        }
    }

    /// `bytes` of memory `m` (of `size` bytes) at `offset`, a whole number
    /// of pages.
    pub fn chunk(&mut self, m: usize, size: u64, offset: u64, bytes: &[u8]) {
        if self.memories.len() <= m {
            self.memories.resize_with(m + 1, MemoryImage::default);
        }
        let image = &mut self.memories[m];
        image.bytes = size;
        let first = (offset / PAGE as u64) as u32;
        for (i, page) in bytes.chunks(PAGE).enumerate() {
            let p = first + i as u32;
            let b = self.base.page(m, p);
            if page != b {
                image.pages.push(p);
                image.data.extend(page.iter().zip(b).map(|(x, y)| x ^ y));
            }
        }
    }

    /// The image, with the rest of the state.
    pub fn finish(self, state: &InstanceState) -> InstanceImage {
        InstanceImage {
            memories: self.memories,
            globals: state.globals.clone(),
            tables: state.tables.clone(),
            held: String::new(),
        }
    }
}

/// The pages of `state` that differ from `base`.
pub fn diff(state: &InstanceState, base: &Base) -> InstanceImage {
    let mut memories = Vec::new();
    for (m, mem) in state.memories.iter().enumerate() {
        let mut image = MemoryImage {
            bytes: mem.len() as u64,
            ..MemoryImage::default()
        };
        for (p, page) in mem.chunks(PAGE).enumerate() {
            let p = p as u32;
            let b = base.page(m, p);
            if page != b {
                image.pages.push(p);
                // Kept as the page's XOR with the base's: what the session
                // left unchanged in it is zeros, which compress to nothing.
                // (A memory is whole wasm pages: every chunk is a page.)
                image.data.extend(page.iter().zip(b).map(|(x, y)| x ^ y));
            }
        }
        memories.push(image);
    }
    InstanceImage {
        memories,
        globals: state.globals.clone(),
        tables: state.tables.clone(),
        held: String::new(),
    }
}

/// The runs of bytes (offset, bytes) that set a fresh instance, whose
/// memories hold `base`, to `image`; one list per memory. Memory 0 also
/// gets the pages `globals_len` bytes from its start pass through.
pub fn restore_runs(
    image: &InstanceImage,
    base: &Base,
    globals_len: usize,
) -> Vec<Vec<(u64, Vec<u8>)>> {
    let mut out = Vec::new();
    for (m, mem) in image.memories.iter().enumerate() {
        let limit = (mem.bytes / PAGE as u64) as u32;
        let mut pages: BTreeSet<u32> = mem.pages.iter().copied().collect();
        if let Some(v) = base.volatile.get(m) {
            pages.extend(v.iter().copied().filter(|p| *p < limit));
        }
        if m == 0 {
            pages.extend(0..(globals_len.div_ceil(PAGE) as u32).min(limit));
        }
        let mut runs: Vec<(u64, Vec<u8>)> = Vec::new();
        for p in pages {
            let b = base.page(m, p);
            let at = u64::from(p) * PAGE as u64;
            let run = match runs.last_mut() {
                Some((start, data)) if *start + data.len() as u64 == at => data,
                _ => {
                    runs.push((at, Vec::new()));
                    match runs.last_mut() {
                        Some((_, data)) => data,
                        None => continue,
                    }
                }
            };
            match mem.pages.binary_search(&p) {
                Ok(i) => run.extend(
                    mem.data[i * PAGE..(i + 1) * PAGE]
                        .iter()
                        .zip(b)
                        .map(|(x, y)| x ^ y),
                ),
                Err(_) => run.extend_from_slice(b),
            }
        }
        out.push(runs);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(mem: Vec<u8>) -> InstanceState {
        InstanceState {
            memories: vec![mem],
            globals: vec![0; 16],
            tables: vec![3],
        }
    }

    /// Applies `runs` to a copy of the fresh memory, as a write would.
    fn apply(fresh: &[u8], size: usize, runs: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut m = fresh.to_vec();
        m.resize(size, 0);
        for (at, b) in runs {
            m[*at as usize..*at as usize + b.len()].copy_from_slice(b);
        }
        m
    }

    #[test]
    fn a_fresh_instance_written_with_the_runs_holds_the_state_exactly() {
        let size = 65536;
        let mut a = vec![1u8; size];
        let mut b = a.clone();
        // Page 3 differs between two fresh instances: volatile.
        a[3 * PAGE] = 7;
        b[3 * PAGE] = 9;
        let base = Base::of(state(a.clone()), &state(b.clone()));
        assert_eq!(base.volatile[0].iter().copied().collect::<Vec<_>>(), [3]);
        // The session changed page 5, grew by a page of which one page is
        // not zero, and left page 3 as its own fresh start had it.
        let mut s = a.clone();
        s[5 * PAGE + 10] = 42;
        s.resize(2 * size, 0);
        s[size + 2 * PAGE] = 1;
        let image = diff(&state(s.clone()), &base);
        assert_eq!(image.memories[0].pages, [5, 18]);
        let runs = restore_runs(&image, &base, 16);
        // The next fresh instance had page 3 as `b` did: it is rewritten.
        assert_eq!(apply(&b, 2 * size, &runs[0]), s);
        assert_eq!(apply(&a, 2 * size, &runs[0]), s);
        // Page 0 (the globals' transfer) is among the runs.
        assert_eq!(runs[0][0].0, 0);
    }

    #[test]
    fn bases_that_agree_have_one_digest() {
        let a = vec![5u8; 65536];
        let x = Base::of(state(a.clone()), &state(a.clone()));
        let y = Base::of(state(a.clone()), &state(a.clone()));
        assert_eq!(x.sha256, y.sha256);
        let mut c = a.clone();
        c[0] = 1;
        let z = Base::of(state(c.clone()), &state(c));
        assert_ne!(x.sha256, z.sha256);
    }
}
