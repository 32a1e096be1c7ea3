//! The supervisor ⇄ worker protocol.
//!
//! A frame is a 4-byte big-endian length followed by that many bytes of
//! JSON. Frames are capped at [`MAX_FRAME`]; a longer one, or one that does
//! not parse, ends the conversation (the worker is then treated as lost).
//! The first frame each way carries [`PROTOCOL_VERSION`]; a worker that
//! answers with another version is refused.
//!
//! Nothing a worker sends is trusted: after running hostile code it may be
//! compromised. The supervisor replaces the isolation, the guest identity,
//! the run id and the CallTrace in a worker's result with its own, and
//! re-checks every size against the envelope.

use crate::bindings::broker::{CallError, Request, Response};
use crate::blob::Blob;
use crate::envelope::Envelope;
use crate::run::{RunRequest, RunResult};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// The protocol's version; both sides must agree exactly. Version 2: a
/// worker serves runs one after another until the supervisor hangs up,
/// and `Done` carries the boot the run saw. Version 3: a [`GuestImage`]
/// has a [`ImageKind`] (a core-module guest is a directory). Version 4:
/// a `BrokerCall` may carry the shorter timeout a call by URL asked for.
/// Version 5: a shell's [`GuestImage`] names the images of its programs.
pub const PROTOCOL_VERSION: u32 = 6;

/// The largest frame either side accepts: a result can carry 16 MiB of
/// artifacts and two 1 MiB outputs by default, base64-inflated.
pub const MAX_FRAME: usize = 96 << 20;

/// What a [`GuestImage`]'s path holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageKind {
    /// A precompiled component (`.cwasm`).
    #[default]
    Component,
    /// A core-module guest's directory (the scientific Python guest): its
    /// precompiled module and its read-only trees
    /// ([`crate::scientific::write_bundle`]).
    Core,
}

/// A guest the worker may be asked to run: a precompiled image the
/// supervisor wrote (read-only to the worker).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestImage {
    /// The path of the `.cwasm` file (or, for [`ImageKind::Core`], the
    /// directory) inside the worker's file system.
    pub path: String,
    /// The guest's content hash.
    pub hash: String,
    /// The identity family (`component`, `python-wasm`, `quickjs-wasm`,
    /// `wasi-python`).
    pub family: String,
    /// What `path` holds.
    #[serde(default)]
    pub kind: ImageKind,
    /// For the shell guest: the image its `python3` starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<Box<GuestImage>>,
    /// For the shell guest: the image its `node` starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Box<GuestImage>>,
}

impl GuestImage {
    /// This image and the images of the programs it starts (a shell's
    /// `python3` and `node`), each once.
    pub fn with_programs(&self) -> Vec<&GuestImage> {
        let mut out = vec![self];
        for p in [&self.python, &self.node].into_iter().flatten() {
            if !out.iter().any(|o| o.path == p.path) {
                out.push(p);
            }
        }
        out
    }
}

/// Every image of `images` and of the programs they start, each once.
pub fn flatten_images(images: &[GuestImage]) -> Vec<GuestImage> {
    let mut out: Vec<GuestImage> = Vec::new();
    for i in images {
        for p in i.with_programs() {
            if !out.iter().any(|o| o.path == p.path) {
                let mut plain = p.clone();
                plain.python = None;
                plain.node = None;
                out.push(plain);
            }
        }
    }
    out
}

/// One of the run's grants, as the worker may know it: its name and origin
/// (for routing `wasi:http` requests). Never a credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantOrigin {
    pub name: String,
    pub scheme: String,
    pub authority: String,
}

/// Engine settings the worker must use (the images were compiled for them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerEngine {
    pub fuel: bool,
    pub max_memory_bytes: u64,
    pub max_wasm_stack: u64,
    /// The CPU level the images were compiled for; the worker's engine
    /// accepts nothing wider ([`crate::cpu`]).
    #[serde(default)]
    pub cpu: crate::cpu::CpuTarget,
    /// Pre-instantiated instances per interpreter the worker keeps for its
    /// caller's next run (0 when a worker serves one run only).
    #[serde(default)]
    pub warm_instances: u32,
}

/// A broker request crossing the boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Blob,
}

/// A broker response crossing the boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Blob,
}

/// A broker error crossing the boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireCallError {
    Denied(String),
    BudgetExhausted,
    RequestTooLarge,
    ResponseTooLarge,
    Timeout,
    Upstream(String),
}

impl From<Request> for WireRequest {
    fn from(r: Request) -> Self {
        WireRequest {
            method: r.method,
            path: r.path,
            headers: r.headers,
            body: Blob(r.body),
        }
    }
}

impl From<WireRequest> for Request {
    fn from(r: WireRequest) -> Self {
        Request {
            method: r.method,
            path: r.path,
            headers: r.headers,
            body: r.body.0,
        }
    }
}

impl From<Response> for WireResponse {
    fn from(r: Response) -> Self {
        WireResponse {
            status: r.status,
            headers: r.headers,
            body: Blob(r.body),
        }
    }
}

impl From<WireResponse> for Response {
    fn from(r: WireResponse) -> Self {
        Response {
            status: r.status,
            headers: r.headers,
            body: r.body.0,
        }
    }
}

impl From<CallError> for WireCallError {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Denied(s) => WireCallError::Denied(s),
            CallError::BudgetExhausted => WireCallError::BudgetExhausted,
            CallError::RequestTooLarge => WireCallError::RequestTooLarge,
            CallError::ResponseTooLarge => WireCallError::ResponseTooLarge,
            CallError::Timeout => WireCallError::Timeout,
            CallError::Upstream(s) => WireCallError::Upstream(s),
        }
    }
}

impl From<WireCallError> for CallError {
    fn from(e: WireCallError) -> Self {
        match e {
            WireCallError::Denied(s) => CallError::Denied(s),
            WireCallError::BudgetExhausted => CallError::BudgetExhausted,
            WireCallError::RequestTooLarge => CallError::RequestTooLarge,
            WireCallError::ResponseTooLarge => CallError::ResponseTooLarge,
            WireCallError::Timeout => CallError::Timeout,
            WireCallError::Upstream(s) => CallError::Upstream(s),
        }
    }
}

/// Supervisor → worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[allow(clippy::large_enum_variant)]
pub enum ToWorker {
    /// First frame: the protocol, the engine settings, the guests to load.
    Hello {
        protocol: u32,
        engine: WorkerEngine,
        guests: Vec<GuestImage>,
    },
    /// Report what the worker can see of its boundary.
    Observe,
    /// Run one request. A worker runs one at a time, each in a fresh
    /// instance with a fresh workspace; the supervisor sends the next only
    /// after `Done`, and only for the caller the worker is bound to.
    Run {
        run_id: String,
        guest: GuestImage,
        request: RunRequest,
        envelope: Envelope,
        grants: Vec<GrantOrigin>,
    },
    /// Open this worker's one session: the interpreters `guests` over one
    /// fresh workspace, `start` of them started now. The worker is
    /// dedicated to the session and retired with it.
    OpenSession {
        guests: Vec<GuestImage>,
        start: Vec<usize>,
        keep_on_failure: bool,
        envelope: Envelope,
        /// A snapshot archive ([`crate::snapshot::archive`]) the session is
        /// resumed from instead of started fresh; `guests` are its guests,
        /// in its order.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume: Option<crate::blob::Blob>,
    },
    /// Snapshot the worker's session (between two evaluations): the
    /// answer is `Snapshotted` or `Refused`.
    Snapshot,
    /// Evaluate `request.code` in the session's interpreter `index`.
    Eval {
        index: usize,
        run_id: String,
        request: RunRequest,
        envelope: Envelope,
        grants: Vec<GrantOrigin>,
    },
    /// The answer to a [`FromWorker::BrokerCall`].
    BrokerReply {
        seq: u64,
        result: Result<WireResponse, WireCallError>,
    },
}

/// Worker → supervisor.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[allow(clippy::large_enum_variant)]
pub enum FromWorker {
    /// The answer to `Hello`.
    Ready {
        protocol: u32,
        version: String,
        loaded: usize,
    },
    /// The answer to `Observe`.
    Observed { observation: Observation },
    /// A broker call from the guest; the supervisor makes it.
    BrokerCall {
        seq: u64,
        api: String,
        request: WireRequest,
        /// A shorter per-call timeout the guest asked for (a call by URL
        /// with a client timeout); it can only shorten the run's own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// The run's result, and the boot id the worker read after it (a
    /// worker whose boot changed between runs is retired).
    Done {
        result: RunResult,
        #[serde(default)]
        boot_id: String,
    },
    /// The answer to `OpenSession`: the session is open.
    SessionOpened,
    /// The answer to `Snapshot`: the session's archive (the supervisor
    /// verifies it whole before it is kept).
    Snapshotted { archive: crate::blob::Blob },
    /// A typed refusal of `OpenSession` (an interpreter did not start).
    Refused { code: String, message: String },
    /// The answer to `Eval`: the evaluation's result, what became of its
    /// interpreter, whether the session ended with it, and the boot id.
    Evaluated {
        result: RunResult,
        interpreter_started: bool,
        interpreter_ended: bool,
        ended: bool,
        #[serde(default)]
        boot_id: String,
    },
    /// The worker could not do what was asked.
    Failed { message: String },
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("the other side closed the pipe")]
    Closed,
    #[error("a frame of {0} bytes is over the cap")]
    TooLarge(usize),
    #[error("a frame is not valid: {0}")]
    Invalid(String),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// Encodes `msg` as one frame.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let body = serde_json::to_vec(msg).map_err(|e| FrameError::Invalid(e.to_string()))?;
    if body.len() > MAX_FRAME {
        return Err(FrameError::TooLarge(body.len()));
    }
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    // The message does not quote the frame: it may hold guest output.
    serde_json::from_slice(body).map_err(|e| {
        FrameError::Invalid(format!(
            "{:?} at line {} column {}",
            e.classify(),
            e.line(),
            e.column()
        ))
    })
}

/// Reads one frame (blocking).
pub fn read_blocking<T: serde::de::DeserializeOwned>(r: &mut impl Read) -> Result<T, FrameError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let n = u32::from_be_bytes(len) as usize;
    if n > MAX_FRAME {
        return Err(FrameError::TooLarge(n));
    }
    let mut body = vec![0u8; n];
    r.read_exact(&mut body)?;
    decode(&body)
}

/// Writes one frame (blocking).
pub fn write_blocking<T: Serialize>(w: &mut impl Write, msg: &T) -> Result<(), FrameError> {
    w.write_all(&encode(msg)?)?;
    w.flush()?;
    Ok(())
}

/// Reads one frame.
pub async fn read_async<T: serde::de::DeserializeOwned>(
    r: &mut (impl tokio::io::AsyncRead + Unpin),
) -> Result<T, FrameError> {
    use tokio::io::AsyncReadExt;
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let n = u32::from_be_bytes(len) as usize;
    if n > MAX_FRAME {
        return Err(FrameError::TooLarge(n));
    }
    let mut body = vec![0u8; n];
    r.read_exact(&mut body).await?;
    decode(&body)
}

/// Writes one frame.
pub async fn write_async<T: Serialize>(
    w: &mut (impl tokio::io::AsyncWrite + Unpin),
    msg: &T,
) -> Result<(), FrameError> {
    use tokio::io::AsyncWriteExt;
    w.write_all(&encode(msg)?).await?;
    w.flush().await?;
    Ok(())
}

/// The name the supervisor gives the virtio-serial port.
pub const PORT_NAME: &str = "plimsoll.0";

/// What a worker saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    pub uid: u32,
    pub gid: u32,
    /// Names of the environment variables (never their values).
    pub env_vars: Vec<String>,
    /// Network interfaces (from `/proc/net/dev`, else `/sys/class/net`).
    pub net_interfaces: Vec<String>,
    /// Whether the interface list could be read at all.
    pub net_readable: bool,
    /// Paths from [`crate::worker::observe::WRITE_PROBES`] (and the workspace root) that accepted a
    /// new file.
    pub writable: Vec<String>,
    /// Whether the workspace root accepted a new file.
    pub work_writable: bool,
    /// `Seccomp:` of `/proc/self/status` (2 = filter), if present.
    pub seccomp: Option<u32>,
    /// `NoNewPrivs:` of `/proc/self/status`.
    pub no_new_privs: Option<u32>,
    /// `CapEff:` of `/proc/self/status`, hex.
    pub cap_eff: Option<String>,
    /// Our pid (1 or small in a fresh pid namespace).
    pub pid: u32,
    /// Processes visible in `/proc`.
    pub visible_pids: usize,
    /// `uname -srv`.
    pub kernel: String,
    /// RLIMIT_NOFILE and RLIMIT_FSIZE soft limits (`None` = unlimited).
    pub nofile: Option<u64>,
    pub fsize: Option<u64>,
    /// Whether `/etc/passwd` of the host can be read.
    pub host_passwd_readable: bool,
    /// `/proc/sys/kernel/random/boot_id`: a VM has a boot of its own.
    pub boot_id: String,
    /// Whether the CPU says it runs under a hypervisor (`hypervisor` in
    /// `/proc/cpuinfo`).
    pub cpu_hypervisor: bool,
    /// The kernel's available clock sources (`kvm-clock` only under KVM).
    pub clocksources: String,
    /// The wall clock as the worker reads it (seconds since the epoch): a
    /// VM keeps its own, which guests read through WASI.
    pub wall_clock_unix: u64,
    /// The x86-64 features wasmtime can use that this CPU has
    /// ([`crate::cpu::detected_features`]): the guest images must need
    /// none outside them.
    #[serde(default)]
    pub cpu_features: Vec<String>,
    /// The worker's open descriptors as `N -> target` (from
    /// `/proc/self/fd`; at most 64, each target cut at 160 characters).
    #[serde(default)]
    pub open_fds: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tripwires: a change here changes the wire. Bump
    /// [`PROTOCOL_VERSION`] with it; do not just update the expected value.
    const _: () = assert!(PROTOCOL_VERSION == 6);
    const _: () = assert!(MAX_FRAME == 96 << 20);

    #[test]
    fn frames_round_trip_and_garbage_is_an_error() {
        let msg = FromWorker::Failed {
            message: "x".into(),
        };
        let bytes = encode(&msg).expect("encode");
        let back: FromWorker = read_blocking(&mut &bytes[..]).expect("decode");
        assert!(matches!(back, FromWorker::Failed { message } if message == "x"));
        let mut garbage = Vec::new();
        garbage.extend_from_slice(&5u32.to_be_bytes());
        garbage.extend_from_slice(b"nope!");
        assert!(matches!(
            read_blocking::<FromWorker>(&mut &garbage[..]),
            Err(FrameError::Invalid(_))
        ));
        let huge = (MAX_FRAME as u32 + 1).to_be_bytes();
        assert!(matches!(
            read_blocking::<FromWorker>(&mut &huge[..]),
            Err(FrameError::TooLarge(_))
        ));
        assert!(matches!(
            read_blocking::<FromWorker>(&mut &[][..]),
            Err(FrameError::Closed)
        ));
    }
}
