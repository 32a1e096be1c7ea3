//! One run on a worker bound to its caller, and what the supervisor makes
//! of the worker's answer.
//!
//! Guarantees: an unverified pool runs nothing; the worker learns each
//! grant's name and origin only, never a credential; the supervisor makes
//! every broker call and keeps the CallTrace; nothing the worker reports
//! is trusted — isolation, guest, run id and trace are replaced, outputs
//! and artifacts re-capped and re-hashed ([`sanitize`]), and a worker that
//! had to be corrected, changed boot, or ended uncleanly is retired.

use super::Pool;
use super::affinity::reusable_after;
use super::process::clip;
use crate::broker::RunBroker;
use crate::envelope::Envelope;
use crate::grant::GrantSet;
use crate::guest::Guest;
use crate::run::{RunRequest, RunResult, Status};
use crate::tier::WorkerUse;
use crate::worker::protocol::GrantOrigin;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Pool {
    /// Runs `req` for `caller` on a worker bound to `caller`.
    #[allow(clippy::too_many_arguments)]
    pub async fn run(
        pool: &Arc<Pool>,
        caller: &str,
        guest: &Guest,
        req: &RunRequest,
        env: &Envelope,
        grants: GrantSet,
        run_id: String,
    ) -> RunResult {
        let iso = pool.isolation();
        let refuse = |code: &str, message: String| {
            let mut r = RunResult::refused(run_id.clone(), iso.clone(), code, message);
            r.guest = Some(guest.identity().to_owned());
            r
        };
        if !pool.verified {
            return refuse(
                "isolation_unverified",
                format!(
                    "the {} smoke test failed at start, so this provider runs nothing: {}",
                    pool.wrapper.name(),
                    iso.evidence.summary
                ),
            );
        }
        let image = match pool.image_for(guest) {
            Ok(i) => i,
            Err(e) => return refuse(&e.code, e.message),
        };
        let started = Instant::now();
        let p = match Pool::take(pool, caller).await {
            Ok(p) => p,
            Err(e) => return refuse(&e.code, e.message),
        };
        let mut p = match Pool::with_images(pool, p, std::slice::from_ref(&image)).await {
            Ok(p) => p,
            Err(e) => return refuse(&e.code, e.message),
        };
        let waited_ms = started.elapsed().as_secs_f64() * 1e3;
        let origins = origins_of(&grants);
        let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
        let broker = RunBroker::new(pool.runtime.broker().clone(), grants, env, deadline);
        let outcome = p
            .worker
            .run(run_id.clone(), image, req, env, origins, broker.clone())
            .await;
        let used = WorkerUse {
            worker_id: p.id.clone(),
            caller: caller.to_owned(),
            runs_before: p.runs,
            max_runs: pool.config.max_runs,
        };
        p.runs = p.runs.saturating_add(1);
        let (mut r, keep) = match outcome {
            Ok((mut r, boot_id)) => {
                let honest = r.run_id == run_id && sanitize(&mut r, env) == 0;
                let same_boot = boot_id == p.worker.boot_id;
                let keep = honest && same_boot && reusable_after(r.status);
                (r, keep)
            }
            Err(e) => {
                let mut r = RunResult::refused(
                    run_id.clone(),
                    iso.clone(),
                    "worker_lost",
                    clip(&e.to_string()),
                );
                r.status = Status::WorkerLost;
                (r, false)
            }
        };
        if keep && p.runs < pool.config.max_runs && p.born.elapsed() < pool.config.max_age {
            pool.give_back(caller, p);
        } else {
            drop(p);
        }
        r.run_id = run_id;
        r.isolation = iso;
        r.isolation.evidence.worker = Some(used);
        r.guest = Some(guest.identity().to_owned());
        r.calls = broker.trace();
        r.session_id = None;
        r.session_closed = false;
        r.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        r.usage.worker_wait_ms = Some(waited_ms);
        r
    }
}

/// What a worker may know of `grants`: each one's name and origin, for
/// routing `wasi:http` requests. Never a credential.
pub(super) fn origins_of(grants: &GrantSet) -> Vec<GrantOrigin> {
    grants
        .names()
        .filter_map(|n| {
            grants.get(n).map(|g| GrantOrigin {
                name: n.to_owned(),
                scheme: g.profile.origin.scheme.clone(),
                authority: g.profile.origin.authority.clone(),
            })
        })
        .collect()
}

/// Re-caps what a worker reported: its outputs and artifacts must fit the
/// envelope whatever it claims. Returns how many things had to be
/// corrected: an honest worker's result needs none, so any correction
/// means the worker lied and is retired.
pub(super) fn sanitize(r: &mut RunResult, env: &Envelope) -> usize {
    fn cap(s: &mut String, max: u64, flag: &mut bool) -> usize {
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        if s.len() > max {
            let mut cut = max;
            while cut > 0 && !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            *flag = true;
            return 1;
        }
        0
    }
    let mut corrected = 0;
    corrected += cap(&mut r.stdout, env.stdout_bytes, &mut r.stdout_truncated);
    corrected += cap(&mut r.stderr, env.stderr_bytes, &mut r.stderr_truncated);
    if let Some(v) = &mut r.result {
        corrected += cap(v, env.result_bytes, &mut r.result_truncated);
    }
    // Paths, sizes and hashes are checked again: a compromised worker could
    // name `../../etc/passwd` and an embedder might write artifacts out.
    let mut refused = Vec::new();
    r.artifacts.retain_mut(|a| {
        if !crate::workspace::is_plain_relative_path(&a.path) {
            refused.push(crate::run::RefusedArtifact {
                path: a.path.chars().take(256).collect(),
                reason: "invalid_path_from_worker".into(),
            });
            corrected += 1;
            return false;
        }
        let size = a.content.len() as u64;
        let sha256 = crate::component_cache::content_hash(a.content.as_bytes());
        if a.size != size || a.sha256 != sha256 {
            corrected += 1;
        }
        a.size = size;
        a.sha256 = sha256;
        true
    });
    r.artifacts_refused
        .truncate(usize::try_from(env.artifact_files).unwrap_or(usize::MAX));
    for ra in &mut r.artifacts_refused {
        ra.path = ra.path.chars().take(256).collect();
        ra.reason = ra.reason.chars().take(64).collect();
    }
    r.artifacts_refused.extend(refused);
    if let Some(e) = &mut r.error {
        e.code = e.code.chars().take(64).collect();
        e.message = e.message.chars().take(2048).collect();
    }
    let mut total = 0u64;
    let max_files = usize::try_from(env.artifact_files).unwrap_or(usize::MAX);
    if r.artifacts.len() > max_files {
        r.artifacts.truncate(max_files);
        r.artifacts_truncated = true;
        corrected += 1;
    }
    let before = r.artifacts.len();
    r.artifacts.retain(|a| {
        total = total.saturating_add(a.content.len() as u64);
        total <= env.artifact_bytes
    });
    if r.artifacts.len() != before {
        corrected += 1;
    }
    r.stdout_bytes = r.stdout.as_bytes().to_vec();
    r.stderr_bytes = r.stderr.as_bytes().to_vec();
    corrected
}
