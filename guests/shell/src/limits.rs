//! The shell's own caps. The host bounds wall time, fuel, memory and output;
//! these make hostile text end in a clear error of one step instead of a trap
//! of the whole guest. Every cap is checked before the memory it guards is
//! allocated.

use std::cell::Cell;

/// Deepest nesting the parser accepts (compound commands, `$(…)`, `${…}`,
/// quotes inside substitutions, arithmetic parentheses, `[[ ( ) ]]`).
pub const MAX_PARSE_NEST: usize = 128;

/// Deepest run-time nesting: function calls, every command that runs
/// another (`command`, `builtin`, `exec`, `env`, `xargs`, `find -exec`, …),
/// `eval`, `.`/`source`, subshells, command substitutions, `sh -c` and
/// scripts, all counted together. Reaching it ends the whole evaluation
/// (exit status 2), so an exponential fork bomb stops at once instead of
/// exploring 2^depth calls.
pub const MAX_DEPTH: usize = 128;

/// Most operators and operands one expression may hold (shell arithmetic,
/// `[[ … ]]`, `find`'s expression, awk's expressions): long operator chains
/// are kept flat, and this bounds their memory.
pub const MAX_EXPR_NODES: usize = 10_000;

/// Largest output of one command substitution, and largest value of one
/// expanded word or variable.
pub const MAX_WORD: usize = 16 << 20;

/// Most fields one command's words may expand to (brace expansion,
/// splitting, globbing).
pub const MAX_FIELDS: usize = 1 << 20;

/// Most bytes one command's words may expand to, all fields together (each
/// field also counts [`FIELD_OVERHEAD`] bytes).
pub const MAX_EXPANSION: usize = 64 << 20;

/// Most bytes the arguments of all running commands may hold together
/// (each nesting level keeps its command's arguments, a function call its
/// positional parameters, `xargs` its command line): see [`held`].
pub const MAX_HELD: usize = 256 << 20;

/// What one field costs beyond its bytes, for [`MAX_EXPANSION`].
pub const FIELD_OVERHEAD: usize = 32;

/// Largest buffer between two stages of a pipeline. A writer that fills it
/// is stopped (as by SIGPIPE, status 141); the next stage reads what was
/// written.
pub const MAX_PIPE: usize = 64 << 20;

/// Most bytes all live pipe, substitution and `programs` buffers may hold
/// together (a pipeline inside a recursive function keeps one per level).
/// A writer that would pass it is stopped as by a full pipe.
pub const MAX_BUFFERS: usize = 256 << 20;

/// Most tokens an awk program may have (which bounds its syntax tree).
pub const MAX_PROGRAM_TOKENS: usize = 200_000;

/// Largest standard input the shell reads from its own stdin.
pub const MAX_STDIN: usize = 64 << 20;

/// Largest file a utility reads into memory whole.
pub const MAX_FILE_READ: usize = 256 << 20;

/// Most entries a recursive directory walk (find, grep -r, ls -R, tar, du,
/// tree, cp -r, rm -r, rg) visits.
pub const MAX_WALK: usize = 1 << 20;

/// Largest script text `eval`, `sh -c` or `.` accepts (the client sends up
/// to 4 MiB of command text).
pub const MAX_SCRIPT: usize = 16 << 20;

/// Largest invocation of `python3`/`node` through `programs`: arguments,
/// environment and stdin together. Over it the command fails with status
/// 126 (`Argument list too long`).
pub const MAX_INVOCATION: usize = 64 << 20;

/// Largest pattern space or hold space of `sed`, and largest record or
/// field list of awk.
pub const MAX_SPACE: usize = MAX_WORD;

/// Most stack (bytes) the shell's recursion may use below `eval`'s own
/// frame, whatever recurses: parsers, the evaluator, arithmetic, awk, find.
/// The component's shadow stack is 8 MiB (`build.rs`), but the host's
/// native wasm stack (`max_wasm_stack`, 4 MiB in plimsoll) runs out first:
/// see [`stack`]. Native builds (the tests) use what `Config::stack` says.
pub const STACK_BUDGET: usize = 768 << 10;

/// The stack guard: one measure for all recursion. `eval` records the
/// address of a local at its entry; every recursive entry point asks
/// [`stack::exhausted`] and refuses to go deeper past the budget, so limits
/// that would multiply (calls × compound nesting × awk calls × …) cannot
/// overflow the stack together.
pub mod stack {
    use super::Cell;

    thread_local! {
        static BASE: Cell<usize> = const { Cell::new(0) };
        static BUDGET: Cell<usize> = const { Cell::new(super::STACK_BUDGET) };
    }

    #[inline(never)]
    fn here() -> usize {
        let marker = 0u8;
        std::hint::black_box(&marker) as *const u8 as usize
    }

    /// Restores the previous base and budget when dropped.
    pub struct Scope {
        base: usize,
        budget: usize,
    }

    impl Drop for Scope {
        fn drop(&mut self) {
            BASE.with(|b| b.set(self.base));
            BUDGET.with(|b| b.set(self.budget));
        }
    }

    /// Starts measuring from the caller's frame with `budget` bytes.
    pub fn scope(budget: usize) -> Scope {
        let prev = Scope {
            base: BASE.with(Cell::get),
            budget: BUDGET.with(Cell::get),
        };
        BASE.with(|b| b.set(here()));
        BUDGET.with(|b| b.set(budget));
        prev
    }

    /// Bytes of stack used since the scope began (0 outside one).
    pub fn used() -> usize {
        let base = BASE.with(Cell::get);
        if base == 0 {
            return 0;
        }
        base.saturating_sub(here())
    }

    /// Whether recursion must stop here.
    pub fn exhausted() -> bool {
        used() > BUDGET.with(Cell::get)
    }
}

/// The budget of [`MAX_HELD`]: what the commands that are running hold of
/// arguments, released when each ends.
pub mod held {
    use super::Cell;

    thread_local! {
        static HELD: Cell<usize> = const { Cell::new(0) };
    }

    /// Bytes charged until dropped.
    pub struct Held(usize);

    impl Drop for Held {
        fn drop(&mut self) {
            HELD.with(|h| h.set(h.get().saturating_sub(self.0)));
        }
    }

    /// What `args` cost: their bytes, and [`super::FIELD_OVERHEAD`] each.
    pub fn size(args: &[Vec<u8>]) -> usize {
        args.iter().map(|a| a.len() + super::FIELD_OVERHEAD).sum()
    }

    /// Charges `args`; `None` when the budget would be passed.
    pub fn hold(args: &[Vec<u8>]) -> Option<Held> {
        let n = size(args);
        HELD.with(|h| {
            let total = h.get().checked_add(n)?;
            if total > super::MAX_HELD {
                return None;
            }
            h.set(total);
            Some(Held(n))
        })
    }

    /// The message when [`hold`] refuses.
    pub fn refused() -> String {
        format!(
            "argument list too long: the running commands' arguments exceed {} MiB together",
            super::MAX_HELD >> 20
        )
    }
}
