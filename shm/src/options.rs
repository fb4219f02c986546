//! Setup options and the memory formula.

use std::path::PathBuf;

use ferry_core::settings::{self, Source};

use crate::error::ShmError;
use crate::layout::{Geometry, RANK_BLOCK_BYTES};

/// How the device is set up. Every local rank should pass the same values;
/// where the geometry differs, the segment creator's (the lowest local
/// rank's) wins and the others adopt it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShmOptions {
    /// Use cross-memory attach (`process_vm_readv`/`writev`) for rendezvous
    /// (`FERRY_SHM_CMA`, default `true`). Off, when the setup probe finds
    /// the kernel refuses it, or when [`cma_auto`](Self::cma_auto) declines
    /// it, large messages go through the cells as a pipelined copy (the
    /// engine's fragmented protocol).
    pub cma: bool,
    /// With [`cma`](Self::cma) on, let the machine decide: CMA is kept on
    /// bare metal and turned off under a hypervisor, where it is slower than
    /// the copy pipeline ([`cma_choice`](crate::cma_choice) explains why
    /// the rule does not time anything). [`from_env`](Self::from_env) turns
    /// this on when `FERRY_SHM_CMA` is unset (or empty), and off when it is
    /// set, so a user's explicit choice is never second-guessed. Default
    /// `false`: a program that builds its options says what it wants.
    pub cma_auto: bool,
    /// Payload bytes per cell (`FERRY_SHM_CELL_SIZE`, default 64 KiB): the
    /// device's `max_payload`, so it bounds eager messages and the fragments
    /// of the copy-through-cells rendezvous (the engine's default fragment
    /// is 64 KiB too).
    pub cell_size: usize,
    /// Cells each rank owns (`FERRY_SHM_CELLS`, default 64, as many as
    /// MPICH's shared-memory queue): how many packets it can have in flight
    /// to all its peers together before `send` returns `Busy`. A window of
    /// 64 mid-size messages (osu_bw's) then leaves without waiting for the
    /// receiver to hand cells back: 4 KiB osu_bw went from 10.0-11.1 to
    /// 11.7-12.7 GB/s with 64 instead of 32.
    pub cells_per_rank: usize,
    /// At most this many cells are delivered per `progress` call (default
    /// 64), so one busy sender cannot starve the rest of the progress loop.
    pub progress_batch: usize,
    /// Peers' liveness is checked every this many `progress` calls (default
    /// 1024; always after a wake-up). One `epoll_wait(0)` per check.
    pub liveness_interval: u32,
    /// Slots of each per-pair fastbox ring (`FERRY_SHM_FASTBOX_SLOTS`,
    /// default 64; 0 turns fastboxes off). Small packets go through these
    /// rings while they have room, others through the cells.
    pub fastbox_slots: usize,
    /// Bytes per fastbox slot (`FERRY_SHM_FASTBOX_SIZE`, default 256, a
    /// multiple of 64 between 64 and 4096): 8 of them are the control word,
    /// the rest holds a packet's header and payload.
    pub fastbox_slot_size: usize,
    /// Fastboxes are used only on nodes with at most this many local ranks
    /// (`FERRY_SHM_FASTBOX_MAX_RANKS`, default 32): their memory grows with
    /// the square of the rank count.
    pub fastbox_max_ranks: usize,
    /// Directory of the segment file (`FERRY_SHM_DIR`, default `/dev/shm`).
    pub dir: PathBuf,
}

impl Default for ShmOptions {
    fn default() -> Self {
        ShmOptions {
            cma: true,
            cma_auto: false,
            cell_size: 64 * 1024,
            cells_per_rank: 64,
            progress_batch: 64,
            liveness_interval: 1024,
            fastbox_slots: 64,
            fastbox_slot_size: 256,
            fastbox_max_ranks: 32,
            dir: PathBuf::from("/dev/shm"),
        }
    }
}

impl ShmOptions {
    /// The defaults, overridden by the process environment: see
    /// [`from_source`](Self::from_source).
    ///
    /// # Errors
    /// [`ShmError::Setting`] for a value that does not parse,
    /// [`ShmError::Options`] for one out of range.
    pub fn from_env() -> Result<ShmOptions, ShmError> {
        Self::from_source(&|var: &str| std::env::var(var).ok())
    }

    /// The defaults, overridden by `FERRY_SHM_CMA` (a flag; unset, the
    /// machine decides: see [`cma_auto`](Self::cma_auto)),
    /// `FERRY_SHM_CELL_SIZE` (a size: `64k`), `FERRY_SHM_CELLS`,
    /// `FERRY_SHM_FASTBOX_SLOTS`, `FERRY_SHM_FASTBOX_SIZE` (a size),
    /// `FERRY_SHM_FASTBOX_MAX_RANKS` and `FERRY_SHM_DIR`, read from `src` in
    /// the syntax of [`ferry_core::settings`] (an empty value is unset).
    ///
    /// # Errors
    /// [`ShmError::Setting`] for a value that does not parse,
    /// [`ShmError::Options`] for one out of range.
    pub fn from_source(src: &impl Source) -> Result<ShmOptions, ShmError> {
        let mut o = ShmOptions::default();
        match settings::flag(src, "FERRY_SHM_CMA")? {
            Some(cma) => o.cma = cma,
            None => o.cma_auto = true,
        }
        if let Some(n) = settings::size(src, "FERRY_SHM_CELL_SIZE")? {
            o.cell_size = n;
        }
        if let Some(n) = settings::number(src, "FERRY_SHM_CELLS", 0, usize::MAX)? {
            o.cells_per_rank = n;
        }
        if let Some(n) = settings::number(src, "FERRY_SHM_FASTBOX_SLOTS", 0, usize::MAX)? {
            o.fastbox_slots = n;
        }
        if let Some(n) = settings::size(src, "FERRY_SHM_FASTBOX_SIZE")? {
            o.fastbox_slot_size = n;
        }
        if let Some(n) = settings::number(src, "FERRY_SHM_FASTBOX_MAX_RANKS", 0, usize::MAX)? {
            o.fastbox_max_ranks = n;
        }
        o.dir = Self::dir_from_source(src);
        o.validate()?;
        Ok(o)
    }

    /// The segment directory alone (`FERRY_SHM_DIR`, default `/dev/shm`):
    /// what the launcher sweeps after a job.
    pub fn dir_from_source(src: &impl Source) -> PathBuf {
        settings::text(src, "FERRY_SHM_DIR")
            .map_or_else(|| ShmOptions::default().dir, PathBuf::from)
    }

    /// Checks the values.
    ///
    /// # Errors
    /// [`ShmError::Options`] naming the value out of range.
    pub fn validate(&self) -> Result<(), ShmError> {
        let bad = |s: &str| Err(ShmError::Options(s.to_owned()));
        if self.cell_size < 64 || self.cell_size > 64 * 1024 * 1024 {
            return bad("cell_size must be between 64 bytes and 64 MiB");
        }
        if self.cells_per_rank < 2 || self.cells_per_rank > 1 << 20 {
            return bad("cells_per_rank must be between 2 and 2^20");
        }
        if self.progress_batch == 0 {
            return bad("progress_batch must be at least 1");
        }
        if self.liveness_interval == 0 {
            return bad("liveness_interval must be at least 1");
        }
        if self.fastbox_slots > crate::fastbox::MAX_SLOTS {
            return bad("fastbox_slots must be at most 65536");
        }
        if !crate::fastbox::slot_size_ok(self.fastbox_slot_size) {
            return bad("fastbox_slot_size must be a multiple of 64 between 64 and 4096");
        }
        Ok(())
    }

    /// Fastbox slots per ring for a node of `local_ranks` ranks (0 above
    /// [`fastbox_max_ranks`](Self::fastbox_max_ranks)).
    pub(crate) fn fastbox_slots_for(&self, local_ranks: usize) -> usize {
        if local_ranks > self.fastbox_max_ranks {
            0
        } else {
            self.fastbox_slots
        }
    }

    /// The segment geometry for `local_ranks` ranks.
    pub(crate) fn geometry(&self, local_ranks: usize) -> Option<Geometry> {
        Geometry::new(
            local_ranks,
            self.cell_size,
            self.cells_per_rank,
            self.fastbox_slots_for(local_ranks),
            self.fastbox_slot_size,
        )
    }
}

/// The exact size of the segment for `local_ranks` ranks (0 if the geometry
/// overflows):
///
/// `page(128 + N·R) + page(N · C · stride) + page(N² · K · Z)`, with
/// `stride = ⌈(96 + S) / 64⌉·64`,
///
/// where `N` = local ranks, `C` = cells per rank, `S` = cell payload size,
/// `R` = the per-rank block (queue heads and tails, flags, the registration
/// table: 2944 bytes on x86-64), `K` = fastbox slots per ring (0 when
/// `N` > [`ShmOptions::fastbox_max_ranks`]), `Z` = fastbox slot size, and
/// `page(x)` rounds up to 4 KiB. The cells are linear in `N` (each rank
/// brings its own, whoever it talks to); the fastboxes, one ring per ordered
/// pair, are quadratic, hence the rank limit.
pub fn segment_bytes(local_ranks: usize, opts: &ShmOptions) -> usize {
    opts.geometry(local_ranks).map_or(0, |g| g.total)
}

/// The per-rank block `R` of the formula, in bytes.
pub const fn rank_block_bytes() -> usize {
    RANK_BLOCK_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(pairs: &'static [(&'static str, &'static str)]) -> Result<ShmOptions, ShmError> {
        ShmOptions::from_source(&|var: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn cma_is_probed_only_when_the_user_did_not_say() {
        let unset = from(&[]).unwrap();
        assert!(unset.cma && unset.cma_auto);
        let empty = from(&[("FERRY_SHM_CMA", "")]).unwrap();
        assert!(empty.cma && empty.cma_auto, "an empty value is unset");
        let off = from(&[("FERRY_SHM_CMA", "0")]).unwrap();
        assert!(!off.cma && !off.cma_auto);
        let on = from(&[("FERRY_SHM_CMA", "yes")]).unwrap();
        assert!(on.cma && !on.cma_auto);
        let bad = from(&[("FERRY_SHM_CMA", "maybe")]).unwrap_err();
        assert!(
            matches!(&bad, ShmError::Setting(e) if e.var == "FERRY_SHM_CMA" && e.value == "maybe"),
            "{bad:?}"
        );
    }

    #[test]
    fn sizes_take_the_common_syntax_and_are_checked() {
        let o = from(&[
            ("FERRY_SHM_CELL_SIZE", "16KiB"),
            ("FERRY_SHM_CELLS", "8"),
            ("FERRY_SHM_FASTBOX_SLOTS", "0"),
            ("FERRY_SHM_FASTBOX_SIZE", "128"),
            ("FERRY_SHM_DIR", "/tmp"),
        ])
        .unwrap();
        assert_eq!(
            (
                o.cell_size,
                o.cells_per_rank,
                o.fastbox_slots,
                o.fastbox_slot_size
            ),
            (16384, 8, 0, 128)
        );
        assert_eq!(o.dir, PathBuf::from("/tmp"));
        assert!(matches!(
            from(&[("FERRY_SHM_CELLS", "8k")]),
            Err(ShmError::Setting(_))
        ));
        assert!(matches!(
            from(&[("FERRY_SHM_CELL_SIZE", "1g")]),
            Err(ShmError::Options(_))
        ));
        assert_eq!(
            ShmOptions::dir_from_source(&|_: &str| Some(String::new())),
            PathBuf::from("/dev/shm")
        );
    }
}
