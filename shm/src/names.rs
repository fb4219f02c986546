//! The sweep that removes what a job left behind in a directory, by the
//! names of its files.
//!
//! The names themselves (the segment, the node collectives' regions, each
//! rank's wake directory: all `ferry-<job id>…` in the segment directory,
//! [`ShmOptions::dir`](crate::ShmOptions::dir), `FERRY_SHM_DIR`) are
//! `ferry_core::shared_files`, which the device names its files with and
//! the launcher (`ferryrun`) takes its list of what to sweep from. The
//! device removes its segment and wake directories as soon as every local
//! rank has attached; a rank killed before that leaves them, and the
//! launcher sweeps them with [`remove_job_files`] at the end of the job.
//!
//! The job id is visible to other users (it is in these names), so the
//! sweep removes only entries owned by this user: another user's file
//! with the job's prefix is left alone and reported, never a reason to
//! fail.

use std::io;
use std::path::Path;

pub use ferry_core::shared_files::{job_prefix, FILE_PREFIX};

/// What [`remove_job_files`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Swept {
    /// The names removed (files, and wake directories with their
    /// contents), sorted.
    pub removed: Vec<String>,
    /// Entries with the job's prefix that another user owns: left alone
    /// (planted by someone who saw the job id), sorted.
    pub foreign: Vec<String>,
}

/// Removes every entry of `dir` whose name starts with the prefix of job
/// `job_id` and that this user owns (directories with their contents),
/// and lists the others. A missing `dir` is not an error; entries that
/// vanish meanwhile (a rank unlinking its own segment) are skipped.
///
/// # Errors
/// If `dir` cannot be listed, or an entry of ours exists but cannot be
/// removed.
pub fn remove_job_files(dir: &Path, job_id: &str) -> io::Result<Swept> {
    remove_prefixed(dir, &job_prefix(job_id))
}

/// [`remove_job_files`] for any prefix: removes the entries of `dir` whose
/// name starts with `prefix` and that this user owns, and lists the others
/// (`ferryrun` sweeps every prefix of `ferry_core::shared_files::leftovers`
/// with it, the ofi device's shm-provider regions too).
///
/// # Errors
/// As [`remove_job_files`].
pub fn remove_prefixed(dir: &Path, prefix: &str) -> io::Result<Swept> {
    use std::os::unix::fs::MetadataExt;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Swept::default()),
        Err(e) => return Err(e),
    };
    let me = rustix::process::geteuid().as_raw();
    let mut swept = Swept::default();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(prefix) {
            continue;
        }
        let path = entry.path();
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if meta.uid() != me {
            swept.foreign.push(name.to_owned());
            continue;
        }
        let result = if meta.file_type().is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match result {
            Ok(()) => swept.removed.push(name.to_owned()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("removing {}: {e}", path.display()),
                ))
            }
        }
    }
    swept.removed.sort();
    swept.foreign.sort();
    Ok(swept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_core::shared_files::wake_dir_name;

    #[test]
    fn removes_only_this_jobs_files() {
        let id = format!(
            "{:032x}",
            0x5eed_u128 << 64 | u128::from(std::process::id())
        );
        let other = format!(
            "{:032x}",
            0xcafe_u128 << 64 | u128::from(std::process::id())
        );
        let dir = std::env::temp_dir().join(format!("ferry-names-test-{id}"));
        std::fs::create_dir(&dir).unwrap();
        for name in [
            format!("ferry-{id}-seg1"),
            format!("ferry-{id}"),
            format!("ferry-{other}-seg"),
            "unrelated".to_owned(),
        ] {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        // A wake directory left by a killed rank, with its socket.
        let wake = dir.join(wake_dir_name(&id, "0123456789abcdef"));
        std::fs::create_dir(&wake).unwrap();
        std::fs::write(wake.join("s"), b"").unwrap();
        let swept = remove_job_files(&dir, &id).unwrap();
        assert_eq!(
            swept.removed,
            [
                format!("ferry-{id}"),
                format!("ferry-{id}-seg1"),
                format!("ferry-{id}-w0123456789abcdef")
            ]
        );
        assert!(swept.foreign.is_empty());
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, [format!("ferry-{other}-seg"), "unrelated".to_owned()]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(remove_job_files(&dir, &id).unwrap(), Swept::default());
    }
}
