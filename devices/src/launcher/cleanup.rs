//! Job ids and the `/dev/shm` sweep at the end of a job.

use std::io::{self, Read};
use std::path::Path;

/// Where POSIX shared memory lives on Linux.
pub const SHM_DIR: &str = "/dev/shm";

/// A fresh job id: 128 random bits from the kernel, as 32 hex digits.
/// Unguessable, so another user cannot pre-create the job's segment names,
/// and of fixed length, so one job's `ferry-<id>` prefix never matches
/// another job's names.
///
/// # Errors
/// If `/dev/urandom` cannot be read.
pub fn new_job_id() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Removes every entry of `dir` whose name starts with `ferry-<job_id>`,
/// returning the names removed. A missing `dir` is not an error; entries
/// that vanish meanwhile (a rank unlinking its own segment) are skipped.
///
/// # Errors
/// If `dir` cannot be listed, or an entry exists but cannot be removed.
pub fn remove_job_files(dir: &Path, job_id: &str) -> io::Result<Vec<String>> {
    let prefix = format!("ferry-{job_id}");
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
    fn job_ids_are_random_hex() {
        let a = new_job_id().unwrap();
        let b = new_job_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn removes_only_this_jobs_files() {
        let dir =
            std::env::temp_dir().join(format!("ferry-cleanup-test-{}", new_job_id().unwrap()));
        std::fs::create_dir(&dir).unwrap();
        let id = new_job_id().unwrap();
        let other = new_job_id().unwrap();
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
