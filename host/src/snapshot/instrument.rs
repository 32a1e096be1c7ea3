//! Makes an interpreter component's internal state reachable from the
//! host, so that a live instance can be snapshotted between two
//! evaluations and a fresh instance set to that state.
//!
//! A component hides its core instances' memories and globals: the host
//! sees only the component's exports. [`instrument`] rewrites the component
//! (as Wizer does for pre-initialisation, but in both directions):
//!
//! 1. every core module defined in the component exports each of its
//!    defined mutable globals (`__plimsoll_g<i>`), memories
//!    (`__plimsoll_m<i>`) and tables (`__plimsoll_t<i>`);
//! 2. one more core module, the *accessor*, imports all of them from the
//!    instances of those modules and defines small functions that read
//!    and write them: a global's value, a memory's size, growth, a window
//!    of its bytes out and a run of bytes in, a table's size;
//! 3. those functions are lifted and exported from the component as one
//!    instance, [`STATE_INSTANCE`].
//!
//! Nothing else changes: the original sections are copied as they are
//! (export sections gain entries), so the code, the data and every index
//! the component already uses stay the same, and so does its behaviour.
//!
//! Reading memory needs an 8-byte return area inside the memory itself;
//! the accessor saves the 8 bytes it overwrites and
//! `munstash<m>` puts them back, so a read leaves the instance exactly as
//! it was (see [`super::access`]). Writing memory lands the bytes through
//! the lift's own `realloc` option, which returns the address set by
//! `target` — the bytes go straight to their place, nothing in the guest
//! allocates.
//!
//! What is refused (the guest then has no snapshots, and says so): nested
//! components that define modules, modules that are imported or aliased
//! and then instantiated, a module instantiated twice, a component start
//! function, shared or 64-bit memories, and mutable globals of a
//! reference or vector type.

use std::collections::HashMap;
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasmparser::{
    Chunk, ComponentAlias, ComponentExternalKind, ComponentOuterAliasKind, ComponentTypeRef,
    ExternalKind, Instance, Parser, Payload,
};

/// The name of the component instance the accessor functions are
/// exported under.
pub const STATE_INSTANCE: &str = "plimsoll:snapshot/state";

/// Bumped whenever the instrumentation changes what it produces: it is
/// part of the compiled artifact's cache key and of a snapshot's guest
/// identity.
pub const INSTRUMENTATION_VERSION: u32 = 1;

/// Why a component cannot be instrumented.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the component's state cannot be made reachable: {0}")]
pub struct NotInstrumentable(pub String);

fn refuse<T>(why: impl Into<String>) -> Result<T, NotInstrumentable> {
    Err(NotInstrumentable(why.into()))
}

/// The value type of one mutable global.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalKind {
    I32,
    I64,
    F32,
    F64,
}

/// The state the instrumentation made reachable, in the order the
/// accessor functions are numbered. Identical for every instance of one
/// instrumented component, so a snapshot names slots by position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// One per mutable global, in order: its type. Read and written all
    /// at once (`gread`, `gunstash`, `gwrite`) through memory 0, as 8
    /// little-endian bytes each.
    pub globals: Vec<GlobalKind>,
    /// Memories: accessors `msize<m>`, `mgrow<m>`, `mread<m>`,
    /// `munstash<m>`, `mwrite<m>` (and `target`).
    pub memories: usize,
    /// Tables: accessor `tsize<t>`.
    pub tables: usize,
}

/// A core module of the component, as the instrumentation sees it.
struct ModuleInfo<'a> {
    bytes: &'a [u8],
    globals: Vec<(u32, wasmparser::GlobalType)>,
    memories: Vec<(u32, wasmparser::MemoryType)>,
    tables: Vec<(u32, wasmparser::TableType)>,
}

/// Index spaces of the top-level component, counted as the parse goes.
#[derive(Default)]
struct Spaces {
    types: u32,
    funcs: u32,
    instances: u32,
    core_funcs: u32,
    core_memories: u32,
    core_instances: u32,
    /// Every core module in the module index space: `Some` for one
    /// defined here (its position in `modules`), `None` for one imported
    /// or aliased.
    module_space: Vec<Option<usize>>,
    /// Defined module (position in `modules`) → its core instance.
    instantiated: HashMap<usize, u32>,
}

impl Spaces {
    fn component_item(&mut self, kind: ComponentExternalKind) {
        match kind {
            ComponentExternalKind::Type => self.types += 1,
            ComponentExternalKind::Func => self.funcs += 1,
            ComponentExternalKind::Instance => self.instances += 1,
            ComponentExternalKind::Module => self.module_space.push(None),
            ComponentExternalKind::Component | ComponentExternalKind::Value => {}
        }
    }

    fn core_item(&mut self, kind: ExternalKind) {
        match kind {
            ExternalKind::Func | ExternalKind::FuncExact => self.core_funcs += 1,
            ExternalKind::Memory => self.core_memories += 1,
            ExternalKind::Table | ExternalKind::Global | ExternalKind::Tag => {}
        }
    }
}

/// Instruments `component` (see the module's documentation). Returns the
/// new component and the layout of the state it exposes.
pub fn instrument(component: &[u8]) -> Result<(Vec<u8>, Layout), NotInstrumentable> {
    let bad = |e: wasmparser::BinaryReaderError| NotInstrumentable(e.to_string());
    // Pass 1: the top-level sections, as raw bytes, with the modules
    // parsed and the index spaces counted.
    enum Section<'a> {
        Raw(u8, &'a [u8]),
        Module(usize),
    }
    let mut sections = Vec::new();
    let mut modules: Vec<ModuleInfo<'_>> = Vec::new();
    let mut s = Spaces::default();
    let mut parser = Parser::new(0);
    let mut rest = component;
    let mut seen_version = false;
    loop {
        let (payload, consumed) = match parser.parse(rest, true).map_err(bad)? {
            Chunk::Parsed { consumed, payload } => (payload, consumed),
            Chunk::NeedMoreData(_) => return refuse("the component is truncated"),
        };
        let section = payload.as_section();
        let mut skip = 0usize;
        match &payload {
            Payload::Version { encoding, .. } => {
                if *encoding != wasmparser::Encoding::Component {
                    return refuse("a core module, not a component");
                }
                seen_version = true;
            }
            Payload::ModuleSection {
                unchecked_range, ..
            } => {
                let bytes = component
                    .get(unchecked_range.clone())
                    .ok_or_else(|| NotInstrumentable("a module section out of range".into()))?;
                let info = module_info(bytes)?;
                s.module_space.push(Some(modules.len()));
                sections.push(Section::Module(modules.len()));
                modules.push(info);
                // The outer parser goes on after the nested bytes.
                skip = unchecked_range.len();
            }
            Payload::ComponentSection {
                unchecked_range, ..
            } => {
                let nested = component
                    .get(unchecked_range.clone())
                    .ok_or_else(|| NotInstrumentable("a component section out of range".into()))?;
                if defines_modules(nested)? {
                    return refuse("a nested component defines core modules");
                }
                // The outer parser goes on after the nested bytes.
                skip = unchecked_range.len();
            }
            Payload::InstanceSection(reader) => {
                for instance in reader.clone() {
                    let index = s.core_instances;
                    s.core_instances += 1;
                    if let Instance::Instantiate { module_index, .. } = instance.map_err(bad)? {
                        let module = s.module_space.get(module_index as usize).copied().flatten();
                        let Some(module) = module else {
                            return refuse("an imported or aliased module is instantiated");
                        };
                        if s.instantiated.insert(module, index).is_some() {
                            return refuse("a module is instantiated twice");
                        }
                    }
                }
            }
            Payload::ComponentTypeSection(reader) => s.types += reader.count(),
            Payload::ComponentInstanceSection(reader) => s.instances += reader.count(),
            Payload::ComponentImportSection(reader) => {
                for import in reader.clone() {
                    match import.map_err(bad)?.ty {
                        ComponentTypeRef::Type(_) => s.types += 1,
                        ComponentTypeRef::Func(_) => s.funcs += 1,
                        ComponentTypeRef::Instance(_) => s.instances += 1,
                        ComponentTypeRef::Module(_) => s.module_space.push(None),
                        ComponentTypeRef::Component(_) | ComponentTypeRef::Value(_) => {}
                    }
                }
            }
            Payload::ComponentExportSection(reader) => {
                for export in reader.clone() {
                    s.component_item(export.map_err(bad)?.kind);
                }
            }
            Payload::ComponentAliasSection(reader) => {
                for alias in reader.clone() {
                    match alias.map_err(bad)? {
                        ComponentAlias::InstanceExport { kind, .. } => s.component_item(kind),
                        ComponentAlias::CoreInstanceExport { kind, .. } => s.core_item(kind),
                        ComponentAlias::Outer { kind, .. } => match kind {
                            ComponentOuterAliasKind::Type => s.types += 1,
                            ComponentOuterAliasKind::CoreModule => s.module_space.push(None),
                            ComponentOuterAliasKind::CoreType
                            | ComponentOuterAliasKind::Component => {}
                        },
                    }
                }
            }
            Payload::ComponentCanonicalSection(reader) => {
                for f in reader.clone() {
                    match f.map_err(bad)? {
                        wasmparser::CanonicalFunction::Lift { .. } => s.funcs += 1,
                        _ => s.core_funcs += 1,
                    }
                }
            }
            Payload::ComponentStartSection { .. } => {
                return refuse("the component has a start function");
            }
            _ => {}
        }
        if let (Some((id, range)), false) =
            (section, matches!(payload, Payload::ModuleSection { .. }))
        {
            let data = component
                .get(range)
                .ok_or_else(|| NotInstrumentable("a section out of range".into()))?;
            sections.push(Section::Raw(id, data));
        }
        let end = matches!(payload, Payload::End(_));
        rest = rest
            .get(consumed + skip..)
            .ok_or_else(|| NotInstrumentable("a section out of range".into()))?;
        if end {
            break;
        }
    }
    if !seen_version {
        return refuse("not a component");
    }

    // Pass 2: the same sections, the modules exporting their state, then
    // the accessor.
    let mut out = wasm_encoder::Component::new();
    for section in &sections {
        match section {
            Section::Raw(id, data) => {
                out.section(&wasm_encoder::RawSection { id: *id, data });
            }
            Section::Module(i) => {
                let m = &modules[*i];
                let wasm = export_state(m)?;
                out.section(&wasm_encoder::RawSection {
                    id: wasm_encoder::ComponentSectionId::CoreModule as u8,
                    data: &wasm,
                });
            }
        }
    }
    let layout = Accessor::build(&modules, &s, &mut out)?;
    Ok((out.finish(), layout))
}

/// Whether the component `bytes` (a nested one) defines a core module.
fn defines_modules(bytes: &[u8]) -> Result<bool, NotInstrumentable> {
    for payload in Parser::new(0).parse_all(bytes) {
        if let Payload::ModuleSection { .. } =
            payload.map_err(|e| NotInstrumentable(e.to_string()))?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Reads what the instrumentation needs of one core module.
fn module_info(bytes: &[u8]) -> Result<ModuleInfo<'_>, NotInstrumentable> {
    let bad = |e: wasmparser::BinaryReaderError| NotInstrumentable(e.to_string());
    let mut info = ModuleInfo {
        bytes,
        globals: Vec::new(),
        memories: Vec::new(),
        tables: Vec::new(),
    };
    let (mut imported_globals, mut imported_memories, mut imported_tables) = (0u32, 0u32, 0u32);
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(bad)? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    match import.map_err(bad)?.ty {
                        wasmparser::TypeRef::Global(_) => imported_globals += 1,
                        wasmparser::TypeRef::Memory(_) => imported_memories += 1,
                        wasmparser::TypeRef::Table(_) => imported_tables += 1,
                        _ => {}
                    }
                }
            }
            Payload::GlobalSection(reader) => {
                for (i, g) in reader.into_iter().enumerate() {
                    let ty = g.map_err(bad)?.ty;
                    if ty.mutable {
                        if ty.shared {
                            return refuse("a shared global");
                        }
                        info.globals.push((imported_globals + i as u32, ty));
                    }
                }
            }
            Payload::MemorySection(reader) => {
                for (i, m) in reader.into_iter().enumerate() {
                    let ty = m.map_err(bad)?;
                    if ty.memory64 || ty.shared || ty.page_size_log2.is_some() {
                        return refuse("a 64-bit, shared or custom-page memory");
                    }
                    info.memories.push((imported_memories + i as u32, ty));
                }
            }
            Payload::TableSection(reader) => {
                for (i, t) in reader.into_iter().enumerate() {
                    let ty = t.map_err(bad)?.ty;
                    if ty.table64 || ty.shared {
                        return refuse("a 64-bit or shared table");
                    }
                    if !matches!(
                        ty.element_type.heap_type(),
                        wasmparser::HeapType::Abstract { .. }
                    ) {
                        return refuse("a table of a concrete reference type");
                    }
                    info.tables.push((imported_tables + i as u32, ty));
                }
            }
            Payload::CodeSectionStart { .. } => {
                // Nothing past here is needed; the code itself is copied.
            }
            _ => {}
        }
    }
    for (_, g) in &info.globals {
        if !matches!(
            g.content_type,
            wasmparser::ValType::I32
                | wasmparser::ValType::I64
                | wasmparser::ValType::F32
                | wasmparser::ValType::F64
        ) {
            return refuse("a mutable global of a reference or vector type");
        }
    }
    Ok(info)
}

/// The name a module exports its `i`-th state item of `kind` under.
fn state_export(kind: char, i: usize) -> String {
    format!("__plimsoll_{kind}{i}")
}

/// `m`'s bytes with its state exported: the export section gains one
/// entry per mutable global, memory and table (a module without one gets
/// an export section in its place); every other section is copied.
fn export_state(m: &ModuleInfo<'_>) -> Result<Vec<u8>, NotInstrumentable> {
    let bad = |e: wasmparser::BinaryReaderError| NotInstrumentable(e.to_string());
    // Our entries, encoded as export-section items.
    let mut ours: Vec<u8> = Vec::new();
    let mut count = 0u32;
    let mut entry = |name: &str, kind: u8, index: u32| {
        leb(&mut ours, name.len() as u64);
        ours.extend_from_slice(name.as_bytes());
        ours.push(kind);
        leb(&mut ours, u64::from(index));
        count += 1;
    };
    for (i, (index, _)) in m.globals.iter().enumerate() {
        entry(&state_export('g', i), 0x03, *index);
    }
    for (i, (index, _)) in m.memories.iter().enumerate() {
        entry(&state_export('m', i), 0x02, *index);
    }
    for (i, (index, _)) in m.tables.iter().enumerate() {
        entry(&state_export('t', i), 0x01, *index);
    }
    let ours_count = count;
    let with_ours = |existing_count: u32, existing: &[u8]| {
        let mut data = Vec::new();
        leb(&mut data, u64::from(existing_count) + u64::from(ours_count));
        data.extend_from_slice(existing);
        data.extend_from_slice(&ours);
        data
    };
    let mut out = wasm_encoder::Module::new();
    let mut exported = false;
    // Known sections in the order the binary format requires; the export
    // section goes before the first that must follow it.
    let after_export = |id: u8| matches!(id, 8..=12);
    let mut parser = Parser::new(0);
    let mut rest = m.bytes;
    loop {
        let (payload, consumed) = match parser.parse(rest, true).map_err(bad)? {
            Chunk::Parsed { consumed, payload } => (payload, consumed),
            Chunk::NeedMoreData(_) => return refuse("a truncated module"),
        };
        let mut skip = 0usize;
        let end = matches!(payload, Payload::End(_));
        if let Payload::CodeSectionStart { size, .. } = &payload {
            parser.skip_section();
            skip = *size as usize;
        }
        if let Some((id, range)) = payload.as_section() {
            let data = m
                .bytes
                .get(range)
                .ok_or_else(|| NotInstrumentable("a module section out of range".into()))?;
            if id == 7 {
                let mut reader = wasmparser::BinaryReader::new(data, 0);
                let n = reader.read_var_u32().map_err(bad)?;
                let existing = &data[reader.original_position()..];
                out.section(&wasm_encoder::RawSection {
                    id,
                    data: &with_ours(n, existing),
                });
                exported = true;
            } else {
                if !exported && after_export(id) {
                    out.section(&wasm_encoder::RawSection {
                        id: 7,
                        data: &with_ours(0, &[]),
                    });
                    exported = true;
                }
                out.section(&wasm_encoder::RawSection { id, data });
            }
        }
        rest = rest
            .get(consumed + skip..)
            .ok_or_else(|| NotInstrumentable("a module section out of range".into()))?;
        if end {
            break;
        }
    }
    if !exported {
        out.section(&wasm_encoder::RawSection {
            id: 7,
            data: &with_ours(0, &[]),
        });
    }
    Ok(out.finish())
}

fn leb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// The accessor module and its lifting into the component.
struct Accessor {
    types: wasm_encoder::TypeSection,
    imports: wasm_encoder::ImportSection,
    functions: wasm_encoder::FunctionSection,
    globals: wasm_encoder::GlobalSection,
    exports: wasm_encoder::ExportSection,
    code: wasm_encoder::CodeSection,
    func_types: HashMap<(Vec<wasm_encoder::ValType>, Vec<wasm_encoder::ValType>), u32>,
    nfuncs: u32,
}

/// How one accessor function is lifted.
enum Lift {
    /// Scalars in and out: no canonical options.
    Plain,
    /// Returns a `list<u8>` of memory `m`.
    ReadsMemory(u32),
    /// Takes a `list<u8>` written into memory `m` where `target` says.
    WritesMemory(u32),
}

/// The component-level type of one lifted function.
#[derive(Clone, Copy)]
enum Sig {
    Get(wasm_encoder::PrimitiveValType),
    Set(wasm_encoder::PrimitiveValType),
    /// `(offset: u32, len: u32, scratch: u32) -> list<u8>`
    Read,
    /// `(scratch: u32) -> list<u8>`
    GlobalsRead,
    /// `(data: list<u8>)`
    Write,
    /// `(pages: u32) -> s32`
    Grow,
}

impl Accessor {
    fn func_type(
        &mut self,
        params: Vec<wasm_encoder::ValType>,
        results: Vec<wasm_encoder::ValType>,
    ) -> u32 {
        let next = self.types.len();
        *self
            .func_types
            .entry((params.clone(), results.clone()))
            .or_insert_with(|| {
                self.types.ty().function(params, results);
                next
            })
    }

    /// Adds a function and exports it from the accessor as `name`.
    fn function(
        &mut self,
        name: &str,
        params: Vec<wasm_encoder::ValType>,
        results: Vec<wasm_encoder::ValType>,
        body: impl FnOnce(&mut wasm_encoder::InstructionSink<'_>),
    ) -> u32 {
        let ty = self.func_type(params, results);
        self.functions.function(ty);
        let mut f = wasm_encoder::Function::new([]);
        body(&mut f.instructions());
        f.instructions().end();
        self.code.function(&f);
        let index = self.nfuncs;
        self.nfuncs += 1;
        self.exports
            .export(name, wasm_encoder::ExportKind::Func, index);
        index
    }

    fn build(
        modules: &[ModuleInfo<'_>],
        s: &Spaces,
        out: &mut wasm_encoder::Component,
    ) -> Result<Layout, NotInstrumentable> {
        use wasm_encoder::ValType::{I32, I64};
        let conv = |e: wasm_encoder::reencode::Error| NotInstrumentable(e.to_string());
        let mut a = Accessor {
            types: wasm_encoder::TypeSection::new(),
            imports: wasm_encoder::ImportSection::new(),
            functions: wasm_encoder::FunctionSection::new(),
            globals: wasm_encoder::GlobalSection::new(),
            exports: wasm_encoder::ExportSection::new(),
            code: wasm_encoder::CodeSection::new(),
            func_types: HashMap::new(),
            nfuncs: 0,
        };
        let mut layout = Layout::default();
        // The instrumented instances, in module order; each is the
        // accessor's import module named by its instance index.
        let mut args: Vec<(String, u32)> = Vec::new();
        // (module instance, export name) of each memory, for the lift's
        // `memory` option.
        let mut memory_exports: Vec<(u32, String)> = Vec::new();
        let mut global_types = Vec::new();
        for (mi, m) in modules.iter().enumerate() {
            let Some(&instance) = s.instantiated.get(&mi) else {
                continue;
            };
            let module = instance.to_string();
            for (i, (_, ty)) in m.globals.iter().enumerate() {
                a.imports.import(
                    &module,
                    &state_export('g', i),
                    RoundtripReencoder.global_type(*ty).map_err(conv)?,
                );
                let kind = match ty.content_type {
                    wasmparser::ValType::I32 => GlobalKind::I32,
                    wasmparser::ValType::I64 => GlobalKind::I64,
                    wasmparser::ValType::F32 => GlobalKind::F32,
                    wasmparser::ValType::F64 => GlobalKind::F64,
                    _ => return refuse("a mutable global of a reference or vector type"),
                };
                global_types.push(kind);
            }
            for (i, (_, ty)) in m.memories.iter().enumerate() {
                let name = state_export('m', i);
                a.imports.import(
                    &module,
                    &name,
                    RoundtripReencoder.memory_type(*ty).map_err(conv)?,
                );
                memory_exports.push((instance, name));
            }
            for (i, (_, ty)) in m.tables.iter().enumerate() {
                a.imports.import(
                    &module,
                    &state_export('t', i),
                    RoundtripReencoder.table_type(*ty).map_err(conv)?,
                );
                layout.tables += 1;
            }
            args.push((module, instance));
        }
        let nglobals = global_types.len() as u32;
        // The accessor's own globals, after the imported ones: where the
        // next write lands, and the 8 bytes a read overwrote.
        let target = nglobals;
        let stash = nglobals + 1;
        a.globals.global(
            wasm_encoder::GlobalType {
                val_type: I32,
                mutable: true,
                shared: false,
            },
            &wasm_encoder::ConstExpr::i32_const(0),
        );
        a.globals.global(
            wasm_encoder::GlobalType {
                val_type: I64,
                mutable: true,
                shared: false,
            },
            &wasm_encoder::ConstExpr::i64_const(0),
        );

        // Every lifted function: (accessor export, component export, sig, lift).
        let mut lifted: Vec<(String, String, Sig, Lift)> = Vec::new();
        let realloc = a.function("realloc", vec![I32, I32, I32, I32], vec![I32], |f| {
            f.global_get(target);
        });
        let _ = realloc;
        a.function("target", vec![I32], vec![], |f| {
            f.local_get(0).global_set(target);
        });
        lifted.push((
            "target".into(),
            "target".into(),
            Sig::Set(wasm_encoder::PrimitiveValType::U32),
            Lift::Plain,
        ));
        // All globals at once, through memory 0: `gread(scratch)` puts
        // each value as 8 little-endian bytes at `scratch + 8k` (keeping
        // what was there in the stash globals) and returns them as a
        // list; `gunstash(scratch)` puts the kept bytes back;
        // `gwrite(data)` sets every global from such a list, which the
        // lift has placed where `target` said.
        if !memory_exports.is_empty() && !global_types.is_empty() {
            let n = global_types.len() as u32;
            // One stash per value, and one for the return area.
            for _ in 0..=n {
                a.globals.global(
                    wasm_encoder::GlobalType {
                        val_type: I64,
                        mutable: true,
                        shared: false,
                    },
                    &wasm_encoder::ConstExpr::i64_const(0),
                );
            }
            let stash_of = |k: u32| stash + 1 + k;
            let at = |offset: u32| wasm_encoder::MemArg {
                offset: u64::from(offset),
                align: 0,
                memory_index: 0,
            };
            let kinds = global_types.clone();
            a.function("gread", vec![I32], vec![I32], |f| {
                for (k, kind) in kinds.iter().enumerate() {
                    let k = k as u32;
                    f.local_get(0)
                        .i64_load(at(8 * k))
                        .global_set(stash_of(k))
                        .local_get(0)
                        .global_get(k);
                    match kind {
                        GlobalKind::I32 => {
                            f.i64_extend_i32_u();
                        }
                        GlobalKind::I64 => {}
                        GlobalKind::F32 => {
                            f.i32_reinterpret_f32().i64_extend_i32_u();
                        }
                        GlobalKind::F64 => {
                            f.i64_reinterpret_f64();
                        }
                    }
                    f.i64_store(at(8 * k));
                }
                // The return area: (scratch, 8n) at scratch + 8n.
                f.local_get(0)
                    .i64_load(at(8 * n))
                    .global_set(stash_of(n))
                    .local_get(0)
                    .local_get(0)
                    .i32_store(at(8 * n))
                    .local_get(0)
                    .i32_const((8 * n) as i32)
                    .i32_store(at(8 * n + 4))
                    .local_get(0)
                    .i32_const((8 * n) as i32)
                    .i32_add();
            });
            lifted.push((
                "gread".into(),
                "gread".into(),
                Sig::GlobalsRead,
                Lift::ReadsMemory(0),
            ));
            a.function("gunstash", vec![I32], vec![], |f| {
                for k in 0..=n {
                    f.local_get(0).global_get(stash_of(k)).i64_store(at(8 * k));
                }
            });
            lifted.push((
                "gunstash".into(),
                "gunstash".into(),
                Sig::Set(wasm_encoder::PrimitiveValType::U32),
                Lift::Plain,
            ));
            let kinds = global_types.clone();
            a.function("gwrite", vec![I32, I32], vec![], |f| {
                for (k, kind) in kinds.iter().enumerate() {
                    let k = k as u32;
                    f.local_get(0).i64_load(at(8 * k));
                    match kind {
                        GlobalKind::I32 => {
                            f.i32_wrap_i64();
                        }
                        GlobalKind::I64 => {}
                        GlobalKind::F32 => {
                            f.i32_wrap_i64().f32_reinterpret_i32();
                        }
                        GlobalKind::F64 => {
                            f.f64_reinterpret_i64();
                        }
                    }
                    f.global_set(k);
                }
            });
            lifted.push((
                "gwrite".into(),
                "gwrite".into(),
                Sig::Write,
                Lift::WritesMemory(0),
            ));
        }
        layout.globals = global_types;
        for m in 0..memory_exports.len() as u32 {
            let any = |offset: u64| wasm_encoder::MemArg {
                offset,
                align: 0,
                memory_index: m,
            };
            let name = format!("msize{m}");
            a.function(&name, vec![], vec![I32], |f| {
                f.memory_size(m);
            });
            lifted.push((
                name.clone(),
                name,
                Sig::Get(wasm_encoder::PrimitiveValType::U32),
                Lift::Plain,
            ));
            let name = format!("mgrow{m}");
            a.function(&name, vec![I32], vec![I32], |f| {
                f.local_get(0).memory_grow(m);
            });
            lifted.push((name.clone(), name, Sig::Grow, Lift::Plain));
            // (offset, len, scratch) -> scratch, where (offset, len) now
            // is; the 8 bytes there are kept in `stash`.
            let name = format!("mread{m}");
            a.function(&name, vec![I32, I32, I32], vec![I32], |f| {
                f.local_get(2)
                    .i64_load(any(0))
                    .global_set(stash)
                    .local_get(2)
                    .local_get(0)
                    .i32_store(any(0))
                    .local_get(2)
                    .local_get(1)
                    .i32_store(any(4))
                    .local_get(2);
            });
            lifted.push((name.clone(), name, Sig::Read, Lift::ReadsMemory(m)));
            let name = format!("munstash{m}");
            a.function(&name, vec![I32], vec![], |f| {
                f.local_get(0).global_get(stash).i64_store(any(0));
            });
            lifted.push((
                name.clone(),
                name,
                Sig::Set(wasm_encoder::PrimitiveValType::U32),
                Lift::Plain,
            ));
            // The bytes are already where `target` said: nothing to do.
            let name = format!("mwrite{m}");
            a.function(&name, vec![I32, I32], vec![], |_| {});
            lifted.push((name.clone(), name, Sig::Write, Lift::WritesMemory(m)));
        }
        layout.memories = memory_exports.len();
        for t in 0..layout.tables as u32 {
            let name = format!("tsize{t}");
            a.function(&name, vec![], vec![I32], |f| {
                f.table_size(t);
            });
            lifted.push((
                name.clone(),
                name,
                Sig::Get(wasm_encoder::PrimitiveValType::U32),
                Lift::Plain,
            ));
        }

        // The accessor module, and its instance.
        let mut module = wasm_encoder::Module::new();
        module.section(&a.types);
        module.section(&a.imports);
        module.section(&a.functions);
        module.section(&a.globals);
        module.section(&a.exports);
        module.section(&a.code);
        out.section(&wasm_encoder::ModuleSection(&module));
        let accessor_module = s.module_space.len() as u32;
        let mut instances = wasm_encoder::InstanceSection::new();
        instances.instantiate(
            accessor_module,
            args.iter()
                .map(|(name, i)| (name.as_str(), wasm_encoder::ModuleArg::Instance(*i))),
        );
        out.section(&instances);
        let accessor_instance = s.core_instances;

        // Aliases: the memories (for the lifts' `memory` option), the
        // realloc, and every function to lift.
        let mut aliases = wasm_encoder::ComponentAliasSection::new();
        for (instance, name) in &memory_exports {
            aliases.alias(wasm_encoder::Alias::CoreInstanceExport {
                instance: *instance,
                kind: wasm_encoder::ExportKind::Memory,
                name,
            });
        }
        let memory_index = |m: u32| s.core_memories + m;
        aliases.alias(wasm_encoder::Alias::CoreInstanceExport {
            instance: accessor_instance,
            kind: wasm_encoder::ExportKind::Func,
            name: "realloc",
        });
        let realloc_core = s.core_funcs;
        for (core, _, _, _) in &lifted {
            aliases.alias(wasm_encoder::Alias::CoreInstanceExport {
                instance: accessor_instance,
                kind: wasm_encoder::ExportKind::Func,
                name: core,
            });
        }
        out.section(&aliases);

        // Component types: list<u8>, then one function type per signature.
        let mut types = wasm_encoder::ComponentTypeSection::new();
        let list_u8 = s.types;
        types
            .defined_type()
            .list(wasm_encoder::ComponentValType::Primitive(
                wasm_encoder::PrimitiveValType::U8,
            ));
        let mut sig_types: HashMap<String, u32> = HashMap::new();
        let mut sig_type = |types: &mut wasm_encoder::ComponentTypeSection, sig: Sig| -> u32 {
            use wasm_encoder::ComponentValType::{Primitive, Type};
            let key = match sig {
                Sig::Get(p) => format!("get{p:?}"),
                Sig::Set(p) => format!("set{p:?}"),
                Sig::Read => "read".into(),
                Sig::GlobalsRead => "globals-read".into(),
                Sig::Write => "write".into(),
                Sig::Grow => "grow".into(),
            };
            if let Some(t) = sig_types.get(&key) {
                return *t;
            }
            let index = s.types + types.len();
            let mut f = types.function();
            match sig {
                Sig::Get(p) => {
                    f.params::<_, wasm_encoder::ComponentValType>([])
                        .result(Some(Primitive(p)));
                }
                Sig::Set(p) => {
                    f.params([("value", Primitive(p))]).result(None);
                }
                Sig::Read => {
                    let u32t = Primitive(wasm_encoder::PrimitiveValType::U32);
                    f.params([("offset", u32t), ("len", u32t), ("scratch", u32t)])
                        .result(Some(Type(list_u8)));
                }
                Sig::GlobalsRead => {
                    f.params([("scratch", Primitive(wasm_encoder::PrimitiveValType::U32))])
                        .result(Some(Type(list_u8)));
                }
                Sig::Write => {
                    f.params([("data", Type(list_u8))]).result(None);
                }
                Sig::Grow => {
                    f.params([("pages", Primitive(wasm_encoder::PrimitiveValType::U32))])
                        .result(Some(Primitive(wasm_encoder::PrimitiveValType::S32)));
                }
            }
            sig_types.insert(key, index);
            index
        };
        let mut canon = wasm_encoder::CanonicalFunctionSection::new();
        let mut items: Vec<(String, u32)> = Vec::new();
        for (i, (_, export, sig, lift)) in lifted.iter().enumerate() {
            let ty = sig_type(&mut types, *sig);
            let core = s.core_funcs + 1 + i as u32;
            let options: Vec<wasm_encoder::CanonicalOption> = match lift {
                Lift::Plain => vec![],
                Lift::ReadsMemory(m) => {
                    vec![wasm_encoder::CanonicalOption::Memory(memory_index(*m))]
                }
                Lift::WritesMemory(m) => vec![
                    wasm_encoder::CanonicalOption::Memory(memory_index(*m)),
                    wasm_encoder::CanonicalOption::Realloc(realloc_core),
                ],
            };
            canon.lift(core, ty, options);
            items.push((export.clone(), s.funcs + i as u32));
        }
        out.section(&types);
        out.section(&canon);
        let mut instance = wasm_encoder::ComponentInstanceSection::new();
        instance.export_items(
            items
                .iter()
                .map(|(name, f)| (name.as_str(), wasm_encoder::ComponentExportKind::Func, *f)),
        );
        out.section(&instance);
        let mut exports = wasm_encoder::ComponentExportSection::new();
        exports.export(
            STATE_INSTANCE,
            wasm_encoder::ComponentExportKind::Instance,
            s.instances,
            None,
        );
        out.section(&exports);
        Ok(layout)
    }
}

/// A core module with its state exported (as [`instrument`] does for the
/// modules inside a component): its mutable globals as `__plimsoll_g<i>`,
/// memories as `__plimsoll_m<i>`, tables as `__plimsoll_t<i>`. The host
/// reads and writes them directly, so nothing else is added.
pub fn instrument_module(bytes: &[u8]) -> Result<Vec<u8>, NotInstrumentable> {
    let info = module_info(bytes)?;
    export_state(&info)
}

/// The name [`instrument_module`] exports a module's `i`-th mutable
/// global under.
pub fn core_global(i: usize) -> String {
    state_export('g', i)
}

/// The name [`instrument_module`] exports a module's `i`-th table under.
pub fn core_table(i: usize) -> String {
    state_export('t', i)
}
