//! Job ids: what names a job's shared files, and what the sweep at the end
//! of a job looks for (see `ferry_core::shared_files`).

use std::io::{self, Read};

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

/// A fresh job secret: [`SECRET_LEN`](ferry_core::auth::SECRET_LEN)
/// random bytes from the kernel, served to the ranks by the PMI server
/// only (see `ferry_core::auth`); never printed, never in the
/// environment, on a command line or in a file.
///
/// # Errors
/// If `/dev/urandom` cannot be read.
pub(crate) fn new_job_secret() -> io::Result<ferry_core::auth::JobSecret> {
    let mut bytes = [0u8; ferry_core::auth::SECRET_LEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(ferry_core::auth::JobSecret::from_bytes(bytes))
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
        assert_ne!(new_job_secret().unwrap(), new_job_secret().unwrap());
    }
}
