//! Which guest a request runs: the interpreters on the shelf (by
//! language, and the scientific Python guest by name), and components
//! registered by name or identity.

use super::Sandbox;
use super::shelf::Shelved;
use crate::component_cache::LoadError;
use crate::guest::{Guest, GuestKind, Programs};
use crate::run::{ErrorInfo, Language, RunRequest};
use std::time::Instant;

fn err(code: &str, message: String) -> ErrorInfo {
    ErrorInfo {
        code: code.into(),
        message,
    }
}

impl Sandbox {
    /// Loads a component without registering it.
    pub fn load(&self, bytes: &[u8]) -> Result<Guest, LoadError> {
        self.runtime.load(bytes)
    }

    /// Loads a component and registers it under `name` (and under its
    /// identity), so that requests can name it.
    pub fn register(&self, name: &str, bytes: &[u8]) -> Result<Guest, LoadError> {
        let guest = self.runtime.load(bytes)?;
        self.register_guest(name, guest.clone());
        Ok(guest)
    }

    /// Registers an already loaded guest under `name` and its identity.
    pub fn register_guest(&self, name: &str, guest: Guest) {
        let mut map = self.components.write().unwrap_or_else(|p| p.into_inner());
        map.insert(guest.identity().to_owned(), guest.clone());
        map.insert(name.to_owned(), guest);
    }

    /// The registered guest named `name` (a name or an identity).
    pub fn component(&self, name: &str) -> Option<Guest> {
        self.components
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    /// The interpreter guest for `language`, if the host has one and it is
    /// ready.
    pub fn interpreter(&self, language: Language) -> Option<Guest> {
        if language == Language::Shell {
            return self.interpreter_for(language, None).ok();
        }
        self.shelf
            .get(Shelved::Interpreter(language))
            .ok()
            .flatten()
    }

    /// The scientific Python guest, if the host has one and it is ready.
    pub fn scientific(&self) -> Option<Guest> {
        self.shelf.get(Shelved::Scientific).ok().flatten()
    }

    /// Which shelf slot serves `language` code when the request names
    /// `guest` (`scientific`, `standard`, or none: the operator's default).
    fn shelved_for(&self, language: Language, guest: Option<&str>) -> Result<Shelved, ErrorInfo> {
        let scientific = match (language, guest) {
            (Language::Python, None) => self.python_default_scientific,
            (Language::Python, Some(crate::scientific::GUEST_NAME)) => true,
            (_, None | Some("standard")) => false,
            (_, Some(_)) => {
                // The name is the caller's: not quoted back.
                return Err(err(
                    "guest_unavailable",
                    format!(
                        "no {} guest has that name: `guest` is \"standard\"{}",
                        language.as_str(),
                        if language == Language::Python {
                            " or \"scientific\""
                        } else {
                            ""
                        }
                    ),
                ));
            }
        };
        Ok(if scientific {
            Shelved::Scientific
        } else {
            Shelved::Interpreter(language)
        })
    }

    fn absent(key: Shelved) -> ErrorInfo {
        match key {
            Shelved::Scientific => err(
                "guest_unavailable",
                "this host has no scientific Python guest (build it with `make guests`)".into(),
            ),
            Shelved::Interpreter(l) => err(
                "language_unavailable",
                format!("this host has no {} interpreter", l.as_str()),
            ),
        }
    }

    /// The guest that runs `language` code when the request names `guest`
    /// (`scientific`, `standard`, or none: the operator's default), now:
    /// `warming_up` while it is still being compiled.
    pub fn interpreter_for(
        &self,
        language: Language,
        guest: Option<&str>,
    ) -> Result<Guest, ErrorInfo> {
        let key = self.shelved_for(language, guest)?;
        let g = self.shelf.get(key)?.ok_or_else(|| Self::absent(key))?;
        if g.kind() != GuestKind::Shell {
            return Ok(g);
        }
        let program = |l: Language| {
            self.shelved_for(l, None)
                .ok()
                .and_then(|k| self.shelf.get(k).ok().flatten())
        };
        Ok(g.with_programs(Programs {
            python: program(Language::Python),
            node: program(Language::Javascript),
        }))
    }

    /// [`Sandbox::interpreter_for`], waiting until `deadline` for a guest
    /// that is still being compiled.
    pub async fn interpreter_by(
        &self,
        language: Language,
        guest: Option<&str>,
        deadline: Instant,
    ) -> Result<Guest, ErrorInfo> {
        let key = self.shelved_for(language, guest)?;
        let g = self
            .shelf
            .get_by(key, deadline)
            .await?
            .ok_or_else(|| Self::absent(key))?;
        if g.kind() != GuestKind::Shell {
            return Ok(g);
        }
        // The shell's `python3` and `node`: the operator's default guests,
        // waited for like the shell itself; one this host lacks (or that
        // failed to load) is a command the shell does not find.
        let mut programs = Programs::default();
        for l in [Language::Python, Language::Javascript] {
            let found = match self.shelved_for(l, None) {
                Ok(k) => self.shelf.get_by(k, deadline).await.ok().flatten(),
                Err(_) => None,
            };
            match l {
                Language::Python => programs.python = found,
                _ => programs.node = found,
            }
        }
        Ok(g.with_programs(programs))
    }

    /// The identities of the interpreter guests that are ready, by
    /// language.
    pub fn interpreter_identities(&self) -> Vec<(Language, String)> {
        let mut v: Vec<_> = self
            .shelf
            .ready()
            .into_iter()
            .filter_map(|(k, g)| match k {
                Shelved::Interpreter(l) => Some((l, g.identity().to_owned())),
                Shelved::Scientific => None,
            })
            .collect();
        v.sort_by_key(|(l, _)| l.as_str());
        v
    }

    /// Every interpreter guest that is ready, by the name a request
    /// selects it with: the language (`python`, `javascript`), and
    /// `python/scientific` for the scientific guest.
    pub fn guest_identities(&self) -> Vec<(String, String)> {
        self.shelf
            .ready()
            .into_iter()
            .map(|(k, g)| (k.name(), g.identity().to_owned()))
            .collect()
    }

    /// Whether the host is configured with the guest `key` (ready or not).
    pub fn has_guest(&self, key: Shelved) -> bool {
        self.shelf.has(key)
    }

    /// The guest a request names: its language's interpreter or a
    /// registered component, waiting until `deadline` for an interpreter
    /// that is still being compiled.
    pub(super) async fn resolve_guest(
        &self,
        req: &RunRequest,
        deadline: Instant,
    ) -> Result<Guest, ErrorInfo> {
        match (req.language, req.component.as_deref()) {
            (Some(l), None) => self.interpreter_by(l, req.guest.as_deref(), deadline).await,
            (None, Some(name)) => self.component(name).ok_or_else(|| {
                err(
                    "unknown_component",
                    "no component of that name or identity is registered".into(),
                )
            }),
            _ => Err(err(
                "invalid_request",
                "give exactly one of `language` and `component`".into(),
            )),
        }
    }
}
