//! Tests of batches: bounded job lines, torn result lines, and jobs read
//! as the batch goes.

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
        guest: None,
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
        guest: None,
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
    let jobs: &[u8] = b"\xff\xfe\n{\"id\": \"after\", \"language\": \"python\", \"code\": \"1\"}\n";
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
