//! Test-only memory that the tests map, lend and map again at the same
//! address (the registration cache's stale-key tests).

use ferry_core::{Buf, Lender, LentView};
use rustix::mm::{mmap_anonymous, munmap, MapFlags, ProtFlags};

/// An anonymous private mapping of whole pages.
#[derive(Debug)]
pub(crate) struct Mapping {
    addr: *mut u8,
    len: usize,
}

fn view_bytes(v: LentView<'_>) -> &[u8] {
    // SAFETY: lent views are only made over a live `Mapping` (`lend`), whose
    // tests do not touch it while the lent `Buf` lives.
    unsafe { std::slice::from_raw_parts(v.addr() as *const u8, v.len()) }
}

fn view_bytes_mut(v: LentView<'_>) -> &mut [u8] {
    // SAFETY: as for `view_bytes`; the mapping is writable.
    unsafe { std::slice::from_raw_parts_mut(v.addr() as *mut u8, v.len()) }
}

static LENDER: Lender = Lender {
    bytes: view_bytes,
    bytes_mut: view_bytes_mut,
};

impl Mapping {
    /// `len` bytes (a multiple of the page size), filled with `fill`.
    pub(crate) fn new(len: usize, fill: u8) -> Mapping {
        // SAFETY: a fresh anonymous mapping at an address the kernel picks.
        let addr = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }
        .expect("mmap");
        let mut m = Mapping {
            addr: addr.cast(),
            len,
        };
        m.fill(fill);
        m
    }

    /// Maps new pages over the same addresses (`MAP_FIXED`: the old ones go,
    /// or stay only as long as something pins them), filled with `fill`.
    pub(crate) fn remap(&mut self, fill: u8) {
        // SAFETY: replaces exactly this mapping, which nothing borrows now
        // (no lent `Buf` over it is alive: `lend` borrows `self`).
        let addr = unsafe {
            mmap_anonymous(
                self.addr.cast(),
                self.len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::FIXED,
            )
        }
        .expect("mmap MAP_FIXED");
        assert_eq!(addr.cast(), self.addr);
        self.fill(fill);
    }

    pub(crate) fn fill(&mut self, byte: u8) {
        // SAFETY: the mapping is live and writable, and `&mut self` means
        // no lent `Buf` over it is alive.
        unsafe { std::ptr::write_bytes(self.addr, byte, self.len) }
    }

    pub(crate) fn addr(&self) -> usize {
        self.addr as usize
    }

    /// A lent `Buf` over the whole mapping (the raw API's kind of buffer).
    pub(crate) fn lend(&mut self) -> Buf {
        Buf::lent(self.addr as usize, self.len, &LENDER)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly this mapping, once; pages an MR still pins
        // stay allocated to the MR (that is the kernel's rule).
        let _ = unsafe { munmap(self.addr.cast(), self.len) };
    }
}
