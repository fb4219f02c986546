//! Collectives as core describes them ([`Collective`]), on bytes: the
//! entry points under the typed collective methods, for a library that
//! keeps descriptions of its own (the MPI C ABI). [`Comm::collective`]
//! runs one on borrowed slices and returns when it completes (the node
//! path included); [`Comm::icollective`] starts one on buffers the engine
//! holds until it completes: owned vectors, or the caller's memory lent
//! by [`lent`] and [`lent_mut`], so a nonblocking collective copies
//! nothing in or out.

use ferry_core::coll::Collective;
use ferry_core::{Buf, Rank};

use super::{lend, lend_mut};
use crate::comm::Comm;
use crate::error::Result;
use crate::request::Request;

impl Comm {
    /// Runs `coll` on `input` and `output` (what each must hold: see
    /// [`Collective`]'s variants; counts in bytes) and returns once it is
    /// complete. A blocking call on a communicator that lives on one node
    /// goes through the node region with these slices.
    ///
    /// # Errors
    /// Buffers of the wrong lengths, members that disagree, a dead member,
    /// a fatal device error.
    #[inline]
    pub fn collective(
        &self,
        coll: Collective,
        input: Option<&[u8]>,
        output: Option<&mut [u8]>,
    ) -> Result<()> {
        self.coll_borrowed(coll, input, output)
    }

    /// Starts `coll` on `input` and `output`, which the engine holds until
    /// the request completes; the completion hands back `output` (or
    /// `input` where this member has no output) as its buffer.
    ///
    /// # Errors
    /// As for [`Comm::collective`].
    pub fn icollective(
        &self,
        coll: Collective,
        input: Option<Buf>,
        output: Option<Buf>,
    ) -> Result<Request> {
        self.coll_start(coll, input, output, None, false)
    }

    /// A rooted collective's `root` as [`Collective`] takes it (on an
    /// intercommunicator [`ROOT`](crate::ROOT) and
    /// [`PROC_NULL`](crate::PROC_NULL) in the root's group, the root's
    /// remote rank in the other).
    ///
    /// # Errors
    /// A rank outside the communicator.
    pub fn collective_root(&self, root: Rank) -> Result<u32> {
        self.coll_root(root)
    }
}

/// `len` bytes at `ptr` as a buffer the engine reads where they lie (for
/// [`Comm::icollective`]'s `input`); the engine never writes it.
///
/// # Safety
/// The memory is valid for reads, and written by nothing, until the
/// returned `Buf` is dropped: until every request it is given to has
/// completed. A null `ptr` is allowed with `len == 0`.
pub unsafe fn lent(ptr: *const u8, len: usize) -> Buf {
    // SAFETY: forwarded to our caller (see # Safety).
    unsafe { lend(ptr, len) }
}

/// `len` bytes at `ptr` as a buffer the engine writes where they lie (for
/// [`Comm::icollective`]'s `output`).
///
/// # Safety
/// The memory is valid for reads and writes, and accessed by nothing
/// else, until the returned `Buf` is dropped (as for [`lent`]).
pub unsafe fn lent_mut(ptr: *mut u8, len: usize) -> Buf {
    // SAFETY: forwarded to our caller (see # Safety).
    unsafe { lend_mut(ptr, len) }
}
