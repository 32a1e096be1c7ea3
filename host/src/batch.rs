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

use crate::blob::Blob;
use crate::envelope::Limits;
use crate::run::{InputFile, Language, RunRequest, RunResult, Status};
use crate::sandbox::Sandbox;
use futures::StreamExt;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, Read, Write};
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
    // Lines as bytes: a torn last line (the batch was killed mid-write) may
    // end inside a multi-byte character. It is ignored, as any line that is
    // not a result, and its job runs again.
    for line in std::io::BufReader::new(f).split(b'\n') {
        let line = line?;
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line)
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

/// One line of a jobs file, as read under its bound.
#[derive(Debug, PartialEq)]
enum JobLine {
    Text(String),
    /// Longer than [`MAX_JOB_LINE_BYTES`]; the rest of it was skipped
    /// without being kept.
    TooLong,
    NotUtf8,
}

/// Reads a jobs file line by line, keeping at most [`MAX_JOB_LINE_BYTES`]
/// (plus one) of any line in memory.
struct JobLines<R> {
    reader: R,
    line_no: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> JobLines<R> {
    fn new(reader: R) -> Self {
        JobLines {
            reader,
            line_no: 0,
            buf: Vec::new(),
        }
    }

    /// The next line and its 1-based number; `None` at the end.
    fn next_line(&mut self) -> std::io::Result<Option<(usize, JobLine)>> {
        self.buf.clear();
        let limit = MAX_JOB_LINE_BYTES as u64 + 1;
        let read = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)?;
        if read == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        } else if self.buf.len() as u64 == limit {
            self.skip_rest_of_line()?;
            return Ok(Some((self.line_no, JobLine::TooLong)));
        }
        let line = match String::from_utf8(std::mem::take(&mut self.buf)) {
            Ok(t) => JobLine::Text(t),
            Err(_) => JobLine::NotUtf8,
        };
        Ok(Some((self.line_no, line)))
    }

    /// Consumes input up to and including the next newline, keeping none.
    fn skip_rest_of_line(&mut self) -> std::io::Result<()> {
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(());
            }
            match available.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.reader.consume(i + 1);
                    return Ok(());
                }
                None => {
                    let n = available.len();
                    self.reader.consume(n);
                }
            }
        }
    }
}

/// Reads the next line without holding up the runtime's other tasks.
///
/// The read may block (standard input fed by a slow pipe) while jobs are in
/// flight, and a task this one spawned may sit in this worker's own queue;
/// on a multi-threaded runtime the worker's queue is handed to another
/// thread for the duration (`block_in_place`). A current-thread runtime
/// has nobody to hand it to and reads directly.
fn next_line_in_place<R: BufRead>(
    lines: &mut JobLines<R>,
) -> std::io::Result<Option<(usize, JobLine)>> {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
            tokio::task::block_in_place(|| lines.next_line())
        }
        _ => lines.next_line(),
    }
}

fn parse_line(n: usize, line: &str) -> Parsed {
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
    let results = futures::stream::iter(queue).map(|parsed| {
        let sandbox = sandbox.clone();
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
                Parsed::Job(job) => {
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

/// Opens `out` for appending result lines. A last line without its
/// newline (a batch killed mid-write) is ended first, so that the next
/// result starts a line of its own instead of being glued to the torn one
/// and lost with it.
fn open_for_results(out: &Path) -> std::io::Result<std::fs::File> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(out)?;
    if f.metadata()?.len() > 0 {
        f.seek(SeekFrom::End(-1))?;
        let mut last = [0u8; 1];
        f.read_exact(&mut last)?;
        if last[0] != b'\n' {
            f.write_all(b"\n")?;
        }
    }
    Ok(f)
}

/// Appends a job's result line to the output and counts it.
fn record(
    writer: &Mutex<std::fs::File>,
    summary: &Mutex<BatchSummary>,
    bar: Option<&indicatif::ProgressBar>,
    id: &str,
    r: &RunResult,
) -> std::io::Result<()> {
    let line = result_line(id, r);
    {
        let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
        // One write per line, newline included, so that a batch killed
        // mid-line leaves at most that line torn.
        w.write_all(format!("{line}\n").as_bytes())?;
        w.flush()?;
    }
    let mut s = summary.lock().unwrap_or_else(|p| p.into_inner());
    s.ran += 1;
    *s.by_status.entry(r.status.as_str().to_owned()).or_insert(0) += 1;
    if let Some(b) = bar {
        b.inc(1);
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn lines_of(input: &[u8]) -> Vec<(usize, JobLine)> {
        // A small buffer, so that lines cross `fill_buf` boundaries.
        let mut r = JobLines::new(BufReader::with_capacity(7, input));
        let mut out = Vec::new();
        while let Some(l) = r.next_line().expect("reading from memory") {
            out.push(l);
        }
        out
    }

    fn text(t: &str) -> JobLine {
        JobLine::Text(t.to_owned())
    }

    #[test]
    fn job_lines_are_bounded_and_typed() {
        let mut input = b"a\r\nb\n\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_JOB_LINE_BYTES + 10));
        input.extend(b"\nc\n\xff\xfe\nlast");
        assert_eq!(
            lines_of(&input),
            vec![
                (1, text("a")),
                (2, text("b")),
                (3, text("")),
                (4, JobLine::TooLong),
                (5, text("c")),
                (6, JobLine::NotUtf8),
                (7, text("last")),
            ]
        );
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_read_and_one_byte_more_is_not() {
        let mut input = vec![b'y'; MAX_JOB_LINE_BYTES];
        input.push(b'\n');
        input.extend(std::iter::repeat_n(b'z', MAX_JOB_LINE_BYTES + 1));
        input.push(b'\n');
        input.extend(b"next\n");
        let got = lines_of(&input);
        assert_eq!(got.len(), 3);
        assert!(matches!(&got[0], (1, JobLine::Text(t)) if t.len() == MAX_JOB_LINE_BYTES));
        assert_eq!(got[1], (2, JobLine::TooLong));
        assert_eq!(got[2], (3, text("next")));
    }

    /// Hands out `total` malformed job lines, one per read, and records how
    /// far reading ever got ahead of the result lines in `out`.
    struct PacedJobs {
        next: usize,
        total: usize,
        out: PathBuf,
        max_ahead: Arc<AtomicUsize>,
    }

    impl std::io::Read for PacedJobs {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.next == self.total {
                return Ok(0);
            }
            let written = std::fs::read_to_string(&self.out)
                .map(|s| s.lines().count())
                .unwrap_or(0);
            self.max_ahead
                .fetch_max(self.next.saturating_sub(written), Ordering::SeqCst);
            let line = format!("not json {}\n", self.next);
            if buf.len() < line.len() {
                return Err(std::io::Error::other("the test's buffer is too small"));
            }
            buf[..line.len()].copy_from_slice(line.as_bytes());
            self.next += 1;
            Ok(line.len())
        }
    }

    #[test]
    fn a_torn_last_result_line_is_ignored_not_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("results.jsonl");
        let whole = r#"{"id":"a","stdout":"café"}"#;
        let mut torn = "{\"id\":\"b\",\"stdout\":\"caf\u{e9}".as_bytes().to_vec();
        torn.pop(); // half of the two bytes of `é`
        let mut bytes = format!("{whole}\n").into_bytes();
        bytes.extend(torn);
        std::fs::write(&out, bytes).expect("write");
        let done = finished_ids(&out).expect("a torn line is not an error");
        assert_eq!(done, HashSet::from(["a".to_owned()]));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_rerun_after_a_torn_line_writes_its_results_on_lines_of_their_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("results.jsonl");
        std::fs::write(&out, b"{\"id\":\"a\"}\n{\"id\":\"b\",\"std").expect("write");
        let jobs: &[u8] = b"not json\n";
        let summary = run_batch(sandbox(), jobs, &out, &BatchOptions::default())
            .await
            .expect("the batch runs");
        assert_eq!(summary.ran, 1);
        let text = std::fs::read_to_string(&out).expect("results");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(
            lines[1], "{\"id\":\"b\",\"std",
            "the torn line stays as it was"
        );
        let last: serde_json::Value = serde_json::from_str(lines[2]).expect("a whole result line");
        assert_eq!(last["id"], "line-1");
        assert!(text.ends_with('\n'));
    }

    fn sandbox() -> Arc<Sandbox> {
        Arc::new(Sandbox::new(crate::sandbox::SandboxConfig::default()).expect("a default sandbox"))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_are_read_as_the_batch_goes_not_ahead_of_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("results.jsonl");
        let max_ahead = Arc::new(AtomicUsize::new(0));
        let jobs = PacedJobs {
            next: 0,
            total: 300,
            out: out.clone(),
            max_ahead: max_ahead.clone(),
        };
        let opts = BatchOptions {
            concurrency: 4,
            progress: false,
        };
        let summary = run_batch(sandbox(), BufReader::with_capacity(64, jobs), &out, &opts)
            .await
            .expect("the batch runs");
        assert_eq!(summary.ran, 300);
        let ahead = max_ahead.load(Ordering::SeqCst);
        assert!(
            ahead <= opts.concurrency + 1,
            "read {ahead} lines ahead of the results with {} in flight",
            opts.concurrency
        );
    }

    /// Standard input fed by a harness through a pipe: each read blocks
    /// until the harness sends the next line.
    struct PipedJobs(std::sync::mpsc::Receiver<Vec<u8>>);

    impl std::io::Read for PipedJobs {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Ok(line) = self.0.recv() else {
                return Ok(0); // the harness closed the pipe
            };
            if buf.len() < line.len() {
                return Err(std::io::Error::other("the test's buffer is too small"));
            }
            buf[..line.len()].copy_from_slice(&line);
            Ok(line.len())
        }
    }

    fn result_lines(out: &Path) -> usize {
        std::fs::read_to_string(out).map_or(0, |s| s.lines().count())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_jobs_pipe_does_not_hold_up_the_jobs_already_started() {
        // The harness sends the next job only once the last one has its
        // result. A job task waiting in the reading worker's own queue
        // while that worker blocks on the pipe would wait for a line that
        // never comes; the harness gives up after 10 s and says so.
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("results.jsonl");
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let watched = out.clone();
        let harness = std::thread::spawn(move || {
            let mut gave_up = 0;
            for i in 0..5 {
                if tx.send(format!("not json {i}\n").into_bytes()).is_err() {
                    break;
                }
                let deadline = Instant::now() + Duration::from_secs(10);
                while result_lines(&watched) < i + 1 {
                    if Instant::now() > deadline {
                        gave_up += 1;
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            gave_up
        });
        let opts = BatchOptions {
            concurrency: 4,
            progress: false,
        };
        // As an embedder would run it: on a worker thread of the runtime,
        // where the job tasks it spawns first queue.
        let batch_out = out.clone();
        let summary = tokio::spawn(async move {
            run_batch(sandbox(), BufReader::new(PipedJobs(rx)), &batch_out, &opts).await
        })
        .await
        .expect("the batch task")
        .expect("the batch runs");
        assert_eq!(summary.ran, 5);
        assert_eq!(
            harness.join().expect("the harness thread"),
            0,
            "a job's result waited for the next line of the pipe"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_line_that_is_not_utf8_is_a_refused_job_and_the_batch_goes_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("results.jsonl");
        let jobs: &[u8] =
            b"\xff\xfe\n{\"id\": \"after\", \"language\": \"python\", \"code\": \"1\"}\n";
        let summary = run_batch(sandbox(), jobs, &out, &BatchOptions::default())
            .await
            .expect("the batch runs");
        assert_eq!(summary.ran, 2);
        let results: Vec<serde_json::Value> = std::fs::read_to_string(&out)
            .expect("results")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a result line"))
            .collect();
        let mut ids: Vec<&str> = results.iter().filter_map(|r| r["id"].as_str()).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["after", "line-1"]);
        assert!(results.iter().all(|r| r["status"] == "refused"));
    }
}
