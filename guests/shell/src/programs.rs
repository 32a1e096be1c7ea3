//! The `programs` import behind a trait, so native tests can fake it.

/// One program to start (mirrors `plimsoll:sandbox/programs.invocation`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// The name as typed (`python3`, `python`, `node`, `nodejs`).
    pub program: String,
    /// `argv[1..]`.
    pub args: Vec<String>,
    /// The shell's working directory (inside `/work`).
    pub cwd: String,
    /// The exported variables, sorted by name.
    pub env: Vec<(String, String)>,
    /// Everything the program may read on its standard input.
    pub stdin: Vec<u8>,
}

/// How a program ended (mirrors `plimsoll:sandbox/programs.completion`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// The exit status.
    pub exit_code: i32,
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error.
    pub stderr: Vec<u8>,
    /// A cap cut its stdout.
    pub stdout_truncated: bool,
    /// A cap cut its stderr.
    pub stderr_truncated: bool,
    /// The run's wall time ended it.
    pub timed_out: bool,
}

/// Starts the interpreters a command names.
pub trait Programs {
    /// Runs one program to its end; `Err` when it could not be started
    /// (the shell shows the reason: 127 when it says `not found`, else 126).
    fn run(&self, inv: Invocation) -> Result<Completion, String>;
}

/// No programs at all: every start fails (a shell without interpreters).
pub struct NoPrograms;

impl Programs for NoPrograms {
    fn run(&self, inv: Invocation) -> Result<Completion, String> {
        Err(format!("{}: not available", inv.program))
    }
}

/// The names `programs.run` serves.
pub const PROGRAM_NAMES: [&str; 4] = ["python3", "python", "node", "nodejs"];
