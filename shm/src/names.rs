//! The names of the files the shm device creates, and the sweep that
//! removes what a job left behind.
//!
//! Every file is `ferry-<job id>-<suffix>` in the segment directory
//! ([`ShmOptions::dir`](crate::ShmOptions::dir), `FERRY_SHM_DIR`). The job id
//! is the launcher's 128-bit random id, of fixed length, so one job's
//! prefix never matches another job's names. The device unlinks its
//! segment as soon as every local rank has mapped it; a rank killed before
//! that leaves the file, and the launcher (`ferryrun`) sweeps it with
//! [`remove_job_files`] at the end of the job.

use std::io;
use std::path::Path;

/// What every file of the device starts with.
pub const FILE_PREFIX: &str = "ferry-";

/// The prefix of every file of job `job_id`.
pub fn job_prefix(job_id: &str) -> String {
    format!("{FILE_PREFIX}{job_id}")
}

/// The name of a segment of job `job_id`, made unique by `nonce`.
pub(crate) fn segment_name(job_id: &str, nonce: u64) -> String {
    format!("{}-{nonce:016x}", job_prefix(job_id))
}

/// Whether `name` (read from a peer, through the bootstrap) can be a segment
/// name: one of ours, and a plain file name, not a path.
pub(crate) fn is_segment_name(name: &str) -> bool {
    !name.contains('/') && name.starts_with(FILE_PREFIX)
}

/// Removes every entry of `dir` whose name starts with the prefix of job
/// `job_id`, returning the names removed, sorted. A missing `dir` is not an
/// error; entries that vanish meanwhile (a rank unlinking its own segment)
/// are skipped.
///
/// # Errors
/// If `dir` cannot be listed, or an entry exists but cannot be removed.
pub fn remove_job_files(dir: &Path, job_id: &str) -> io::Result<Vec<String>> {
    let prefix = job_prefix(job_id);
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(&prefix) {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => removed.push(name.to_owned()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("removing {}: {e}", entry.path().display()),
                ))
            }
        }
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_carry_the_job_prefix() {
        let name = segment_name("abc", 0x1f);
        assert_eq!(name, "ferry-abc-000000000000001f");
        assert!(name.starts_with(&job_prefix("abc")));
        assert!(is_segment_name(&name));
        assert!(!is_segment_name("ferry-../../etc/passwd"));
        assert!(!is_segment_name("other-abc"));
    }

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
        let removed = remove_job_files(&dir, &id).unwrap();
        assert_eq!(removed, [format!("ferry-{id}"), format!("ferry-{id}-seg1")]);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, [format!("ferry-{other}-seg"), "unrelated".to_owned()]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(remove_job_files(&dir, &id).unwrap().is_empty());
    }
}
