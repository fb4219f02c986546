//! The names of the files a job creates in shared memory, in one place: the
//! shm device (`ferry-shm`) names its files with them, the ofi device names
//! libfabric's shm-provider regions with them, and the launcher (`ferryrun`,
//! `ferry-launch`) sweeps what a killed rank left behind by them
//! ([`leftovers`]). Plain functions on strings: nothing here touches the
//! file system (the sweep itself is `ferry_shm::names::remove_prefixed`).
//!
//! ## The shm device's files
//! Every one is `ferry-<job id>…` ([`job_prefix`]) in the segment directory
//! (`FERRY_SHM_DIR`, `/dev/shm` by default):
//! - the node's segment, [`segment_name`]: `-<64 random bits>`;
//! - the node collectives' regions, [`node_region_name`]: the segment's
//!   name, `-c`, and a keyed hash nobody without the node's key can compute;
//! - each rank's wake directory, [`wake_dir_name`]: `-w<64 random bits>`
//!   (mode 0700, holding its wake socket).
//!
//! The job id is the launcher's 128-bit random id, 32 hex digits: of fixed
//! length, so one job's prefix never matches another job's names. The
//! device removes its segment and wake directories as soon as every local
//! rank has attached; a rank killed before that leaves them.
//!
//! ## libfabric's shm regions
//! The ofi device names the region libfabric's `shm` provider creates in
//! [`OFI_SHM_REGION_DIR`] for each endpoint (`fi_setname`),
//! [`ofi_shm_region_name`]: [`ofi_shm_region_prefix`] of the job id, then
//! the rank, the process id and 64 random bits. It does not start with
//! `ferry-`, the shm device's prefix. The provider unlinks the region when
//! the endpoint closes; a killed process leaves it (16 MiB or more).
//!
//! ## What a launcher sweeps
//! At the end of a job, every entry of each of [`leftovers`]' directories
//! whose name starts with its prefix.

use std::path::{Path, PathBuf};

use crate::envelope::Rank;

/// What every file of the shm device starts with.
pub const FILE_PREFIX: &str = "ferry-";

/// The prefix of every shm device file of job `job_id`.
pub fn job_prefix(job_id: &str) -> String {
    format!("{FILE_PREFIX}{job_id}")
}

/// The name of a segment of job `job_id`, made unique by `nonce`.
pub fn segment_name(job_id: &str, nonce: u64) -> String {
    format!("{}-{nonce:016x}", job_prefix(job_id))
}

/// The name of a rank's wake directory, made unique by `hex` (16 random
/// lowercase hex digits, [`is_wake_hex`]).
pub fn wake_dir_name(job_id: &str, hex: &str) -> String {
    format!("{}-w{hex}", job_prefix(job_id))
}

/// The name of a node collectives' region of the segment named `segment`:
/// `hash` (the region's keyed hash, 16 bytes) in lowercase hex after
/// `-c`. It starts with the segment's name, so the sweep finds it.
pub fn node_region_name(segment: &str, hash: &[u8]) -> String {
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("{segment}-c{hex}")
}

/// Whether `s` (read from a peer) can be the random part of a wake
/// directory's name: exactly 16 lowercase hex digits, so no path.
pub fn is_wake_hex(s: &str) -> bool {
    s.len() == 16
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether `name` (read from a peer, through the bootstrap) can be a segment
/// name: one of the shm device's, and a plain file name, not a path.
pub fn is_segment_name(name: &str) -> bool {
    !name.contains('/') && name.starts_with(FILE_PREFIX)
}

/// The directory libfabric's `shm` provider creates its regions in (fixed
/// in the provider, whatever `FERRY_SHM_DIR` says).
pub const OFI_SHM_REGION_DIR: &str = "/dev/shm";

/// The prefix of every ofi `shm` region of job `job_id`: `fi_shm-ferry-`,
/// the job id's letters, digits and underscores (at most 64), and `-`.
/// A launcher's job id is 32 hex digits, which pass unchanged, and the
/// trailing `-` keeps one job's prefix from matching a longer job id.
pub fn ofi_shm_region_prefix(job_id: &str) -> String {
    let job: String = job_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(64)
        .collect();
    format!("fi_shm-ferry-{job}-")
}

/// The name of rank `rank`'s ofi `shm` region: the job's prefix, the rank,
/// the process id `pid` and `nonce` (a launcher may reuse a job id;
/// Hydra's contains a pid).
pub fn ofi_shm_region_name(job_id: &str, rank: Rank, pid: u32, nonce: u64) -> String {
    format!("{}{rank}-{pid}-{nonce:016x}", ofi_shm_region_prefix(job_id))
}

/// Where a job's files may be left behind, and what they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftovers {
    /// The directory.
    pub dir: PathBuf,
    /// What the name of each of the job's entries there starts with.
    pub prefix: String,
    /// What they are, for a message: `"leftover shared-memory file(s)"`.
    pub what: &'static str,
}

/// What a launcher sweeps at the end of job `job_id`, whose shm device used
/// `shm_dir`: the shm device's files (left only by a rank that died during
/// setup, or by a device bug) and libfabric's shm regions (left by every
/// killed rank).
pub fn leftovers(job_id: &str, shm_dir: &Path) -> [Leftovers; 2] {
    [
        Leftovers {
            dir: shm_dir.to_path_buf(),
            prefix: job_prefix(job_id),
            what: "leftover shared-memory file(s)",
        },
        Leftovers {
            dir: PathBuf::from(OFI_SHM_REGION_DIR),
            prefix: ofi_shm_region_prefix(job_id),
            what: "libfabric shm-provider region(s) of killed ranks",
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn shm_names_carry_the_job_prefix() {
        let segment = segment_name("abc", 0x1f);
        assert_eq!(segment, "ferry-abc-000000000000001f");
        assert!(segment.starts_with(&job_prefix("abc")));
        assert!(is_segment_name(&segment));
        assert!(!is_segment_name("ferry-../../etc/passwd"));
        assert!(!is_segment_name("other-abc"));
        let wake = wake_dir_name("abc", "0123456789abcdef");
        assert_eq!(wake, "ferry-abc-w0123456789abcdef");
        let region = node_region_name(&segment, &[0xab; 16]);
        assert_eq!(region, format!("{segment}-c{}", "ab".repeat(16)));
        assert!(region.starts_with(&job_prefix("abc")));
    }

    #[test]
    fn wake_hex_is_sixteen_lowercase_hex_digits() {
        assert!(is_wake_hex("0123456789abcdef"));
        assert!(!is_wake_hex("0123456789ABCDEF"));
        assert!(!is_wake_hex("0123456789abcde"));
        assert!(!is_wake_hex("../../0123456789"));
    }

    #[test]
    fn region_prefix_keeps_a_plain_job_id_and_drops_path_characters() {
        assert_eq!(ofi_shm_region_prefix(JOB), format!("fi_shm-ferry-{JOB}-"));
        assert_eq!(
            ofi_shm_region_prefix("kvs_1/../x y"),
            "fi_shm-ferry-kvs_1xy-"
        );
        assert_eq!(
            ofi_shm_region_prefix(&"a".repeat(100)).len(),
            "fi_shm-ferry--".len() + 64
        );
    }

    #[test]
    fn a_region_name_has_the_prefix_rank_pid_and_nonce() {
        let name = ofi_shm_region_name(JOB, 3, 4242, 0xbeef);
        assert_eq!(name, format!("fi_shm-ferry-{JOB}-3-4242-000000000000beef"));
        assert!(!name.starts_with(FILE_PREFIX));
    }

    #[test]
    fn a_launcher_sweeps_both_prefixes_and_no_other_jobs() {
        let [shm, ofi] = leftovers(JOB, Path::new("/tmp/x"));
        assert_eq!(shm.dir, Path::new("/tmp/x"));
        assert_eq!(ofi.dir, Path::new(OFI_SHM_REGION_DIR));
        assert!(segment_name(JOB, 7).starts_with(&shm.prefix));
        assert!(wake_dir_name(JOB, "0123456789abcdef").starts_with(&shm.prefix));
        assert!(ofi_shm_region_name(JOB, 0, 1, 2).starts_with(&ofi.prefix));
        // Neither prefix takes another job's names.
        let other = "0123456789abcdef0123456789abcdee";
        assert!(!segment_name(other, 7).starts_with(&shm.prefix));
        assert!(!ofi_shm_region_name(other, 0, 1, 2).starts_with(&ofi.prefix));
        assert!(!ofi_shm_region_name(JOB, 0, 1, 2).starts_with(&shm.prefix));
    }
}
