//! The results file: which ids it holds already, and a result appended as
//! one whole line.
//!
//! Guarantees: a line is written in one write, newline included, and
//! flushed, so a batch killed mid-line leaves at most that line torn; a
//! torn last line (possibly ending inside a character) is ignored, its job
//! runs again, and the next result starts a line of its own.

use super::BatchSummary;
use crate::run::RunResult;
use std::collections::HashSet;
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::sync::Mutex;

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

/// A job's result as one JSON line, its id added.
fn result_line(id: &str, r: &RunResult) -> String {
    let mut v =
        serde_json::to_value(r).unwrap_or_else(|_| serde_json::json!({"status": "refused"}));
    if let Some(m) = v.as_object_mut() {
        m.insert("id".into(), serde_json::Value::String(id.to_owned()));
    }
    v.to_string()
}

/// Opens `out` for appending result lines. A last line without its
/// newline (a batch killed mid-write) is ended first, so that the next
/// result starts a line of its own instead of being glued to the torn one
/// and lost with it.
pub(super) fn open_for_results(out: &Path) -> std::io::Result<std::fs::File> {
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
pub(super) fn record(
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
