//! `plimsoll-guest`: write agent code in Rust that plimsoll runs.
//!
//! Build a normal Rust binary for `wasm32-wasip2`; the toolchain turns it
//! into a component of plimsoll's `agent` world (a `wasi:cli` command).
//! Standard I/O, files under `/work`, clocks and random work as usual. The
//! one way to the network is the [`broker`]: name one of the run's grants
//! and the host makes the call, adding the credential itself — your code
//! never sees it.
//!
//! ```no_run
//! use plimsoll_guest::broker;
//!
//! fn main() {
//!     match broker::get("orders", "/v1/orders/42") {
//!         Ok(resp) => println!("{} {}", resp.status, String::from_utf8_lossy(&resp.body)),
//!         Err(e) => eprintln!("the broker refused: {e}"),
//!     }
//! }
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2` and run it
//! with `plimsoll run --provider wasm target/wasm32-wasip2/release/app.wasm`.

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "broker-client",
    });
}

/// The broker: HTTP calls made by the host under one of the run's grants.
pub mod broker {
    pub use crate::bindings::plimsoll::sandbox::broker::{CallError, Request, Response};

    /// Makes one call under the grant named `api`.
    pub fn call(api: &str, req: &Request) -> Result<Response, CallError> {
        crate::bindings::plimsoll::sandbox::broker::call(api, req)
    }

    /// Makes one call to a URL's `origin` (`scheme://host[:port]`) under the
    /// run's one grant whose `base_url` it is, with every check of [`call`].
    /// `timeout_ms` shortens the per-call timeout; it never lengthens it.
    pub fn call_origin(
        origin: &str,
        req: &Request,
        timeout_ms: Option<u32>,
    ) -> Result<Response, CallError> {
        crate::bindings::plimsoll::sandbox::broker::call_origin(origin, req, timeout_ms)
    }

    /// The `call-error` case's WIT name (`denied`, `budget-exhausted`, …).
    pub fn error_tag(e: &CallError) -> &'static str {
        match e {
            CallError::Denied(_) => "denied",
            CallError::BudgetExhausted => "budget-exhausted",
            CallError::RequestTooLarge => "request-too-large",
            CallError::ResponseTooLarge => "response-too-large",
            CallError::Timeout => "timeout",
            CallError::Upstream(_) => "upstream",
        }
    }

    /// `GET path` under the grant `api`.
    pub fn get(api: &str, path: &str) -> Result<Response, CallError> {
        call(api, &request("GET", path, Vec::new()))
    }

    /// `POST path` with `body` under the grant `api`.
    pub fn post(api: &str, path: &str, body: impl Into<Vec<u8>>) -> Result<Response, CallError> {
        call(api, &request("POST", path, body.into()))
    }

    /// `PUT path` with `body` under the grant `api`.
    pub fn put(api: &str, path: &str, body: impl Into<Vec<u8>>) -> Result<Response, CallError> {
        call(api, &request("PUT", path, body.into()))
    }

    /// `PATCH path` with `body` under the grant `api`.
    pub fn patch(api: &str, path: &str, body: impl Into<Vec<u8>>) -> Result<Response, CallError> {
        call(api, &request("PATCH", path, body.into()))
    }

    /// `DELETE path` under the grant `api`.
    pub fn delete(api: &str, path: &str) -> Result<Response, CallError> {
        call(api, &request("DELETE", path, Vec::new()))
    }

    /// A request with no extra headers.
    pub fn request(method: &str, path: &str, body: Vec<u8>) -> Request {
        Request {
            method: method.to_owned(),
            path: path.to_owned(),
            headers: Vec::new(),
            body,
        }
    }

    impl Response {
        /// The body as text (invalid UTF-8 replaced).
        pub fn text(&self) -> String {
            String::from_utf8_lossy(&self.body).into_owned()
        }
    }
}
