//! Names of the shared-memory files a job's devices create that are not
//! ferry's shm device's own (those are in `ferry_shm::names`), so that a
//! launcher can sweep what a killed rank left behind.
//!
//! - The ofi device names the region libfabric's `shm` provider creates in
//!   `/dev/shm` for each endpoint (`fi_setname`): [`ofi_shm_region_prefix`]
//!   of the job id, then the rank, the process id and 64 random bits. The
//!   provider unlinks the region when the endpoint closes; a killed process
//!   leaves it (16 MiB or more), and `ferryrun` removes every region with
//!   its job's prefix at the end of the job.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_prefix_keeps_a_plain_job_id_and_drops_path_characters() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(ofi_shm_region_prefix(id), format!("fi_shm-ferry-{id}-"));
        assert_eq!(
            ofi_shm_region_prefix("kvs_1/../x y"),
            "fi_shm-ferry-kvs_1xy-"
        );
        assert_eq!(
            ofi_shm_region_prefix(&"a".repeat(100)).len(),
            "fi_shm-ferry--".len() + 64
        );
    }
}
