//! plimsolld: the plimsoll sandbox served over HTTP.
//!
//! The daemon adds what a shared service needs around the library's
//! [`plimsoll::Sandbox`]: callers with tokens and scopes ([`callers`]),
//! quotas ([`quota`]), an audit log written before each answer ([`audit`]),
//! Prometheus metrics on a listener of their own ([`metrics`]), TLS
//! ([`tls`]), the hardened-mode checks ([`hardened`]), and a lifecycle that
//! drains on SIGTERM ([`server`]). Request and result types are the
//! library's own; [`openapi`] describes them.

pub mod api;
pub mod audit;
pub mod callers;
pub mod config;
pub mod connect;
pub mod error;
pub mod hardened;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod quota;
pub mod server;
pub mod tls;
