//! Batch mode for benchmark harnesses: many independent jobs from a JSON
//! Lines file, run in parallel on all cores, one result line per job.
//!
//! Every job gets a fresh instance. A failing, hostile or malformed job
//! never stops the batch: it gets a result line like any other. Results are
//! appended and flushed one line at a time, so a batch that is interrupted
//! can be rerun with the same output file and skips the ids already there.

use crate::blob::Blob;
use crate::envelope::Limits;
use crate::run::{InputFile, Language, RunRequest, RunResult, Status};
use crate::sandbox::Sandbox;
use futures::StreamExt;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest job line read, in bytes; a longer line is a refused job.
pub const MAX_JOB_LINE_BYTES: usize = 16 << 20;
/// Longest job id, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// One job of a batch file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchJob {
    /// The job's id, unique within the batch.
    pub id: String,
    #[serde(default)]
    pub language: Option<Language>,
    /// A component: a registered name, or a path to a `.wasm` file.
    #[serde(default)]
    pub component: Option<String>,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub stdin: Blob,
    #[serde(default)]
    pub files: Vec<InputFile>,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub grants: Vec<String>,
}

/// How to run a batch.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Jobs in flight at once.
    pub concurrency: usize,
    /// Show a progress bar on stderr.
    pub progress: bool,
}

impl Default for BatchOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        BatchOptions {
            concurrency: cores * 2,
            progress: false,
        }
    }
}

/// What a batch did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BatchSummary {
    /// Jobs run now.
    pub ran: u64,
    /// Jobs skipped because the output already had their id.
    pub skipped: u64,
    /// Runs by status.
    pub by_status: BTreeMap<String, u64>,
    /// Wall time of the batch, in seconds.
    pub wall_sec: f64,
    /// Jobs per second.
    pub jobs_per_sec: f64,
}

impl BatchSummary {
    /// One line for people.
    pub fn line(&self) -> String {
        let count = |s: &str| self.by_status.get(s).copied().unwrap_or(0);
        format!(
            "{} jobs in {:.2} s ({:.1} jobs/s): ok {}, error {}, timeout {}, cpu {}, memory {}, other {}; {} skipped (already done)",
            self.ran,
            self.wall_sec,
            self.jobs_per_sec,
            count("ok"),
            count("error"),
            count("timeout"),
            count("cpu_exhausted"),
            count("memory_exhausted"),
            self.ran
                - count("ok")
                - count("error")
                - count("timeout")
                - count("cpu_exhausted")
                - count("memory_exhausted"),
            self.skipped,
        )
    }
}

/// Ids that already have a result line in `out` (a missing file has none).
pub fn finished_ids(out: &Path) -> std::io::Result<HashSet<String>> {
    let mut done = HashSet::new();
    let f = match std::fs::File::open(out) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(done),
        Err(e) => return Err(e),
    };
    for line in std::io::BufReader::new(f).lines() {
        let line = line?;
        // A torn last line (the batch was killed mid-write) is ignored and
        // its job runs again.
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
            && let Some(id) = v.get("id").and_then(|i| i.as_str())
        {
            done.insert(id.to_owned());
        }
    }
    Ok(done)
}

enum Parsed {
    Job(Box<BatchJob>),
    Bad { id: String, message: String },
}

fn parse_line(n: usize, line: &str) -> Parsed {
    if line.len() > MAX_JOB_LINE_BYTES {
        return Parsed::Bad {
            id: format!("line-{n}"),
            message: format!("the job line is longer than {MAX_JOB_LINE_BYTES} bytes"),
        };
    }
    match serde_json::from_str::<BatchJob>(line) {
        Ok(job) if job.id.is_empty() || job.id.len() > MAX_ID_BYTES => Parsed::Bad {
            id: format!("line-{n}"),
            message: format!("the job id must be 1-{MAX_ID_BYTES} bytes"),
        },
        Ok(job) => Parsed::Job(Box::new(job)),
        Err(e) => {
            // Keep the id when the line has one, so the caller can match it.
            let id = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("id").and_then(|i| i.as_str()).map(str::to_owned))
                .filter(|i| !i.is_empty() && i.len() <= MAX_ID_BYTES)
                .unwrap_or_else(|| format!("line-{n}"));
            Parsed::Bad {
                id,
                message: format!("invalid job: {e}"),
            }
        }
    }
}

fn result_line(id: &str, r: &RunResult) -> String {
    let mut v =
        serde_json::to_value(r).unwrap_or_else(|_| serde_json::json!({"status": "refused"}));
    if let Some(m) = v.as_object_mut() {
        m.insert("id".into(), serde_json::Value::String(id.to_owned()));
    }
    v.to_string()
}

/// Runs every job of `jobs` (JSON Lines) with `sandbox`, appending one
/// result line per job to `out`. Jobs whose id is already in `out` are
/// skipped.
pub async fn run_batch(
    sandbox: Arc<Sandbox>,
    jobs: impl BufRead + Send,
    out: &Path,
    opts: &BatchOptions,
) -> std::io::Result<BatchSummary> {
    let started = Instant::now();
    let done = finished_ids(out)?;
    let writer = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out)?,
    ));
    let components: Arc<Mutex<HashMap<PathBuf, Result<crate::guest::Guest, String>>>> =
        Arc::default();
    let summary = Arc::new(Mutex::new(BatchSummary::default()));
    let bar = opts.progress.then(|| {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos} jobs, {per_sec}, {elapsed} {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        b.enable_steady_tick(Duration::from_millis(200));
        b
    });
    let mut seen: HashSet<String> = HashSet::new();
    let mut read_error = None;
    let mut skipped = 0u64;
    let mut queue = Vec::new();
    for (n, line) in jobs.lines().enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                read_error = Some(e);
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let parsed = parse_line(n + 1, &line);
        let id = match &parsed {
            Parsed::Job(j) => j.id.clone(),
            Parsed::Bad { id, .. } => id.clone(),
        };
        if done.contains(&id) {
            skipped += 1;
            continue;
        }
        let parsed = if seen.insert(id.clone()) {
            parsed
        } else {
            Parsed::Bad {
                id: format!("{id}#line-{}", n + 1),
                message: "duplicate job id".into(),
            }
        };
        queue.push(parsed);
    }
    // Each job is its own task, so that jobs run on every worker thread of
    // the runtime (a wasm guest runs inside its task's poll); at most
    // `concurrency` are in flight.
    let results = futures::stream::iter(queue).map(|parsed| {
        let sandbox = sandbox.clone();
        let components = components.clone();
        let task = tokio::spawn(async move {
            match parsed {
                Parsed::Bad { id, message } => {
                    let r = RunResult::refused(
                        crate::run::new_run_id(),
                        sandbox.isolation(),
                        "invalid_request",
                        message,
                    );
                    (id, r)
                }
                Parsed::Job(job) => {
                    let r = run_job(&sandbox, &components, &job).await;
                    (job.id, r)
                }
            }
        });
        // A job task cannot panic on guest input; if one did, the batch
        // goes on and that job has no line (a rerun retries it).
        async move { task.await.ok() }
    });
    let mut results = results.buffer_unordered(opts.concurrency.max(1));
    while let Some(done) = results.next().await {
        let Some((id, r)) = done else { continue };
        let line = result_line(&id, &r);
        {
            let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
            writeln!(w, "{line}")?;
            w.flush()?;
        }
        let mut s = summary.lock().unwrap_or_else(|p| p.into_inner());
        s.ran += 1;
        *s.by_status.entry(r.status.as_str().to_owned()).or_insert(0) += 1;
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(e) = read_error {
        return Err(e);
    }
    let mut s = summary.lock().unwrap_or_else(|p| p.into_inner()).clone();
    s.skipped = skipped;
    s.wall_sec = started.elapsed().as_secs_f64();
    s.jobs_per_sec = if s.wall_sec > 0.0 {
        s.ran as f64 / s.wall_sec
    } else {
        0.0
    };
    Ok(s)
}

async fn run_job(
    sandbox: &Sandbox,
    components: &Mutex<HashMap<PathBuf, Result<crate::guest::Guest, String>>>,
    job: &BatchJob,
) -> RunResult {
    let mut req = RunRequest {
        language: job.language,
        component: job.component.clone(),
        code: job.code.clone(),
        stdin: job.stdin.clone(),
        files: job.files.clone(),
        grants: job.grants.clone(),
        limits: job.limits,
        ..RunRequest::default()
    };
    // A component that is not a registered name is a path to a .wasm file,
    // loaded once per batch.
    if let Some(name) = &job.component
        && sandbox.component(name).is_none()
    {
        let path = PathBuf::from(name);
        let guest = {
            let cached = components
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&path)
                .cloned();
            match cached {
                Some(g) => g,
                None => {
                    let g = sandbox
                        .runtime()
                        .load_file(&path)
                        .map_err(|e| e.to_string());
                    components
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(path.clone(), g.clone());
                    g
                }
            }
        };
        return match guest {
            Ok(g) => {
                req.component = None;
                sandbox.run_guest(&g, &req).await
            }
            Err(message) => RunResult::refused(
                crate::run::new_run_id(),
                sandbox.isolation(),
                "unknown_component",
                format!("component {name:?}: {message}"),
            ),
        };
    }
    let r = sandbox.run(&req).await;
    debug_assert!(r.status != Status::Refused || r.error.is_some());
    r
}
