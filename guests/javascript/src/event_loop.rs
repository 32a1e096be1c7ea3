//! What runs after a cell's or a program's own code: promise jobs, timers,
//! and `process.exit`.
//!
//! - **Jobs**: QuickJS's job queue (promise reactions, `queueMicrotask`).
//! - **Timers**: `setTimeout` and friends (`node/timers.js`) keep their
//!   callbacks in JavaScript and their schedule here. When no job is left,
//!   the earliest timer whose time has come fires; if none has come yet, the
//!   instance sleeps until it has (the host's wall-time limit still applies:
//!   it cancels a call that sleeps too long). Unreferenced timers
//!   (`timer.unref()`) never keep the loop going.
//! - **Exit**: `process.exit(n)` records `n` and throws an *uncatchable*
//!   error, so no `catch` (nor `finally`) of the program runs. Until the
//!   engine has wound down, QuickJS's interrupt handler ([`exiting`]) stops
//!   whatever code still runs, and the natives with an effect (output,
//!   files, broker calls) refuse to act ([`refuse_if_exiting`]).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rquickjs::{Ctx, Error, Exception, Function, Object, Result, Value, qjs};

thread_local! {
    /// The code `process.exit` was called with, until the engine has
    /// wound down after it.
    static EXIT: Cell<Option<i32>> = const { Cell::new(None) };
    /// The instance's timers.
    static TIMERS: RefCell<Timers> = RefCell::new(Timers::default());
}

/// The most leftover jobs run (with every effect refused) after
/// `process.exit`, so that they cannot run later as if nothing happened.
/// Only a program that keeps making new jobs from failed ones reaches it.
const LEFTOVER_JOBS: usize = 10_000;

/// Whether `process.exit` has been called and the engine has not wound
/// down yet; QuickJS's interrupt handler.
pub fn exiting() -> bool {
    EXIT.with(Cell::get).is_some()
}

/// The code `process.exit` was called with, if it was.
pub fn exit_code() -> Option<i32> {
    EXIT.with(Cell::get)
}

/// `exit(code)`: records the exit and throws the uncatchable error that
/// unwinds the program. `code` is already an integer in 0..=255
/// (`node/process.js` checks it).
fn exit(ctx: Ctx<'_>, code: i32) -> Result<()> {
    EXIT.with(|e| {
        if e.get().is_none() {
            e.set(Some(code));
        }
    });
    Err(throw_exit(&ctx))
}

/// Throws the error that unwinds a program after `process.exit`: an
/// `InternalError` no JavaScript `catch` or `finally` can intercept.
fn throw_exit(ctx: &Ctx<'_>) -> Error {
    match Exception::from_message(ctx.clone(), "process.exit() was called") {
        Ok(error) => {
            // SAFETY: `error` is a live Error object of this context; the
            // call only sets a flag on it.
            unsafe { qjs::JS_SetUncatchableError(ctx.as_raw().as_ptr(), error.as_raw()) };
            ctx.throw(error.into_value())
        }
        // No memory for the error: an out-of-memory error is not catchable
        // by the program either.
        Err(e) => e,
    }
}

/// For natives with an effect: after `process.exit`, throw the exit again
/// instead of acting.
pub fn refuse_if_exiting(ctx: &Ctx<'_>) -> Result<()> {
    if exiting() {
        return Err(throw_exit(ctx));
    }
    Ok(())
}

/// Runs promise jobs until none is left or the program exits.
pub fn drain_jobs(ctx: &Ctx<'_>) {
    while !exiting() && ctx.execute_pending_job() {}
}

/// Drops every pending timer (a cell that failed leaves none behind).
pub fn clear_timers() {
    TIMERS.with(|t| *t.borrow_mut() = Timers::default());
}

/// After `process.exit`: drops the timers, runs what is left of the job
/// queue with every effect refused (so that none of it runs later), and
/// forgets the exit. Returns the exit code.
pub fn wind_down(ctx: &Ctx<'_>) -> Option<i32> {
    let code = exit_code()?;
    clear_timers();
    let mut left = LEFTOVER_JOBS;
    while left > 0 && ctx.execute_pending_job() {
        left -= 1;
    }
    EXIT.with(|e| e.set(None));
    Some(code)
}

/// The end of a program, however it ended: as after `process.exit(code)`
/// (unless that was how it ended already), then [`wind_down`].
pub fn end_program(ctx: &Ctx<'_>, code: i32) {
    EXIT.with(|e| {
        if e.get().is_none() {
            e.set(Some(code));
        }
    });
    wind_down(ctx);
}

/// What waiting for the next timer gave.
pub enum Fired<'js> {
    /// No referenced timer is left.
    Idle,
    /// A timer's callback ran.
    Ran,
    /// A timer's callback threw this.
    Threw(Value<'js>),
}

/// Waits for the earliest referenced timer and fires it through the
/// hook `fireTimer(id)` (`node/timers.js`). Without timers (every cell
/// that sets none) this costs one look at an empty queue.
pub fn fire_next<'js>(ctx: &Ctx<'js>) -> Fired<'js> {
    let Some((id, due)) = TIMERS.with(|t| t.borrow().next()) else {
        return Fired::Idle;
    };
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due - now);
    }
    TIMERS.with(|t| t.borrow_mut().cancel(id));
    let fired = crate::modules::call_hook::<_, ()>(ctx, "fireTimer", (id,));
    match fired {
        Ok(()) => Fired::Ran,
        Err(Error::Exception) => Fired::Threw(ctx.catch()),
        Err(other) => match Exception::from_message(ctx.clone(), &other.to_string()) {
            Ok(e) => Fired::Threw(e.into_value()),
            Err(_) => Fired::Ran,
        },
    }
}

/// The schedule: timers by (due time, order of arming), and where each id
/// is in it. (No `HashMap`: its random seed would be drawn while the build
/// pre-initializes the engine.)
#[derive(Default)]
struct Timers {
    queue: BTreeMap<(Instant, u64), (u32, bool)>,
    by_id: BTreeMap<u32, (Instant, u64)>,
    armed: u64,
}

impl Timers {
    fn arm(&mut self, id: u32, delay: Duration, referenced: bool) {
        self.cancel(id);
        let key = (Instant::now() + delay, self.armed);
        self.armed += 1;
        self.queue.insert(key, (id, referenced));
        self.by_id.insert(id, key);
    }

    fn cancel(&mut self, id: u32) {
        if let Some(key) = self.by_id.remove(&id) {
            self.queue.remove(&key);
        }
    }

    fn set_referenced(&mut self, id: u32, referenced: bool) {
        if let Some(key) = self.by_id.get(&id)
            && let Some(entry) = self.queue.get_mut(key)
        {
            entry.1 = referenced;
        }
    }

    /// The earliest timer, if any referenced timer is left (an
    /// unreferenced one still fires while the loop runs for others).
    fn next(&self) -> Option<(u32, Instant)> {
        if !self.queue.values().any(|&(_, referenced)| referenced) {
            return None;
        }
        self.queue
            .iter()
            .next()
            .map(|(&(due, _), &(id, _))| (id, due))
    }
}

/// The longest delay a timer takes (Node's limit, about 24.8 days); larger
/// or invalid delays become 1 ms, as in Node. (`setTimeout` makes 0 into 1
/// itself; `setImmediate` arms with 0.)
const MAX_DELAY_MS: f64 = 2_147_483_647.0;

/// `timerArm(id, ms, referenced)`: (re)schedules timer `id`.
fn timer_arm(id: u32, ms: f64, referenced: bool) {
    let ms = if ms.is_finite() && (0.0..=MAX_DELAY_MS).contains(&ms) {
        ms
    } else {
        1.0
    };
    TIMERS.with(|t| {
        t.borrow_mut()
            .arm(id, Duration::from_secs_f64(ms / 1000.0), referenced)
    });
}

/// `timerCancel(id)`.
fn timer_cancel(id: u32) {
    TIMERS.with(|t| t.borrow_mut().cancel(id));
}

/// `timerRef(id, referenced)`: `timer.ref()` / `timer.unref()`.
fn timer_ref(id: u32, referenced: bool) {
    TIMERS.with(|t| t.borrow_mut().set_referenced(id, referenced));
}

/// Adds `exit` and the timer natives to the prelude's `native` object.
pub fn register<'js>(ctx: &Ctx<'js>, natives: &Object<'js>) -> Result<()> {
    natives.set("exit", Function::new(ctx.clone(), exit)?)?;
    natives.set("timerArm", Function::new(ctx.clone(), timer_arm)?)?;
    natives.set("timerCancel", Function::new(ctx.clone(), timer_cancel)?)?;
    natives.set("timerRef", Function::new(ctx.clone(), timer_ref)?)?;
    Ok(())
}
