//! Test-only memory that the tests map, lend and map again at the same
//! address (the registration cache's stale-key tests).

use ferry_core::{Buf, ByteStorage, Lender, LentView};
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

// SAFETY: the mapping is plain memory, reachable from any thread.
unsafe impl Send for Mapping {}

/// A read-only view of a mapping, as a storage (like a send block shared by
/// several `Buf`s: no write access through it).
struct ReadOnly {
    addr: usize,
    len: usize,
}

impl ByteStorage for ReadOnly {
    fn bytes(&self) -> &[u8] {
        // SAFETY: made only by `Mapping::read_only`, whose tests keep the
        // mapping alive (and mapped at this address) while the view lives.
        unsafe { std::slice::from_raw_parts(self.addr as *const u8, self.len) }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut []
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

impl Mapping {
    /// `len` bytes (a multiple of the page size), never written: reading
    /// them maps the shared zero page.
    pub(crate) fn untouched(len: usize) -> Mapping {
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
        Mapping {
            addr: addr.cast(),
            len,
        }
    }

    /// `len` bytes (a multiple of the page size), filled with `fill`.
    pub(crate) fn new(len: usize, fill: u8) -> Mapping {
        let mut m = Mapping::untouched(len);
        m.fill(fill);
        m
    }

    /// An owned, read-only `Buf` over the mapping (see `ReadOnly`).
    pub(crate) fn read_only(&self) -> Buf {
        Buf::from_storage(Box::new(ReadOnly {
            addr: self.addr as usize,
            len: self.len,
        }))
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
