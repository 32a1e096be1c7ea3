//! The door: `host.call`, the one function the scientific guest imports
//! besides preview 1, through which its driver asks for the cell, reports
//! its end, and makes broker calls.
//!
//! Guarantees: a frame is JSON of at most [`MAX_FRAME`] bytes; a frame the
//! host cannot read is a fault the guest sees as `OSError`, and nothing a
//! frame holds can stop the host; a door call from inside a door call
//! (the guest's `host_alloc`) is refused; an answer is written only into
//! memory the guest allocated with its own `host_alloc`, after the host
//! checked it; a broker call gets exactly the checks a component's
//! `broker.call` gets.

use super::MAX_FRAME;
use crate::bindings::broker::{CallError, Request};
use crate::state::RunState;
use base64::Engine as _;
use serde::Deserialize;
use wasmtime::Caller;

/// A frame from the guest.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Frame {
    /// The cell's code.
    Code,
    /// The cell's end.
    Done {
        ok: bool,
        text: String,
        #[serde(default)]
        memory: bool,
    },
    /// A broker call: under the grant `api`, or by URL to `origin` (the
    /// standard HTTP clients), with a shorter timeout if asked.
    Call {
        #[serde(default)]
        api: Option<String>,
        #[serde(default)]
        origin: Option<String>,
        #[serde(default)]
        timeout_ms: Option<u32>,
        method: String,
        path: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
        #[serde(default)]
        body: String,
    },
}

/// `host.call`'s answer when the store has no door.
const NO_HOST: i32 = -1;
/// `host.call`'s answer to a frame it could not serve.
const HOST_FAULT: i32 = -2;

/// `host.call(ptr, len, out_ptr_ptr, out_len_ptr)`: 0 with the answer
/// written, or a negative fault. A frame the host cannot read is a fault
/// the guest sees as `OSError`; nothing a frame holds can stop the host.
pub(super) async fn door_call(
    c: &mut Caller<'_, RunState>,
    ptr: i32,
    len: i32,
    out_ptr: i32,
    out_len: i32,
) -> wasmtime::Result<i32> {
    let set_busy = |c: &mut Caller<'_, RunState>, busy: bool| -> bool {
        match c.data_mut().p1.as_mut() {
            Some(p1) => std::mem::replace(&mut p1.door.busy, busy),
            None => true,
        }
    };
    if set_busy(c, true) {
        // Called from inside a door call (the guest's `host_alloc`), or
        // with no door at all.
        return Ok(HOST_FAULT);
    }
    let answered = door_answer(c, ptr, len, out_ptr, out_len).await;
    set_busy(c, false);
    answered
}

/// [`door_call`] once the door is taken: reads the frame, serves it,
/// writes the answer.
async fn door_answer(
    c: &mut Caller<'_, RunState>,
    ptr: i32,
    len: i32,
    out_ptr: i32,
    out_len: i32,
) -> wasmtime::Result<i32> {
    let Some(memory) = c.get_export("memory").and_then(|e| e.into_memory()) else {
        return Ok(HOST_FAULT);
    };
    let (start, n) = (ptr as u32 as usize, len as u32 as usize);
    if n > MAX_FRAME {
        return Ok(HOST_FAULT);
    }
    let Some(bytes) = memory
        .data(&*c)
        .get(start..start.saturating_add(n))
        .map(<[u8]>::to_vec)
    else {
        return Ok(HOST_FAULT);
    };
    let Ok(frame) = serde_json::from_slice::<Frame>(&bytes) else {
        return Ok(HOST_FAULT);
    };
    drop(bytes);
    let answer: Vec<u8> = match frame {
        Frame::Code => match c.data().p1.as_ref() {
            Some(p1) => p1.door.code.as_bytes().to_vec(),
            None => return Ok(NO_HOST),
        },
        Frame::Done { ok, text, memory } => {
            if let Some(p1) = c.data_mut().p1.as_mut() {
                p1.door.done = Some(if ok { Ok(text) } else { Err(text) });
                p1.door.memory_error = memory;
            }
            b"{}".to_vec()
        }
        Frame::Call {
            api,
            origin,
            timeout_ms,
            method,
            path,
            headers,
            body,
        } => {
            let Ok(body) = base64::engine::general_purpose::STANDARD.decode(body.as_bytes()) else {
                return Ok(HOST_FAULT);
            };
            let broker = c.data().broker.clone();
            let req = Request {
                method,
                path,
                headers,
                body,
            };
            let timeout = timeout_ms.map(|ms| std::time::Duration::from_millis(ms.into()));
            let answer = match (api, origin) {
                (Some(api), None) => broker.call(&api, req).await,
                (None, Some(origin)) => broker.call_url(&origin, req, timeout).await,
                _ => return Ok(HOST_FAULT),
            };
            serde_json::to_vec(&call_answer(answer))?
        }
    };
    let Ok(answer_len) = i32::try_from(answer.len()) else {
        return Ok(HOST_FAULT);
    };
    let Some(alloc) = c.get_export("host_alloc").and_then(|e| e.into_func()) else {
        return Ok(HOST_FAULT);
    };
    let Ok(alloc) = alloc.typed::<i32, i32>(&*c) else {
        return Ok(HOST_FAULT);
    };
    let p = alloc.call_async(&mut *c, answer_len).await? as u32 as usize;
    let data = memory.data_mut(&mut *c);
    let (op, ol) = (out_ptr as u32 as usize, out_len as u32 as usize);
    if p == 0
        || p.checked_add(answer.len()).is_none_or(|e| e > data.len())
        || op.checked_add(4).is_none_or(|e| e > data.len())
        || ol.checked_add(4).is_none_or(|e| e > data.len())
    {
        return Ok(HOST_FAULT);
    }
    data[p..p + answer.len()].copy_from_slice(&answer);
    data[op..op + 4].copy_from_slice(&(p as u32).to_le_bytes());
    data[ol..ol + 4].copy_from_slice(&(answer.len() as u32).to_le_bytes());
    Ok(0)
}

/// A broker call's outcome as the frame the driver reads.
fn call_answer(answer: Result<crate::bindings::broker::Response, CallError>) -> serde_json::Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    match answer {
        Ok(r) => serde_json::json!({
            "status": r.status,
            "headers": r.headers,
            "body": b64.encode(&r.body),
        }),
        Err(e) => {
            let (kind, message) = match e {
                CallError::Denied(m) => ("denied", m),
                CallError::BudgetExhausted => ("budget_exhausted", String::new()),
                CallError::RequestTooLarge => ("request_too_large", String::new()),
                CallError::ResponseTooLarge => ("response_too_large", String::new()),
                CallError::Timeout => ("timeout", String::new()),
                CallError::Upstream(m) => ("upstream", m),
            };
            serde_json::json!({"error": {"kind": kind, "message": message}})
        }
    }
}
