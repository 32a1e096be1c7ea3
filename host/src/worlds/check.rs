//! Which published world a component targets (`plimsoll check`).
//!
//! Two steps, like `wasm-tools component targets --semver-compatible`:
//! names first — every import must be one the world offers and every
//! export the world asks for must be there, versions matched the way
//! wasmtime's linker matches them (same `ns:pkg/iface`, semver-compatible:
//! `0.2.10` links to `0.2.12`, `0.1.0` to `0.1.3`) — then the imports'
//! types: they must be what the world's imports say
//! (`wit_component::targets`), with the world's package versions set to
//! the ones the component imports. Extra exports are allowed (the host
//! calls only the world's); extra imports are not.

use super::{Published, RUNNABLE_WORLDS, WorldError, names};
use wit_parser::decoding::DecodedWasm;

/// What a component targets.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    /// The world, e.g. `agent-http`.
    pub world: String,
    /// The package that defines it, e.g. `plimsoll:sandbox@0.1.3`.
    pub package: String,
    /// The component's imports, as it names them.
    pub imports: Vec<String>,
    /// The component's exports, as it names them.
    pub exports: Vec<String>,
}

/// Judges `bytes` against the published worlds, narrowest first.
///
/// `Err(WorldError::NoWorld)` names the import no world offers or the
/// export every world lacks.
pub fn check(bytes: &[u8]) -> Result<Target, WorldError> {
    if wasmparser::Parser::is_core_wasm(bytes) {
        return Err(WorldError::CoreModule);
    }
    if !wasmparser::Parser::is_component(bytes) {
        return Err(WorldError::NotWasm("no WebAssembly header".into()));
    }
    validate(bytes)?;
    let (resolve, world) = match guarded(|| wit_parser::decoding::decode(bytes))? {
        Ok(DecodedWasm::Component(r, w)) => (r, w),
        Ok(DecodedWasm::WitPackage(..)) => {
            return Err(WorldError::Decode(
                "this is a WIT package, not a component".into(),
            ));
        }
        Err(e) => return Err(WorldError::Decode(format!("{e:#}"))),
    };
    let imports = names(&resolve, &resolve.worlds[world].imports);
    let exports = names(&resolve, &resolve.worlds[world].exports);
    let published = Published::load()?;
    let mut best: Option<(&str, Vec<&String>)> = None;
    let mut mismatch = None;
    for name in RUNNABLE_WORLDS {
        let w = published.world(name)?;
        let offered = published.imports(w);
        let wanted = published.exports(w);
        if !wanted
            .iter()
            .all(|e| exports.iter().any(|x| compatible(x, e)))
        {
            continue;
        }
        let missing: Vec<&String> = imports
            .iter()
            .filter(|i| !offered.iter().any(|o| compatible(i, o)))
            .collect();
        if missing.is_empty() {
            match types_match(&published, name, bytes, &imports) {
                Ok(()) => {
                    return Ok(Target {
                        world: (*name).to_owned(),
                        package: published.package_name(),
                        imports,
                        exports,
                    });
                }
                // A wider world may still take it.
                Err(e) => {
                    mismatch.get_or_insert(e);
                    continue;
                }
            }
        }
        if best.as_ref().is_none_or(|(_, m)| missing.len() < m.len()) {
            best = Some((name, missing));
        }
    }
    if let Some(e) = mismatch {
        return Err(e);
    }
    let package = published.package_name();
    Err(WorldError::NoWorld(match best {
        Some((world, missing)) => format!(
            "it imports {}, which no world of {package} offers (closest: `{world}`)",
            missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!(
            "it exports neither `wasi:cli/run` (worlds `agent`, `agent-http`) nor `eval` \
             (worlds `interpreter`, `shell`) of {package}; it exports: {}",
            if exports.is_empty() {
                "nothing".to_owned()
            } else {
                exports.join(", ")
            }
        ),
    }))
}

/// The type-level half of the check, for imports: the world's imports,
/// with each published package at the version the component imports it
/// at, must accept the component's imports. (Exports are matched by name
/// here — a component may export `wasi:cli/run@0.2.0` while importing
/// `wasi:cli/*@0.2.12`, which no one version of the package describes —
/// and their types are checked when the host loads the component.)
fn types_match(
    published: &Published,
    world: &str,
    bytes: &[u8],
    imports: &[String],
) -> Result<(), WorldError> {
    let mut versions: std::collections::BTreeMap<&str, Option<semver::Version>> =
        Default::default();
    for name in imports {
        let (base, Some(version)) = split(name) else {
            continue;
        };
        let Some((pkg, _iface)) = base.rsplit_once('/') else {
            continue;
        };
        let slot = versions.entry(pkg).or_insert_with(|| Some(version.clone()));
        if slot.as_ref() != Some(&version) {
            // Two versions of one package: leave the published one.
            *slot = None;
        }
    }
    let mut resolve = published.resolve.clone();
    for (_, p) in resolve.packages.iter_mut() {
        let ours = format!("{}:{}", p.name.namespace, p.name.name);
        if let Some(Some(v)) = versions.get(ours.as_str()) {
            p.name.version = Some(v.clone());
        }
    }
    let mut imports_only = resolve.worlds[published.world(world)?].clone();
    imports_only.exports.clear();
    imports_only.name = format!("{world}-imports");
    let w = resolve.worlds.alloc(imports_only);
    guarded(|| wit_component::targets(&resolve, w, bytes))?.map_err(|e| {
        WorldError::NoWorld(format!(
            "its imports are named as world `{world}` names them, but their types differ: {}",
            first_line(&format!("{e:#}"))
        ))
    })
}

/// Validates `bytes` as WebAssembly before any decoder reads them: the
/// decoders buffer a section as long as its header claims (a 13-byte file
/// can claim 4 GiB), the validator reads only what is there.
pub(crate) fn validate(bytes: &[u8]) -> Result<(), WorldError> {
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
        .validate_all(bytes)
        .map(|_| ())
        .map_err(|e| WorldError::NotWasm(format!("{e}")))
}

/// Runs a decoder or encoder of the WIT tooling, a panic in it (on input
/// it does not expect) becoming a typed error.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, WorldError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|_| WorldError::Decode("the WIT tooling could not read it".into()))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// `ns:pkg/iface@1.2.3` → (`ns:pkg/iface`, 1.2.3); a plain name has no
/// version.
fn split(name: &str) -> (&str, Option<semver::Version>) {
    match name.split_once('@') {
        Some((base, v)) => (base, semver::Version::parse(v).ok()),
        None => (name, None),
    }
}

/// Whether `a` links where `b` is offered: the same name, and versions
/// that wasmtime's linker treats as one (`1.x` by major, `0.x` by minor,
/// `0.0.x` exactly).
pub fn compatible(a: &str, b: &str) -> bool {
    let ((na, va), (nb, vb)) = (split(a), split(b));
    if na != nb {
        return false;
    }
    match (va, vb) {
        (None, None) => a == b,
        (Some(x), Some(y)) => {
            if !x.pre.is_empty() || !y.pre.is_empty() {
                x == y
            } else if x.major != 0 {
                x.major == y.major
            } else if x.minor != 0 {
                y.major == 0 && x.minor == y.minor
            } else {
                x == y
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_match_as_wasmtime_links_them() {
        assert!(compatible(
            "wasi:http/types@0.2.10",
            "wasi:http/types@0.2.12"
        ));
        assert!(compatible(
            "plimsoll:sandbox/broker@0.1.0",
            "plimsoll:sandbox/broker@0.1.3"
        ));
        assert!(compatible("wasi:cli/run@0.2.13", "wasi:cli/run@0.2.12"));
        assert!(!compatible(
            "wasi:http/types@0.3.0",
            "wasi:http/types@0.2.12"
        ));
        assert!(!compatible(
            "wasi:http/types@0.2.12",
            "wasi:http/handler@0.2.12"
        ));
        assert!(!compatible("a:b/c@0.0.1", "a:b/c@0.0.2"));
        assert!(compatible("a:b/c@1.0.0", "a:b/c@1.4.0"));
        assert!(!compatible("a:b/c@1.0.0", "a:b/c"));
        assert!(compatible("eval", "eval"));
        assert!(!compatible("a:b/c@0.2.0-rc1", "a:b/c@0.2.0"));
    }

    #[test]
    fn a_core_module_and_garbage_are_typed_errors() {
        let core = b"\0asm\x01\0\0\0";
        assert!(matches!(check(core), Err(WorldError::CoreModule)));
        assert!(matches!(check(b"hello"), Err(WorldError::NotWasm(_))));
        assert!(matches!(check(b""), Err(WorldError::NotWasm(_))));
        // A component header with nothing valid after it.
        let broken = b"\0asm\x0d\0\x01\0\xff\xff";
        assert!(matches!(check(broken), Err(WorldError::NotWasm(_))));
        // A custom section claiming 4 GiB: refused, nothing that size
        // allocated.
        let claims = b"\0asm\x0d\0\x01\0\x00\xff\xff\xff\xff\x0f";
        assert!(matches!(check(claims), Err(WorldError::NotWasm(_))));
    }

    #[test]
    fn a_wit_package_is_not_a_component_and_never_a_panic() {
        // `(component (type (component (export "f" (func))))
        //  (export "a" (type 0)))`: what wit-parser reads as a package.
        let mut c = wasm_encoder::Component::new();
        let mut types = wasm_encoder::ComponentTypeSection::new();
        let mut ct = wasm_encoder::ComponentType::new();
        ct.ty()
            .function()
            .params(std::iter::empty::<(&str, wasm_encoder::ComponentValType)>())
            .result(None);
        ct.export("f", wasm_encoder::ComponentTypeRef::Func(0));
        types.component(&ct);
        c.section(&types);
        let mut exports = wasm_encoder::ComponentExportSection::new();
        exports.export("a", wasm_encoder::ComponentExportKind::Type, 0, None);
        c.section(&exports);
        let bytes = c.finish();
        assert!(check(&bytes).is_err());
    }
}
