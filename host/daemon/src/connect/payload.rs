//! The payloads of `Run` and `SessionRun` (JavaScript, a project, a
//! module, a cell), parsed within the protocol's limits.

use super::*;

pub(super) fn files(m: &Msg<'_>) -> Result<Vec<File>, ConnectError> {
    let n = m.count("files").map_err(|e| invalid(e.0))?;
    if n > MAX_FILES {
        return Err(invalid(format!("too many files (at most {MAX_FILES})")));
    }
    let mut out = Vec::with_capacity(n);
    let mut total = 0usize;
    for f in m.msgs("files").map_err(|e| invalid(e.0))? {
        let path = f.str("path").map_err(|e| invalid(e.0))?;
        let content = f.str("content").map_err(|e| invalid(e.0))?;
        total = total.saturating_add(content.len());
        if total > MAX_FILE_BYTES {
            return Err(invalid(format!(
                "the files hold more than {MAX_FILE_BYTES} bytes"
            )));
        }
        if !plimsoll::workspace::is_plain_relative_path(&path) {
            return Err(invalid(format!(
                "files[{}].path is not a plain relative path",
                out.len()
            )));
        }
        out.push(File { path, content });
    }
    Ok(out)
}

pub(super) fn input_files(fs: &[File]) -> Vec<InputFile> {
    fs.iter()
        .map(|f| InputFile {
            path: f.path.clone(),
            content: f.content.as_str().into(),
        })
        .collect()
}

/// The payload of a Run or a SessionRun, exactly one of four.
pub(super) fn payload(m: &Msg<'_>) -> Result<Payload, ConnectError> {
    let bad = |e: json::Invalid| invalid(e.0);
    let mut present = Vec::new();
    for k in ["javascript", "project", "module", "cell"] {
        if m.has(k).map_err(bad)? {
            present.push(k);
        }
    }
    if present.len() != 1 {
        return Err(invalid(
            "the request needs exactly one payload: javascript, project, module or cell",
        ));
    }
    let Some(p) = m.msg(present[0]).map_err(bad)? else {
        return Ok(Payload::None);
    };
    Ok(match present[0] {
        "javascript" => Payload::Javascript {
            code: p.str("code").map_err(bad)?,
            grant_profile: p.str("grantProfile").map_err(bad)?,
        },
        "cell" => Payload::Cell {
            language: p.str("language").map_err(bad)?,
            code: p.str("code").map_err(bad)?,
            files: files(&p)?,
        },
        "project" => {
            let steps = p.strs("steps").map_err(bad)?;
            let artifacts = p.strs("artifacts").map_err(bad)?;
            if artifacts.len() > MAX_ARTIFACTS {
                return Err(invalid(format!(
                    "too many artifacts (at most {MAX_ARTIFACTS})"
                )));
            }
            Payload::Project {
                grant_profile: p.str("grantProfile").map_err(bad)?,
                files: files(&p)?,
                steps,
                artifacts,
            }
        }
        _ => Payload::Module {
            model: p.str("model").map_err(bad)?,
            end_time: p.float("endTime").map_err(bad)?,
            step: p.float("step").map_err(bad)?,
            rows: p
                .msgs("rows")
                .map_err(bad)?
                .iter()
                .map(|r| r.floats("values"))
                .collect::<Result<_, _>>()
                .map_err(bad)?,
        },
    })
}
