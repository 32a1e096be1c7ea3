//! The programs a shell starts (`python3`, `node`): each a fresh instance
//! of one of the host's interpreter guests, over the shell's workspace,
//! until the shell's deadline, with the shell's broker.
//!
//! Guarantees: the command line is parsed here, in Rust, into a spec the
//! interpreter's own entry point reads (JSON inside a string literal: no
//! caller text is ever spliced into code); arguments, environment and
//! input past the envelope's code and stdin caps are refused before an
//! instance is made; the instance's handles are released and the instance
//! reaped however it ended; every ending maps to the exit status a shell
//! user expects (timeout 124, trap 134, memory 137, fuel 152, disk 153).

use super::call::{instantiate_for_run, invoke};
use super::claim::claim_warm;
use super::classify::classify;
use super::store::prepare_around;
use crate::bindings::shell::programs::{Completion, Invocation};
use crate::envelope::Envelope;
use crate::guest::Programs;
use crate::programs::{Parent, Program, ProgramRunner, Ran};
use crate::run::Status;
use crate::runtime::Runtime;
use futures::future::BoxFuture;
use std::time::Instant;

/// Runs a shell's programs in `rt`, each under `env`.
pub(crate) struct ChildRunner {
    rt: Runtime,
    env: Envelope,
    programs: Programs,
}

impl ChildRunner {
    /// A runner for a shell run under `env` whose interpreters are
    /// `programs`.
    pub(crate) fn new(rt: Runtime, env: Envelope, programs: Programs) -> ChildRunner {
        ChildRunner { rt, env, programs }
    }
}

impl ProgramRunner for ChildRunner {
    fn run<'a>(&'a self, inv: Invocation, parent: Parent) -> BoxFuture<'a, Ran> {
        Box::pin(async move {
            let mut fuel_used = 0;
            let completion = self.run_one(inv, parent, &mut fuel_used).await;
            Ran {
                completion,
                fuel_used,
            }
        })
    }
}

impl ChildRunner {
    /// Runs `inv`; `fuel_used` is set to what it spent.
    async fn run_one(
        &self,
        inv: Invocation,
        parent: Parent,
        fuel_used: &mut u64,
    ) -> Result<Completion, String> {
        // The program's envelope is the shell's, with the fuel the shell
        // has left.
        let env = Envelope {
            fuel: self.env.fuel.min(parent.fuel),
            ..self.env
        };
        let name = clip(&inv.program);
        let program = Program::named(&inv.program).ok_or_else(|| format!("{name}: not found"))?;
        let guest = self
            .programs
            .guest(program)
            .ok_or_else(|| format!("{name}: not found (this host has no interpreter for it)"))?;
        let spec_size: usize = inv.args.iter().map(|a| a.len() + 1).sum::<usize>()
            + inv
                .env
                .iter()
                .map(|(k, v)| k.len() + v.len() + 2)
                .sum::<usize>()
            + inv.cwd.len();
        if spec_size as u64 > env.code_bytes {
            return Err(format!(
                "{name}: Argument list too long (arguments and environment exceed {} bytes)",
                env.code_bytes
            ));
        }
        if inv.stdin.len() as u64 > env.stdin_bytes {
            return Err(format!(
                "{name}: its input exceeds {} bytes",
                env.stdin_bytes
            ));
        }
        let code = match program {
            Program::Python => python_cell(&inv),
            Program::Node => match node_spec(&inv) {
                Ok(spec) => format!("globalThis.__plimsoll_main({spec})"),
                Err(usage) => {
                    return Ok(Completion {
                        exit_code: 9,
                        stderr: usage.into_bytes(),
                        ..empty()
                    });
                }
            },
        };
        let left = parent.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Completion {
                exit_code: 124,
                timed_out: true,
                ..empty()
            });
        }
        let mut prepared = prepare_around(
            &self.rt,
            &inv.stdin,
            &env,
            parent.broker,
            parent.deadline,
            parent.workspace.clone(),
        );
        // The shell's `/tmp` is the program's too.
        prepared.store.data_mut().tmp_alias = true;
        // Like the shell's own: past the cap the program runs on.
        prepared.stdout.make_soft();
        prepared.stderr.make_soft();
        let live = match claim_warm(&self.rt, guest, &env, &mut prepared) {
            Some(live) => Ok(live),
            None => {
                self.rt.refill_warm(guest);
                match tokio::time::timeout(
                    left,
                    instantiate_for_run(&self.rt, guest, &mut prepared.store),
                )
                .await
                {
                    Ok(r) => r.map_err(|e| {
                        if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                            .is_some()
                        {
                            format!("{name}: every instance slot is in use; try again shortly")
                        } else {
                            format!("{name}: the interpreter failed to start")
                        }
                    }),
                    Err(_) => Err(String::new()),
                }
            }
        };
        let classified = match live {
            Ok(live) => {
                let wall = parent.deadline.saturating_duration_since(Instant::now());
                let inv = invoke(&live, &mut prepared.store, &code, wall).await;
                let c = classify(inv, prepared.store.data());
                // Not after a wall-time interrupt: the counter is not
                // written back then (and the shell's run is over too).
                if let (true, Ok(left)) = (c.status != Status::Timeout, prepared.store.get_fuel()) {
                    *fuel_used = env.fuel.saturating_sub(left);
                }
                drop(live);
                Some(c)
            }
            // The deadline came while it started.
            Err(e) if e.is_empty() => None,
            Err(e) => {
                self.discard(prepared);
                return Err(e);
            }
        };
        let out = prepared.stdout.take(0);
        let err = prepared.stderr.take(0);
        let mut done = Completion {
            exit_code: 0,
            stdout: out.bytes,
            stderr: err.bytes,
            stdout_truncated: out.truncated,
            stderr_truncated: err.truncated,
            timed_out: false,
        };
        match classified {
            None => {
                done.exit_code = 124;
                done.timed_out = true;
            }
            Some(c) => {
                let note = |done: &mut Completion, what: &str| {
                    if !done.stderr.is_empty() && !done.stderr.ends_with(b"\n") {
                        done.stderr.push(b'\n');
                    }
                    done.stderr
                        .extend_from_slice(format!("{name}: {what}\n").as_bytes());
                };
                let message = c.error.as_ref().map_or("", |e| e.message.as_str());
                match c.status {
                    Status::Ok => {
                        done.exit_code = c
                            .result
                            .as_deref()
                            .and_then(|v| v.trim().parse::<i32>().ok())
                            .filter(|v| (0..=255).contains(v))
                            .unwrap_or(1);
                    }
                    // The interpreter reported an error of its own (already
                    // on stderr).
                    Status::Error => done.exit_code = 1,
                    Status::Timeout => {
                        done.exit_code = 124;
                        done.timed_out = true;
                    }
                    Status::MemoryExhausted => {
                        done.exit_code = 137;
                        note(&mut done, &format!("memory_exhausted: {message}"));
                    }
                    Status::CpuExhausted => {
                        done.exit_code = 152;
                        note(&mut done, &format!("cpu_exhausted: {message}"));
                    }
                    Status::DiskExhausted => {
                        done.exit_code = 153;
                        note(&mut done, &format!("disk_exhausted: {message}"));
                    }
                    other => {
                        done.exit_code = 134;
                        note(&mut done, &format!("{}: {message}", other.as_str()));
                    }
                }
            }
        }
        self.discard(prepared);
        Ok(done)
    }

    /// Gives back the handles the instance held, then its memory.
    fn discard(&self, prepared: super::Prepared) {
        let owner = prepared.store.data().fs_owner;
        prepared.workspace.tree().release_owner(owner);
        let super::Prepared { store, .. } = prepared;
        crate::reaper::reap_instance(store);
    }
}

/// Readies a run's store for `guest`: for a shell, soft output caps (the
/// script runs on past them) and the runner of its programs; nothing for
/// any other guest.
pub(crate) fn arm(
    rt: &Runtime,
    guest: &crate::guest::Guest,
    env: &Envelope,
    p: &mut super::Prepared,
) {
    if guest.kind() != crate::guest::GuestKind::Shell {
        return;
    }
    p.stdout.make_soft();
    p.stderr.make_soft();
    let runner = ChildRunner::new(
        rt.clone(),
        *env,
        guest.programs().cloned().unwrap_or_default(),
    );
    p.store.data_mut().programs = Some(std::sync::Arc::new(runner));
}

fn empty() -> Completion {
    Completion {
        exit_code: 0,
        stdout: Vec::new(),
        stderr: Vec::new(),
        stdout_truncated: false,
        stderr_truncated: false,
        timed_out: false,
    }
}

/// A guest-supplied name, cut short enough to quote in one line.
fn clip(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(64).collect()
}

/// The Python cell that runs `inv` as `python3 ARGS` would, and whose value
/// is the exit status. The invocation reaches it as JSON inside a string
/// literal (`serde_json` escapes make a valid Python literal).
fn python_cell(inv: &Invocation) -> String {
    let spec = serde_json::json!({
        "args": inv.args,
        "cwd": inv.cwd,
        "env": inv.env.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
    })
    .to_string();
    let literal = serde_json::Value::String(spec).to_string();
    // The module from the guest's snapshot, never one a workspace file
    // could shadow (`sys.modules`, not an import); else this copy of it.
    // Quoted once per process, not per start.
    static FALLBACK: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        serde_json::Value::String(PYTHON_PROGRAM.to_owned()).to_string()
    });
    let fallback = FALLBACK.as_str();
    format!(
        "__plimsoll_program = getattr(__import__('sys').modules.get('plimsoll_program'), 'main', None)\n\
         if __plimsoll_program is None:\n    \
         __plimsoll_ns = {{}}\n    \
         exec(compile({fallback}, '<plimsoll-program>', 'exec'), __plimsoll_ns)\n    \
         __plimsoll_program = __plimsoll_ns['main']\n\
         __plimsoll_program({literal})\n"
    )
}

/// `python3`'s command line (guests/python/plimsoll_program.py): the
/// Python guest has it compiled in its snapshot; a guest built without it
/// (another operator's build) compiles this copy instead, about 3.5 ms more
/// per start on this machine class.
const PYTHON_PROGRAM: &str = include_str!("../../../guests/python/plimsoll_program.py");

/// The spec `__plimsoll_main` reads for `node ARGS` (guests/javascript,
/// `node/main.js`), as JSON; `Err` with node's own complaint for an option
/// it does not know.
fn node_spec(inv: &Invocation) -> Result<String, String> {
    let args = &inv.args;
    let mut i = 0;
    let mut spec = serde_json::Map::new();
    let rest: &[String];
    loop {
        let Some(a) = args.get(i) else {
            spec.insert("mode".into(), "stdin".into());
            rest = &[];
            break;
        };
        match a.as_str() {
            "-e" | "--eval" | "-p" | "--print" => {
                let Some(code) = args.get(i + 1) else {
                    return Err(format!("node: {a} requires an argument\n"));
                };
                let print = a == "-p" || a == "--print";
                spec.insert("mode".into(), if print { "print" } else { "eval" }.into());
                spec.insert("code".into(), code.clone().into());
                rest = &args[i + 2..];
                break;
            }
            "-v" | "--version" => {
                spec.insert("mode".into(), "print".into());
                spec.insert("code".into(), "process.version".into());
                rest = &[];
                break;
            }
            "-" => {
                spec.insert("mode".into(), "stdin".into());
                rest = &args[i..];
                break;
            }
            "--" => {
                i += 1;
                continue;
            }
            s if s.starts_with("--input-type=")
                || s.starts_with("--no-warnings")
                || s.starts_with("--enable-source-maps")
                || s.starts_with("--experimental-")
                || s.starts_with("--max-old-space-size=")
                || s == "--trace-uncaught" =>
            {
                i += 1;
                continue;
            }
            s if s.starts_with('-') && s.len() > 1 => {
                return Err(format!("node: bad option: {}\n", clip(s)));
            }
            file => {
                spec.insert("mode".into(), "file".into());
                spec.insert("file".into(), file.into());
                let mut argv = vec!["/usr/bin/node".to_owned(), absolute(&inv.cwd, file)];
                argv.extend(args[i + 1..].iter().cloned());
                spec.insert("argv".into(), argv.into());
                rest = &[];
                break;
            }
        }
    }
    if !spec.contains_key("argv") {
        let mut argv = vec!["/usr/bin/node".to_owned()];
        argv.extend(rest.iter().cloned());
        spec.insert("argv".into(), argv.into());
    }
    spec.insert("cwd".into(), inv.cwd.clone().into());
    let env: serde_json::Map<String, serde_json::Value> = inv
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect();
    spec.insert("env".into(), env.into());
    Ok(serde_json::Value::Object(spec).to_string())
}

/// `file` against `cwd`, with `.` and `..` segments resolved (as node
/// shows a script's path in `process.argv[1]`).
fn absolute(cwd: &str, file: &str) -> String {
    let joined = if file.starts_with('/') {
        file.to_owned()
    } else {
        format!("{cwd}/{file}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for seg in joined.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    type R = Result<(), Box<dyn std::error::Error>>;

    fn inv(program: &str, args: &[&str]) -> Invocation {
        Invocation {
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            cwd: "/work/src".into(),
            env: vec![("A".into(), "1".into())],
            stdin: Vec::new(),
        }
    }

    fn spec(args: &[&str]) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
        Ok(serde_json::from_str(&node_spec(&inv("node", args))?)?)
    }

    #[test]
    fn node_command_lines_become_specs() -> R {
        let s = spec(&["main.mjs", "a", "b"])?;
        assert_eq!(s["mode"], "file");
        assert_eq!(s["file"], "main.mjs");
        assert_eq!(
            s["argv"],
            serde_json::json!(["/usr/bin/node", "/work/src/main.mjs", "a", "b"])
        );
        assert_eq!(s["cwd"], "/work/src");
        assert_eq!(s["env"]["A"], "1");
        let s = spec(&["-e", "console.log(1)", "x"])?;
        assert_eq!(s["mode"], "eval");
        assert_eq!(s["code"], "console.log(1)");
        assert_eq!(s["argv"], serde_json::json!(["/usr/bin/node", "x"]));
        assert_eq!(spec(&["-p", "1+1"])?["mode"], "print");
        assert_eq!(spec(&[])?["mode"], "stdin");
        assert_eq!(spec(&["-"])?["mode"], "stdin");
        assert_eq!(spec(&["../lib/x.js"])?["argv"][1], "/work/lib/x.js");
        assert!(node_spec(&inv("node", &["--inspect"])).is_err());
        assert!(node_spec(&inv("node", &["-e"])).is_err());
        Ok(())
    }

    #[test]
    fn the_python_cell_carries_the_invocation_as_a_literal() -> R {
        let mut i = inv("python3", &["-c", "print('\"\\'''\\n')", "x"]);
        i.env.push(("Q".into(), "\u{1F600}\"'".into()));
        let cell = python_cell(&i);
        let last = cell.lines().last().ok_or("an empty cell")?;
        let literal = last
            .strip_prefix("__plimsoll_program(")
            .and_then(|l| l.strip_suffix(')'))
            .ok_or("the cell does not end with the call")?;
        // A JSON string literal holding the JSON spec: nothing of the
        // caller's text is code.
        let inner: String = serde_json::from_str(literal)?;
        let spec: serde_json::Value = serde_json::from_str(&inner)?;
        assert_eq!(spec["args"][1], "print('\"\\'''\\n')");
        assert_eq!(spec["env"]["Q"], "\u{1F600}\"'");
        assert!(!last.contains('\n'));
        Ok(())
    }
}
