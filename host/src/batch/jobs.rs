//! Reading a jobs file: line by line, each line under a bound, each
//! parsed into a job or a refusal with the job's id when it has one.
//!
//! Guarantees: at most [`MAX_JOB_LINE_BYTES`] (plus one) of any line is
//! held in memory — the rest of a longer line is skipped unkept and the
//! line is a refused job ([`JobLine::TooLong`]), as is a line that is not
//! UTF-8; a job id is 1 to [`MAX_ID_BYTES`] bytes; a read that blocks
//! (a slow pipe) does not hold up the runtime's other tasks.

use super::{BatchJob, MAX_ID_BYTES, MAX_JOB_LINE_BYTES};
use std::io::{BufRead, Read};

/// A job line, parsed.
pub(super) enum Parsed {
    Job(Box<BatchJob>),
    Bad { id: String, message: String },
}

/// One line of a jobs file, as read under its bound.
#[derive(Debug, PartialEq)]
pub(super) enum JobLine {
    Text(String),
    /// Longer than [`MAX_JOB_LINE_BYTES`]; the rest of it was skipped
    /// without being kept.
    TooLong,
    NotUtf8,
}

/// Reads a jobs file line by line, keeping at most [`MAX_JOB_LINE_BYTES`]
/// (plus one) of any line in memory.
pub(super) struct JobLines<R> {
    reader: R,
    line_no: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> JobLines<R> {
    pub(super) fn new(reader: R) -> Self {
        JobLines {
            reader,
            line_no: 0,
            buf: Vec::new(),
        }
    }

    /// The next line and its 1-based number; `None` at the end.
    pub(super) fn next_line(&mut self) -> std::io::Result<Option<(usize, JobLine)>> {
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
pub(super) fn next_line_in_place<R: BufRead>(
    lines: &mut JobLines<R>,
) -> std::io::Result<Option<(usize, JobLine)>> {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
            tokio::task::block_in_place(|| lines.next_line())
        }
        _ => lines.next_line(),
    }
}

/// Line `n` of the jobs file as a job, or a refusal naming its id.
pub(super) fn parse_line(n: usize, line: &str) -> Parsed {
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
