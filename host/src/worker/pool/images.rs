//! Guest images for workers: each guest written once into the image
//! directory (mode 0755, owned by this user; core images left
//! half-written by a dead supervisor swept at start) and named as a worker
//! sees it, under `/guests`.
//!
//! Guarantees: every new worker loads the components; a core module's
//! image is loaded only by a worker that runs it. Where a wrapper fixes a
//! worker's images when it starts (a VM), a worker is only used for a
//! guest whose image it can see: warm workers that cannot are retired when
//! an image is added, and a bound one is replaced by one that can, which
//! takes over its share.

use super::Pool;
use super::affinity::Pooled;
use super::process::Worker;
use crate::guest::Guest;
use crate::run::ErrorInfo;
use crate::runtime::Runtime;
use crate::worker::protocol::{GuestImage, ImageKind};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

impl Pool {
    /// The images every new worker loads: the components. A core-module
    /// guest's image (tens of megabytes of trees, hundreds of code) is
    /// loaded only by a worker that runs it: on its first run where the
    /// worker sees the live image directory, or by a worker started for it
    /// where it does not ([`Pool::with_images`]).
    pub(super) fn guest_images(&self) -> Vec<GuestImage> {
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|i| i.kind == ImageKind::Component)
            .cloned()
            .collect()
    }

    /// Whether `w` can load every image known now (always, unless the
    /// wrapper fixes a worker's images when it starts).
    pub(super) fn can_run_every_image(&self, w: &Worker) -> bool {
        !self.wrapper.images_fixed_at_start()
            || self
                .images
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .filter(|i| i.kind == ImageKind::Component)
                .all(|i| w.images.contains(&i.path))
    }

    /// The image a worker loads for `guest`; for a shell, with the images
    /// of the interpreters its `python3` and `node` start.
    pub(super) fn image_for(&self, guest: &Guest) -> Result<GuestImage, ErrorInfo> {
        let mut img = self.plain_image_for(guest)?;
        if let Some(programs) = guest.programs() {
            if let Some(py) = &programs.python {
                img.python = Some(Box::new(self.plain_image_for(py)?));
            }
            if let Some(node) = &programs.node {
                img.node = Some(Box::new(self.plain_image_for(node)?));
            }
        }
        Ok(img)
    }

    fn plain_image_for(&self, guest: &Guest) -> Result<GuestImage, ErrorInfo> {
        if let Some(img) = self
            .images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(guest.identity())
        {
            return Ok(img.clone());
        }
        let img =
            write_image(&self.runtime, guest, &self.config.image_dir).map_err(|e| ErrorInfo {
                code: "worker_unavailable".into(),
                message: format!("could not write the guest's image for workers: {e}"),
            })?;
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(guest.identity().to_owned(), img.clone());
        if self.wrapper.images_fixed_at_start() && img.kind == ImageKind::Component {
            // Idle workers that cannot see the new image are retired, so
            // that the warm set (refilled by the run that follows) has it.
            // (A core image is never in the warm set: see `guest_images`.)
            let stale: Vec<Pooled> = self
                .unbound
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .drain(..)
                .collect();
            drop(stale);
        }
        Ok(img)
    }

    /// `p`, if it can load every image of `images`; else a new worker
    /// that can, which takes over `p`'s share (a VM sees only the images
    /// that existed when it booted).
    pub(super) async fn with_images(
        pool: &Arc<Pool>,
        mut p: Pooled,
        images: &[GuestImage],
    ) -> Result<Pooled, ErrorInfo> {
        let images = crate::worker::protocol::flatten_images(images);
        if !pool.wrapper.images_fixed_at_start()
            || images.iter().all(|i| p.worker.images.contains(&i.path))
        {
            return Ok(p);
        }
        let share = p.share.take();
        drop(p);
        let mut p = pool.start_now_with(&images).await?;
        p.share = share;
        Ok(p)
    }
}

/// Writes `guest`'s image into `dir` (unless it is there) and names it as
/// a worker sees it, under `/guests`.
pub(super) fn write_image(
    runtime: &Runtime,
    guest: &Guest,
    dir: &Path,
) -> std::io::Result<GuestImage> {
    let name = runtime.write_image(guest, dir)?;
    Ok(GuestImage {
        path: format!("/guests/{name}"),
        hash: guest.content_hash().to_owned(),
        family: guest.family().to_owned(),
        kind: if guest.is_core_module() {
            ImageKind::Core
        } else {
            ImageKind::Component
        },
        python: None,
        node: None,
    })
}

pub(super) fn create_image_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    std::fs::create_dir_all(dir)?;
    let md = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if !md.is_dir() || md.uid() != me {
        return Err(std::io::Error::other(format!(
            "{} must be a directory owned by this user",
            dir.display()
        )));
    }
    // Workers (another uid inside their boundary) read the images; only
    // this user writes them.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    sweep_partial_images(dir);
    Ok(())
}

/// Removes core images left half-written (`.core-*`, hundreds of MB each)
/// by a supervisor that died while writing them; one younger than an hour
/// may still be another supervisor's write in progress and is left alone.
fn sweep_partial_images(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let stale = e
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(3600));
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && stale && name.to_string_lossy().starts_with(".core-") {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
