//! Communicator lookup ([`Runtime::comm`]): below `MPI_THREAD_MULTIPLE`
//! a user communicator is borrowed from its table entry with no reference
//! count (the safety argument is at the borrow), at `MULTIPLE` counted.

use std::sync::Arc;

use crate::abi::class::*;
use crate::abi::*;
use crate::error::{Fail, Res};
use crate::state::{CommRef, Runtime};

impl Runtime {
    /// The communicator `handle` names: the predefined ones as fields; a
    /// user one borrowed from its table entry below `MULTIPLE`, or as a
    /// counted reference at `MULTIPLE` (where another thread may free it).
    ///
    /// # Errors
    /// `MPI_ERR_COMM` for `MPI_COMM_NULL`, a freed or a foreign handle.
    #[inline]
    pub fn comm(&self, handle: usize) -> Res<CommRef<'_>> {
        match handle {
            MPI_COMM_WORLD => Ok(CommRef::Borrowed(&self.world_comm)),
            MPI_COMM_SELF => Ok(CommRef::Borrowed(&self.self_comm)),
            h => self.user_comm(h),
        }
    }

    /// [`Runtime::comm`] of any other handle, out of line so that the
    /// predefined communicators' case inlines into every call.
    #[inline(never)]
    fn user_comm(&self, handle: usize) -> Res<CommRef<'_>> {
        match handle {
            MPI_COMM_NULL => Err(Fail::new(
                MPI_ERR_COMM,
                "MPI_COMM_NULL passed as a communicator",
            )),
            h => {
                let unlocked = self.comms.unlocked();
                self.comms
                    .with(|t| match t.get(h) {
                        Ok(c) if unlocked => {
                            let p = Arc::as_ptr(c);
                            // SAFETY: below MULTIPLE only this thread is in
                            // MPI, and an entry leaves the table only in
                            // MPI_Comm_free and MPI_Finalize, which hold no
                            // reference of their own handle across the
                            // removal; a `CommRef` lives within one MPI call
                            // (it is never stored), so the `Arc` it points
                            // into outlives it.
                            Ok(CommRef::Borrowed(unsafe { &*p }))
                        }
                        Ok(c) => Ok(CommRef::Shared(Arc::clone(c))),
                        Err(b) => Err(Fail::handle(MPI_ERR_COMM, b, "communicator")),
                    })
                    .and_then(|r| r)
            }
        }
        .map_err(|f| f.on(MPI_COMM_SELF))
    }
}

impl Runtime {
    /// The communicator `handle` names, as a counted reference for a user
    /// communicator at every level: for calls that run program code
    /// (attribute callbacks) while they hold it, which could free it.
    ///
    /// # Errors
    /// As for [`Runtime::comm`].
    pub fn comm_counted(&self, handle: usize) -> Res<CommRef<'_>> {
        match handle {
            MPI_COMM_WORLD | MPI_COMM_SELF | MPI_COMM_NULL => self.comm(handle),
            h => self.comm_arc(h).map(CommRef::Shared),
        }
    }
}
