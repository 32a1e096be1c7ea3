//! Reading and writing a live instance's state through the accessor
//! functions [`super::instrument`] added to its component.
//!
//! Guarantees: [`StateAccess::read`] leaves the instance exactly as it
//! found it (every byte the accessor overwrote for a return area is put
//! back before it returns, even when a later step fails); [`StateAccess::write`]
//! is meant for a fresh instance of the same component, and sets every
//! memory, global and nothing else; sizes are checked against the
//! instance before anything is written (a state for another build of the
//! guest is refused, never half-applied — the caller discards the
//! instance on any error).

use super::instrument::STATE_INSTANCE;
use crate::state::RunState;
use wasmtime::Store;
use wasmtime::component::{Component, ComponentExportIndex, Instance, TypedFunc};

/// A wasm page.
pub const WASM_PAGE: usize = 64 * 1024;

/// What an instance's accessor functions are, found once per component.
#[derive(Debug, Clone)]
pub struct StateAccess {
    target: ComponentExportIndex,
    globals: Option<Globals>,
    memories: Vec<MemoryAccess>,
    tables: Vec<ComponentExportIndex>,
}

#[derive(Debug, Clone)]
struct Globals {
    read: ComponentExportIndex,
    unstash: ComponentExportIndex,
    write: ComponentExportIndex,
}

#[derive(Debug, Clone)]
struct MemoryAccess {
    size: ComponentExportIndex,
    grow: ComponentExportIndex,
    read: ComponentExportIndex,
    unstash: ComponentExportIndex,
    write: ComponentExportIndex,
}

/// The state of one instance: raw bytes, as the accessor moves them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceState {
    /// Each memory's bytes, its whole current size.
    pub memories: Vec<Vec<u8>>,
    /// Every mutable global, 8 little-endian bytes each, in layout order.
    pub globals: Vec<u8>,
    /// Each table's size, in elements (tables are not captured: they must
    /// not have grown since the instance started, see [`super`]).
    pub tables: Vec<u32>,
}

fn lost(what: &str) -> wasmtime::Error {
    wasmtime::Error::msg(format!("the instance's state accessor has no `{what}`"))
}

impl StateAccess {
    /// The accessor of `component`, or `None` when it was not instrumented
    /// (its sessions have no snapshots).
    pub fn of(component: &Component) -> Option<StateAccess> {
        let inst = component.get_export_index(None, STATE_INSTANCE)?;
        let f = |name: &str| component.get_export_index(Some(&inst), name);
        let globals = match (f("gread"), f("gunstash"), f("gwrite")) {
            (Some(read), Some(unstash), Some(write)) => Some(Globals {
                read,
                unstash,
                write,
            }),
            _ => None,
        };
        let mut memories = Vec::new();
        while let (Some(size), Some(grow), Some(read), Some(unstash), Some(write)) = (
            f(&format!("msize{}", memories.len())),
            f(&format!("mgrow{}", memories.len())),
            f(&format!("mread{}", memories.len())),
            f(&format!("munstash{}", memories.len())),
            f(&format!("mwrite{}", memories.len())),
        ) {
            memories.push(MemoryAccess {
                size,
                grow,
                read,
                unstash,
                write,
            });
        }
        let mut tables = Vec::new();
        while let Some(t) = f(&format!("tsize{}", tables.len())) {
            tables.push(t);
        }
        Some(StateAccess {
            target: f("target")?,
            globals,
            memories,
            tables,
        })
    }

    /// Whether any global lives outside a memory this accessor can use for
    /// its bulk transfer (then the state cannot be moved).
    pub fn complete(&self) -> bool {
        self.globals.is_some() || self.memories.is_empty()
    }

    /// Reads `instance`'s whole state. The instance is left as it was.
    pub async fn read(
        &self,
        store: &mut Store<RunState>,
        instance: &Instance,
    ) -> wasmtime::Result<InstanceState> {
        let mut whole: Vec<Vec<u8>> = Vec::new();
        let mut state = self
            .read_into(
                store,
                instance,
                &mut |m: usize, size: u64, offset: u64, bytes: &[u8]| {
                    if whole.len() <= m {
                        whole.resize_with(m + 1, Vec::new);
                        whole[m].reserve(size as usize);
                    }
                    debug_assert_eq!(whole[m].len() as u64, offset);
                    whole[m].extend_from_slice(bytes);
                },
            )
            .await?;
        whole.resize_with(self.memories.len(), Vec::new);
        state.memories = whole;
        Ok(state)
    }

    /// Reads `instance`'s state, handing each memory to `sink` in order,
    /// [`CHUNK`] bytes at a time (`sink(memory, its size, offset, bytes)`)
    /// rather than keeping it: the returned state's `memories` are empty.
    /// The instance is left as it was.
    pub async fn read_into(
        &self,
        store: &mut Store<RunState>,
        instance: &Instance,
        sink: &mut impl FnMut(usize, u64, u64, &[u8]),
    ) -> wasmtime::Result<InstanceState> {
        let mut state = InstanceState::default();
        for (i, m) in self.memories.iter().enumerate() {
            read_memory(store, instance, m, &mut |size, offset, bytes| {
                sink(i, size, offset, bytes)
            })
            .await?;
        }
        if let Some(g) = &self.globals {
            let scratch = 0u32;
            let read: TypedFunc<(u32,), (Vec<u8>,)> =
                instance.get_typed_func(&mut *store, g.read)?;
            let unstash: TypedFunc<(u32,), ()> = instance.get_typed_func(&mut *store, g.unstash)?;
            let got = read.call_async(&mut *store, (scratch,)).await;
            // Put the scratch bytes back whatever the read gave.
            unstash.call_async(&mut *store, (scratch,)).await?;
            state.globals = got?.0;
        }
        for t in &self.tables {
            let size: TypedFunc<(), (u32,)> = instance.get_typed_func(&mut *store, t)?;
            state.tables.push(size.call_async(&mut *store, ()).await?.0);
        }
        Ok(state)
    }

    /// Sets a fresh `instance` of the same component to `state`: each
    /// memory grown to its size and written where `pages` says (the
    /// caller's runs of bytes that differ from what a fresh instance
    /// holds), every global set. Refused before anything is written when
    /// the shapes differ.
    pub async fn write(
        &self,
        store: &mut Store<RunState>,
        instance: &Instance,
        shape: &StateShape,
        runs: &[Vec<(u64, &[u8])>],
        globals: &[u8],
    ) -> wasmtime::Result<()> {
        if shape.memory_bytes.len() != self.memories.len()
            || shape.tables.len() != self.tables.len()
            || runs.len() != self.memories.len()
        {
            return Err(wasmtime::Error::msg(
                "the snapshot's state has another shape than this guest's",
            ));
        }
        // Tables first: a table that grew since start cannot be rebuilt.
        for (t, want) in self.tables.iter().zip(&shape.tables) {
            let size: TypedFunc<(), (u32,)> = instance.get_typed_func(&mut *store, t)?;
            if size.call_async(&mut *store, ()).await?.0 != *want {
                return Err(wasmtime::Error::msg(
                    "a table of the snapshot has another size than a fresh instance's",
                ));
            }
        }
        let target: TypedFunc<(u32,), ()> = instance.get_typed_func(&mut *store, self.target)?;
        // Memories grown first, so the globals' transfer has room.
        for (m, want) in self.memories.iter().zip(&shape.memory_bytes) {
            let size: TypedFunc<(), (u32,)> = instance.get_typed_func(&mut *store, m.size)?;
            let grow: TypedFunc<(u32,), (i32,)> = instance.get_typed_func(&mut *store, m.grow)?;
            let have = u64::from(size.call_async(&mut *store, ()).await?.0) * WASM_PAGE as u64;
            if *want < have || want % WASM_PAGE as u64 != 0 {
                return Err(wasmtime::Error::msg(
                    "a memory of the snapshot is smaller than a fresh instance's",
                ));
            }
            let more = u32::try_from((want - have) / WASM_PAGE as u64)?;
            if more > 0 && grow.call_async(&mut *store, (more,)).await?.0 < 0 {
                return Err(wasmtime::Error::msg(
                    "a memory could not grow to the snapshot's size (the envelope's memory limit?)",
                ));
            }
        }
        if let Some(g) = &self.globals {
            // The globals land at 0..8n of memory 0 and are set from
            // there; the caller's runs rewrite those bytes afterwards.
            target.call_async(&mut *store, (0,)).await?;
            let write: TypedFunc<(&[u8],), ()> = instance.get_typed_func(&mut *store, g.write)?;
            write.call_async(&mut *store, (globals,)).await?;
        } else if !globals.is_empty() {
            return Err(wasmtime::Error::msg(
                "the snapshot has globals and this guest has no way to set them",
            ));
        }
        for (m, runs) in self.memories.iter().zip(runs) {
            let write: TypedFunc<(&[u8],), ()> = instance.get_typed_func(&mut *store, m.write)?;
            for (offset, bytes) in runs {
                target
                    .call_async(&mut *store, (u32::try_from(*offset)?,))
                    .await?;
                write.call_async(&mut *store, (*bytes,)).await?;
            }
        }
        Ok(())
    }
}

/// The sizes a state must fit: each memory's byte size, each table's size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateShape {
    pub memory_bytes: Vec<u64>,
    pub tables: Vec<u32>,
}

/// How much of a memory one read moves: small enough that the host's
/// allocator reuses the buffer (no fresh pages to fault in per read), large
/// enough that the calls cost little.
pub const CHUNK: u32 = 64 * 1024;

/// Reads memory `m` whole, [`CHUNK`] bytes at a time, each read's 8-byte
/// return area in a chunk read already or not yet (and put back after
/// each read), handing each chunk to `each(size, offset, bytes)`.
async fn read_memory(
    store: &mut Store<RunState>,
    instance: &Instance,
    m: &MemoryAccess,
    each: &mut impl FnMut(u64, u64, &[u8]),
) -> wasmtime::Result<()> {
    let size: TypedFunc<(), (u32,)> = instance.get_typed_func(&mut *store, m.size)?;
    let read: TypedFunc<(u32, u32, u32), (Vec<u8>,)> =
        instance.get_typed_func(&mut *store, m.read)?;
    let unstash: TypedFunc<(u32,), ()> = instance.get_typed_func(&mut *store, m.unstash)?;
    let bytes = u64::from(size.call_async(&mut *store, ()).await?.0) * WASM_PAGE as u64;
    let bytes = u32::try_from(bytes)
        .map_err(|_| wasmtime::Error::msg("a memory of 4 GiB cannot be read"))?;
    // A memory of one chunk is read in two halves, each return area in
    // the other.
    let chunk = if bytes <= CHUNK { bytes / 2 } else { CHUNK };
    let mut offset = 0u32;
    while offset < bytes {
        let len = chunk.min(bytes - offset);
        let scratch = if offset + len + 8 <= bytes {
            offset + len
        } else {
            offset - 8
        };
        let got = read.call_async(&mut *store, (offset, len, scratch)).await;
        unstash.call_async(&mut *store, (scratch,)).await?;
        let got = got?.0;
        if got.len() != len as usize {
            return Err(lost("mread"));
        }
        each(u64::from(bytes), u64::from(offset), &got);
        offset += len;
    }
    Ok(())
}
