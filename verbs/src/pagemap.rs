//! The physical page frames behind a range of this process's memory, from
//! `/proc/self/pagemap` (one little-endian `u64` per virtual page: bit 63
//! "present", bits 0-54 the page frame number). The registration cache
//! (`rcache.rs`) compares them to prove that the pages at an address are
//! still the ones a memory region pinned (UCX's `UCX_RCACHE_CHECK_PFN`).
//!
//! Since Linux 4.2 the frame numbers read as zero without `CAP_SYS_ADMIN`;
//! [`Pagemap::open`] probes for that and reports the check unavailable, and
//! the cache then registers lent memory per use.

use std::fs::File;
use std::os::unix::fs::FileExt;

const PRESENT: u64 = 1 << 63;
const PFN_MASK: u64 = (1 << 55) - 1;

/// `/proc/self/pagemap`, open.
#[derive(Debug)]
pub(crate) struct Pagemap {
    file: File,
    page: usize,
    /// Raw entries of the last read, and the frames of the last check
    /// (capacity kept: no allocation per use).
    scratch: Vec<u8>,
    now: Vec<u64>,
}

impl Pagemap {
    /// Opens the pagemap if it gives real frame numbers (`None` if it
    /// cannot be read, or reads zeros for a page that is present).
    pub(crate) fn open() -> Option<Pagemap> {
        let file = File::open("/proc/self/pagemap").ok()?;
        let mut pm = Pagemap {
            file,
            page: rustix::param::page_size(),
            scratch: Vec::new(),
            now: Vec::new(),
        };
        let probe = vec![1u8; pm.page];
        let mut frames = Vec::new();
        let ok = pm.frames(probe.as_ptr() as usize, probe.len(), &mut frames)
            && frames.iter().all(|&f| f != 0);
        drop(probe);
        ok.then_some(pm)
    }

    /// Fills `out` with the frame number of every page of `addr..addr+len`
    /// (reusing its capacity). False if a page is not present (never
    /// touched, swapped out) or the read failed: the frames then prove
    /// nothing.
    pub(crate) fn frames(&mut self, addr: usize, len: usize, out: &mut Vec<u64>) -> bool {
        out.clear();
        if len == 0 {
            return true;
        }
        let first = addr / self.page;
        let Some(last) = addr.checked_add(len - 1).map(|end| end / self.page) else {
            return false;
        };
        let n = last - first + 1;
        self.scratch.resize(n * 8, 0);
        if self
            .file
            .read_exact_at(&mut self.scratch, (first * 8) as u64)
            .is_err()
        {
            return false;
        }
        for raw in self.scratch.chunks_exact(8) {
            let e = u64::from_le_bytes(raw.try_into().unwrap_or_default());
            if e & PRESENT == 0 {
                return false;
            }
            out.push(e & PFN_MASK);
        }
        true
    }

    /// Whether the pages of `addr..addr+len` are exactly `frames` now.
    pub(crate) fn same(&mut self, addr: usize, len: usize, frames: &[u64]) -> bool {
        let mut now = std::mem::take(&mut self.now);
        let same = self.frames(addr, len, &mut now) && now == frames;
        self.now = now;
        same
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_of_touched_memory_are_present_and_stable() {
        // Unprivileged runs read zeros: nothing to check then.
        let Some(mut pm) = Pagemap::open() else {
            eprintln!("SKIPPED: /proc/self/pagemap gives no frame numbers here");
            return;
        };
        let v = vec![7u8; 3 * pm.page];
        let mut a = Vec::new();
        assert!(pm.frames(v.as_ptr() as usize, v.len(), &mut a));
        assert!((3..=4).contains(&a.len()));
        assert!(pm.same(v.as_ptr() as usize, v.len(), &a));
    }
}
