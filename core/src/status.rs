//! The status of a completed operation.

use crate::envelope::{Rank, Tag, ANY_SOURCE, ANY_TAG};
use crate::error::Error;

/// What a completed operation reports, as `MPI_Status` does.
///
/// Sends report an empty status (see [`Status::EMPTY`]); receives report the
/// matched envelope and the number of bytes actually written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// The rank the message came from ([`ANY_SOURCE`] when empty).
    pub source: Rank,
    /// The tag of the message ([`ANY_TAG`] when empty).
    pub tag: Tag,
    /// Bytes delivered into the receive buffer.
    pub bytes: usize,
    /// The operation's error, if it failed (for example truncation).
    pub error: Option<Error>,
    /// True if the operation was cancelled.
    pub cancelled: bool,
}

impl Status {
    /// The empty status: what `REQUEST_EMPTY`, null and inactive requests,
    /// and sends report.
    pub const EMPTY: Status = Status {
        source: ANY_SOURCE,
        tag: ANY_TAG,
        bytes: 0,
        error: None,
        cancelled: false,
    };

    /// Element count for an element type of `elem_size` bytes, or `None` if
    /// the byte count is not a whole number of elements (MPI_UNDEFINED).
    pub fn count(&self, elem_size: usize) -> Option<usize> {
        if elem_size == 0 {
            return Some(0);
        }
        (self.bytes % elem_size == 0).then_some(self.bytes / elem_size)
    }

    /// The status as a `Result`: `Err` if the operation reported an error.
    ///
    /// # Errors
    /// Returns the error the operation completed with.
    pub fn ok(&self) -> Result<&Self, Error> {
        match self.error {
            None => Ok(self),
            Some(e) => Err(e),
        }
    }
}

impl Default for Status {
    fn default() -> Self {
        Status::EMPTY
    }
}
