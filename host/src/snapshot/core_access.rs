//! Reading and writing a core-module guest's state (the scientific
//! Python guest), whose module [`super::instrument::instrument_module`]
//! made export its mutable globals and tables; its memory is exported
//! already. The host reaches all of it directly: nothing runs in the
//! guest, and a read changes nothing.

use super::access::{InstanceState, StateShape, WASM_PAGE};
use super::instrument::{core_global, core_table};
use crate::state::RunState;
use wasmtime::{Instance, Memory, Module, Store, Val};

/// The exported state of a core module, found once per module.
#[derive(Debug, Clone)]
pub struct CoreAccess {
    globals: Vec<String>,
    tables: Vec<String>,
}

impl CoreAccess {
    /// The state `module` exports, or `None` when it was not instrumented.
    pub fn of(module: &Module) -> Option<CoreAccess> {
        let names: std::collections::HashSet<&str> = module.exports().map(|e| e.name()).collect();
        // An instrumented module exports its memory as `__plimsoll_m0`.
        if !names.contains("__plimsoll_m0") {
            return None;
        }
        let mut globals = Vec::new();
        while names.contains(core_global(globals.len()).as_str()) {
            globals.push(core_global(globals.len()));
        }
        let mut tables = Vec::new();
        while names.contains(core_table(tables.len()).as_str()) {
            tables.push(core_table(tables.len()));
        }
        Some(CoreAccess { globals, tables })
    }

    /// Reads the instance's state.
    pub fn read(
        &self,
        store: &mut Store<RunState>,
        instance: &Instance,
        memory: &Memory,
    ) -> wasmtime::Result<InstanceState> {
        let (globals, tables) = self.read_globals_and_tables(store, instance)?;
        Ok(InstanceState {
            memories: vec![memory.data(&*store).to_vec()],
            globals,
            tables,
        })
    }

    /// [`CoreAccess::read`] handing the memory to `sink` (as
    /// [`super::access::StateAccess::read_into`] does) instead of copying
    /// it: the host reads the guest's memory in place.
    pub fn read_into(
        &self,
        store: &mut Store<RunState>,
        instance: &Instance,
        memory: &Memory,
        sink: &mut impl FnMut(usize, u64, u64, &[u8]),
    ) -> wasmtime::Result<InstanceState> {
        let (globals, tables) = self.read_globals_and_tables(store, instance)?;
        let data = memory.data(&*store);
        let size = data.len() as u64;
        for (i, chunk) in data.chunks(super::access::CHUNK as usize).enumerate() {
            sink(0, size, i as u64 * u64::from(super::access::CHUNK), chunk);
        }
        Ok(InstanceState {
            memories: Vec::new(),
            globals,
            tables,
        })
    }

    fn read_globals_and_tables(
        &self,
        store: &mut Store<RunState>,
        instance: &Instance,
    ) -> wasmtime::Result<(Vec<u8>, Vec<u32>)> {
        let mut globals = Vec::with_capacity(self.globals.len() * 8);
        for name in &self.globals {
            let g = instance
                .get_global(&mut *store, name)
                .ok_or_else(|| wasmtime::Error::msg("an exported global is missing"))?;
            let bits: u64 = match g.get(&mut *store) {
                Val::I32(v) => u64::from(v as u32),
                Val::I64(v) => v as u64,
                Val::F32(v) => u64::from(v),
                Val::F64(v) => v,
                _ => return Err(wasmtime::Error::msg("a global of a reference type")),
            };
            globals.extend_from_slice(&bits.to_le_bytes());
        }
        let mut tables = Vec::new();
        for name in &self.tables {
            let t = instance
                .get_table(&mut *store, name)
                .ok_or_else(|| wasmtime::Error::msg("an exported table is missing"))?;
            tables.push(u32::try_from(t.size(&*store)).unwrap_or(u32::MAX));
        }
        Ok((globals, tables))
    }

    /// Sets a fresh instance to a state of `shape`, writing `runs` into
    /// its memory and every global from `globals`.
    pub fn write(
        &self,
        store: &mut Store<RunState>,
        instance: &Instance,
        memory: &Memory,
        shape: &StateShape,
        runs: &[Vec<(u64, &[u8])>],
        globals: &[u8],
    ) -> wasmtime::Result<()> {
        if shape.memory_bytes.len() != 1
            || runs.len() != 1
            || shape.tables.len() != self.tables.len()
            || globals.len() != self.globals.len() * 8
        {
            return Err(wasmtime::Error::msg(
                "the snapshot's state has another shape than this guest's",
            ));
        }
        for (name, want) in self.tables.iter().zip(&shape.tables) {
            let t = instance
                .get_table(&mut *store, name)
                .ok_or_else(|| wasmtime::Error::msg("an exported table is missing"))?;
            if t.size(&*store) != u64::from(*want) {
                return Err(wasmtime::Error::msg(
                    "a table of the snapshot has another size than a fresh instance's",
                ));
            }
        }
        let want = shape.memory_bytes[0];
        let have = memory.data_size(&*store) as u64;
        if want < have || !want.is_multiple_of(WASM_PAGE as u64) {
            return Err(wasmtime::Error::msg(
                "a memory of the snapshot is smaller than a fresh instance's",
            ));
        }
        if want > have {
            memory.grow(&mut *store, (want - have) / WASM_PAGE as u64)?;
        }
        let data = memory.data_mut(&mut *store);
        for (offset, bytes) in &runs[0] {
            let at = usize::try_from(*offset)?;
            let end = at
                .checked_add(bytes.len())
                .filter(|e| *e <= data.len())
                .ok_or_else(|| wasmtime::Error::msg("a page of the snapshot is outside memory"))?;
            data[at..end].copy_from_slice(bytes);
        }
        for (name, bits) in self.globals.iter().zip(globals.chunks_exact(8)) {
            let g = instance
                .get_global(&mut *store, name)
                .ok_or_else(|| wasmtime::Error::msg("an exported global is missing"))?;
            let mut b = [0u8; 8];
            b.copy_from_slice(bits);
            let v = u64::from_le_bytes(b);
            let val = match g.ty(&*store).content() {
                wasmtime::ValType::I32 => Val::I32(v as u32 as i32),
                wasmtime::ValType::I64 => Val::I64(v as i64),
                wasmtime::ValType::F32 => Val::F32(v as u32),
                wasmtime::ValType::F64 => Val::F64(v),
                _ => return Err(wasmtime::Error::msg("a global of a reference type")),
            };
            g.set(&mut *store, val)?;
        }
        Ok(())
    }
}
