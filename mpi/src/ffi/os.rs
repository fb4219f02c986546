//! What the C library gives the environment chapter: the host name
//! (`MPI_Get_processor_name`, `MPI_INFO_ENV`'s `host`) and the C heap
//! that `MPI_Alloc_mem` hands out and `MPI_Free_mem` takes back.
//!
//! # Contract
//! An [`AllocBase`] is made only by the boundary's decoder
//! (`ffi::args::alloc_base`), from the argument of `MPI_Free_mem`, which
//! the standard requires to be what `MPI_Alloc_mem` returned (or a buffer
//! `MPIX_Status_get_buffer` handed over, which ferry allocated with the
//! same heap), freed once.

use std::ffi::{c_char, c_void};

/// The host name, `localhost` if the C library cannot tell.
pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is valid for writes of its length; gethostname writes at
    // most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast::<c_char>(), buf.len()) };
    if rc != 0 {
        return "localhost".to_owned();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// `size` bytes of the C heap (one at least, so that a zero-size request
/// still gets a pointer `MPI_Free_mem` can free); `None` when the heap has
/// none.
pub(crate) fn alloc(size: usize) -> Option<usize> {
    // SAFETY: plain malloc of a positive size.
    let p = unsafe { libc::malloc(size.max(1)) };
    (!p.is_null()).then_some(p as usize)
}

/// `MPI_Free_mem`'s argument (see the module's contract).
#[derive(Debug)]
pub(crate) struct AllocBase(pub(super) usize);

impl AllocBase {
    /// The address.
    pub(crate) fn addr(&self) -> usize {
        self.0
    }

    /// Gives the memory back to the C heap (`free(NULL)` does nothing).
    pub(crate) fn free(self) {
        // SAFETY: the module's contract: the address came from the C heap
        // and is freed once (`self` is consumed).
        unsafe { libc::free(self.0 as *mut c_void) };
    }
}
