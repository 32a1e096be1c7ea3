//! The store limiter: linear memory, tables and instances of one run.
//!
//! Growth beyond a limit is refused (the guest sees `memory.grow` return -1
//! and can handle it, as Python's `MemoryError` does); the refusal is
//! remembered so that a run that then fails is reported as
//! `memory_exhausted`, not as a generic error.

use wasmtime::ResourceLimiter;

/// Limits and high-water marks for one store.
#[derive(Debug, Clone)]
pub struct RunLimiter {
    memory_limit: usize,
    table_limit: usize,
    instance_limit: usize,
    /// Current total of all linear memories (bytes).
    memory_total: usize,
    /// Highest `memory_total` seen.
    memory_peak: usize,
    /// Whether any growth was refused.
    refused: bool,
    /// Memory allowed on top of the limit: a guest's own snapshot heap
    /// (the scientific guest's), so that the envelope's `memory_bytes` is
    /// what the run's code may add to it.
    base: usize,
}

impl RunLimiter {
    /// A limiter for a run allowed `memory` bytes of linear memory in all,
    /// `table_elements` per table and `instances` instances.
    pub fn new(memory: u64, table_elements: u64, instances: u64) -> Self {
        RunLimiter {
            memory_limit: usize::try_from(memory).unwrap_or(usize::MAX),
            table_limit: usize::try_from(table_elements).unwrap_or(usize::MAX),
            instance_limit: usize::try_from(instances).unwrap_or(usize::MAX),
            memory_total: 0,
            memory_peak: 0,
            refused: false,
            base: 0,
        }
    }

    /// Allows `bytes` more than the run's limit, for a guest whose image
    /// starts with that much memory (its snapshot heap).
    pub fn set_base(&mut self, bytes: u64) {
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        self.memory_limit = self
            .memory_limit
            .saturating_sub(self.base)
            .saturating_add(bytes);
        self.base = bytes;
    }

    /// Memory allowed on top of the limit (see [`RunLimiter::set_base`]).
    pub fn base(&self) -> u64 {
        self.base as u64
    }

    /// Records that the guest itself reported running out of memory (an
    /// allocation it refused before asking the engine to grow).
    pub fn note_refusal(&mut self) {
        self.refused = true;
    }

    /// Highest total linear memory seen, in bytes.
    pub fn memory_peak(&self) -> u64 {
        self.memory_peak as u64
    }

    /// Whether the guest asked for more memory or table space than allowed.
    pub fn refused_growth(&self) -> bool {
        self.refused
    }

    /// Linear memory the store holds now, in bytes.
    pub fn memory_total(&self) -> u64 {
        self.memory_total as u64
    }

    /// Takes over the usage `earlier` recorded for the same store (a
    /// pre-instantiated instance's, made under a placeholder limiter):
    /// what the instance already holds counts against this limiter's
    /// limits from now on.
    pub fn continue_from(&mut self, earlier: &RunLimiter) {
        self.memory_total = earlier.memory_total;
        self.memory_peak = self.memory_peak.max(earlier.memory_total);
        self.refused |= earlier.refused;
        if earlier.base > self.base {
            self.set_base(earlier.base as u64);
        }
    }

    /// Sets a new memory limit (between evaluations of a session). The
    /// current size counts against it; the refusal flag is cleared.
    pub fn reset_for_next_run(&mut self, memory: u64) {
        self.memory_limit = usize::try_from(memory)
            .unwrap_or(usize::MAX)
            .saturating_add(self.base);
        self.memory_peak = self.memory_total;
        self.refused = false;
    }
}

impl ResourceLimiter for RunLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        let total = self.memory_total.saturating_add(growth);
        if total > self.memory_limit || maximum.is_some_and(|m| desired > m) {
            self.refused = true;
            return Ok(false);
        }
        self.memory_total = total;
        self.memory_peak = self.memory_peak.max(total);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.table_limit || maximum.is_some_and(|m| desired > m) {
            self.refused = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.instance_limit
    }

    fn tables(&self) -> usize {
        self.instance_limit.saturating_mul(4)
    }

    fn memories(&self) -> usize {
        self.instance_limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_growth_past_the_total_and_remembers_it() {
        let mut l = RunLimiter::new(100, 10, 4);
        assert!(l.memory_growing(0, 60, None).unwrap_or(false));
        assert!(l.memory_growing(0, 40, None).unwrap_or(false));
        assert!(!l.refused_growth());
        assert!(!l.memory_growing(40, 41, None).unwrap_or(true));
        assert!(l.refused_growth());
        assert_eq!(l.memory_peak(), 100);
        assert!(!l.table_growing(0, 11, None).unwrap_or(true));
    }
}
