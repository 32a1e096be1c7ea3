//! plimsoll's published WIT worlds, and what a component targets.
//!
//! The WIT in `wit/` is compiled into the binary, so `plimsoll check` and
//! `plimsoll componentize` judge a component against exactly the worlds
//! this host was built with — never against a copy that may have drifted.
//!
//! Guarantees: parsing and checking never instantiate or compile a
//! component; a malformed component is a typed [`WorldError`], never a
//! panic.

pub mod check;
pub mod componentize;

use wit_parser::{PackageId, Resolve, WorldId, WorldItem, WorldKey};

/// The worlds a component can target to be run, in the order a check
/// tries them: the narrowest first.
pub const RUNNABLE_WORLDS: &[&str] = &["agent", "agent-http", "interpreter", "shell"];

/// Every WIT file of `wit/`, dependencies before the packages that use
/// them (the order a [`Resolve`] needs).
const WIT_FILES: &[(&str, &str)] = &[
    (
        "wit/deps/io/io.wit",
        include_str!("../../../wit/deps/io/io.wit"),
    ),
    (
        "wit/deps/clocks/clocks.wit",
        include_str!("../../../wit/deps/clocks/clocks.wit"),
    ),
    (
        "wit/deps/random/random.wit",
        include_str!("../../../wit/deps/random/random.wit"),
    ),
    (
        "wit/deps/filesystem/filesystem.wit",
        include_str!("../../../wit/deps/filesystem/filesystem.wit"),
    ),
    (
        "wit/deps/sockets/sockets.wit",
        include_str!("../../../wit/deps/sockets/sockets.wit"),
    ),
    (
        "wit/deps/cli/cli.wit",
        include_str!("../../../wit/deps/cli/cli.wit"),
    ),
    (
        "wit/deps/http/http.wit",
        include_str!("../../../wit/deps/http/http.wit"),
    ),
    ("wit/sandbox.wit", include_str!("../../../wit/sandbox.wit")),
];

/// Why a component or the published WIT could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// The built-in WIT did not parse (a build defect, never input).
    #[error("plimsoll's own WIT does not parse: {0}")]
    Wit(String),
    /// The bytes are neither a component nor a core module.
    #[error("not a WebAssembly component or module: {0}")]
    NotWasm(String),
    /// A core module where a component was needed.
    #[error(
        "this is a core WebAssembly module, not a component: make it one with `plimsoll componentize`"
    )]
    CoreModule,
    /// The component's own type information could not be read.
    #[error("cannot read the component's imports and exports: {0}")]
    Decode(String),
    /// The component does not fit any published world.
    #[error("{0}")]
    NoWorld(String),
    /// Building a component failed.
    #[error("cannot componentize: {0}")]
    Encode(String),
}

/// The published WIT, parsed: `plimsoll:sandbox` and its WASI dependencies.
pub struct Published {
    /// Every package, resolved.
    pub resolve: Resolve,
    /// `plimsoll:sandbox`.
    pub package: PackageId,
}

impl Published {
    /// Parses the WIT compiled into this binary.
    pub fn load() -> Result<Published, WorldError> {
        let mut resolve = Resolve::default();
        let mut package = None;
        for (path, text) in WIT_FILES {
            package = Some(
                resolve
                    .push_source(path, text)
                    .map_err(|e| WorldError::Wit(format!("{path}: {e:#}")))?,
            );
        }
        let package = package.ok_or_else(|| WorldError::Wit("no WIT files".into()))?;
        Ok(Published { resolve, package })
    }

    /// `plimsoll:sandbox@X.Y.Z`.
    pub fn package_name(&self) -> String {
        self.resolve.packages[self.package].name.to_string()
    }

    /// The world named `name` of `plimsoll:sandbox`.
    pub fn world(&self, name: &str) -> Result<WorldId, WorldError> {
        self.resolve.packages[self.package]
            .worlds
            .get(name)
            .copied()
            .ok_or_else(|| WorldError::Wit(format!("no world `{name}`")))
    }

    /// The interface names (`ns:pkg/iface@version`) a world imports,
    /// including those its imports use.
    pub fn imports(&self, world: WorldId) -> Vec<String> {
        names(&self.resolve, &self.resolve.worlds[world].imports)
    }

    /// The names a world exports.
    pub fn exports(&self, world: WorldId) -> Vec<String> {
        names(&self.resolve, &self.resolve.worlds[world].exports)
    }
}

/// The names of a world's items: `ns:pkg/iface@version` for interfaces,
/// the plain name for functions; types are not items a linker matches.
pub(crate) fn names(
    resolve: &Resolve,
    items: &wit_parser::IndexMap<WorldKey, WorldItem>,
) -> Vec<String> {
    items
        .iter()
        .filter(|(_, item)| !matches!(item, WorldItem::Type { .. }))
        .map(|(key, _)| resolve.name_world_key(key))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_wit_parses_and_has_every_runnable_world() {
        let p = Published::load().expect("wit");
        assert!(p.package_name().starts_with("plimsoll:sandbox@0.1."));
        for w in RUNNABLE_WORLDS {
            p.world(w).expect("world");
        }
        let http = p.imports(p.world("agent-http").expect("agent-http"));
        assert!(
            http.iter()
                .any(|i| i == "wasi:http/outgoing-handler@0.2.12"),
            "{http:?}"
        );
        let agent = p.imports(p.world("agent").expect("agent"));
        assert!(
            !agent.iter().any(|i| i.starts_with("wasi:http/")),
            "{agent:?}"
        );
        assert!(
            agent
                .iter()
                .any(|i| i.starts_with("plimsoll:sandbox/broker@"))
        );
        let run = p.exports(p.world("agent").expect("agent"));
        assert_eq!(run, vec!["wasi:cli/run@0.2.12".to_string()]);
    }
}
