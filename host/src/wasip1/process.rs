//! Waiting, ending and networking: `poll_oneoff`, `sched_yield`,
//! `proc_exit`, and the socket calls, refused.
//!
//! Guarantees: descriptors are always ready (every read and write here
//! completes at once); a clock is slept on, never past the run's deadline
//! nor at all while a snapshot is taken; at most [`MAX_SUBSCRIPTIONS`] are
//! read from one poll; `proc_exit` ends the call with its code; every
//! socket call is `ENOTSOCK`.

use super::MODULE;
use super::abi::{EFAULT, EINVAL, ENOTSOCK, ESUCCESS};
use super::environ::clock_now;
use super::memory::with;
use crate::state::RunState;
use std::time::{Duration, Instant};
use wasmtime::{Caller, Linker};

/// Most subscriptions in one `poll_oneoff`.
const MAX_SUBSCRIPTIONS: u32 = 4096;

pub(super) fn add_poll_and_process(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.func_wrap_async(
        MODULE,
        "poll_oneoff",
        |mut c: Caller<'_, RunState>, (subs, events, n, out): (i32, i32, i32, i32)| {
            Box::new(async move { Ok(poll_oneoff(&mut c, subs, events, n, out).await) })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "proc_exit",
        |_c: Caller<'_, RunState>, code: i32| -> wasmtime::Result<()> {
            Err(wasmtime::Error::new(wasmtime_wasi::I32Exit(code)))
        },
    )?;
    linker.func_wrap(MODULE, "sched_yield", |_c: Caller<'_, RunState>| -> i32 {
        ESUCCESS
    })?;
    linker.func_wrap(
        MODULE,
        "sock_accept",
        |_c: Caller<'_, RunState>, _a: i32, _b: i32, _d: i32| -> i32 { ENOTSOCK },
    )?;
    linker.func_wrap(
        MODULE,
        "sock_recv",
        |_c: Caller<'_, RunState>, _a: i32, _b: i32, _d: i32, _e: i32, _f: i32, _g: i32| -> i32 {
            ENOTSOCK
        },
    )?;
    linker.func_wrap(
        MODULE,
        "sock_send",
        |_c: Caller<'_, RunState>, _a: i32, _b: i32, _d: i32, _e: i32, _f: i32| -> i32 { ENOTSOCK },
    )?;
    linker.func_wrap(
        MODULE,
        "sock_shutdown",
        |_c: Caller<'_, RunState>, _a: i32, _b: i32| -> i32 { ENOTSOCK },
    )?;
    Ok(())
}

/// `poll_oneoff`: descriptors are always ready (every read and write here
/// completes at once); clocks are slept on, never past the run's deadline
/// (the epoch callback then ends the run at its next check).
async fn poll_oneoff(
    c: &mut Caller<'_, RunState>,
    subs: i32,
    events: i32,
    n: i32,
    out: i32,
) -> i32 {
    let n = n as u32;
    if n == 0 || n > MAX_SUBSCRIPTIONS {
        return EINVAL;
    }
    struct Sub {
        userdata: u64,
        tag: u8,
        wait: Option<Duration>,
    }
    let mut list = Vec::with_capacity(n as usize);
    let errno = with(c, |mem, p1, _| {
        for i in 0..n {
            let at = (subs as u32).wrapping_add(i * 48) as i32;
            let b = mem.bytes(at, 48)?;
            let userdata = u64::from_le_bytes(b[0..8].try_into().map_err(|_| EFAULT)?);
            let tag = b[8];
            let wait = if tag == 0 {
                let id = i32::from_le_bytes(b[16..20].try_into().map_err(|_| EFAULT)?);
                let timeout = u64::from_le_bytes(b[24..32].try_into().map_err(|_| EFAULT)?);
                let flags = u16::from_le_bytes(b[40..42].try_into().map_err(|_| EFAULT)?);
                let rel = if flags & 1 != 0 {
                    timeout.saturating_sub(clock_now(p1, id)?)
                } else {
                    timeout
                };
                Some(Duration::from_nanos(rel))
            } else {
                None
            };
            list.push(Sub {
                userdata,
                tag,
                wait,
            });
        }
        Ok(())
    });
    if errno != ESUCCESS {
        return errno;
    }
    let ready_fds: Vec<&Sub> = list.iter().filter(|s| s.tag != 0).collect();
    let fired: Vec<(u64, u8)> = if !ready_fds.is_empty() {
        ready_fds.iter().map(|s| (s.userdata, s.tag)).collect()
    } else {
        let shortest = list.iter().filter_map(|s| s.wait).min().unwrap_or_default();
        let frozen = c.data().p1.as_ref().is_some_and(|p| p.frozen);
        if !frozen {
            let deadline = c.data().deadline;
            let until = Instant::now()
                .checked_add(shortest)
                .map_or(deadline, |t| t.min(deadline));
            tokio::time::sleep_until(until.into()).await;
        }
        list.iter()
            .filter(|s| s.wait == Some(shortest))
            .map(|s| (s.userdata, s.tag))
            .collect()
    };
    with(c, |mem, _, _| {
        for (i, (userdata, tag)) in fired.iter().enumerate() {
            let mut e = [0u8; 32];
            e[0..8].copy_from_slice(&userdata.to_le_bytes());
            e[10] = *tag;
            mem.put((events as u32).wrapping_add(i as u32 * 32) as i32, &e)?;
        }
        mem.put_u32(out, fired.len() as u32)
    })
}
