//! What a request does when its ferry operation completes.

use ferry::Completion;

use super::buf::Unpack;
use super::req::Report;
use crate::error::{Fail, Res};

/// A request's post step; see [`Post::run`].
#[derive(Debug)]
pub(crate) enum Post {
    /// Nothing: the completion's status is the report.
    None,
    /// A receive staged in a vector (a non-contiguous datatype): unpack
    /// what arrived into the program's buffer.
    Unpack(Box<Unpack>),
    /// A nonblocking collective: copy the result out of the completion's
    /// vector into the program's buffers.
    Coll(Box<[super::coll::Piece]>),
}

impl Post {
    /// True if there is no step to run.
    pub(crate) fn is_none(&self) -> bool {
        matches!(self, Post::None)
    }

    /// Runs the step on the completion, adjusting the report.
    ///
    /// # Safety
    /// The program's buffers this step writes are valid and untouched by
    /// anything else (MPI's rule for a nonblocking operation until it
    /// completes).
    pub(crate) unsafe fn run(self, c: Completion, report: &mut Report) -> Res {
        let _ = &report;
        match self {
            Post::None => Ok(()),
            Post::Unpack(u) => {
                let got = c.status.bytes;
                let staged = c.into_vec::<u8>().map_err(Fail::from)?;
                // SAFETY: forwarded (the receive buffer of this operation).
                unsafe { u.run(&staged[..got.min(staged.len())]) };
                Ok(())
            }
            Post::Coll(pieces) => {
                let out = c.into_vec::<u8>().map_err(Fail::from)?;
                // SAFETY: forwarded (the collective's output buffers).
                unsafe { super::coll::copy_out(&out, &pieces) }
            }
        }
    }
}
