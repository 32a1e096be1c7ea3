//! A core module made into a component (`plimsoll componentize`).
//!
//! What `wasm-tools component embed` + `component new --adapt` do, with the
//! WIT compiled into this binary and the WASI preview1 adapter of the
//! wasmtime this host is built with (crates.io's
//! `wasi-preview1-component-adapter-provider`), so that a C or Go agent
//! needs only its compiler and plimsoll. The result is checked with
//! [`super::check::check`] before it is returned: what comes out targets a
//! published world, or nothing comes out.

use super::check::{Target, check, guarded, validate};
use super::{Published, WorldError};
use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER,
    WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
};

/// What the core module looked like.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Shape {
    /// It carries `component-type` custom sections (wit-bindgen's
    /// `*_component_type.o`, or an earlier embed).
    has_metadata: bool,
    /// It exports `_start` (a command); otherwise it is a reactor.
    is_command: bool,
    /// It imports `wasi_snapshot_preview1` (so it needs the adapter).
    uses_preview1: bool,
}

fn shape(core: &[u8]) -> Result<Shape, WorldError> {
    use wasmparser::{Parser, Payload};
    let mut s = Shape::default();
    for payload in Parser::new(0).parse_all(core) {
        match payload.map_err(|e| WorldError::NotWasm(format!("{e}")))? {
            Payload::CustomSection(c) if c.name().starts_with("component-type") => {
                // Its contents are a component (after a version byte in
                // the old format): validated before the encoder decodes
                // them, which buffers what a section header claims.
                let data = c.data();
                let inner = match data.first() {
                    Some(b'\0') => data,
                    Some(_) => &data[1..],
                    None => data,
                };
                validate(inner)?;
                s.has_metadata = true;
            }
            Payload::ImportSection(imports) => {
                for i in imports.into_imports() {
                    let i = i.map_err(|e| WorldError::NotWasm(format!("{e}")))?;
                    if i.module == WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME {
                        s.uses_preview1 = true;
                    }
                }
            }
            Payload::ExportSection(exports) => {
                for e in exports {
                    let e = e.map_err(|e| WorldError::NotWasm(format!("{e}")))?;
                    if e.name == "_start" {
                        s.is_command = true;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(s)
}

/// Makes `core` a component of world `world` (embedding the world's WIT
/// unless the module already carries its own) and checks the result.
pub fn componentize(core: &[u8], world: &str) -> Result<(Vec<u8>, Target), WorldError> {
    if wasmparser::Parser::is_component(core) {
        return Err(WorldError::Encode(
            "this is already a component (`plimsoll check` says what it targets)".into(),
        ));
    }
    if !wasmparser::Parser::is_core_wasm(core) {
        return Err(WorldError::NotWasm("no WebAssembly header".into()));
    }
    validate(core)?;
    let s = shape(core)?;
    let mut module = core.to_vec();
    if !s.has_metadata {
        let published = Published::load()?;
        let w = published.world(world).map_err(|_| {
            WorldError::Encode(format!(
                "no world `{world}` in {} (try `agent` or `agent-http`)",
                published.package_name()
            ))
        })?;
        wit_component::embed_component_metadata(
            &mut module,
            &published.resolve,
            w,
            wit_component::StringEncoding::UTF8,
        )
        .map_err(|e| WorldError::Encode(format!("{e:#}")))?;
    }
    let bytes = guarded(|| encode(&module, &s))??;
    let target = check(&bytes)?;
    if target.world != world {
        return Err(WorldError::Encode(format!(
            "the module carries its own WIT, for world `{}`, not `{world}`",
            target.world
        )));
    }
    Ok((bytes, target))
}

fn encode(module: &[u8], s: &Shape) -> Result<Vec<u8>, WorldError> {
    let e = |e: anyhow::Error| WorldError::Encode(format!("{e:#}"));
    let mut encoder = wit_component::ComponentEncoder::default()
        .validate(true)
        .module(module)
        .map_err(e)?;
    if s.uses_preview1 {
        let adapter = if s.is_command {
            WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER
        } else {
            WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER
        };
        encoder = encoder
            .adapter(WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, adapter)
            .map_err(e)?;
    }
    encoder.encode().map_err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_or_garbage_is_refused() {
        assert!(matches!(
            componentize(b"\0asm\x0d\0\x01\0", "agent"),
            Err(WorldError::Encode(_))
        ));
        assert!(matches!(
            componentize(b"nope", "agent"),
            Err(WorldError::NotWasm(_))
        ));
    }

    #[test]
    fn an_empty_module_cannot_be_an_agent() {
        // No `wasi:cli/run` export: the encoder or the check refuses it.
        let empty = b"\0asm\x01\0\0\0";
        assert!(componentize(empty, "agent").is_err());
        assert!(matches!(
            componentize(empty, "no-such-world"),
            Err(WorldError::Encode(m)) if m.contains("no world")
        ));
    }
}
