//! plimsolld: the plimsoll sandbox served over HTTP.
//!
//! The daemon adds what a shared service needs around the library's
//! [`plimsoll::Sandbox`]: callers with tokens and scopes ([`callers`]),
//! quotas ([`quota`]), an audit log written before each answer ([`audit`]),
//! Prometheus metrics on a listener of their own ([`metrics`]), TLS
//! ([`tls`]), the hardened-mode checks ([`hardened`]), and a lifecycle that
//! drains on SIGTERM ([`server`]). The wires — REST ([`rest`]), plimsoll
//! protocol 4 ([`connect`]) and MCP ([`mcp`]) — are adapters over one
//! service layer ([`service`]) and never import each other; [`routes`]
//! composes them. Request and result types are the library's own;
//! [`openapi`] describes them.

pub mod audit;
pub mod callers;
pub mod config;
pub mod connect;
pub mod error;
pub mod fleet;
pub mod hardened;
#[cfg(test)]
mod layers;
pub mod mcp;
pub mod metrics;
pub mod quota;
pub mod rest;
pub mod routes;
pub mod server;
pub mod service;
pub mod tls;

/// The OpenAPI document of the REST routes (`plimsolld --openapi`).
pub use rest::openapi;
