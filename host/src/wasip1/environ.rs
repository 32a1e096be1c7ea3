//! What a guest reads of its surroundings: argv and environ (from the
//! run's layout), the clocks, and entropy.
//!
//! Guarantees: while a snapshot is taken ([`super::fds::P1State::frozen`])
//! the clocks are fixed (realtime from 2026-01-01, every read a
//! microsecond on, so waiting code still ends) and entropy is a fixed
//! generator, so that the snapshot holds nothing of the build machine;
//! otherwise both are the host's, and the monotonic clock never runs
//! backwards across a snapshot. One `random_get` fills at most
//! [`MAX_IO`] bytes.

use super::MODULE;
use super::abi::{EFAULT, EINVAL};
use super::fds::{Layout, P1State};
use super::memory::{MAX_IO, Mem, with};
use crate::state::RunState;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wasmtime::{Caller, Linker};

/// The realtime clock while a snapshot is taken: 2026-01-01T00:00:00Z.
const FROZEN_EPOCH_NS: u64 = 1_767_225_600_000_000_000;
/// The monotonic clock starts this far ahead of the snapshot's, so that it
/// never runs backwards across the snapshot.
const MONOTONIC_OFFSET: Duration = Duration::from_secs(3600);

pub(super) fn clock_now(p1: &mut P1State, id: i32) -> Result<u64, i32> {
    if p1.frozen {
        // Each read moves a microsecond on, so code that waits for time
        // to pass still ends.
        p1.frozen_clock += 1_000;
        return match id {
            0 => Ok(FROZEN_EPOCH_NS + p1.frozen_clock),
            1..=3 => Ok(p1.frozen_clock),
            _ => Err(EINVAL),
        };
    }
    match id {
        0 => Ok(SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))),
        1..=3 => Ok(
            u64::try_from((p1.origin.elapsed() + MONOTONIC_OFFSET).as_nanos()).unwrap_or(u64::MAX),
        ),
        _ => Err(EINVAL),
    }
}

fn fill_random(p1: &mut P1State, buf: &mut [u8]) -> Result<(), i32> {
    if p1.frozen {
        // SplitMix64 from a fixed seed: the same snapshot on every build.
        for chunk in buf.chunks_mut(8) {
            p1.frozen_random = p1.frozen_random.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = p1.frozen_random;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
        return Ok(());
    }
    getrandom::fill(buf).map_err(|_| EFAULT)
}

pub(super) fn add_args_env_clocks(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    fn sizes(list: &[String]) -> (u32, u32) {
        let n = u32::try_from(list.len()).unwrap_or(u32::MAX);
        let bytes = list.iter().map(|s| s.len() as u64 + 1).sum::<u64>();
        (n, u32::try_from(bytes).unwrap_or(u32::MAX))
    }
    fn put_list(mem: &mut Mem<'_>, list: &[String], ptrs: i32, buf: i32) -> Result<(), i32> {
        let mut at = buf as u32;
        for (i, s) in list.iter().enumerate() {
            mem.put_u32((ptrs as u32).wrapping_add(i as u32 * 4) as i32, at)?;
            let mut z = s.as_bytes().to_vec();
            z.push(0);
            mem.put(at as i32, &z)?;
            at = at.wrapping_add(z.len() as u32);
        }
        Ok(())
    }
    // argv and environ: the same two calls over two lists.
    type Pick = fn(&Layout) -> &[String];
    let lists: [(&str, &str, Pick); 2] = [
        ("args_sizes_get", "args_get", |l| &l.args),
        ("environ_sizes_get", "environ_get", |l| &l.env),
    ];
    for (sizes_name, get_name, pick) in lists {
        linker.func_wrap(
            MODULE,
            sizes_name,
            move |mut c: Caller<'_, RunState>, n: i32, size: i32| -> i32 {
                with(&mut c, |mem, p1, _| {
                    let (count, bytes) = sizes(pick(&p1.layout));
                    mem.put_u32(n, count)?;
                    mem.put_u32(size, bytes)
                })
            },
        )?;
        linker.func_wrap(
            MODULE,
            get_name,
            move |mut c: Caller<'_, RunState>, ptrs: i32, buf: i32| -> i32 {
                with(&mut c, |mem, p1, _| {
                    let layout = p1.layout.clone();
                    put_list(mem, pick(&layout), ptrs, buf)
                })
            },
        )?;
    }
    linker.func_wrap(
        MODULE,
        "clock_res_get",
        |mut c: Caller<'_, RunState>, id: i32, out: i32| -> i32 {
            with(&mut c, |mem, _, _| {
                if !(0..=3).contains(&id) {
                    return Err(EINVAL);
                }
                mem.put_u64(out, 1_000)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "clock_time_get",
        |mut c: Caller<'_, RunState>, id: i32, _precision: i64, out: i32| -> i32 {
            with(&mut c, |mem, p1, _| {
                let now = clock_now(p1, id)?;
                mem.put_u64(out, now)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "random_get",
        |mut c: Caller<'_, RunState>, buf: i32, len: i32| -> i32 {
            with(&mut c, |mem, p1, _| {
                // One call fills at most 16 MiB (longer would hold a host
                // thread for seconds): `EINVAL`, which the guest's
                // `os.urandom` raises as `OSError`.
                if len as u32 as usize > MAX_IO {
                    return Err(EINVAL);
                }
                let b = mem.bytes_mut(buf, len as u32)?;
                fill_random(p1, b)
            })
        },
    )?;
    Ok(())
}
