//! The one raw operation the PMI client needs: taking ownership of the
//! socket the launcher left open for us (`PMI_FD`).
//!
//! A file descriptor named by an environment variable can only become an
//! owned Rust handle through `OwnedFd::from_raw_fd`, which is `unsafe`
//! because Rust cannot know that the number is open and owned by nobody
//! else. This module establishes both as far as a process can:
//! - it checks through `/proc/self/fd` that the descriptor is open and is
//!   a socket (not, say, a file some other code opened meanwhile);
//! - it refuses the standard streams 0, 1 and 2;
//! - it adopts a given descriptor number at most once per process, so two
//!   `PmiClient`s can never both close it.
//!
//! The remaining assumption is the PMI convention itself: the launcher
//! handed this descriptor to the PMI client, and no other code in the
//! process uses it.
#![allow(unsafe_code)]

use std::collections::HashSet;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

/// Descriptor numbers already adopted by this process.
static ADOPTED: Mutex<Option<HashSet<RawFd>>> = Mutex::new(None);

/// Takes ownership of the inherited socket `fd`.
///
/// # Errors
/// A human-readable reason when `fd` is a standard stream, is not an open
/// socket, cannot be checked, or was adopted before.
pub(crate) fn adopt_inherited_socket(fd: RawFd) -> Result<OwnedFd, String> {
    if fd <= 2 {
        return Err(format!(
            "PMI_FD={fd} names a standard stream, not a PMI socket"
        ));
    }
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).map_err(|e| {
        format!("PMI_FD={fd} is not an open descriptor of this process ({e}; is /proc mounted?)")
    })?;
    if !link.to_string_lossy().starts_with("socket:") {
        return Err(format!(
            "PMI_FD={fd} is not a socket (it is {})",
            link.display()
        ));
    }
    let mut adopted = ADOPTED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !adopted.get_or_insert_with(HashSet::new).insert(fd) {
        return Err(format!(
            "PMI_FD={fd} was already taken by an earlier PmiClient in this process"
        ));
    }
    // `fd` is open and a socket (checked through /proc just above), not a
    // standard stream, and the ADOPTED set makes this the only OwnedFd this
    // module ever creates for it. By the PMI convention the launcher passed
    // it to the PMI client alone, so no other owner can close it.
    // SAFETY: a valid, open fd with no other owner (see above).
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, IntoRawFd};

    #[test]
    fn refuses_standard_streams_and_non_sockets() {
        assert!(adopt_inherited_socket(1)
            .unwrap_err()
            .contains("standard stream"));
        let file = std::fs::File::open("/proc/self/status").unwrap();
        let err = adopt_inherited_socket(file.as_raw_fd()).unwrap_err();
        assert!(err.contains("not a socket"), "{err}");
        let err = adopt_inherited_socket(100_000).unwrap_err();
        assert!(err.contains("not an open descriptor"), "{err}");
    }

    #[test]
    fn adopts_a_socket_once() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let raw = a.into_raw_fd();
        let owned = adopt_inherited_socket(raw).unwrap();
        assert_eq!(owned.as_raw_fd(), raw);
        let err = adopt_inherited_socket(raw).unwrap_err();
        assert!(err.contains("already taken"), "{err}");
    }
}
