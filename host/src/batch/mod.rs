//! Batch mode for benchmark harnesses: many independent jobs from a JSON
//! Lines file, run in parallel on all cores, one result line per job.
//!
//! Every job gets a fresh instance. A failing, hostile or malformed job
//! never stops the batch: it gets a result line like any other. Results are
//! appended and flushed one line at a time, so a batch that is interrupted
//! can be rerun with the same output file and skips the ids already there.
//!
//! The jobs file is read as the batch goes, never ahead of the jobs in
//! flight by more than one line: a batch of any length holds at most
//! `concurrency` jobs in memory (plus the ids seen so far, for duplicates),
//! and its first job starts at once. Each line is read with a bound
//! ([`MAX_JOB_LINE_BYTES`]); a longer line, or one that is not UTF-8, is a
//! refused job, not the end of the batch.
//!
//! Reading the jobs file is `jobs`; the results file (ids already done,
//! result lines appended whole, a torn last line ended) is `results`.

mod jobs;
mod results;
#[cfg(test)]
mod tests;

use jobs::{JobLine, JobLines, Parsed, next_line_in_place, parse_line};
pub use results::finished_ids;
use results::{open_for_results, record};

use crate::blob::Blob;
use crate::envelope::Limits;
use crate::run::{InputFile, Language, RunRequest, RunResult, Status};
use crate::sandbox::Sandbox;
use futures::StreamExt;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
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
    /// The interpreter guest for `language` (`"scientific"` for Python's
    /// scientific guest); as a run request's `guest`.
    #[serde(default)]
    pub guest: Option<String>,
}

/// How to run a batch.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Jobs in flight at once.
    pub concurrency: usize,
    /// Show a progress bar on stderr.
    pub progress: bool,
    /// The interpreter guest of a job that names none (`--guest`).
    pub guest: Option<String>,
}

impl Default for BatchOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        BatchOptions {
            concurrency: cores * 2,
            progress: false,
            guest: None,
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
    let writer = Arc::new(Mutex::new(open_for_results(out)?));
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
    let mut lines = JobLines::new(jobs);
    // Lazy: `buffer_unordered` below pulls the next job only when one of
    // its `concurrency` places is free.
    let queue = std::iter::from_fn(|| {
        loop {
            let (n, line) = match next_line_in_place(&mut lines) {
                Ok(Some(l)) => l,
                Ok(None) => return None,
                Err(e) => {
                    read_error = Some(e);
                    return None;
                }
            };
            let parsed = match line {
                JobLine::Text(t) if t.trim().is_empty() => continue,
                JobLine::Text(t) => parse_line(n, &t),
                JobLine::TooLong => Parsed::Bad {
                    id: format!("line-{n}"),
                    message: format!("the job line is longer than {MAX_JOB_LINE_BYTES} bytes"),
                },
                JobLine::NotUtf8 => Parsed::Bad {
                    id: format!("line-{n}"),
                    message: "the job line is not UTF-8".into(),
                },
            };
            let id = match &parsed {
                Parsed::Job(j) => j.id.clone(),
                Parsed::Bad { id, .. } => id.clone(),
            };
            if done.contains(&id) {
                skipped += 1;
                continue;
            }
            return Some(if seen.insert(id.clone()) {
                parsed
            } else {
                Parsed::Bad {
                    id: format!("{id}#line-{n}"),
                    message: "duplicate job id".into(),
                }
            });
        }
    });
    // Each job is its own task, so that jobs run on every worker thread of
    // the runtime (a wasm guest runs inside its task's poll); at most
    // `concurrency` are in flight. Each task writes its own result line as
    // it ends: the loop below also reads the jobs file, and a read may wait
    // on a harness that sends the next job only once it has seen this one's
    // result.
    let default_guest = opts.guest.clone();
    let results = futures::stream::iter(queue).map(|parsed| {
        let sandbox = sandbox.clone();
        let default_guest = default_guest.clone();
        let components = components.clone();
        let writer = writer.clone();
        let summary = summary.clone();
        let bar = bar.clone();
        let task = tokio::spawn(async move {
            let (id, r) = match parsed {
                Parsed::Bad { id, message } => {
                    let r = RunResult::refused(
                        crate::run::new_run_id(),
                        sandbox.isolation(),
                        "invalid_request",
                        message,
                    );
                    (id, r)
                }
                Parsed::Job(mut job) => {
                    if job.guest.is_none() {
                        job.guest = default_guest;
                    }
                    let r = run_job(&sandbox, &components, &job).await;
                    (job.id, r)
                }
            };
            record(&writer, &summary, bar.as_ref(), &id, &r)
        });
        // A job task cannot panic on guest input; if one did, the batch
        // goes on and that job has no line (a rerun retries it).
        async move { task.await.ok() }
    });
    let mut results = results.buffer_unordered(opts.concurrency.max(1));
    while let Some(done) = results.next().await {
        // The output cannot be written (a full disk): stop here rather
        // than run jobs whose results would be lost.
        if let Some(Err(e)) = done {
            return Err(e);
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    // The stream borrows the reader's state; release it to read that.
    drop(results);
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
        guest: job.guest.clone(),
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
