//! `plimsoll`: run agent code in the sandbox from the command line.
//!
//! One module per subcommand (`run`, `info`, `repl`, `batch`, `mcp`,
//! `preinit`; `check` and `componentize` in `worlds`), over `args` (the command line), `config` (flags and
//! environment to a [`plimsoll::SandboxConfig`]) and `report` (a result
//! printed, and its exit status).

mod args;
mod batch;
mod config;
mod info;
mod mcp;
mod preinit;
mod repl;
mod report;
mod run;
mod worlds;

use args::{
    BatchArgs, CheckArgs, CommonArgs, ComponentizeArgs, McpArgs, PreinitArgs,
    PreinitScientificArgs, ReplArgs, RunArgs,
};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
    /// Say which of plimsoll's WIT worlds a component targets (agent,
    /// agent-http, interpreter, shell), with versions matched as the host
    /// links them; or name the import no world offers. Exit status 1 when
    /// it targets none.
    Check(CheckArgs),
    /// Make a core module (clang --target=wasm32-wasi, Go's wasip1) a
    /// component: embed the world's WIT unless the module carries its own,
    /// adapt WASI preview1 with this host's adapter (reactor, or command
    /// when the module exports `_start`), and check the result.
    Componentize(ComponentizeArgs),
    /// Make the scientific Python guest's snapshot (build step; see
    /// guests/scientific/build.sh).
    #[command(hide = true)]
    PreinitScientific(PreinitScientificArgs),
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
        Command::Run(args) => runtime.block_on(run::run(args)),
        Command::Info(common) => info::info(common),
        Command::Repl(args) => runtime.block_on(repl::repl(args)),
        Command::Batch(args) => runtime.block_on(batch::batch(args)),
        Command::Mcp(args) => runtime.block_on(mcp::mcp(args)),
        Command::Preinit(args) => runtime.block_on(preinit::preinit(args)),
        Command::Check(args) => worlds::check_cmd(args),
        Command::Componentize(args) => worlds::componentize_cmd(args),
        Command::PreinitScientific(args) => runtime.block_on(preinit::preinit_scientific(args)),
    }
}

/// Prints `msg` as the command's error and answers exit status 2.
fn fail(msg: &str) -> ExitCode {
    eprintln!("plimsoll: {msg}");
    ExitCode::from(2)
}
