//! What the C library gives the environment chapter: the host name
//! (`MPI_Get_processor_name`, `MPI_INFO_ENV`'s `host`) and the C heap
//! that `MPI_Alloc_mem` hands out and `MPI_Free_mem` takes back; and the
//! ARecv buffers handed to the program through a status, which
//! `MPI_Free_mem` takes back too.
//!
//! # Contract
//! An [`AllocBase`] is made only by the boundary's decoder
//! (`ffi::args::alloc_base`), from the argument of `MPI_Free_mem`, which
//! the standard requires to be what `MPI_Alloc_mem` returned (or a buffer
//! `MPIX_Status_get_buffer` handed over, which ferry allocated with the
//! same heap), freed once.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Mutex, MutexGuard};

use ferry::Buf;

use crate::abi::MpiStatus;

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

/// The buffers handed over, by address.
static HANDED: Mutex<Option<HashMap<usize, Buf>>> = Mutex::new(None);

fn handed() -> MutexGuard<'static, Option<HashMap<usize, Buf>>> {
    // A panic while the map was held left it whole: insert and remove
    // are single calls.
    HANDED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Hands an ARecv buffer over through `status` (its address in the two
/// last private ints; null for an empty message).
pub(crate) fn hand_over(status: &mut MpiStatus, mut buf: Buf) {
    let len = buf.len();
    let ptr = if len == 0 {
        0
    } else if buf.as_mut_slice().len() == len {
        buf.as_mut_slice().as_mut_ptr() as usize
    } else {
        // Storage that cannot be handed out writable: a copy the program
        // may write.
        let mut copy = Buf::from_vec(buf.to_vec());
        let p = copy.as_mut_slice().as_mut_ptr() as usize;
        buf = copy;
        p
    };
    if ptr != 0 {
        handed().get_or_insert_with(HashMap::new).insert(ptr, buf);
    }
    status.internal[3] = ptr as u32 as c_int;
    status.internal[4] = (ptr as u64 >> 32) as u32 as c_int;
}

/// Releases a handed-over buffer; false if `ptr` is not one.
pub(crate) fn release(ptr: usize) -> bool {
    handed().as_mut().and_then(|m| m.remove(&ptr)).is_some()
}
