//! An instance of the scientific guest: instantiated from its
//! pre-instance, or adopted from a warm one, with the guest's layout
//! installed; and a cell run as the interpreter world's `eval`.
//!
//! Guarantees: a store that takes over a pre-instantiated instance gets
//! the guest's layout and memory base before any call; a cell answers
//! `Ok(repr)` or `Err(traceback)`, and a cell the guest ended without an
//! answer is an error, never a hang; a memory refusal inside the guest is
//! noted for the run's classification; source is copied only into memory
//! the guest allocated and the host checked.

use super::TURN_CODE;
use super::link::CorePre;
use crate::state::RunState;
use crate::wasip1::fds::{Layout, P1State};
use std::sync::Arc;
use wasmtime::{Memory, Store, TypedFunc};

/// A live instance.
pub(crate) struct CoreLive {
    /// The instance (its exported state, [`crate::snapshot::core_access`]).
    pub(crate) instance: wasmtime::Instance,
    pub(crate) memory: Memory,
    turn: TypedFunc<(i32, i32), i32>,
    alloc: TypedFunc<i32, i32>,
}

/// Gives a store that takes over a pre-instantiated instance (whose own
/// state was a placeholder's) the guest's file layout and memory base.
pub(crate) fn adopt(pre: &CorePre, store: &mut Store<RunState>) {
    install(store, &pre.layout, pre.base_memory);
}

/// Makes sure `store` has preview-1 state for `layout`.
pub(crate) fn install(store: &mut Store<RunState>, layout: &Arc<Layout>, base_memory: u64) {
    let st = store.data_mut();
    st.limiter.set_base(base_memory);
    match &mut st.p1 {
        Some(p1) => p1.layout = layout.clone(),
        None => {
            st.p1 = Some(Box::new(P1State::new(
                layout.clone(),
                bytes::Bytes::new(),
                crate::output::CappedOutput::new("stdout", 0),
                crate::output::CappedOutput::new("stderr", 0),
                1024,
            )))
        }
    }
}

/// Instantiates the guest in `store`.
pub(crate) async fn instantiate(
    pre: &CorePre,
    store: &mut Store<RunState>,
) -> wasmtime::Result<CoreLive> {
    install(store, &pre.layout, pre.base_memory);
    let instance = pre.pre.instantiate_async(&mut *store).await?;
    live_of(instance, store)
}

/// The live instance `instance` is: its memory and exports.
pub(crate) fn live_of(
    instance: wasmtime::Instance,
    store: &mut Store<RunState>,
) -> wasmtime::Result<CoreLive> {
    let memory = instance
        .get_memory(&mut *store, "memory")
        .ok_or_else(|| wasmtime::Error::msg("the guest exports no memory"))?;
    Ok(CoreLive {
        instance,
        memory,
        turn: instance.get_typed_func(&mut *store, "turn")?,
        alloc: instance.get_typed_func(&mut *store, "host_alloc")?,
    })
}

impl CoreLive {
    /// Runs `code` as one cell: `Ok(repr)` or `Err(traceback)`, as the
    /// interpreter world's `eval`.
    pub(crate) async fn eval(
        &self,
        store: &mut Store<RunState>,
        code: &str,
    ) -> wasmtime::Result<Result<String, String>> {
        {
            let p1 = store
                .data_mut()
                .p1
                .as_mut()
                .ok_or_else(|| wasmtime::Error::msg("the store has no preview-1 state"))?;
            p1.door.code = code.to_owned();
            p1.door.done = None;
            p1.door.memory_error = false;
        }
        run_source(self, store, TURN_CODE).await?;
        let st = store.data_mut();
        let (done, memory_error) = match st.p1.as_mut() {
            Some(p1) => (
                p1.door.done.take(),
                std::mem::take(&mut p1.door.memory_error),
            ),
            None => (None, false),
        };
        if memory_error {
            st.limiter.note_refusal();
        }
        Ok(done
            .unwrap_or_else(|| Err("the scientific guest ended the cell without an answer".into())))
    }

    /// Whether the instance holds descriptors of its own (a
    /// pre-instantiated instance that does is not used).
    pub(crate) fn holds_files(store: &Store<RunState>) -> bool {
        store
            .data()
            .p1
            .as_ref()
            .is_some_and(|p| p.opened_by_guest() > 0)
    }
}

/// Copies `source` into the guest and runs it with `turn`.
pub(crate) async fn run_source(
    live: &CoreLive,
    store: &mut Store<RunState>,
    source: &str,
) -> wasmtime::Result<()> {
    let len = i32::try_from(source.len())?;
    let ptr = live.alloc.call_async(&mut *store, len).await?;
    let at = usize::try_from(ptr as u32)?;
    if ptr == 0
        || at
            .checked_add(source.len())
            .is_none_or(|e| e > live.memory.data_size(&*store))
    {
        return Err(wasmtime::Error::msg(
            "the guest could not allocate the cell",
        ));
    }
    live.memory.write(&mut *store, at, source.as_bytes())?;
    let _ = live.turn.call_async(&mut *store, (ptr, len)).await?;
    Ok(())
}
