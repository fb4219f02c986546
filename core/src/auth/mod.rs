//! Authentication of ferry's side channels: the job secret, and the
//! handshake built on it.
//!
//! A side channel is anything a rank opens outside the bootstrap and the
//! devices' own fabric: today the ofi device's liveness sockets (TCP, one
//! per pair of ranks). Whoever can reach such a socket is not trusted; a
//! connection counts only once its other end has proved, with an HMAC,
//! that it holds the job's secret (see [`handshake`] and `SECURITY.md` at
//! the repository's root for the threat model).
//!
//! # The job secret
//! [`SECRET_LEN`] random bytes that every rank of a job holds and nobody
//! else does. They travel only through the job's key-value space, under the
//! reserved key [`SECRET_KEY`]:
//! - `ferryrun` generates them and its PMI server answers `get` of that key
//!   (and refuses a `put` of it). The server speaks only over the socket
//!   pairs its ranks inherited, so no other process can ask.
//! - Under another launcher (MPICH's Hydra), whose key-value space starts
//!   empty, rank 0 publishes fresh bytes before a barrier
//!   ([`publish_secret`]); every rank reads them after it ([`job_secret`]).
//!   Hydra's key-value space is likewise reachable only through each rank's
//!   PMI connection (`PMI_FD`).
//!
//! The secret never appears on a command line, in the environment or in a
//! file; [`JobSecret`]'s `Debug` prints no byte of it, and nothing in ferry
//! logs it.
//!
//! Core does no I/O: callers pass fresh random bytes in (from
//! `/dev/urandom`).

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::bootstrap::{Bootstrap, BootstrapError};

pub mod handshake;

/// The reserved key-value-space key of the job secret.
pub const SECRET_KEY: &str = "ferry-job-secret";

/// Bytes in a job secret.
pub const SECRET_LEN: usize = 32;

/// Bytes in a MAC (HMAC-SHA256).
pub const MAC_LEN: usize = 32;

/// The job's shared secret. `Debug` shows none of it.
#[derive(Clone, PartialEq, Eq)]
pub struct JobSecret([u8; SECRET_LEN]);

impl fmt::Debug for JobSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JobSecret(..)")
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl JobSecret {
    /// A secret from `bytes`, which must be fresh random bytes.
    pub fn from_bytes(bytes: [u8; SECRET_LEN]) -> JobSecret {
        JobSecret(bytes)
    }

    /// Parses the key-value-space form: exactly `2 * SECRET_LEN` hex
    /// digits. `None` otherwise (without saying what was wrong, so no part
    /// of a value ends up in a message).
    pub fn from_hex(s: &str) -> Option<JobSecret> {
        let s = s.as_bytes();
        if s.len() != 2 * SECRET_LEN {
            return None;
        }
        let mut out = [0u8; SECRET_LEN];
        for (i, pair) in s.chunks_exact(2).enumerate() {
            out[i] = hex_digit(pair[0])? << 4 | hex_digit(pair[1])?;
        }
        Some(JobSecret(out))
    }

    /// The key-value-space form: `2 * SECRET_LEN` lowercase hex digits.
    /// Only for [`Bootstrap::put`]; never log it.
    pub fn to_hex(&self) -> String {
        use fmt::Write as _;
        let mut s = String::with_capacity(2 * SECRET_LEN);
        for b in self.0 {
            let _ = write!(s, "{b:02x}");
        }
        s
    }

    /// HMAC-SHA256 keyed with the secret over `label` and `parts`, each
    /// prefixed with its length (so no two different inputs share an
    /// encoding). `label` separates the uses of the secret from each
    /// other (domain separation).
    fn keyed(&self, label: &str, parts: &[&[u8]]) -> Hmac<Sha256> {
        // HMAC accepts a key of any length: this cannot fail.
        let mut mac = match <Hmac<Sha256> as Mac>::new_from_slice(&self.0) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC takes keys of any length"),
        };
        mac.update(&(label.len() as u64).to_le_bytes());
        mac.update(label.as_bytes());
        for p in parts {
            mac.update(&(p.len() as u64).to_le_bytes());
            mac.update(p);
        }
        mac
    }

    /// The MAC of `parts` under `label` (see `keyed`).
    pub fn mac(&self, label: &str, parts: &[&[u8]]) -> [u8; MAC_LEN] {
        self.keyed(label, parts).finalize().into_bytes().into()
    }

    /// Whether `tag` is the MAC of `parts` under `label`, compared in
    /// constant time (`hmac`'s `verify_slice`).
    pub fn verify(&self, label: &str, parts: &[&[u8]], tag: &[u8]) -> bool {
        self.keyed(label, parts).verify_slice(tag).is_ok()
    }
}

/// Rank 0's part of establishing the secret, before the caller's barrier:
/// if the launcher serves none (Hydra), publishes `fresh` (which must be
/// fresh random bytes) under [`SECRET_KEY`]. Returns whether it published.
///
/// # Errors
/// The bootstrap's, other than the key being absent.
pub fn publish_secret(
    boot: &mut dyn Bootstrap,
    fresh: [u8; SECRET_LEN],
) -> Result<bool, BootstrapError> {
    match boot.get(SECRET_KEY) {
        Ok(_) => Ok(false),
        Err(BootstrapError::NotFound(_)) => {
            boot.put(SECRET_KEY, &JobSecret::from_bytes(fresh).to_hex())?;
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

/// Every rank's part, after that barrier: the job secret.
///
/// # Errors
/// [`BootstrapError::NotFound`] if nobody published one (the launcher is
/// not `ferryrun` and rank 0 did not run [`publish_secret`]),
/// [`BootstrapError::Protocol`] if the value is not a secret (the message
/// does not quote it), or the bootstrap's own errors.
pub fn job_secret(boot: &mut dyn Bootstrap) -> Result<JobSecret, BootstrapError> {
    let v = boot.get(SECRET_KEY)?;
    JobSecret::from_hex(&v).ok_or_else(|| {
        BootstrapError::Protocol(format!(
            "the value under {SECRET_KEY} is not {} hex digits",
            2 * SECRET_LEN
        ))
    })
}

/// Unique, unpredictable nonces from one random seed: SHA-256 of the seed
/// and a counter. The seed must be fresh random bytes; nothing that is
/// sent reveals it.
#[derive(Clone)]
pub struct Nonces {
    seed: [u8; 32],
    counter: u64,
}

impl fmt::Debug for Nonces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nonces")
            .field("counter", &self.counter)
            .finish_non_exhaustive()
    }
}

impl Nonces {
    /// A source seeded with `seed` (fresh random bytes).
    pub fn new(seed: [u8; 32]) -> Nonces {
        Nonces { seed, counter: 0 }
    }

    /// The next nonce: never the same twice from one source.
    pub fn next_nonce(&mut self) -> [u8; 32] {
        self.counter += 1;
        let mut h = Sha256::new();
        h.update(b"ferry nonce v1");
        h.update(self.seed);
        h.update(self.counter.to_le_bytes());
        h.finalize().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ThreadBoot;

    #[test]
    fn hex_round_trip_and_rejects() {
        let s = JobSecret::from_bytes(core::array::from_fn(|i| i as u8 * 7));
        let h = s.to_hex();
        assert_eq!(h.len(), 64);
        assert_eq!(JobSecret::from_hex(&h), Some(s.clone()));
        assert_eq!(JobSecret::from_hex(&h.to_uppercase()), Some(s.clone()));
        assert_eq!(JobSecret::from_hex(&h[..62]), None);
        assert_eq!(JobSecret::from_hex(&format!("{h}00")), None);
        assert_eq!(JobSecret::from_hex(&h.replace('a', "g")), None);
        assert_eq!(format!("{s:?}"), "JobSecret(..)");
    }

    #[test]
    fn macs_depend_on_key_label_and_every_part() {
        let a = JobSecret::from_bytes([1; 32]);
        let b = JobSecret::from_bytes([2; 32]);
        let m = a.mac("l", &[b"x", b"y"]);
        assert!(a.verify("l", &[b"x", b"y"], &m));
        assert!(!b.verify("l", &[b"x", b"y"], &m));
        assert!(!a.verify("m", &[b"x", b"y"], &m));
        assert!(!a.verify("l", &[b"x", b"z"], &m));
        // Length prefixes: moving a byte between parts changes the MAC.
        assert!(!a.verify("l", &[b"xy", b""], &m));
        assert!(!a.verify("l", &[b"x", b"y"], &m[..31]));
    }

    #[test]
    fn rank_zero_publishes_only_where_the_launcher_did_not() {
        let mut boots = ThreadBoot::group(1, "j");
        let boot = &mut boots[0];
        assert!(matches!(job_secret(boot), Err(BootstrapError::NotFound(_))));
        assert!(publish_secret(boot, [9; 32]).unwrap());
        assert_eq!(job_secret(boot).unwrap(), JobSecret::from_bytes([9; 32]));
        // A second call (or the launcher's value) is left alone.
        assert!(!publish_secret(boot, [8; 32]).unwrap());
        assert_eq!(job_secret(boot).unwrap(), JobSecret::from_bytes([9; 32]));
        boot.put(SECRET_KEY, "not-hex").unwrap();
        let e = job_secret(boot).unwrap_err().to_string();
        assert!(!e.contains("not-hex"), "{e}");
    }

    #[test]
    fn nonces_differ() {
        let mut n = Nonces::new([3; 32]);
        let (x, y) = (n.next_nonce(), n.next_nonce());
        assert_ne!(x, y);
        assert_ne!(Nonces::new([4; 32]).next_nonce(), x);
    }
}
